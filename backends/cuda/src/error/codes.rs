//! What `CUresult` codes are called without asking the driver, and which of
//! them mean a kernel faulted.

use cudarc::driver::sys::CUresult;
use reprise_core::exec::ErrorKind;

/// The `CUresult` codes that mean a kernel faulted: the driver reports them
/// for the kernel's stream, and then for every later call in the context,
/// which stays unusable until the process exits.
pub(super) const KERNEL_FAULTS: [CUresult; 9] = [
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
pub(super) fn is_kernel_fault(code: u32) -> bool {
    KERNEL_FAULTS.iter().any(|&c| c as u32 == code)
}

/// What kind of failure a call that returned `code` is:
///
/// - a code a kernel fault leaves behind (`CUDA_ERROR_ILLEGAL_ADDRESS`
///   and the others [`DriverError::is_kernel_fault`](super::DriverError::is_kernel_fault)
///   lists): [`ErrorKind::DeviceLost`], since the call met a context lost
///   to a fault (the queue that finds the fault itself reports a
///   [`CudaError::KernelFault`](super::CudaError::KernelFault));
/// - `CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES`: [`ErrorKind::LaunchRefused`];
/// - `CUDA_ERROR_OUT_OF_MEMORY`: [`ErrorKind::OutOfMemory`];
/// - no device, an invalid ordinal, a device unavailable:
///   [`ErrorKind::NoDevice`];
/// - a stub driver, one too old: [`ErrorKind::DeviceMissing`];
/// - an invalid value, image, PTX or handle, a symbol not found, no code
///   for the device: [`ErrorKind::InvalidInput`];
/// - the operating system's failure: [`ErrorKind::Io`];
/// - anything else: [`ErrorKind::Other`].
///
/// ```
/// use reprise_core::exec::ErrorKind;
/// use reprise_cuda::error::code_kind;
/// assert_eq!(code_kind(2), ErrorKind::OutOfMemory);
/// assert_eq!(code_kind(701), ErrorKind::LaunchRefused);
/// assert_eq!(code_kind(700), ErrorKind::DeviceLost);
/// ```
pub fn code_kind(code: u32) -> ErrorKind {
    if is_kernel_fault(code) {
        return ErrorKind::DeviceLost;
    }
    match code {
        // CUDA_ERROR_INVALID_VALUE; the image's codes (INVALID_IMAGE,
        // NO_BINARY_FOR_GPU, INVALID_PTX, UNSUPPORTED_PTX_VERSION,
        // JIT_COMPILER_NOT_FOUND); INVALID_SOURCE, FILE_NOT_FOUND,
        // SHARED_OBJECT_SYMBOL_NOT_FOUND, SHARED_OBJECT_INIT_FAILED;
        // INVALID_HANDLE, NOT_FOUND.
        1 | 200 | 209 | 218 | 221 | 222 | 300..=303 | 400 | 500 => ErrorKind::InvalidInput,
        2 => ErrorKind::OutOfMemory,
        // STUB_LIBRARY, INSUFFICIENT_DRIVER, CALL_REQUIRES_NEWER_DRIVER.
        34..=36 => ErrorKind::DeviceMissing,
        // DEVICE_UNAVAILABLE, NO_DEVICE, INVALID_DEVICE.
        46 | 100 | 101 => ErrorKind::NoDevice,
        // OPERATING_SYSTEM.
        304 => ErrorKind::Io,
        701 => ErrorKind::LaunchRefused,
        _ => ErrorKind::Other,
    }
}

/// Name and description of common `CUresult` codes, for when the driver
/// cannot be asked (it is absent, or does not know the code).
pub fn code_name(code: u32) -> Option<(&'static str, &'static str)> {
    let i = CODES.binary_search_by_key(&code, |c| c.0).ok()?;
    Some((CODES[i].1, CODES[i].2))
}

/// `(code, name, description)`, sorted by code.
pub(super) const CODES: &[(u32, &str, &str)] = &[
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

/// What kind of failure `call` returning `code` is: [`code_kind`], except
/// that `CUDA_ERROR_INVALID_VALUE` from a kernel launch (`cuLaunchKernel`,
/// `cuLaunchKernelEx`, `cuLaunchCooperativeKernel`) is the driver refusing
/// the launch's geometry or resources, [`ErrorKind::LaunchRefused`].
///
/// ```
/// use reprise_core::exec::ErrorKind;
/// use reprise_cuda::error::call_kind;
/// assert_eq!(call_kind("cuLaunchKernel", 1), ErrorKind::LaunchRefused);
/// assert_eq!(call_kind("cuModuleGetFunction", 500), ErrorKind::InvalidInput);
/// assert_eq!(call_kind("cuLaunchHostFunc", 1), ErrorKind::InvalidInput);
/// ```
pub fn call_kind(call: &str, code: u32) -> ErrorKind {
    let launch = matches!(
        call,
        "cuLaunchKernel" | "cuLaunchKernelEx" | "cuLaunchCooperativeKernel"
    );
    if launch && code == CUresult::CUDA_ERROR_INVALID_VALUE as u32 {
        ErrorKind::LaunchRefused
    } else {
        code_kind(code)
    }
}
