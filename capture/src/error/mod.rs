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
pub use names::{Names, Setting, UnknownGeometry};
pub use store_problem::{
    ChunkFault, ChunkHash, ChunkProblem, ExportProblem, ManifestError, StoreProblem, VersionProblem,
};

/// An executor's error, boxed so that code above the backends can carry any.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An executor's error as [`Error::Executor`] carries it: the error itself,
/// boxed, and what it said of itself when it was made (its
/// [`ErrorKind`], and whether the device is lost), so that nothing above
/// the executors needs to know their error types.
///
/// It shows as the error it holds; [`Error`]'s `source()` is that error
/// itself (which can be downcast), as before it was wrapped.
///
/// ```
/// use reprise_core::exec::ErrorKind;
/// use reprise_capture::error::ExecutorError;
/// let e = ExecutorError::other("the plan saves no output", ErrorKind::InvalidInput);
/// assert_eq!(e.kind(), ErrorKind::InvalidInput);
/// assert!(!e.device_lost());
/// assert_eq!(e.to_string(), "the plan saves no output");
/// ```
#[derive(Debug)]
pub struct ExecutorError {
    kind: ErrorKind,
    device_lost: bool,
    error: BoxError,
}

impl ExecutorError {
    /// An executor's error, with its kind.
    pub fn new<E: ExecError + Send + Sync + 'static>(e: E) -> Self {
        ExecutorError {
            kind: e.kind(),
            device_lost: e.device_lost(),
            error: Box::new(e),
        }
    }

    /// An error met while driving an executor that is no error of the
    /// executor's own (a schedule's check), of `kind`; the device is not
    /// lost by it.
    pub fn other(error: impl Into<BoxError>, kind: ErrorKind) -> Self {
        ExecutorError {
            kind,
            device_lost: false,
            error: error.into(),
        }
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Whether the executor said its device is unusable after it
    /// ([`ExecError::device_lost`]).
    pub fn device_lost(&self) -> bool {
        self.device_lost
    }

    /// The error itself.
    pub fn get_ref(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self.error.as_ref()
    }

    /// The error itself, boxed.
    pub fn into_inner(self) -> BoxError {
        self.error
    }
}

impl fmt::Display for ExecutorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for ExecutorError {
    /// The held error's source: the wrapper adds nothing to the chain.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

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
#[derive(Debug)]
pub enum Error {
    /// A file could not be read, written or renamed.
    Io {
        /// The file at fault.
        path: PathBuf,
        /// What was being done ("read", "write", "rename", ...).
        action: &'static str,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A descriptor could not be parsed or written.
    Descriptor {
        /// The descriptor.
        path: PathBuf,
        /// What is wrong with it.
        source: RecordError,
    },
    /// A globals file is malformed.
    Globals {
        /// The globals file.
        path: PathBuf,
        /// What is wrong with it.
        source: DecodeError,
    },
    /// A capture's globals file is missing, and missing globals were not
    /// allowed ([`Setting::AllowMissingGlobals`]).
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
    MissingImage {
        /// Where the image would be.
        path: PathBuf,
    },
    /// Several entries of an application binary define the capture's
    /// kernel, and nothing says which executor the capture is for
    /// ([`Setting::Backend`] does).
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
    NoRegionBase {
        /// The descriptor.
        path: PathBuf,
    },
    /// Memory the process could not get: `bytes` for `what`.
    NoMemory {
        /// What the memory was for.
        what: String,
        /// How much was asked for.
        bytes: u64,
    },
    /// The descriptor records no region address, and several bases are
    /// possible with nothing to tell them apart (see
    /// [`crate::capture::base`]); [`Setting::RegionBase`] gives it.
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
    ChecksumMap {
        /// The descriptor.
        path: PathBuf,
        /// What is wrong.
        problem: ChecksumMapProblem,
    },
    /// A capture file is inconsistent with its descriptor or siblings.
    Capture {
        /// The file at fault.
        path: PathBuf,
        /// What is wrong.
        problem: CaptureProblem,
    },
    /// A configuration variable has a value that cannot be used.
    Config {
        /// The variable (or builder setting).
        var: &'static str,
        /// Its value.
        value: String,
        /// Why it cannot be used.
        problem: String,
    },
    /// The executor failed.
    Executor {
        /// What was being done.
        context: String,
        /// The executor's error, with its kind.
        source: ExecutorError,
    },
    /// The capture needs an executor this build does not include.
    NotInBuild {
        /// The descriptor, when known.
        path: Option<PathBuf>,
        /// The executor.
        backend: BackendKind,
    },
    /// An executor asked for something it cannot do.
    Unsupported {
        /// The executor.
        backend: BackendKind,
        /// What it cannot do.
        feature: &'static str,
    },
    /// A sweep of launch geometries on an executor whose launches take none
    /// (the host's).
    NoGeometry,
    /// The executor asked for ([`Setting::Backend`]) cannot run the
    /// capture's image.
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
    UnknownGeometry {
        /// The descriptor, when known.
        path: Option<PathBuf>,
        /// What is unknown.
        geometry: UnknownGeometry,
    },
    /// A team or thread count asked for is outside the limits the capture
    /// recorded (as LLVM's replay tool refuses it).
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
    BadOption {
        /// The setting.
        setting: Setting,
        /// Its value.
        value: String,
        /// Why it cannot be used.
        problem: String,
    },
    /// IR given to `Recorder::attach_ir` that is not LLVM bitcode.
    NotBitcode {
        /// What it is instead.
        kind: reprise_core::image::ImageKind,
        /// Its length in bytes.
        len: usize,
    },
    /// A handle used with a `Recorder` other than the one that
    /// made it.
    ForeignHandle {
        /// What it was.
        handle: Handle,
    },
    /// A copy that lies outside the recording region and every global of
    /// the loaded images (or runs past the end of the address space).
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
    RegionFull {
        /// The allocator's account of it.
        source: AllocError,
        /// The region's size now, and where it came from.
        size: String,
    },
    /// An allocation no region can make (an alignment that is not a power
    /// of two).
    Alloc(AllocError),
    /// A launch whose arguments do not match the kernel's parameters, as
    /// the executor reports them.
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
    Record(RecordError),
    /// More bytes than a buffer can hold in this address space.
    TooLarge {
        /// What was to be that large.
        what: &'static str,
        /// Its size in bytes.
        bytes: u64,
    },
    /// The background writer's thread has stopped.
    WriterStopped,
    /// The chunk store, a manifest or a chunk is damaged or unusable
    /// ([`crate::chunks`]).
    Store {
        /// The store's directory, the manifest or the chunk file at fault.
        path: PathBuf,
        /// What is wrong.
        problem: StoreProblem,
    },
    /// Something reprise relies on did not hold: an executor handed back
    /// fewer buffers than it was given, say. A bug, in reprise or an
    /// executor.
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
        let none = || Error::NoMemory {
            what: what.to_string(),
            bytes,
        };
        let n = usize::try_from(bytes).map_err(|_| none())?;
        let mut v = Vec::new();
        v.try_reserve_exact(n).map_err(|_| none())?;
        v.resize(n, fill);
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
            source: ExecutorError::new(e),
        }
    }

    /// The kind of the executor's error, when this is one
    /// ([`Error::Executor`]).
    pub fn executor_kind(&self) -> Option<ErrorKind> {
        match self {
            Error::Executor { source, .. } => Some(source.kind()),
            _ => None,
        }
    }

    /// Whether the executor says its device is unusable after this error (a
    /// GPU context lost to a kernel fault): nothing more runs on it in this
    /// process.
    pub fn device_lost(&self) -> bool {
        matches!(self, Error::Executor { source, .. } if source.device_lost())
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
    pub fn in_file(self, file: &std::path::Path) -> Self {
        match self {
            Error::Executor { context, source } => Error::Executor {
                context: format!("{}: {context}", file.display()),
                source,
            },
            Error::NotInBuild {
                path: None,
                backend,
            } => Error::NotInBuild {
                path: Some(file.into()),
                backend,
            },
            Error::UnknownGeometry {
                path: None,
                geometry,
            } => Error::UnknownGeometry {
                path: Some(file.into()),
                geometry,
            },
            Error::OutsideLimits {
                path: None,
                setting,
                value,
                limits,
            } => Error::OutsideLimits {
                path: Some(file.into()),
                setting,
                value,
                limits,
            },
            other => other,
        }
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
                    source: ExecutorError::other(other, kind),
                }
            }
        }
    }

    /// The error with settings named as `names` says (a command line's
    /// flags, say); its `Display` is `self.named(Names::LIBRARY)`.
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
        Named(self, names)
    }
}

struct Named<'a>(&'a Error, Names);

impl fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt_named(f, self.1)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_named(f, Names::LIBRARY)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Descriptor { source, .. } => Some(source),
            Error::Globals { source, .. } => Some(source),
            Error::Capture { problem, .. } => Some(problem),
            Error::Store { problem, .. } => Some(problem),
            Error::Executor { source, .. } => Some(source.get_ref()),
            _ => None,
        }
    }
}

impl From<RecordError> for Error {
    fn from(e: RecordError) -> Self {
        Error::Record(e)
    }
}

/// Results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
