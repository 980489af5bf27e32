//! What one launch may ask of a CUDA device: the core's [`LaunchLimits`],
//! filled in from the driver's device attributes, and the core's
//! [`GeometryError`] as a [`CudaError`]. The checks themselves are the
//! core's ([`LaunchLimits::check`], [`LaunchLimits::check_shared`]).

use cudarc::driver::sys;
pub use reprise_core::exec::LaunchLimits;
use reprise_core::exec::{Dims, GeometryError};

use crate::error::{CudaError, DriverError};
use crate::raw;

/// Queries the launch limits of `device` (see
/// [`crate::CudaExecutor::launch_limits`]). An attribute the driver will
/// not report is 0 (unknown), never a failure: a limit is only a check
/// made ahead of the driver's own. CUDA counts its grid in blocks, so
/// `grid_threads` is 0.
///
/// # Safety
///
/// The library is loaded and `device` came from `cuDeviceGet` (the device
/// is being opened).
pub(super) unsafe fn query(device: sys::CUdevice) -> LaunchLimits {
    use sys::CUdevice_attribute as A;
    // SAFETY: the library is loaded and `device` came from cuDeviceGet
    // (the caller's contract).
    let get = |attr| match unsafe { raw::device_get_attribute(device, attr) } {
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

/// `"block"` or `"grid"` back to the core's [`Dims`].
fn dims_of(what: &str) -> Dims {
    if what == Dims::Block.name() {
        Dims::Block
    } else {
        Dims::Grid
    }
}

impl From<GeometryError> for CudaError {
    /// The core's geometry error as the CUDA executor's variants (which
    /// predate it and which callers match on); one the CUDA executor has
    /// no variant of is [`CudaError::Geometry`].
    fn from(e: GeometryError) -> Self {
        match e {
            GeometryError::ZeroDimension { what, dims } => CudaError::ZeroDimension {
                what: what.name(),
                dims,
            },
            GeometryError::ThreadsPerBlock { block, limit } => {
                CudaError::ThreadsPerBlock { block, limit }
            }
            GeometryError::Dimension {
                what,
                dims,
                axis,
                limit,
            } => CudaError::LaunchDimension {
                what: what.name(),
                dims,
                axis,
                limit,
            },
            GeometryError::SharedMemory {
                static_bytes,
                dynamic_bytes,
                limit,
            } => CudaError::SharedMemory {
                static_bytes,
                dynamic_bytes,
                limit,
            },
            e => CudaError::Geometry(e),
        }
    }
}

impl CudaError {
    /// The core's geometry error this is, if it is one (its message is the
    /// core's).
    pub fn geometry(&self) -> Option<GeometryError> {
        Some(match *self {
            CudaError::ZeroDimension { what, dims } => GeometryError::ZeroDimension {
                what: dims_of(what),
                dims,
            },
            CudaError::ThreadsPerBlock { block, limit } => {
                GeometryError::ThreadsPerBlock { block, limit }
            }
            CudaError::LaunchDimension {
                what,
                dims,
                axis,
                limit,
            } => GeometryError::Dimension {
                what: dims_of(what),
                dims,
                axis,
                limit,
            },
            CudaError::SharedMemory {
                static_bytes,
                dynamic_bytes,
                limit,
            } => GeometryError::SharedMemory {
                static_bytes,
                dynamic_bytes,
                limit,
            },
            CudaError::Geometry(e) => e,
            _ => return None,
        })
    }
}

// The checks' own tests (a limit of 0 is not checked, a dimension of 0 is
// refused whatever the limits) moved with them to the core's `exec::limits`.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_geometry_error_converts_both_ways_with_the_cores_message() {
        let errors = [
            GeometryError::ZeroDimension {
                what: Dims::Grid,
                dims: [0, 1, 1],
            },
            GeometryError::ZeroDimension {
                what: Dims::Block,
                dims: [1, 0, 1],
            },
            GeometryError::ThreadsPerBlock {
                block: [2048, 1, 1],
                limit: 1024,
            },
            GeometryError::Dimension {
                what: Dims::Grid,
                dims: [1, 70000, 1],
                axis: 1,
                limit: 65535,
            },
            GeometryError::SharedMemory {
                static_bytes: 1,
                dynamic_bytes: 227 << 10,
                limit: 227 << 10,
            },
            GeometryError::GridThreads {
                grid: [2, 1, 1],
                block: [2, 1, 1],
                axis: 0,
                limit: 3,
            },
        ];
        for e in errors {
            let cuda = CudaError::from(e);
            assert_eq!(cuda.geometry(), Some(e), "{cuda:?}");
            assert_eq!(cuda.to_string(), e.to_string());
        }
        assert_eq!(CudaError::NoDevice.geometry(), None);
    }
}
