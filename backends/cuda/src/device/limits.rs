//! What one launch may ask of a CUDA device: the core's [`LaunchLimits`],
//! filled in from the driver's device attributes. The checks themselves are
//! the core's ([`LaunchLimits::check`], [`LaunchLimits::check_shared`]); what
//! they refuse is a [`CudaError::Geometry`](crate::CudaError::Geometry).

use cudarc::driver::sys;
pub use reprise_core::exec::LaunchLimits;

use crate::error::DriverError;
use crate::raw::{self, Library};

/// Queries the launch limits of `device` (see
/// [`crate::CudaExecutor::launch_limits`]). An attribute the driver will
/// not report is 0 (unknown), never a failure: a limit is only a check
/// made ahead of the driver's own. CUDA counts its grid in blocks, so
/// `grid_threads` is 0.
pub(super) fn query(lib: &Library, device: sys::CUdevice) -> LaunchLimits {
    use sys::CUdevice_attribute as A;
    let get = |attr| match raw::device_get_attribute(lib, device, attr) {
        Ok(v) => v.max(0) as u32,
        Err(f) => {
            let e = DriverError::from(f);
            log::debug!("{attr:?} unknown, not checked: {e}");
            0
        }
    };
    let shared_default = get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    LaunchLimits {
        threads_per_block: get(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
        block: [
            get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
            get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
            get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z),
        ],
        grid: [
            get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
            get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
            get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z),
        ],
        grid_threads: [0; 3],
        // `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK`, 48 KiB.
        shared_default,
        // `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`: 64 KiB on
        // sm_75, 99 KiB on sm_86 and sm_89, 163 KiB on sm_80, 227 KiB on
        // sm_90. Devices that cannot opt in report the default; unknown
        // stays unknown (the default is no limit on what opting in gives).
        shared_optin: match get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) {
            0 => 0,
            optin => optin.max(shared_default),
        },
    }
}

// The checks' own tests (a limit of 0 is not checked, a dimension of 0 is
// refused whatever the limits) moved with them to the core's `exec::limits`.
