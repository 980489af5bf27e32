//! The adapter's error type: every error names the file, variable or
//! setting at fault.
//!
//! Errors name the library's own settings (`ReplayOptions::num_teams`,
//! `OpenOptions::allow_missing_globals`); a front end that offers them
//! under other names (a command line's `--num-teams`) shows its own with
//! [`Error::named`] and a [`Names`] of its own.

mod capture_problem;
mod messages;
mod names;
mod store_problem;

use std::fmt;
use std::path::PathBuf;

use reprise_core::exec::{ErrorKind, ExecError};
use reprise_core::globals::DecodeError;
use reprise_core::record::{BackendKind, RecordError};
use reprise_core::region::AllocError;

pub use capture_problem::CaptureProblem;
use messages::{at, foreign, not_in_build, out_of_range};
pub use names::{Names, Setting, UnknownGeometry};
pub use store_problem::{
    ChunkFault, ChunkHash, ChunkProblem, ExportProblem, ManifestError, StoreProblem, VersionProblem,
};

/// An executor's error, boxed so that code above the backends can carry any.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Which copy a [`Error::CopyOutOfRange`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyKind {
    /// `Recorder::upload`.
    Upload,
    /// `Recorder::download`.
    Download,
}

impl fmt::Display for CopyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CopyKind::Upload => "upload",
            CopyKind::Download => "download",
        })
    }
}

/// What is wrong with a descriptor's `Checksums` map ([`Error::ChecksumMap`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksumMapProblem {
    /// A descriptor of reprise's format has no checksum at all (the key is
    /// missing or mangled, or the map is empty).
    Missing,
    /// The map names something that is no file of a capture (a mangled
    /// entry: the file it meant goes unchecked).
    UnknownEntry(reprise_core::record::EntryName),
}

/// What a [`Error::ForeignHandle`] was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handle {
    /// An `ImageId`.
    Image,
    /// A `Kernel`, by name.
    Kernel(String),
}

/// Errors of capture files, configuration, recording and replay.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read, written or renamed.
    #[error("{}: {action} failed: {source}", path.display())]
    Io {
        /// The file at fault.
        path: PathBuf,
        /// What was being done ("read", "write", "rename", ...).
        action: &'static str,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A descriptor could not be parsed or written.
    #[error("{}: {source}", path.display())]
    Descriptor {
        /// The descriptor.
        path: PathBuf,
        /// What is wrong with it.
        source: RecordError,
    },
    /// A globals file is malformed.
    #[error("{}: {source}", path.display())]
    Globals {
        /// The globals file.
        path: PathBuf,
        /// What is wrong with it.
        source: DecodeError,
    },
    /// A capture's globals file is missing, and missing globals were not
    /// allowed ([`Setting::AllowMissingGlobals`]).
    #[error("{}", self.named(Names::LIBRARY))]
    MissingGlobals {
        /// The globals file.
        path: PathBuf,
        /// Whether the descriptor records the file's checksum (then the
        /// capture is incomplete, rather than older than globals files).
        checksummed: bool,
    },
    /// A capture has no image: LLVM 16 never saves one beside its captures
    /// (the image is in the application binary, which
    /// [`Setting::Image`] names).
    #[error("{}", self.named(Names::LIBRARY))]
    MissingImage {
        /// Where the image would be.
        path: PathBuf,
    },
    /// Several entries of an application binary define the capture's
    /// kernel, and nothing says which executor the capture is for
    /// ([`Setting::Backend`] does).
    #[error("{}", self.named(Names::LIBRARY))]
    AmbiguousImage {
        /// The application binary.
        path: PathBuf,
        /// The kernel.
        kernel: String,
        /// What the binary holds, for people.
        held: String,
    },
    /// The descriptor records no region address and none can be derived
    /// (see [`crate::capture::base`]); [`Setting::RegionBase`] gives it.
    #[error("{}", self.named(Names::LIBRARY))]
    NoRegionBase {
        /// The descriptor.
        path: PathBuf,
    },
    /// Memory the process could not get: `bytes` for `what`.
    #[error("{what}: {bytes} bytes cannot be allocated (not enough memory)")]
    NoMemory {
        /// What the memory was for.
        what: String,
        /// How much was asked for.
        bytes: u64,
    },
    /// The descriptor records no region address, and several bases are
    /// possible with nothing to tell them apart (see
    /// [`crate::capture::base`]); [`Setting::RegionBase`] gives it.
    #[error("{}", self.named(Names::LIBRARY))]
    AmbiguousRegionBase {
        /// The descriptor.
        path: PathBuf,
        /// The bases possible, most likely first (the first few).
        candidates: Vec<u64>,
        /// How many are possible in all.
        total: u64,
    },
    /// The descriptor's `ArgPtrs` are not the kernel's arguments but the
    /// addresses of the recording runtime's own array of them, 8 bytes
    /// apart and outside the region: LLVM 19 to 22.1 record them so
    /// (`saveKernelDescr` writes `LaunchParams.Ptrs[I]`, which is
    /// `&Args[I]`), and the values are nowhere in the capture.
    #[error(
        "{}: ArgPtrs holds no argument values: its {count} entries are the addresses \
         {first:#x}, {:#x}, ... 8 bytes apart, outside the recorded region, which is how LLVM \
         19 to 22.1 record a launch (the addresses of the runtime's own argument array, not \
         what it held), so the arguments are lost and no replay can pass them; record the \
         launch with LLVM 18, with an LLVM that records VAllocAddr, or with reprise",
        path.display(),
        first.wrapping_add(8)
    )]
    ArgumentsNotRecorded {
        /// The descriptor.
        path: PathBuf,
        /// The first address recorded.
        first: u64,
        /// How many arguments the descriptor has.
        count: usize,
    },
    /// The launch environment that an LLVM 18+ capture passes as argument 0
    /// holds, in the memory snapshot, a reduction buffer outside the region:
    /// the snapshot was taken before LLVM's copy of the environment landed.
    #[error(
        "{}: the kernel's launch environment (argument 0, at {at:#x}) points its reduction \
         buffer at {buffer:#x}, outside the recorded region, so the kernel's reduction would \
         write through a stale pointer: LLVM copies the environment to the device without \
         waiting and took this snapshot before the copy landed; record the launch again",
        path.display()
    )]
    LaunchEnvironment {
        /// The memory snapshot.
        path: PathBuf,
        /// The environment's address (argument 0).
        at: u64,
        /// The `ReductionBuffer` found there.
        buffer: u64,
    },
    /// A reprise descriptor's `Checksums` map is damaged, so files would go
    /// unchecked without anyone knowing ([`Setting::VerifyChecksums`] off
    /// replays it anyway).
    #[error("{}", self.named(Names::LIBRARY))]
    ChecksumMap {
        /// The descriptor.
        path: PathBuf,
        /// What is wrong.
        problem: ChecksumMapProblem,
    },
    /// A capture file is inconsistent with its descriptor or siblings.
    #[error("{}: {problem}", path.display())]
    Capture {
        /// The file at fault.
        path: PathBuf,
        /// What is wrong.
        #[source]
        problem: CaptureProblem,
    },
    /// A configuration variable has a value that cannot be used.
    #[error("{var}={value:?}: {problem}")]
    Config {
        /// The variable (or builder setting).
        var: &'static str,
        /// Its value.
        value: String,
        /// Why it cannot be used.
        problem: String,
    },
    /// The executor failed.
    #[error("{context}: {source}")]
    Executor {
        /// What was being done.
        context: String,
        /// The executor's error itself, which can be downcast.
        source: BoxError,
        /// What it said of itself when it was made, so that nothing above
        /// the executors needs to know their error types.
        kind: ErrorKind,
        /// Whether the executor said its device is unusable after it
        /// ([`ExecError::device_lost`]).
        device_lost: bool,
    },
    /// The capture needs an executor this build does not include.
    #[error("{}{}", at(path), not_in_build(*backend))]
    NotInBuild {
        /// The descriptor, when known.
        path: Option<PathBuf>,
        /// The executor.
        backend: BackendKind,
    },
    /// An executor asked for something it cannot do.
    #[error("the {backend} executor does not offer {feature}")]
    Unsupported {
        /// The executor.
        backend: BackendKind,
        /// What it cannot do.
        feature: &'static str,
    },
    /// A sweep of launch geometries on an executor whose launches take none
    /// (the host's).
    #[error(
        "the host executor calls a kernel with its arguments only (no grid, block or shared \
         memory), so every configuration of a sweep runs the same code; an LLVM OpenMP host \
         image's runtime chooses its own threads: try thread counts with OMP_NUM_THREADS=N in \
         the environment of a replay, one replay per count"
    )]
    NoGeometry,
    /// The executor asked for ([`Setting::Backend`]) cannot run the
    /// capture's image.
    #[error("{}", self.named(Names::LIBRARY))]
    WrongBackend {
        /// The image.
        image: PathBuf,
        /// What it is.
        kind: String,
        /// The executor it runs on.
        runs_on: BackendKind,
        /// The executor asked for.
        asked: BackendKind,
    },
    /// The launch's team or thread count is unknown (LLVM recorded none)
    /// and the replay's options give none.
    #[error("{}", self.named(Names::LIBRARY))]
    UnknownGeometry {
        /// The descriptor, when known.
        path: Option<PathBuf>,
        /// What is unknown.
        geometry: UnknownGeometry,
    },
    /// A team or thread count asked for is outside the limits the capture
    /// recorded (as LLVM's replay tool refuses it).
    #[error("{}", self.named(Names::LIBRARY))]
    OutsideLimits {
        /// The descriptor, when known.
        path: Option<PathBuf>,
        /// The setting.
        setting: Setting,
        /// Its value.
        value: u32,
        /// The recorded limits `[lower, upper]`.
        limits: [u32; 2],
    },
    /// A setting has a value that no capture accepts. A problem of the
    /// request, not of any file: [`Error::in_file`] leaves it as it is.
    #[error("{}", self.named(Names::LIBRARY))]
    BadOption {
        /// The setting.
        setting: Setting,
        /// Its value.
        value: String,
        /// Why it cannot be used.
        problem: String,
    },
    /// IR given to `Recorder::attach_ir` that is not LLVM bitcode.
    #[error("the IR to attach ({len} bytes) is {kind}, not LLVM bitcode")]
    NotBitcode {
        /// What it is instead.
        kind: reprise_core::image::ImageKind,
        /// Its length in bytes.
        len: usize,
    },
    /// A handle used with a `Recorder` other than the one that
    /// made it.
    #[error("{}", foreign(handle))]
    ForeignHandle {
        /// What it was.
        handle: Handle,
    },
    /// A copy that lies outside the recording region and every global of
    /// the loaded images (or runs past the end of the address space).
    #[error("{}", out_of_range(*copy, *addr, *len, *region))]
    CopyOutOfRange {
        /// Which copy.
        copy: CopyKind,
        /// Its device address.
        addr: u64,
        /// Its length.
        len: usize,
        /// The recording region, `[base, end)`.
        region: [u64; 2],
    },
    /// The recording region has no room for an allocation.
    #[error("{error} (RecordConfig::region_size or REPRISE_RECORD_MEMSIZE; now {size})")]
    RegionFull {
        /// The allocator's account of it, which the message includes (so
        /// it is no `source`).
        error: AllocError,
        /// The region's size now, and where it came from.
        size: String,
    },
    /// An allocation no region can make (an alignment that is not a power
    /// of two).
    #[error(transparent)]
    Alloc(AllocError),
    /// A launch whose arguments do not match the kernel's parameters, as
    /// the executor reports them.
    #[error(
        "kernel {kernel} takes {} parameters of sizes {expected:?}, the launch passes {} of \
         sizes {given:?}",
        expected.len(),
        given.len()
    )]
    ParamMismatch {
        /// The kernel.
        kernel: String,
        /// The sizes of its parameters.
        expected: Vec<u32>,
        /// The sizes of the arguments given.
        given: Vec<u32>,
    },
    /// A launch that a capture cannot describe (too many arguments, too
    /// many bytes of by-value arguments, a kernel name too long or empty).
    #[error(transparent)]
    Record(#[from] RecordError),
    /// More bytes than a buffer can hold in this address space.
    #[error("{what} of {bytes} bytes is larger than the address space")]
    TooLarge {
        /// What was to be that large.
        what: &'static str,
        /// Its size in bytes.
        bytes: u64,
    },
    /// The background writer's thread has stopped.
    #[error("the capture writer thread has stopped")]
    WriterStopped,
    /// The chunk store, a manifest or a chunk is damaged or unusable
    /// ([`crate::chunks`]).
    #[error("{}: {problem}", path.display())]
    Store {
        /// The store's directory, the manifest or the chunk file at fault.
        path: PathBuf,
        /// What is wrong.
        #[source]
        problem: StoreProblem,
    },
    /// Something reprise relies on did not hold: an executor handed back
    /// fewer buffers than it was given, say. A bug, in reprise or an
    /// executor.
    #[error("internal error: {0}")]
    Internal(&'static str),
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, action: &'static str, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            action,
            source,
        }
    }

    /// A buffer of `bytes` bytes, each `fill`: [`Error::NoMemory`] naming
    /// `what` when the system will not give that much, never an abort.
    pub fn filled_buffer(bytes: u64, fill: u8, what: &str) -> Result<Vec<u8>, Error> {
        let mut v = Error::empty_buffer(bytes, what)?;
        // `empty_buffer` has checked that `bytes` fits a usize.
        v.resize(bytes as usize, fill);
        Ok(v)
    }

    /// An empty buffer with room for `bytes` bytes: [`Error::NoMemory`]
    /// naming `what` when the system will not give that much.
    pub fn empty_buffer(bytes: u64, what: &str) -> Result<Vec<u8>, Error> {
        let none = || Error::NoMemory {
            what: what.to_string(),
            bytes,
        };
        let n = usize::try_from(bytes).map_err(|_| none())?;
        let mut v = Vec::new();
        v.try_reserve_exact(n).map_err(|_| none())?;
        Ok(v)
    }

    /// An executor error with context; the original error stays reachable
    /// through `source()` (and can be downcast), and its kind through
    /// [`Error::executor_kind`].
    pub fn executor<E: ExecError + Send + Sync + 'static>(
        context: impl Into<String>,
        e: E,
    ) -> Self {
        Error::Executor {
            context: context.into(),
            kind: e.kind(),
            device_lost: e.device_lost(),
            source: Box::new(e),
        }
    }

    /// The kind of the executor's error, when this is one
    /// ([`Error::Executor`]).
    pub fn executor_kind(&self) -> Option<ErrorKind> {
        match self {
            Error::Executor { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// What kind of failure it is, in the executors' terms: an executor's
    /// own kind; [`ErrorKind::Io`] for a file the system would not read or
    /// write; [`ErrorKind::OutOfMemory`] for memory, region or address
    /// space that ran out; [`ErrorKind::Other`] for a bug or a stopped
    /// writer; [`ErrorKind::InvalidInput`] for the rest (a capture, a store,
    /// a setting or a launch that cannot be used as given).
    ///
    /// ```
    /// use reprise_capture::error::{CaptureProblem, Error};
    /// use reprise_core::exec::ErrorKind;
    /// let e = Error::capture("k.memory", CaptureProblem::MissingSnapshot);
    /// assert_eq!(e.kind(), ErrorKind::InvalidInput);
    /// assert_eq!(Error::WriterStopped.kind(), ErrorKind::Other);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Executor { kind, .. } => *kind,
            Error::Io { .. } => ErrorKind::Io,
            Error::NoMemory { .. } | Error::RegionFull { .. } | Error::TooLarge { .. } => {
                ErrorKind::OutOfMemory
            }
            Error::Internal(_) | Error::WriterStopped => ErrorKind::Other,
            _ => ErrorKind::InvalidInput,
        }
    }

    /// Whether the executor says its device is unusable after this error (a
    /// GPU context lost to a kernel fault): nothing more runs on it in this
    /// process.
    pub fn device_lost(&self) -> bool {
        matches!(
            self,
            Error::Executor {
                device_lost: true,
                ..
            }
        )
    }

    /// Whether the kernel faulted (a bad memory access, an illegal
    /// instruction): [`ErrorKind::KernelFault`].
    pub fn kernel_faulted(&self) -> bool {
        self.executor_kind() == Some(ErrorKind::KernelFault)
    }

    /// Whether the executor refused a launch before it ran: a block, grid
    /// or shared memory beyond the kernel's or the device's limit
    /// ([`ErrorKind::LaunchRefused`]).
    pub fn launch_refused(&self) -> bool {
        self.executor_kind() == Some(ErrorKind::LaunchRefused)
    }

    /// The error as met while working on `file`: an executor failure, and
    /// a problem of the capture found without its path, get the file's
    /// name; errors that already name a file, and bad options (which
    /// concern no file), are kept as they are.
    pub fn in_file(mut self, file: &std::path::Path) -> Self {
        match &mut self {
            Error::Executor { context, .. } => *context = format!("{}: {context}", file.display()),
            Error::NotInBuild { path: p @ None, .. }
            | Error::UnknownGeometry { path: p @ None, .. }
            | Error::OutsideLimits { path: p @ None, .. } => *p = Some(file.into()),
            _ => {}
        }
        self
    }

    /// A schedule error with context: an executor error is kept as it is,
    /// with its kind; the schedule's own (a segment outside its buffer, a
    /// buffer missing or lost) are kept too, of the kind they are.
    pub fn schedule<E: ExecError + Send + Sync + 'static>(
        context: impl Into<String>,
        e: reprise_core::schedule::ScheduleError<E>,
    ) -> Self {
        use reprise_core::schedule::ScheduleError as S;
        match e {
            S::Executor(e) => Error::executor(context, e),
            // The schedule's own checks: what it was given, or a bug.
            other => {
                let kind = match other {
                    S::SegmentOutOfBounds { .. } | S::MissingBuffer(_) => ErrorKind::InvalidInput,
                    _ => ErrorKind::Other,
                };
                Error::Executor {
                    context: context.into(),
                    source: Box::new(other),
                    kind,
                    device_lost: false,
                }
            }
        }
    }

    /// The error with settings named as `names` says (a command line's
    /// flags, say); `self.named(Names::LIBRARY)` is its `Display`.
    ///
    /// ```
    /// use reprise_capture::error::{Error, Names, Setting};
    /// let e = Error::BadOption {
    ///     setting: Setting::NumTeams,
    ///     value: "0".into(),
    ///     problem: "must be at least 1".into(),
    /// };
    /// assert_eq!(e.to_string(), "ReplayOptions::num_teams 0: must be at least 1");
    /// let flags = Names {
    ///     verb: "pass",
    ///     name: |s| if s == Setting::NumTeams { "--num-teams" } else { s.library_name() },
    ///     given: |s| if s == Setting::NumTeams { "--num-teams N" } else { s.library_name() },
    /// };
    /// assert_eq!(e.named(flags).to_string(), "--num-teams 0: must be at least 1");
    /// ```
    pub fn named(&self, names: Names) -> impl fmt::Display + '_ {
        Named(self, names, Error::fmt_named)
    }
}

/// `T` shown by its `fmt_named`, with settings named as a [`Names`] says.
struct Named<'a, T>(
    &'a T,
    Names,
    fn(&T, &mut fmt::Formatter<'_>, Names) -> fmt::Result,
);

impl<T> fmt::Display for Named<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (self.2)(self.0, f, self.1)
    }
}

/// Results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
