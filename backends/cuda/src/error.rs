//! Errors: driver result codes with the failing call, and this executor's own
//! failures.

use std::fmt;

use cudarc::driver::sys::CUresult;
use reprise_core::image::ImageKind;

/// The `CUresult` codes that mean a kernel faulted: the driver reports them
/// for the kernel's stream, and then for every later call in the context,
/// which stays unusable until the process exits.
const KERNEL_FAULTS: [CUresult; 9] = [
    CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
    CUresult::CUDA_ERROR_LAUNCH_TIMEOUT,
    CUresult::CUDA_ERROR_ASSERT,
    CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR,
    CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION,
    CUresult::CUDA_ERROR_MISALIGNED_ADDRESS,
    CUresult::CUDA_ERROR_INVALID_ADDRESS_SPACE,
    CUresult::CUDA_ERROR_INVALID_PC,
    CUresult::CUDA_ERROR_LAUNCH_FAILED,
];

/// Whether `code` is one of [`KERNEL_FAULTS`].
fn is_kernel_fault(code: u32) -> bool {
    KERNEL_FAULTS.iter().any(|&c| c as u32 == code)
}

/// A failed driver call: which call, its `CUresult` code, and the code's name
/// and description.
///
/// The name and description come from `cuGetErrorName`/`cuGetErrorString`
/// when the driver is loaded, else from a small built-in table. Made with
/// [`DriverError::from_code`] (a private field keeps struct literals out, so
/// fields can be added without breaking them).
///
/// A code that a kernel fault leaves behind ([`DriverError::context_lost`])
/// ends the message with "(the context was lost to an earlier kernel fault;
/// restart the process)", except in the error underneath the
/// [`CudaError::KernelFault`] that reports the fault itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverError {
    /// The driver function that failed (`"cuModuleLoadData"`); for a
    /// failure the driver reported later, to a stream callback, what failed
    /// (`"work queued on the stream (status handed to the synchronize's
    /// callback)"`).
    pub call: &'static str,
    /// The raw `CUresult` value.
    pub code: u32,
    /// The code's name (`"CUDA_ERROR_INVALID_VALUE"`).
    pub name: &'static str,
    /// What the code means, in the driver's words.
    pub description: &'static str,
    /// Whether the message says the context was lost to an earlier kernel
    /// fault (not that `call` itself went wrong): set for every code
    /// [`DriverError::context_lost`] is true of, cleared in the error
    /// underneath a [`CudaError::KernelFault`], which reports the fault
    /// itself.
    lost_earlier: bool,
}

impl DriverError {
    /// An error for `code` from `call`, named from the built-in table (no
    /// driver needed).
    pub fn from_code(call: &'static str, code: u32) -> Self {
        let (name, description) = code_name(code).unwrap_or(("CUDA_ERROR_UNRECOGNIZED", ""));
        DriverError {
            call,
            code,
            name,
            description,
            lost_earlier: is_kernel_fault(code),
        }
    }

    /// Whether the context is lost: the code is one a kernel fault leaves
    /// behind ([`DriverError::is_kernel_fault`]), and every later call in
    /// the context fails with it until the process restarts. True of the
    /// first error that reports the fault (the one underneath a
    /// [`CudaError::KernelFault`]) as of every later one, so this is what
    /// to check before deciding to restart.
    pub fn context_lost(&self) -> bool {
        self.is_kernel_fault()
    }

    /// Whether the code means a kernel faulted (`CUDA_ERROR_ILLEGAL_ADDRESS`,
    /// `CUDA_ERROR_ILLEGAL_INSTRUCTION`, `CUDA_ERROR_MISALIGNED_ADDRESS`,
    /// `CUDA_ERROR_INVALID_ADDRESS_SPACE`, `CUDA_ERROR_INVALID_PC`,
    /// `CUDA_ERROR_HARDWARE_STACK_ERROR`, `CUDA_ERROR_LAUNCH_FAILED`,
    /// `CUDA_ERROR_LAUNCH_TIMEOUT`, `CUDA_ERROR_ASSERT`): the error is
    /// sticky, and every later call in the context fails with it until the
    /// process exits.
    pub fn is_kernel_fault(&self) -> bool {
        is_kernel_fault(self.code)
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {} ({})", self.call, self.name, self.code)?;
        if !self.description.is_empty() {
            write!(f, ": {}", self.description)?;
        }
        if self.lost_earlier {
            f.write_str(" (the context was lost to an earlier kernel fault; restart the process)")?;
        }
        Ok(())
    }
}

impl std::error::Error for DriverError {}

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
    /// A dimension of the launch's grid or block is 0.
    ZeroDimension {
        /// `"block"` or `"grid"`.
        what: &'static str,
        /// The block or grid asked for.
        dims: [u32; 3],
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
    /// A helper thread could not be started (the operating system's reason).
    Thread(String),
    /// The launch's block has more threads than the device allows
    /// (`CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
    ThreadsPerBlock {
        /// The block asked for.
        block: [u32; 3],
        /// The device's most threads per block.
        limit: u32,
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
    /// One dimension of the launch's block or grid is larger than the device
    /// allows (`CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_*`/`MAX_GRID_DIM_*`).
    LaunchDimension {
        /// `"block"` or `"grid"`.
        what: &'static str,
        /// The block or grid asked for.
        dims: [u32; 3],
        /// The dimension over the limit: 0 for x, 1 for y, 2 for z.
        axis: usize,
        /// The device's limit in that dimension.
        limit: u32,
    },
    /// The kernel's static shared memory and the launch's dynamic shared
    /// memory together are more than a block may have on this device, even
    /// opted in (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`).
    SharedMemory {
        /// The kernel's static shared memory in bytes
        /// (`CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`; OpenMP kernels always
        /// have some).
        static_bytes: u32,
        /// Bytes of dynamic shared memory the launch asks for.
        dynamic_bytes: u32,
        /// The most shared memory per block the device allows, static and
        /// dynamic together.
        limit: u32,
    },
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
            | CudaError::KernelFault { source: e, .. } => Some(e),
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

impl From<DriverError> for CudaError {
    fn from(e: DriverError) -> Self {
        CudaError::Driver(e)
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
            CudaError::ZeroDimension { what, dims: d } => {
                write!(f, "{what} {}: every dimension must be at least 1", dims(d))
            }
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
            CudaError::BadName(name) => write!(f, "the name {name:?} contains a NUL byte"),
            CudaError::Thread(why) => write!(f, "could not start a helper thread: {why}"),
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
            CudaError::ThreadsPerBlock { block, limit } => write!(
                f,
                "block {} ({} threads) exceeds this device's limit of {limit} threads per block",
                dims(block),
                block.iter().fold(1u128, |n, &d| n * u128::from(d))
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
            CudaError::LaunchDimension {
                what,
                dims: d,
                axis,
                limit,
            } => write!(
                f,
                "{what} {} exceeds this device's limit of {limit} in {}",
                dims(d),
                ["x", "y", "z"].get(*axis).unwrap_or(&"?")
            ),
            CudaError::SharedMemory {
                static_bytes: 0,
                dynamic_bytes,
                limit,
            } => write!(
                f,
                "the launch asks for {dynamic_bytes} bytes of dynamic shared memory, more than \
                 this device's limit of {limit} bytes per block"
            ),
            CudaError::SharedMemory {
                static_bytes,
                dynamic_bytes,
                limit,
            } => write!(
                f,
                "the launch asks for {dynamic_bytes} bytes of dynamic shared memory; with the \
                 kernel's {static_bytes} bytes of static shared memory that is {} bytes, more \
                 than this device's limit of {limit} bytes per block",
                u64::from(*static_bytes) + u64::from(*dynamic_bytes)
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

/// Name and description of common `CUresult` codes, for when the driver
/// cannot be asked (it is absent, or does not know the code).
pub fn code_name(code: u32) -> Option<(&'static str, &'static str)> {
    let i = CODES.binary_search_by_key(&code, |c| c.0).ok()?;
    Some((CODES[i].1, CODES[i].2))
}

/// `(code, name, description)`, sorted by code.
const CODES: &[(u32, &str, &str)] = &[
    (0, "CUDA_SUCCESS", "no error"),
    (1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"),
    (2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
    (3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"),
    (4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"),
    (
        34,
        "CUDA_ERROR_STUB_LIBRARY",
        "CUDA driver is a stub library",
    ),
    (
        46,
        "CUDA_ERROR_DEVICE_UNAVAILABLE",
        "CUDA-capable device(s) is/are busy or unavailable",
    ),
    (
        100,
        "CUDA_ERROR_NO_DEVICE",
        "no CUDA-capable device is detected",
    ),
    (101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"),
    (
        200,
        "CUDA_ERROR_INVALID_IMAGE",
        "device kernel image is invalid",
    ),
    (201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"),
    (
        209,
        "CUDA_ERROR_NO_BINARY_FOR_GPU",
        "no kernel image is available for execution on the device",
    ),
    (
        218,
        "CUDA_ERROR_INVALID_PTX",
        "a PTX JIT compilation failed",
    ),
    (
        222,
        "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
        "the provided PTX was compiled with an unsupported toolchain",
    ),
    (400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"),
    (500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"),
    (600, "CUDA_ERROR_NOT_READY", "device not ready"),
    (
        700,
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        "an illegal memory access was encountered",
    ),
    (
        701,
        "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
        "too many resources requested for launch",
    ),
    (
        702,
        "CUDA_ERROR_LAUNCH_TIMEOUT",
        "the launch timed out and was terminated",
    ),
    (710, "CUDA_ERROR_ASSERT", "device-side assert triggered"),
    (
        714,
        "CUDA_ERROR_HARDWARE_STACK_ERROR",
        "hardware stack error",
    ),
    (
        715,
        "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        "an illegal instruction was encountered",
    ),
    (716, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"),
    (
        717,
        "CUDA_ERROR_INVALID_ADDRESS_SPACE",
        "operation not supported on global/shared address space",
    ),
    (718, "CUDA_ERROR_INVALID_PC", "invalid program counter"),
    (
        719,
        "CUDA_ERROR_LAUNCH_FAILED",
        "unspecified launch failure",
    ),
    (800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"),
    (801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"),
    (999, "CUDA_ERROR_UNKNOWN", "unknown error"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_names_common_codes() {
        assert!(CODES.windows(2).all(|w| w[0].0 < w[1].0));
        for (code, name) in [
            (1, "CUDA_ERROR_INVALID_VALUE"),
            (2, "CUDA_ERROR_OUT_OF_MEMORY"),
            (100, "CUDA_ERROR_NO_DEVICE"),
            (200, "CUDA_ERROR_INVALID_IMAGE"),
            (500, "CUDA_ERROR_NOT_FOUND"),
            (700, "CUDA_ERROR_ILLEGAL_ADDRESS"),
            (719, "CUDA_ERROR_LAUNCH_FAILED"),
        ] {
            assert_eq!(code_name(code).map(|c| c.0), Some(name));
        }
        assert_eq!(code_name(12345), None);
    }

    #[test]
    fn driver_error_display_names_call_and_code() {
        let e = DriverError::from_code("cuModuleLoadData", 200);
        assert_eq!(
            e.to_string(),
            "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (200): device kernel image is invalid"
        );
        let u = DriverError::from_code("cuInit", 4242);
        assert_eq!(
            u.to_string(),
            "cuInit failed: CUDA_ERROR_UNRECOGNIZED (4242)"
        );
        assert_eq!(CudaError::from(e).driver(), Some(&e));
    }

    #[test]
    fn messages_name_what_went_wrong() {
        assert_eq!(
            CudaError::DriverNotFound.to_string(),
            "CUDA driver not found (libcuda.so could not be loaded)"
        );
        let m = CudaError::AddressMismatch {
            requested: 0x1539_4000_0000,
            got: 0x7f00_0000_0000,
        }
        .to_string();
        assert!(
            m.contains("0x153940000000") && m.contains("0x7f0000000000"),
            "{m}"
        );
        // Both reasons a driver offers another range, not only the first.
        assert!(
            m.contains("in use in this process") && m.contains("its own address pool"),
            "{m}"
        );
        assert!(m.contains("some drivers ignore address hints"), "{m}");
        let b = CudaError::BadOrdinal {
            ordinal: 3,
            count: 1,
        }
        .to_string();
        assert!(b.contains("device 3") && b.contains("has 1"), "{b}");
        assert!(
            CudaError::KernelNotFound("saxpy".into())
                .to_string()
                .contains("\"saxpy\"")
        );
    }

    #[test]
    fn source_is_the_driver_error_underneath() {
        use std::error::Error;
        let d = DriverError::from_code("cuModuleLoadData", 218);
        let cases = [
            CudaError::Driver(d),
            CudaError::AddressUnavailable {
                requested: 0x1000,
                size: 2 << 20,
                source: d,
            },
            CudaError::NoCodeForDevice {
                device_sm: 75,
                image: "PTX sm_80 (ISA 7.0)".into(),
                source: d,
            },
        ];
        for e in &cases {
            let source = e.source().unwrap_or_else(|| panic!("{e:?} has no source"));
            assert_eq!(source.to_string(), d.to_string());
            // Messages end with their cause, so it is not printed twice.
            assert!(e.to_string().ends_with(&d.to_string()), "{e}");
        }
        assert!(CudaError::NoDevice.source().is_none());
    }

    #[test]
    fn a_kernel_fault_code_says_the_context_was_lost() {
        for code in KERNEL_FAULTS {
            let e = DriverError::from_code("cuMemHostAlloc", code as u32);
            assert!(e.is_kernel_fault() && e.context_lost(), "{code:?}");
            assert_eq!(format!("{code:?}"), e.name, "named from the table");
            assert!(
                e.to_string().ends_with(
                    " (the context was lost to an earlier kernel fault; restart the process)"
                ),
                "{e}"
            );
        }
        assert_eq!(
            DriverError::from_code("cuMemHostAlloc", 700).to_string(),
            "cuMemHostAlloc failed: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory \
             access was encountered (the context was lost to an earlier kernel fault; \
             restart the process)"
        );
        // Errors that leave the context usable say nothing of the sort.
        for code in [1, 2, 201, 600, 701, 4242] {
            let e = DriverError::from_code("cuLaunchKernel", code);
            assert!(!e.is_kernel_fault() && !e.context_lost(), "{code}");
            assert!(!e.to_string().contains("context was lost"), "{e}");
        }
    }

    #[test]
    fn a_kernel_fault_names_the_kernels_and_keeps_the_driver_error() {
        use std::error::Error;
        let d = DriverError::from_code("cuStreamQuery", 700);
        let e = CudaError::kernel_fault(vec!["saxpy".into()], d);
        assert_eq!(
            e.to_string(),
            "the kernel `saxpy` faulted: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access \
             was encountered); the device context is unusable until the process restarts"
        );
        // The error underneath is the call that found the fault, not a
        // context lost earlier.
        let source = e.source().expect("the driver error");
        assert_eq!(
            source.to_string(),
            "cuStreamQuery failed: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access \
             was encountered"
        );
        assert_eq!(
            e.driver().map(|d| (d.call, d.code)),
            Some(("cuStreamQuery", 700))
        );
        let two = CudaError::kernel_fault(
            vec!["a".into(), "b".into()],
            DriverError::from_code("cuStreamQuery", 719),
        );
        assert_eq!(
            two.to_string(),
            "one of the kernels `a`, `b` faulted: CUDA_ERROR_LAUNCH_FAILED (unspecified launch \
             failure); the device context is unusable until the process restarts"
        );
    }

    #[test]
    fn the_context_is_lost_from_the_first_report_of_a_fault_on() {
        // The first report: the fault, named, whose driver error does not
        // repeat the note, yet says the context is lost.
        let first = CudaError::kernel_fault(
            vec!["saxpy".into()],
            DriverError::from_code("cuStreamQuery", 700),
        );
        let source = first.driver().expect("the driver error");
        assert!(!source.to_string().contains("context was lost"), "{source}");
        assert!(source.context_lost() && first.context_lost());
        // Later calls meeting it.
        for code in KERNEL_FAULTS {
            let d = DriverError::from_code("cuMemHostAlloc", code as u32);
            assert!(d.context_lost(), "{code:?}");
            assert!(CudaError::Driver(d).context_lost(), "{code:?}");
            let lost = CudaError::AddressUnavailable {
                requested: 0x1000,
                size: 4096,
                source: d,
            };
            assert!(lost.context_lost(), "{code:?}");
        }
        // A fault named without a driver error to show (never made so, but
        // the variant is public).
        let bare = CudaError::KernelFault {
            kernels: Vec::new(),
            source: DriverError::from_code("cuStreamQuery", 719),
        };
        assert!(bare.context_lost());
        // Errors that leave the context usable.
        for e in [
            CudaError::Driver(DriverError::from_code("cuLaunchKernel", 1)),
            CudaError::Driver(DriverError::from_code("cuMemHostAlloc", 2)),
            CudaError::NoDevice,
            CudaError::DriverNotFound,
            CudaError::ZeroDimension {
                what: "grid",
                dims: [0, 1, 1],
            },
        ] {
            assert!(!e.context_lost(), "{e}");
        }
    }

    #[test]
    fn launch_limits_name_the_launch_and_the_device_limit() {
        let t = CudaError::ThreadsPerBlock {
            block: [2048, 1, 1],
            limit: 1024,
        };
        assert_eq!(
            t.to_string(),
            "block 2048x1x1 (2048 threads) exceeds this device's limit of 1024 threads per block"
        );
        let k = CudaError::KernelThreadsPerBlock {
            kernel: "k".into(),
            block: [256, 1, 1],
            limit: 128,
        };
        assert_eq!(
            k.to_string(),
            "block 256x1x1 (256 threads) exceeds kernel k's limit of 128 threads per block \
             (its launch bounds, or the registers it uses)"
        );
        let d = CudaError::LaunchDimension {
            what: "grid",
            dims: [1, 70000, 1],
            axis: 1,
            limit: 65535,
        };
        assert_eq!(
            d.to_string(),
            "grid 1x70000x1 exceeds this device's limit of 65535 in y"
        );
        let z = CudaError::ZeroDimension {
            what: "grid",
            dims: [0, 1, 1],
        };
        assert_eq!(
            z.to_string(),
            "grid 0x1x1: every dimension must be at least 1"
        );
        let s = CudaError::SharedMemory {
            static_bytes: 0,
            dynamic_bytes: 300 << 10,
            limit: 227 << 10,
        }
        .to_string();
        assert_eq!(
            s,
            "the launch asks for 307200 bytes of dynamic shared memory, more than \
             this device's limit of 232448 bytes per block"
        );
        let s = CudaError::SharedMemory {
            static_bytes: 16 << 10,
            dynamic_bytes: 220 << 10,
            limit: 227 << 10,
        }
        .to_string();
        assert_eq!(
            s,
            "the launch asks for 225280 bytes of dynamic shared memory; with the \
             kernel's 16384 bytes of static shared memory that is 241664 bytes, more \
             than this device's limit of 232448 bytes per block"
        );
    }
}
