//! The messages of [`Error`] that take logic: those that name settings,
//! spelled as the front end asks ([`Names`]), and the helpers the
//! `#[error]` attributes call.

use super::*;

impl Error {
    /// The message of a variant that names a setting, with `names`; every
    /// other variant's is its `#[error]` attribute's. The attribute of each
    /// of these is this with [`Names::LIBRARY`].
    pub(super) fn fmt_named(&self, f: &mut fmt::Formatter<'_>, names: Names) -> fmt::Result {
        match self {
            Error::MissingGlobals { path, checksummed } => {
                let allow = (names.name)(Setting::AllowMissingGlobals);
                write!(f, "{}: globals file is missing", path.display())?;
                if *checksummed {
                    write!(
                        f,
                        ", though the descriptor records its checksum (the capture is \
                         incomplete); {allow} replays it anyway, with every global at the value \
                         the image gives it"
                    )
                } else {
                    write!(
                        f,
                        "; a capture recorded before globals were saved replays only when \
                         missing globals are allowed ({allow})"
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
            Error::UnknownGeometry { path, geometry } => {
                write!(f, "{}{}", at(path), geometry.named(names))
            }
            Error::OutsideLimits {
                path,
                setting,
                value,
                limits: [lo, hi],
            } => write!(
                f,
                "{}{} {value} is outside the recorded limits [{lo}, {hi}]",
                at(path),
                (names.name)(*setting)
            ),
            Error::BadOption {
                setting,
                value,
                problem,
            } => write!(f, "{} {value}: {problem}", (names.name)(*setting)),
            _ => fmt::Display::fmt(self, f),
        }
    }
}

/// The file an error met without a path was met in, when it is known.
pub(super) fn at(path: &Option<PathBuf>) -> String {
    path.as_ref()
        .map(|p| format!("{}: ", p.display()))
        .unwrap_or_default()
}

pub(super) fn not_in_build(backend: BackendKind) -> String {
    if !crate::images::some_build_runs(backend) {
        format!(
            "recorded on a microcontroller (executor {backend}): no build of reprise runs it on \
             this machine; it replays on the device"
        )
    } else {
        format!(
            "the {backend} executor is not part of this build of reprise; replay this capture \
             with a build that includes it"
        )
    }
}

pub(super) fn foreign(handle: &Handle) -> String {
    match handle {
        Handle::Image => {
            "this image was loaded by another Recorder; use the Recorder that loaded it".into()
        }
        Handle::Kernel(name) => format!(
            "kernel {name}: this kernel was loaded by another Recorder; launch it on the \
             Recorder that loaded it"
        ),
    }
}

pub(super) fn out_of_range(copy: CopyKind, addr: u64, len: usize, [base, end]: [u64; 2]) -> String {
    match u64::try_from(len).ok().and_then(|l| addr.checked_add(l)) {
        Some(to) => format!(
            "{copy} of {len} bytes at {addr:#x}..{to:#x} is outside the recording region \
             {base:#x}..{end:#x} and every global of the loaded images"
        ),
        None => format!(
            "{copy} of {len} bytes at {addr:#x} runs past the end of the address space (the \
             recording region is {base:#x}..{end:#x})"
        ),
    }
}

pub(crate) use reprise_core::record::base::write_addresses;
