//! [`CudaError`]: everything the CUDA executor can fail with, and its
//! messages.

use std::fmt;

use reprise_core::exec::{ErrorKind, ExecError, GeometryError};
use reprise_core::image::ImageKind;

use super::DriverError;

/// Everything the CUDA executor can fail with.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CudaError {
    /// `libcuda.so` could not be loaded: no NVIDIA driver on this machine.
    DriverNotFound,
    /// The driver library lacks a function this executor needs (a driver
    /// older than CUDA 12 or a stub library).
    MissingSymbol(&'static str),
    /// A driver call failed.
    Driver(DriverError),
    /// The driver is there but sees no CUDA device.
    NoDevice,
    /// A kernel faulted (an illegal address or instruction, a misaligned
    /// address, a trap, an assertion, a timeout:
    /// [`DriverError::is_kernel_fault`]), as a synchronize, copy or launch
    /// of a queue found. The fault is sticky for the whole device context,
    /// which stays unusable until the process restarts
    /// ([`CudaError::context_lost`]); each queue that meets it reports it
    /// this way once.
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
    BadOrdinal {
        /// The ordinal asked for.
        ordinal: i32,
        /// How many devices there are.
        count: i32,
    },
    /// The device does not support the virtual memory management API, so no
    /// region can be reserved at a chosen address.
    NoVirtualMemory {
        /// The device ordinal.
        ordinal: i32,
    },
    /// The driver reserved a different address range than the one asked for:
    /// the requested range is in use in this process, or the driver places
    /// reservations only in its own address pool and ignores hints outside
    /// it.
    AddressMismatch {
        /// The address asked for.
        requested: u64,
        /// The address the driver offered instead.
        got: u64,
    },
    /// Reserving the requested address range failed outright.
    AddressUnavailable {
        /// The address asked for.
        requested: u64,
        /// Bytes asked for (rounded to the allocation granularity).
        size: u64,
        /// The driver's error.
        source: DriverError,
    },
    /// The image is not PTX, a cubin or a fat binary.
    UnsupportedImage(ImageKind),
    /// The image has no kernel of this name.
    KernelNotFound(String),
    /// JIT options were given for an image that is not PTX: a cubin is
    /// compiled already, and the driver applies no JIT option to it.
    JitOptionsNeedPtx(ImageKind),
    /// The driver's JIT could not compile the PTX with the options given:
    /// its error, the options and its logs (`CU_JIT_ERROR_LOG_BUFFER`,
    /// `CU_JIT_INFO_LOG_BUFFER`).
    JitFailed {
        /// The options given (`MAX_REGISTERS=32`, ...).
        options: String,
        /// The error log, then the info log.
        log: String,
        /// The driver's error.
        source: DriverError,
    },
    /// A kernel or global name contains a NUL byte.
    BadName(String),
    /// A copy segment does not fit its host buffer.
    SegmentOutOfBounds {
        /// Offset plus length of the segment.
        end: usize,
        /// The buffer's length.
        buffer: usize,
    },
    /// The launch passes a different number of arguments than the kernel
    /// takes (known from `cuFuncGetParamInfo`).
    ArgumentCount {
        /// Parameters of the kernel.
        expected: usize,
        /// Arguments given.
        got: usize,
    },
    /// An argument is smaller than the kernel's parameter.
    ArgumentSize {
        /// Argument index.
        index: usize,
        /// The parameter's size in bytes.
        expected: u32,
        /// The argument's size in bytes.
        got: u32,
    },
    /// An argument larger than 8 bytes points outside the argument data.
    BadArgument {
        /// Argument index.
        index: usize,
    },
    /// A helper thread could not be started.
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
    Geometry(GeometryError),
    /// The driver would not load the image, and none of its code is for this
    /// device's architecture.
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
            | CudaError::AddressUnavailable { .. } => ErrorKind::AddressUnavailable,
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

impl From<DriverError> for CudaError {
    fn from(e: DriverError) -> Self {
        CudaError::Driver(e)
    }
}

impl From<GeometryError> for CudaError {
    fn from(e: GeometryError) -> Self {
        CudaError::Geometry(e)
    }
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CudaError::DriverNotFound => {
                f.write_str("CUDA driver not found (libcuda.so could not be loaded)")
            }
            CudaError::MissingSymbol(name) => write!(
                f,
                "the CUDA driver library has no function {name}; a driver for CUDA 12 or later is needed"
            ),
            CudaError::Driver(e) => e.fmt(f),
            CudaError::NoDevice => f.write_str("no CUDA device"),
            CudaError::KernelFault { kernels, source } => {
                match kernels.as_slice() {
                    [] => f.write_str("a kernel faulted")?,
                    [one] => write!(f, "the kernel `{one}` faulted")?,
                    many => {
                        f.write_str("one of the kernels ")?;
                        for (i, k) in many.iter().enumerate() {
                            let sep = if i == 0 { "" } else { ", " };
                            write!(f, "{sep}`{k}`")?;
                        }
                        f.write_str(" faulted")?;
                    }
                }
                write!(f, ": {}", source.name)?;
                if !source.description.is_empty() {
                    write!(f, " ({})", source.description)?;
                }
                f.write_str("; the device context is unusable until the process restarts")
            }
            CudaError::Geometry(e) => e.fmt(f),
            CudaError::BadOrdinal { ordinal, count } => write!(
                f,
                "there is no CUDA device {ordinal}: the machine has {count} (ordinals 0 to {})",
                count - 1
            ),
            CudaError::NoVirtualMemory { ordinal } => write!(
                f,
                "CUDA device {ordinal} does not support virtual memory management, \
                 so no region can be reserved at a chosen address"
            ),
            CudaError::AddressMismatch { requested, got } => write!(
                f,
                "could not reserve recorded virtual address {requested:#x}: \
                 the driver offered {got:#x} instead; either that range is already \
                 in use in this process, or the driver places reservations only in \
                 its own address pool (some drivers ignore address hints)"
            ),
            CudaError::AddressUnavailable {
                requested,
                size,
                source,
            } => write!(
                f,
                "could not reserve recorded virtual address {requested:#x} ({size} bytes): {source}"
            ),
            CudaError::UnsupportedImage(kind) => write!(
                f,
                "the CUDA executor cannot load this image ({kind}); it takes PTX, cubins and fat binaries"
            ),
            CudaError::KernelNotFound(name) => write!(f, "the image has no kernel named {name:?}"),
            CudaError::JitOptionsNeedPtx(kind) => write!(
                f,
                "JIT options apply to PTX only, and this image is {kind}: a cubin is compiled \
                 already, and the driver applies no JIT option to it (record the PTX, or \
                 replay without JIT options)"
            ),
            CudaError::JitFailed {
                options,
                log,
                source,
            } => {
                write!(
                    f,
                    "the driver's JIT could not compile the PTX with {options}: {source}"
                )?;
                if !log.trim().is_empty() {
                    write!(f, "\nJIT log:\n{}", log.trim_end())?;
                }
                Ok(())
            }
            CudaError::BadName(name) => write!(f, "the name {name:?} contains a NUL byte"),
            CudaError::Thread {
                name,
                errno,
                io_kind,
            } => {
                write!(f, "could not start a helper thread ({name}): ")?;
                match errno {
                    Some(n) => std::io::Error::from_raw_os_error(*n).fmt(f),
                    None => io_kind.fmt(f),
                }
            }
            CudaError::NoCodeForDevice {
                device_sm,
                image,
                source,
            } => write!(
                f,
                "the image has no code for this device: the device is sm_{device_sm}, \
                 the image holds {image}: {source}"
            ),
            CudaError::SegmentOutOfBounds { end, buffer } => write!(
                f,
                "a copy reaches byte {end} of a host buffer of {buffer} bytes"
            ),
            CudaError::ArgumentCount { expected, got } => write!(
                f,
                "the kernel takes {expected} parameters but the launch passes {got} arguments"
            ),
            CudaError::ArgumentSize {
                index,
                expected,
                got,
            } => write!(
                f,
                "argument {index} has {got} bytes but the kernel's parameter has {expected}"
            ),
            CudaError::KernelThreadsPerBlock {
                kernel,
                block,
                limit,
            } => write!(
                f,
                "block {} ({} threads) exceeds kernel {kernel}'s limit of {limit} threads per \
                 block (its launch bounds, or the registers it uses)",
                dims(block),
                block.iter().fold(1u128, |n, &d| n * u128::from(d))
            ),
            CudaError::BadArgument { index } => write!(
                f,
                "argument {index} points outside the recorded argument data"
            ),
        }
    }
}

/// `XxYxZ`.
fn dims(d: &[u32; 3]) -> String {
    format!("{}x{}x{}", d[0], d[1], d[2])
}

impl std::error::Error for CudaError {
    /// The driver error underneath, where there is one.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.driver()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
