//! Errors: driver result codes with the failing call, and this executor's own
//! failures.

mod codes;
mod cuda;
#[cfg(test)]
mod tests;

pub use codes::{call_kind, code_kind, code_name};
pub use cuda::CudaError;

use reprise_core::exec::{ErrorKind, ExecError};

use codes::is_kernel_fault;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "{call} failed: {name} ({code}){}{}",
    described(.description),
    if *.lost_earlier { LOST_EARLIER } else { "" }
)]
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

/// `": {description}"`, or nothing for a code without a description.
fn described(description: &str) -> String {
    if description.is_empty() {
        String::new()
    } else {
        format!(": {description}")
    }
}

/// What ends the message of a code a kernel fault left behind.
const LOST_EARLIER: &str =
    " (the context was lost to an earlier kernel fault; restart the process)";

impl ExecError for DriverError {
    /// The code's kind ([`code_kind`]), except that a launch the driver
    /// calls invalid (`CUDA_ERROR_INVALID_VALUE` from `cuLaunchKernel`: a
    /// block, grid or shared memory beyond what the device takes, where
    /// the executor could not check it first) is
    /// [`ErrorKind::LaunchRefused`].
    ///
    /// ```
    /// use reprise_core::exec::{ErrorKind, ExecError};
    /// use reprise_cuda::DriverError;
    /// let launch = DriverError::from_code("cuLaunchKernel", 1);
    /// assert_eq!(launch.kind(), ErrorKind::LaunchRefused);
    /// let copy = DriverError::from_code("cuMemcpyHtoDAsync_v2", 1);
    /// assert_eq!(copy.kind(), ErrorKind::InvalidInput);
    /// ```
    fn kind(&self) -> ErrorKind {
        call_kind(self.call, self.code)
    }

    /// [`DriverError::context_lost`].
    fn device_lost(&self) -> bool {
        self.context_lost()
    }
}
