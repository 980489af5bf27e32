//! [`CudaError`]: everything the CUDA executor can fail with, and its
//! messages.

use reprise_core::exec::{ErrorKind, ExecError, GeometryError};
use reprise_core::image::ImageKind;

use super::DriverError;

/// Everything the CUDA executor can fail with.
///
/// Its [`source`](std::error::Error::source) is the driver error
/// underneath, where there is one ([`CudaError::driver`]).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CudaError {
    /// `libcuda.so` could not be loaded: no NVIDIA driver on this machine.
    #[error("CUDA driver not found (libcuda.so could not be loaded)")]
    DriverNotFound,
    /// The driver library lacks a function this executor needs (a driver
    /// older than CUDA 12 or a stub library).
    #[error("the CUDA driver library has no function {0}; a driver for CUDA 12 or later is needed")]
    MissingSymbol(&'static str),
    /// A driver call failed.
    #[error("{0}")]
    Driver(#[from] DriverError),
    /// The driver is there but sees no CUDA device.
    #[error("no CUDA device")]
    NoDevice,
    /// A kernel faulted (an illegal address or instruction, a misaligned
    /// address, a trap, an assertion, a timeout:
    /// [`DriverError::is_kernel_fault`]), as a synchronize, copy or launch
    /// of a queue found. The fault is sticky for the whole device context,
    /// which stays unusable until the process restarts
    /// ([`CudaError::context_lost`]); each queue that meets it reports it
    /// this way once.
    #[error(
        "{}: {}{}; the device context is unusable until the process restarts",
        faulted(.kernels),
        .source.name,
        parenthesized(.source.description)
    )]
    KernelFault {
        /// The kernels in flight in the context when the fault was found:
        /// launched on any queue of the device (of any executor) and not
        /// yet covered by a successful synchronize of their queue, each name
        /// once, in launch order. One of them faulted (the driver does not
        /// say which).
        kernels: Vec<String>,
        /// The driver's error, as the call that found the fault reported it.
        source: DriverError,
    },
    /// The device ordinal is not one of the `count` devices.
    #[error(
        "there is no CUDA device {ordinal}: the machine has {count} (ordinals 0 to {})",
        .count - 1
    )]
    BadOrdinal {
        /// The ordinal asked for.
        ordinal: i32,
        /// How many devices there are.
        count: i32,
    },
    /// The device does not support the virtual memory management API, so no
    /// region can be reserved at a chosen address.
    #[error(
        "CUDA device {ordinal} does not support virtual memory management, \
         so no region can be reserved at a chosen address"
    )]
    NoVirtualMemory {
        /// The device ordinal.
        ordinal: i32,
    },
    /// The driver reserved a different address range than the one asked for:
    /// the requested range is in use in this process, or the driver places
    /// reservations only in its own address pool and ignores hints outside
    /// it.
    #[error(
        "could not reserve recorded virtual address {requested:#x}: \
         the driver offered {got:#x} instead; either that range is already \
         in use in this process, or the driver places reservations only in \
         its own address pool (some drivers ignore address hints)"
    )]
    AddressMismatch {
        /// The address asked for.
        requested: u64,
        /// The address the driver offered instead.
        got: u64,
    },
    /// Reserving the requested address range failed outright.
    #[error("could not reserve recorded virtual address {requested:#x} ({size} bytes): {source}")]
    AddressUnavailable {
        /// The address asked for.
        requested: u64,
        /// Bytes asked for (rounded to the allocation granularity).
        size: u64,
        /// The driver's error.
        source: DriverError,
    },
    /// No route places memory at the address asked for: the driver's
    /// virtual memory management would not reserve it there, and host
    /// memory mapped for the device could not be put there either.
    #[error("{requested:#x} ({size} bytes): {routes}")]
    NoPlacement {
        /// The address asked for.
        requested: u64,
        /// Bytes asked for.
        size: u64,
        /// What each route said, in the order they were tried.
        routes: String,
    },
    /// The image is not PTX, a cubin or a fat binary.
    #[error(
        "the CUDA executor cannot load this image ({0}); it takes PTX, cubins and fat binaries"
    )]
    UnsupportedImage(ImageKind),
    /// The image has no kernel of this name.
    #[error("the image has no kernel named {0:?}")]
    KernelNotFound(String),
    /// JIT options were given for an image that is not PTX: a cubin is
    /// compiled already, and the driver applies no JIT option to it.
    #[error(
        "JIT options apply to PTX only, and this image is {0}: a cubin is compiled \
         already, and the driver applies no JIT option to it (record the PTX, or \
         replay without JIT options)"
    )]
    JitOptionsNeedPtx(ImageKind),
    /// The driver's JIT could not compile the PTX with the options given:
    /// its error, the options and its logs (`CU_JIT_ERROR_LOG_BUFFER`,
    /// `CU_JIT_INFO_LOG_BUFFER`).
    #[error(
        "the driver's JIT could not compile the PTX with {options}: {source}{}",
        jit_log(.log)
    )]
    JitFailed {
        /// The options given (`MAX_REGISTERS=32`, ...).
        options: String,
        /// The error log, then the info log.
        log: String,
        /// The driver's error.
        source: DriverError,
    },
    /// A kernel or global name contains a NUL byte.
    #[error("the name {0:?} contains a NUL byte")]
    BadName(String),
    /// A copy segment does not fit its host buffer.
    #[error("a copy reaches byte {end} of a host buffer of {buffer} bytes")]
    SegmentOutOfBounds {
        /// Offset plus length of the segment.
        end: usize,
        /// The buffer's length.
        buffer: usize,
    },
    /// The launch passes a different number of arguments than the kernel
    /// takes (known from `cuFuncGetParamInfo`).
    #[error("the kernel takes {expected} parameters but the launch passes {got} arguments")]
    ArgumentCount {
        /// Parameters of the kernel.
        expected: usize,
        /// Arguments given.
        got: usize,
    },
    /// An argument is smaller than the kernel's parameter.
    #[error("argument {index} has {got} bytes but the kernel's parameter has {expected}")]
    ArgumentSize {
        /// Argument index.
        index: usize,
        /// The parameter's size in bytes.
        expected: u32,
        /// The argument's size in bytes.
        got: u32,
    },
    /// An argument larger than 8 bytes points outside the argument data.
    #[error("argument {index} points outside the recorded argument data")]
    BadArgument {
        /// Argument index.
        index: usize,
    },
    /// A helper thread could not be started.
    #[error(
        "could not start a helper thread ({name}): {}",
        thread_reason(*.errno, *.io_kind)
    )]
    Thread {
        /// The thread's name (`reprise-cuda-watch`).
        name: &'static str,
        /// The operating system's error number, where it gave one.
        errno: Option<i32>,
        /// The error's kind, as the standard library classifies it.
        io_kind: std::io::ErrorKind,
    },
    /// The launch's block has more threads than the kernel allows
    /// (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`: its `.maxntid` or launch
    /// bounds, an OpenMP kernel's thread limit, or its register use).
    #[error(
        "block {} ({} threads) exceeds kernel {kernel}'s limit of {limit} threads per \
         block (its launch bounds, or the registers it uses)",
        dims(.block),
        threads(.block)
    )]
    KernelThreadsPerBlock {
        /// The kernel's name.
        kernel: String,
        /// The block asked for.
        block: [u32; 3],
        /// The kernel's most threads per block.
        limit: u32,
    },
    /// A launch geometry the device cannot run, as the core's checks found
    /// it from the device's limits ([`LaunchLimits::check`],
    /// [`LaunchLimits::check_shared`]): a dimension of the grid or block
    /// that is 0; a block with more threads than the device allows
    /// (`CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK`); a dimension of the
    /// block or grid larger than the device allows
    /// (`CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_*`/`MAX_GRID_DIM_*`); the kernel's
    /// static shared memory (`CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`; OpenMP
    /// kernels always have some) and the launch's dynamic shared memory
    /// together more than a block may have, even opted in
    /// (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`). Its message
    /// is the core's.
    ///
    /// [`LaunchLimits::check`]: reprise_core::exec::LaunchLimits::check
    /// [`LaunchLimits::check_shared`]: reprise_core::exec::LaunchLimits::check_shared
    #[error("{0}")]
    Geometry(GeometryError),
    /// The driver would not load the image, and none of its code is for this
    /// device's architecture.
    #[error(
        "the image has no code for this device: the device is sm_{device_sm}, \
         the image holds {image}: {source}"
    )]
    NoCodeForDevice {
        /// The device's compute capability as an SM number (75 for 7.5).
        device_sm: u32,
        /// What the image holds (`PTX sm_80 (ISA 7.0)`, `cubin sm_90`, ...).
        image: String,
        /// The driver's error.
        source: DriverError,
    },
}

impl CudaError {
    /// The driver error inside, if this is one.
    pub fn driver(&self) -> Option<&DriverError> {
        match self {
            CudaError::Driver(e)
            | CudaError::AddressUnavailable { source: e, .. }
            | CudaError::NoCodeForDevice { source: e, .. }
            | CudaError::JitFailed { source: e, .. }
            | CudaError::KernelFault { source: e, .. } => Some(e),
            _ => None,
        }
    }

    /// The core's geometry error inside, if this is one.
    ///
    /// ```
    /// use reprise_core::exec::{Dims, GeometryError};
    /// use reprise_cuda::CudaError;
    /// let zero = GeometryError::ZeroDimension {
    ///     what: Dims::Grid,
    ///     dims: [0, 1, 1],
    /// };
    /// assert_eq!(CudaError::from(zero).geometry(), Some(zero));
    /// assert_eq!(CudaError::NoDevice.geometry(), None);
    /// ```
    pub fn geometry(&self) -> Option<GeometryError> {
        match *self {
            CudaError::Geometry(e) => Some(e),
            _ => None,
        }
    }

    /// Whether the device context is lost (until the process restarts) to
    /// a kernel fault: a [`CudaError::KernelFault`], or a driver error with
    /// a code a fault leaves behind ([`DriverError::context_lost`]).
    ///
    /// ```
    /// use reprise_cuda::{CudaError, DriverError};
    /// let later = CudaError::from(DriverError::from_code("cuMemHostAlloc", 700));
    /// assert!(later.context_lost());
    /// assert!(!CudaError::NoDevice.context_lost());
    /// ```
    pub fn context_lost(&self) -> bool {
        matches!(self, CudaError::KernelFault { .. })
            || self.driver().is_some_and(DriverError::context_lost)
    }

    /// The fault of one of `kernels` (in flight in the context), found by a
    /// call that failed with `source`; its message is then the fault's, not
    /// that of a context lost earlier.
    pub(crate) fn kernel_fault(kernels: Vec<String>, source: DriverError) -> CudaError {
        CudaError::KernelFault {
            kernels,
            source: DriverError {
                lost_earlier: false,
                ..source
            },
        }
    }
}

impl ExecError for CudaError {
    /// - [`ErrorKind::DeviceMissing`]: no driver library, or one without a
    ///   function this executor needs;
    /// - [`ErrorKind::NoDevice`]: no device, or not the ordinal asked for;
    /// - [`ErrorKind::KernelFault`]: a kernel faulted (and the context is
    ///   lost with it: [`ExecError::device_lost`]);
    /// - [`ErrorKind::LaunchRefused`]: a geometry or shared memory beyond
    ///   the kernel's or the device's limits;
    /// - [`ErrorKind::AddressUnavailable`]: the recorded address cannot be
    ///   reserved (taken, or no virtual memory management);
    /// - [`ErrorKind::InvalidInput`]: an image the executor cannot load or
    ///   that has no code for the device, a kernel it lacks, a bad name, a
    ///   copy outside its buffer, arguments that do not fit the kernel;
    /// - [`ErrorKind::Io`]: a helper thread that would not start;
    /// - a driver call's failure: its code's kind ([`super::code_kind`]).
    fn kind(&self) -> ErrorKind {
        match self {
            CudaError::DriverNotFound | CudaError::MissingSymbol(_) => ErrorKind::DeviceMissing,
            CudaError::Driver(e) => e.kind(),
            CudaError::NoDevice | CudaError::BadOrdinal { .. } => ErrorKind::NoDevice,
            CudaError::KernelFault { .. } => ErrorKind::KernelFault,
            CudaError::KernelThreadsPerBlock { .. } | CudaError::Geometry(_) => {
                ErrorKind::LaunchRefused
            }
            CudaError::NoVirtualMemory { .. }
            | CudaError::AddressMismatch { .. }
            | CudaError::AddressUnavailable { .. }
            | CudaError::NoPlacement { .. } => ErrorKind::AddressUnavailable,
            CudaError::UnsupportedImage(_)
            | CudaError::JitOptionsNeedPtx(_)
            | CudaError::JitFailed { .. }
            | CudaError::KernelNotFound(_)
            | CudaError::BadName(_)
            | CudaError::SegmentOutOfBounds { .. }
            | CudaError::ArgumentCount { .. }
            | CudaError::ArgumentSize { .. }
            | CudaError::BadArgument { .. }
            | CudaError::NoCodeForDevice { .. } => ErrorKind::InvalidInput,
            CudaError::Thread { .. } => ErrorKind::Io,
        }
    }

    /// [`CudaError::context_lost`]: a kernel fault, or any error whose
    /// driver code a fault leaves behind.
    fn device_lost(&self) -> bool {
        self.context_lost()
    }
}

impl From<GeometryError> for CudaError {
    fn from(e: GeometryError) -> Self {
        CudaError::Geometry(e)
    }
}

/// What faulted: a kernel, the kernel named, or one of those named.
fn faulted(kernels: &[String]) -> String {
    match kernels {
        [] => "a kernel faulted".to_string(),
        [one] => format!("the kernel `{one}` faulted"),
        many => format!("one of the kernels `{}` faulted", many.join("`, `")),
    }
}

/// `" ({description})"`, or nothing for a code without a description.
fn parenthesized(description: &str) -> String {
    if description.is_empty() {
        String::new()
    } else {
        format!(" ({description})")
    }
}

/// The JIT's log on lines of its own, or nothing when it said nothing.
fn jit_log(log: &str) -> String {
    if log.trim().is_empty() {
        String::new()
    } else {
        format!("\nJIT log:\n{}", log.trim_end())
    }
}

/// The operating system's reason, or the standard library's kind when it
/// gave no error number.
fn thread_reason(errno: Option<i32>, io_kind: std::io::ErrorKind) -> String {
    match errno {
        Some(n) => std::io::Error::from_raw_os_error(n).to_string(),
        None => io_kind.to_string(),
    }
}

/// `XxYxZ`.
fn dims(d: &[u32; 3]) -> String {
    format!("{}x{}x{}", d[0], d[1], d[2])
}

/// The threads of a block (in `u128`: three `u32`s never overflow it).
fn threads(block: &[u32; 3]) -> u128 {
    block.iter().fold(1u128, |n, &d| n * u128::from(d))
}
