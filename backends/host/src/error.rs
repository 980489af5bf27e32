//! The host executor's errors.

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
    /// `mmap` or a related call failed.
    #[error("{call} failed: {message}")]
    Os {
        /// The call.
        call: &'static str,
        /// The operating system's message.
        message: String,
    },
    /// The image is not an ELF x86-64 shared object.
    #[error("{0}")]
    BadImage(String),
    /// `dlopen` failed.
    #[error("loading the image failed: {0}")]
    Load(String),
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

/// An [`HostError::Os`] for `call`, with the operating system's message for
/// the last error (`errno`).
pub(crate) fn os_error(call: &'static str) -> HostError {
    HostError::Os {
        call,
        message: std::io::Error::last_os_error().to_string(),
    }
}
