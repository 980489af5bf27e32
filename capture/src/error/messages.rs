//! The messages of [`Error`]: every variant's text for people, with the
//! settings it names spelled as the front end asks ([`Names`]).

use super::*;

impl Error {
    pub(super) fn fmt_named(&self, f: &mut fmt::Formatter<'_>, names: Names) -> fmt::Result {
        let at = |f: &mut fmt::Formatter<'_>, path: &Option<PathBuf>| match path {
            Some(p) => write!(f, "{}: ", p.display()),
            None => Ok(()),
        };
        match self {
            Error::Io {
                path,
                action,
                source,
            } => write!(f, "{}: {action} failed: {source}", path.display()),
            Error::Descriptor { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Globals { path, source } => write!(f, "{}: {source}", path.display()),
            Error::MissingGlobals { path, checksummed } => {
                let allow = (names.name)(Setting::AllowMissingGlobals);
                if *checksummed {
                    write!(
                        f,
                        "{}: globals file is missing, though the descriptor records its checksum \
                         (the capture is incomplete); {allow} replays it anyway, with every \
                         global at the value the image gives it",
                        path.display()
                    )
                } else {
                    write!(
                        f,
                        "{}: globals file is missing; a capture recorded before globals were \
                         saved replays only when missing globals are allowed ({allow})",
                        path.display()
                    )
                }
            }
            Error::MissingImage { path } => write!(
                f,
                "{}: read failed: no such file; the capture has no device image (LLVM 16 saves \
                 none: it is in the application binary's .llvm.offloading section); name the \
                 binary with {}",
                path.display(),
                (names.given)(Setting::Image)
            ),
            Error::AmbiguousImage { path, kernel, held } => write!(
                f,
                "{}: more than one entry of its .llvm.offloading section defines the kernel \
                 {kernel}, and the capture does not say which executor it is for: say so with \
                 {}; it holds {held}",
                path.display(),
                (names.given)(Setting::Backend)
            ),
            Error::NoRegionBase { path } => write!(
                f,
                "{}: the descriptor records no region address (BumpAllocVAStart/VAllocAddr) and \
                 none can be derived from its arguments (none points into DeviceMemorySize \
                 bytes from a page + 0x10 address), so its pointers cannot be placed; give the \
                 base with {}",
                path.display(),
                (names.given)(Setting::RegionBase)
            ),
            Error::NoMemory { what, bytes } => write!(
                f,
                "{what}: {bytes} bytes cannot be allocated (not enough memory)"
            ),
            Error::AmbiguousRegionBase {
                path,
                candidates,
                total,
            } => {
                write!(
                    f,
                    "{}: the descriptor records no region address (LLVM 16 writes none), and \
                     {total} page + 0x10 addresses put its pointer arguments inside the \
                     snapshot with nothing to tell them apart (a later launch of a kernel whose \
                     file LLVM overwrote, say): ",
                    path.display(),
                )?;
                write_addresses(f, candidates, *total)?;
                write!(
                    f,
                    "; give the base with {} (try them in this order)",
                    (names.given)(Setting::RegionBase)
                )
            }
            Error::ArgumentsNotRecorded { path, first, count } => write!(
                f,
                "{}: ArgPtrs holds no argument values: its {count} entries are the addresses \
                 {first:#x}, {:#x}, ... 8 bytes apart, outside the recorded region, which is \
                 how LLVM 19 to 22.1 record a launch (the addresses of the runtime's own \
                 argument array, not what it held), so the arguments are lost and no replay \
                 can pass them; record the launch with LLVM 18, with an LLVM that records \
                 VAllocAddr, or with reprise",
                path.display(),
                first.wrapping_add(8)
            ),
            Error::LaunchEnvironment { path, at, buffer } => write!(
                f,
                "{}: the kernel's launch environment (argument 0, at {at:#x}) points its \
                 reduction buffer at {buffer:#x}, outside the recorded region, so the kernel's \
                 reduction would write through a stale pointer: LLVM copies the environment to \
                 the device without waiting and took this snapshot before the copy landed; \
                 record the launch again",
                path.display()
            ),
            Error::ChecksumMap { path, problem } => {
                let off = (names.given)(Setting::VerifyChecksums);
                match problem {
                    ChecksumMapProblem::Missing => write!(
                        f,
                        "{}: the descriptor is in reprise's format but records no checksums (its \
                         Checksums key is missing or mangled), so none of its files can be \
                         checked; replay it unchecked with {off}",
                        path.display()
                    ),
                    ChecksumMapProblem::UnknownEntry(name) => write!(
                        f,
                        "{}: Checksums names \"{name}\", which is no file of a capture (a mangled \
                         entry: the file it meant goes unchecked); replay it unchecked with {off}",
                        path.display()
                    ),
                }
            }
            Error::Capture { path, problem } => write!(f, "{}: {problem}", path.display()),
            Error::Config {
                var,
                value,
                problem,
            } => write!(f, "{var}={value:?}: {problem}"),
            Error::Executor { context, source } => write!(f, "{context}: {source}"),
            Error::NotInBuild { path, backend } => {
                at(f, path)?;
                if *backend == BackendKind::Mcu {
                    write!(
                        f,
                        "recorded on a microcontroller (executor {backend}): no build \
                         of reprise runs it on this machine; it replays on the device"
                    )
                } else {
                    write!(
                        f,
                        "the {backend} executor is not part of this build of reprise; \
                         replay this capture with a build that includes it"
                    )
                }
            }
            Error::Unsupported { backend, feature } => {
                write!(f, "the {backend} executor does not offer {feature}")
            }
            Error::WrongBackend {
                image,
                kind,
                runs_on,
                asked,
            } => write!(
                f,
                "{}: the image is {kind}, which runs on the {runs_on} executor, not on the \
                 {asked} executor that {} asks for",
                image.display(),
                (names.name)(Setting::Backend)
            ),
            Error::NoGeometry => f.write_str(
                "the host executor calls a kernel with its arguments only (no grid, block or \
                 shared memory), so every configuration of a sweep runs the same code; an LLVM \
                 OpenMP host image's runtime chooses its own threads: try thread counts with \
                 OMP_NUM_THREADS=N in the environment of a replay, one replay per count",
            ),
            Error::UnknownGeometry { path, geometry } => {
                at(f, path)?;
                geometry.fmt_named(f, names)
            }
            Error::OutsideLimits {
                path,
                setting,
                value,
                limits: [lo, hi],
            } => {
                at(f, path)?;
                write!(
                    f,
                    "{} {value} is outside the recorded limits [{lo}, {hi}]",
                    (names.name)(*setting)
                )
            }
            Error::BadOption {
                setting,
                value,
                problem,
            } => write!(f, "{} {value}: {problem}", (names.name)(*setting)),
            Error::NotBitcode { kind, len } => write!(
                f,
                "the IR to attach ({len} bytes) is {kind}, not LLVM bitcode"
            ),
            Error::ForeignHandle {
                handle: Handle::Image,
            } => f.write_str(
                "this image was loaded by another Recorder; use the Recorder that loaded it",
            ),
            Error::ForeignHandle {
                handle: Handle::Kernel(name),
            } => write!(
                f,
                "kernel {name}: this kernel was loaded by another Recorder; \
                 launch it on the Recorder that loaded it"
            ),
            Error::CopyOutOfRange {
                copy,
                addr,
                len,
                region: [base, end],
            } => match u64::try_from(*len).ok().and_then(|l| addr.checked_add(l)) {
                Some(to) => write!(
                    f,
                    "{copy} of {len} bytes at {addr:#x}..{to:#x} is outside the recording \
                     region {base:#x}..{end:#x} and every global of the loaded images"
                ),
                None => write!(
                    f,
                    "{copy} of {len} bytes at {addr:#x} runs past the end of the address space \
                     (the recording region is {base:#x}..{end:#x})"
                ),
            },
            Error::RegionFull { source, size } => write!(
                f,
                "{source} (RecordConfig::region_size or REPRISE_RECORD_MEMSIZE; now {size})"
            ),
            Error::Alloc(e) => fmt::Display::fmt(e, f),
            Error::ParamMismatch {
                kernel,
                expected,
                given,
            } => write!(
                f,
                "kernel {kernel} takes {} parameters of sizes {expected:?}, the launch passes {} \
                 of sizes {given:?}",
                expected.len(),
                given.len()
            ),
            Error::Record(e) => fmt::Display::fmt(e, f),
            Error::TooLarge { what, bytes } => {
                write!(
                    f,
                    "{what} of {bytes} bytes is larger than the address space"
                )
            }
            Error::WriterStopped => f.write_str("the capture writer thread has stopped"),
            Error::Store { path, problem } => write!(f, "{}: {problem}", path.display()),
            Error::Internal(what) => write!(f, "internal error: {what}"),
        }
    }
}

/// Writes `named` addresses, comma-separated, and how many more of `total`
/// there are (the core's wording, which its candidates use too).
pub(crate) use reprise_core::record::base::write_addresses;
