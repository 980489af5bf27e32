//! Turning the `CUresult` of a driver call into an error: [`Failure`] (the
//! call and its code, for telling codes apart), then [`DriverError`] (with
//! the code's name and description, which the driver is asked for).

use std::ffi::CStr;

use cudarc::driver::sys;

use super::library::loaded;
use crate::error::{CudaError, DriverError};

/// Reads a static C string the driver returned.
fn driver_str(p: *const std::ffi::c_char) -> Option<&'static str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: `cuGetErrorName`/`cuGetErrorString` return pointers to
    // NUL-terminated strings in the driver's read-only data, which stays
    // mapped for the life of the process (cudarc never unloads the library).
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// The error for a failed `call` that returned `code`.
pub(crate) fn driver_error(call: &'static str, code: sys::CUresult) -> DriverError {
    let mut err = DriverError::from_code(call, code as u32);
    if loaded() {
        let mut name = std::ptr::null();
        let mut desc = std::ptr::null();
        // SAFETY: the library is loaded with both symbols (checked by
        // `library`); both functions only write a pointer through their
        // out-parameter, which points to a live local.
        let (rn, rd) = unsafe {
            (
                sys::cuGetErrorName(code, &mut name),
                sys::cuGetErrorString(code, &mut desc),
            )
        };
        if rn == sys::CUresult::CUDA_SUCCESS {
            err.name = driver_str(name).unwrap_or(err.name);
        }
        if rd == sys::CUresult::CUDA_SUCCESS {
            err.description = driver_str(desc).unwrap_or(err.description);
        }
    }
    err
}

/// `Ok` for `CUDA_SUCCESS`, else the error for `call`.
pub(crate) fn check(call: &'static str, code: sys::CUresult) -> Result<(), DriverError> {
    if code == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(driver_error(call, code))
    }
}

/// A driver call that did not return `CUDA_SUCCESS`: which call (named as
/// errors name it, `"cuMemFree"` for `cuMemFree_v2`) and its code.
///
/// [`Failure::code`] tells codes apart; `?` (or `into`) turns it into the
/// [`DriverError`] (or [`CudaError::Driver`]) [`check`] would have given,
/// asking the driver for the code's name and description then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) struct Failure {
    call: &'static str,
    code: sys::CUresult,
}

impl Failure {
    /// The code the call returned.
    pub(crate) fn code(self) -> sys::CUresult {
        self.code
    }
}

impl From<Failure> for DriverError {
    fn from(f: Failure) -> Self {
        driver_error(f.call, f.code)
    }
}

impl From<Failure> for CudaError {
    fn from(f: Failure) -> Self {
        CudaError::Driver(f.into())
    }
}

/// The [`Failure`] of `call` with `code`, for a call this layer refuses
/// before it reaches the driver.
pub(super) fn refused(call: &'static str, code: sys::CUresult) -> Failure {
    Failure { call, code }
}

/// `Ok` for `CUDA_SUCCESS`, else the [`Failure`] of `call`.
pub(super) fn result(call: &'static str, code: sys::CUresult) -> Result<(), Failure> {
    if code == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Failure { call, code })
    }
}
