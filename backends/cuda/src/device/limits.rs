//! What one launch may ask of a device ([`LaunchLimits`]), and the checks
//! made against it before a launch reaches the driver.

use cudarc::driver::sys;

use crate::error::{CudaError, DriverError};
use crate::raw;

/// What one launch may ask of a device, queried once when the executor is
/// made (see [`crate::CudaExecutor::launch_limits`]).
///
/// A limit of 0 means the driver did not say (an attribute an old driver
/// does not know): it is not checked, and the driver has the last word.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaunchLimits {
    /// Threads per block (`CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
    pub threads_per_block: u32,
    /// Block size per dimension (`CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X/Y/Z`).
    pub block: [u32; 3],
    /// Grid size per dimension (`CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X/Y/Z`).
    pub grid: [u32; 3],
    /// Shared memory per block, static and dynamic together, that a kernel
    /// gets without opting in (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK`,
    /// 48 KiB).
    pub shared_default: u32,
    /// Shared memory per block, static and dynamic together, that a kernel
    /// may opt in to (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`:
    /// 64 KiB on sm_75, 99 KiB on sm_86 and sm_89, 163 KiB on sm_80, 227
    /// KiB on sm_90). Never less than `shared_default` when known.
    pub shared_optin: u32,
}

impl LaunchLimits {
    /// Queries the limits of `device`. An attribute the driver will not
    /// report is 0 (unknown), never a failure: a limit is only a check made
    /// ahead of the driver's own.
    ///
    /// # Safety
    ///
    /// The library is loaded and `device` came from `cuDeviceGet` (the
    /// device is being opened).
    pub(super) unsafe fn query(device: sys::CUdevice) -> Self {
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
            shared_default,
            // Devices that cannot opt in report the default; unknown stays
            // unknown (the default is no limit on what opting in gives).
            shared_optin: match get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) {
                0 => 0,
                optin => optin.max(shared_default),
            },
        }
    }

    /// Checks a launch's geometry against the limits: a dimension of 0 in
    /// the block or the grid first (never valid, whatever the limits), then
    /// the threads of a block (the usual mistake), then each dimension of
    /// the block and of the grid. Shared memory is checked per kernel
    /// ([`LaunchLimits::check_shared`]), which needs the kernel's static
    /// size.
    pub(crate) fn check(&self, grid: [u32; 3], block: [u32; 3]) -> Result<(), CudaError> {
        for (what, dims) in [("block", block), ("grid", grid)] {
            if dims.contains(&0) {
                return Err(CudaError::ZeroDimension { what, dims });
            }
        }
        // Saturating: three u32 dimensions can overflow a u64.
        let threads = block
            .iter()
            .fold(1u64, |n, &d| n.saturating_mul(u64::from(d)));
        if self.threads_per_block > 0 && threads > u64::from(self.threads_per_block) {
            return Err(CudaError::ThreadsPerBlock {
                block,
                limit: self.threads_per_block,
            });
        }
        for (what, dims, limits) in [("block", block, self.block), ("grid", grid, self.grid)] {
            for axis in 0..3 {
                if limits[axis] > 0 && dims[axis] > limits[axis] {
                    return Err(CudaError::LaunchDimension {
                        what,
                        dims,
                        axis,
                        limit: limits[axis],
                    });
                }
            }
        }
        Ok(())
    }

    /// Checks a kernel's static shared memory plus a launch's dynamic shared
    /// memory against the opt-in limit, which bounds the two together.
    pub(crate) fn check_shared(
        &self,
        static_bytes: u32,
        dynamic_bytes: u32,
    ) -> Result<(), CudaError> {
        let total = u64::from(static_bytes) + u64::from(dynamic_bytes);
        if self.shared_optin > 0 && total > u64::from(self.shared_optin) {
            return Err(CudaError::SharedMemory {
                static_bytes,
                dynamic_bytes,
                limit: self.shared_optin,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An H200's launch limits.
    const H200: LaunchLimits = LaunchLimits {
        threads_per_block: 1024,
        block: [1024, 1024, 64],
        grid: [i32::MAX as u32, 65535, 65535],
        shared_default: 48 << 10,
        shared_optin: 227 << 10,
    };

    #[test]
    fn a_limit_of_zero_is_not_checked() {
        let unknown = LaunchLimits::default();
        let huge = [u32::MAX; 3];
        assert_eq!(unknown.check(huge, huge), Ok(()));
        assert_eq!(unknown.check_shared(48 << 10, u32::MAX), Ok(()));
        // Known limits are; shared memory counts static and dynamic together.
        let h200 = H200;
        assert_eq!(h200.check([1, 65535, 1], [1024, 1, 1]), Ok(()));
        assert!(h200.check([1, 1, 1], [1, 1, 65]).is_err());
        // Threads counted without overflow.
        let e = h200.check([1, 1, 1], huge).unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("{} threads", u128::from(u32::MAX).pow(3))),
            "{e}"
        );
        assert_eq!(h200.check_shared(16 << 10, 211 << 10), Ok(()));
        assert_eq!(
            h200.check_shared(16 << 10, 212 << 10),
            Err(CudaError::SharedMemory {
                static_bytes: 16 << 10,
                dynamic_bytes: 212 << 10,
                limit: 227 << 10,
            })
        );
        assert!(
            h200.check_shared(u32::MAX, u32::MAX).is_err(),
            "no overflow"
        );
        // Only the unknown dimension goes unchecked.
        let no_z = LaunchLimits {
            block: [1024, 1024, 0],
            ..h200
        };
        assert!(no_z.check([1, 1, 1], [1, 1, 1 << 20]).is_err(), "threads");
        assert_eq!(no_z.check([1, 1, 1], [1, 1, 512]), Ok(()));
    }

    #[test]
    fn a_dimension_of_zero_is_refused_whatever_the_limits() {
        let h200 = H200;
        for limits in [LaunchLimits::default(), h200] {
            for axis in 0..3 {
                let mut zero = [1; 3];
                zero[axis] = 0;
                assert_eq!(
                    limits.check(zero, [256, 1, 1]),
                    Err(CudaError::ZeroDimension {
                        what: "grid",
                        dims: zero
                    })
                );
                assert_eq!(
                    limits.check([4, 1, 1], zero),
                    Err(CudaError::ZeroDimension {
                        what: "block",
                        dims: zero
                    })
                );
            }
        }
        // Before any limit: a zero grid is named even beside a block over
        // the limit.
        assert_eq!(
            h200.check([0, 1, 1], [2048, 1, 1]).unwrap_err().to_string(),
            "grid 0x1x1: every dimension must be at least 1"
        );
    }
}
