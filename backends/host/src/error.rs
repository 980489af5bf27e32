//! The host executor's errors.

use reprise_core::exec::{ErrorKind, ExecError};

use crate::elf::BadImageReason;
use crate::fault::KernelFault;

/// Errors of the host executor.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// The requested region overlaps a mapping that already exists.
    #[error("address range {addr:#x}..{end:#x} ({size} bytes) is already mapped in this process", end = addr + size)]
    AddressTaken {
        /// Requested base.
        addr: u64,
        /// Requested size.
        size: u64,
    },
    /// The requested base is not page-aligned.
    #[error("region base {0:#x} is not page-aligned")]
    Unaligned(u64),
    /// `mmap` or another operating system call failed.
    #[error("{call} failed: {error}{context}")]
    Os {
        /// The call.
        call: &'static str,
        /// The operating system's error.
        error: OsError,
        /// What the call was doing, where the message says more than the
        /// call's name.
        context: OsContext,
    },
    /// A region or buffer larger than this process's address space.
    #[error("mmap failed: {what}")]
    TooLarge {
        /// What was to be that large, and how large.
        what: TooLarge,
    },
    /// The image is not an ELF x86-64 shared object the host executor
    /// loads: what the ELF checks found.
    #[error("{0}")]
    BadImage(BadImageReason),
    /// The dynamic loader would not load the image.
    #[error("loading the image failed: {step}{detail}")]
    Load {
        /// Which step failed.
        step: LoadStep,
        /// The dynamic loader's own message (`dlerror`), which only it can
        /// give: a library the image needs that is missing, a symbol it
        /// lacks.
        detail: String,
    },
    /// No function of that name in the image.
    #[error("kernel `{name}` is not a function in the image{hint}")]
    KernelNotFound {
        /// The name asked for.
        name: String,
        /// A list of what the image does define.
        hint: String,
    },
    /// A launch has more arguments than the host ABI supports.
    #[error("{count} kernel arguments, more than the host executor's maximum of {max}")]
    TooManyArgs {
        /// Arguments given.
        count: usize,
        /// The maximum.
        max: usize,
    },
    /// A launch argument is not pointer-sized.
    #[error("argument {index} is {size} bytes; host kernels take pointer-sized (8-byte) arguments")]
    ArgSize {
        /// Which argument.
        index: usize,
        /// Its size.
        size: u32,
    },
    /// A copy touches memory outside every region and global.
    #[error("copy of {len} bytes at {addr:#x} is outside every live region and global")]
    OutOfBounds {
        /// Device address.
        addr: u64,
        /// Length.
        len: usize,
    },
    /// A copy's host range is outside its buffer.
    #[error("copy of {len} bytes at buffer offset {offset} overruns the {buffer}-byte buffer")]
    BufferOverrun {
        /// Offset in the buffer.
        offset: usize,
        /// Length.
        len: usize,
        /// Buffer length.
        buffer: usize,
    },
    /// The host executor runs on x86-64 Linux only.
    #[error("the host executor runs x86-64 kernels on x86-64 Linux only")]
    Unsupported,
    /// The queue's worker thread is gone.
    #[error("the queue's worker thread has stopped")]
    WorkerGone,
    /// A region was asked for at address 0, where no region can be: a null
    /// pointer into it would be valid (and mapping page 0 needs privileges).
    #[error("region base {0:#x} is not a usable address")]
    NullBase(u64),
    /// A kernel faulted (bad memory access, stack overflow, arithmetic
    /// fault, illegal instruction); reported by the next synchronize, as a
    /// GPU driver reports an illegal address.
    #[error("{0}")]
    KernelFault(Box<KernelFault>),
}

impl HostError {
    /// An [`HostError::Os`] for `call` failing with `error`, doing what
    /// `context` says.
    pub(crate) fn os(call: &'static str, error: OsError, context: OsContext) -> HostError {
        HostError::Os {
            call,
            error,
            context,
        }
    }
}

/// An [`HostError::Os`] for `call`, with the last error (`errno`).
pub(crate) fn os_error(call: &'static str) -> HostError {
    HostError::os(call, OsError::last(), OsContext::None)
}

impl ExecError for HostError {
    /// - [`ErrorKind::AddressUnavailable`]: the region's address is taken;
    /// - [`ErrorKind::OutOfMemory`]: the system has no memory to map
    ///   (`ENOMEM`), or a size no address space holds;
    /// - [`ErrorKind::Io`]: another operating system call failed;
    /// - [`ErrorKind::InvalidInput`]: a bad image (or one the loader
    ///   refuses), a kernel it lacks, arguments the host ABI cannot pass, a
    ///   copy outside the regions and globals or its buffer, a region base
    ///   that is unaligned or 0;
    /// - [`ErrorKind::NoDevice`]: not x86-64 Linux;
    /// - [`ErrorKind::DeviceLost`]: the queue's worker is gone;
    /// - [`ErrorKind::KernelFault`]: a kernel faulted (the queue goes on
    ///   working, so the device is not lost).
    fn kind(&self) -> ErrorKind {
        match self {
            HostError::AddressTaken { .. } => ErrorKind::AddressUnavailable,
            HostError::Os { error, .. } if error.errno() == Some(libc::ENOMEM) => {
                ErrorKind::OutOfMemory
            }
            HostError::Os { .. } => ErrorKind::Io,
            HostError::TooLarge { .. } => ErrorKind::OutOfMemory,
            HostError::Load {
                step: LoadStep::LinkMap,
                ..
            } => ErrorKind::Other,
            HostError::Unaligned(_)
            | HostError::NullBase(_)
            | HostError::BadImage(_)
            | HostError::Load { .. }
            | HostError::KernelNotFound { .. }
            | HostError::TooManyArgs { .. }
            | HostError::ArgSize { .. }
            | HostError::OutOfBounds { .. }
            | HostError::BufferOverrun { .. } => ErrorKind::InvalidInput,
            HostError::Unsupported => ErrorKind::NoDevice,
            HostError::WorkerGone => ErrorKind::DeviceLost,
            HostError::KernelFault(_) => ErrorKind::KernelFault,
        }
    }
}

/// An operating system error: its `errno` where it has one, and its kind.
///
/// ```
/// use reprise_host::OsError;
/// let e = OsError::from_errno(libc::ENOMEM);
/// assert_eq!(e.errno(), Some(libc::ENOMEM));
/// assert!(e.to_string().starts_with("Cannot allocate memory"), "{e}");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.io())]
pub struct OsError {
    errno: Option<i32>,
    kind: std::io::ErrorKind,
}

impl OsError {
    /// The calling thread's last error (`errno`).
    pub fn last() -> OsError {
        OsError::from(&std::io::Error::last_os_error())
    }

    /// The error `errno`.
    pub fn from_errno(errno: i32) -> OsError {
        OsError::from(&std::io::Error::from_raw_os_error(errno))
    }

    /// The `errno`, where the error has one.
    pub fn errno(&self) -> Option<i32> {
        self.errno
    }

    /// The error's kind, as the standard library classifies it.
    pub fn kind(&self) -> std::io::ErrorKind {
        self.kind
    }

    /// The error as the standard library's, for its message: the operating
    /// system's (`Cannot allocate memory (os error 12)`), or the kind's for
    /// an error without an `errno`.
    fn io(&self) -> std::io::Error {
        match self.errno {
            Some(n) => std::io::Error::from_raw_os_error(n),
            None => self.kind.into(),
        }
    }
}

impl From<&std::io::Error> for OsError {
    fn from(e: &std::io::Error) -> OsError {
        OsError {
            errno: e.raw_os_error(),
            kind: e.kind(),
        }
    }
}

/// What a failed operating system call was doing ([`HostError::Os`]),
/// where its name alone does not say.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OsContext {
    /// Nothing more to say.
    #[error("")]
    None,
    /// Mapping a region at an exact address.
    #[error(" (at {base:#x}, {len} bytes)")]
    At {
        /// The address.
        base: u64,
        /// The region's length.
        len: u64,
    },
    /// Mapping a snapshot file as a buffer.
    #[error(" (mapping {len} bytes of a snapshot file)")]
    SnapshotFile {
        /// Bytes mapped.
        len: usize,
    },
    /// Writing the image into the memory file the loader opens.
    #[error("")]
    ImageFile,
    /// Installing the signal handler that reports kernel faults.
    #[error(" (installing the handler that reports kernel faults)")]
    FaultHandler,
    /// Starting a queue's worker thread.
    #[error("")]
    Worker,
}

/// A size no mapping in this address space can have ([`HostError::TooLarge`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TooLarge {
    /// A region of this many bytes (with the room to align it).
    #[error("region of {0} bytes is too large")]
    Region(u64),
    /// A buffer of this many bytes.
    #[error("a buffer of {0} bytes is larger than the address space")]
    Buffer(u64),
}

/// Which step of loading an image failed ([`HostError::Load`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LoadStep {
    /// Opening it (`dlopen`): a library it needs is missing, a symbol
    /// undefined, its code unloadable. Its message is empty: the loader's
    /// says it all.
    #[error("")]
    Open,
    /// Asking where it was loaded (`dlinfo`), after it opened.
    #[error("dlinfo: ")]
    LinkMap,
}
