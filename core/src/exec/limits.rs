//! What one launch may ask of a device ([`LaunchLimits`], filled in by each
//! backend from what its driver reports) and the one check of a launch's
//! geometry against them, with its typed error ([`GeometryError`]).
//!
//! ```
//! use reprise_core::exec::{Dims, GeometryError, LaunchLimits};
//! let gpu = LaunchLimits {
//!     threads_per_block: 1024,
//!     grid: [65535; 3],
//!     ..LaunchLimits::default()
//! };
//! assert_eq!(gpu.check([4, 1, 1], [256, 1, 1]), Ok(()));
//! let e = gpu.check([4, 1, 1], [2048, 1, 1]).unwrap_err();
//! assert_eq!(e, GeometryError::ThreadsPerBlock { block: [2048, 1, 1], limit: 1024 });
//! assert_eq!(
//!     e.to_string(),
//!     "block 2048x1x1 (2048 threads) exceeds this device's limit of 1024 threads per block"
//! );
//! // A 0 is refused whatever the limits.
//! assert_eq!(
//!     LaunchLimits::default().check([0, 1, 1], [1, 1, 1]),
//!     Err(GeometryError::ZeroDimension { what: Dims::Grid, dims: [0, 1, 1] })
//! );
//! ```

use core::fmt;

/// What one launch may ask of a device, as its driver reports it.
///
/// A limit of 0 means the driver did not say (an attribute an old driver
/// does not know, or one the device has not): it is not checked, and the
/// driver has the last word. Not `#[non_exhaustive]`: a backend fills it
/// in with a literal, so a limit added here is one every backend must
/// answer for (with 0 where its driver has no such limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaunchLimits {
    /// Threads (work-items) per block (work-group).
    pub threads_per_block: u32,
    /// Block size per dimension.
    pub block: [u32; 3],
    /// Grid size per dimension, in blocks (CUDA's limit).
    pub grid: [u32; 3],
    /// Grid size per dimension in threads, blocks times block size (HSA's
    /// grid size is counted in work-items).
    pub grid_threads: [u32; 3],
    /// Shared memory per block, static and dynamic together, that a kernel
    /// gets without opting in (CUDA's 48 KiB); the same as `shared_optin`
    /// where a device has no opting in.
    pub shared_default: u32,
    /// Shared memory per block, static and dynamic together, that a kernel
    /// may have at most, opted in where the device needs that (CUDA's
    /// opt-in limit, an AMD work-group's LDS). Never less than
    /// `shared_default` when known.
    pub shared_optin: u32,
}

/// The block or the grid of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dims {
    /// Threads per block.
    Block,
    /// Blocks in the grid.
    Grid,
}

impl Dims {
    /// `"block"` or `"grid"`.
    pub const fn name(self) -> &'static str {
        match self {
            Dims::Block => "block",
            Dims::Grid => "grid",
        }
    }
}

impl fmt::Display for Dims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A launch geometry the device cannot run, found before the launch
/// reaches the driver (which would only say "invalid value").
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeometryError {
    /// A dimension of the block or grid is 0.
    ZeroDimension {
        /// Which.
        what: Dims,
        /// The block or grid asked for.
        dims: [u32; 3],
    },
    /// The block has more threads than the device allows.
    ThreadsPerBlock {
        /// The block asked for.
        block: [u32; 3],
        /// The device's most threads per block.
        limit: u32,
    },
    /// One dimension of the block or grid is larger than the device allows.
    Dimension {
        /// Which.
        what: Dims,
        /// The block or grid asked for.
        dims: [u32; 3],
        /// The dimension over the limit: 0 for x, 1 for y, 2 for z.
        axis: usize,
        /// The device's limit in that dimension.
        limit: u32,
    },
    /// Blocks times block size in one dimension is more threads than the
    /// device's grid may have there.
    GridThreads {
        /// The grid asked for.
        grid: [u32; 3],
        /// The block asked for.
        block: [u32; 3],
        /// The dimension over the limit: 0 for x, 1 for y, 2 for z.
        axis: usize,
        /// The device's limit in threads in that dimension.
        limit: u32,
    },
    /// The kernel's static shared memory and the launch's dynamic shared
    /// memory together are more than a block may have.
    SharedMemory {
        /// The kernel's static shared memory in bytes.
        static_bytes: u32,
        /// Bytes of dynamic shared memory the launch asks for.
        dynamic_bytes: u32,
        /// The most shared memory per block the device allows, static and
        /// dynamic together.
        limit: u32,
    },
}

/// `x`, `y` or `z`.
fn axis_name(axis: usize) -> &'static str {
    ["x", "y", "z"].get(axis).copied().unwrap_or("?")
}

/// `AxBxC`.
struct Shape([u32; 3]);

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [x, y, z] = self.0;
        write!(f, "{x}x{y}x{z}")
    }
}

/// Threads of a block, without overflow.
fn threads(block: [u32; 3]) -> u128 {
    block.iter().fold(1u128, |n, &d| n * u128::from(d))
}

impl fmt::Display for GeometryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            GeometryError::ZeroDimension { what, dims } => write!(
                f,
                "{what} {}: every dimension must be at least 1",
                Shape(dims)
            ),
            GeometryError::ThreadsPerBlock { block, limit } => write!(
                f,
                "block {} ({} threads) exceeds this device's limit of {limit} threads per block",
                Shape(block),
                threads(block)
            ),
            GeometryError::Dimension {
                what,
                dims,
                axis,
                limit,
            } => write!(
                f,
                "{what} {} exceeds this device's limit of {limit} in {}",
                Shape(dims),
                axis_name(axis)
            ),
            GeometryError::GridThreads {
                grid,
                block,
                axis,
                limit,
            } => write!(
                f,
                "grid {} x block {} in {} is {} threads, beyond this device's limit of {limit}",
                grid.get(axis).copied().unwrap_or(0),
                block.get(axis).copied().unwrap_or(0),
                axis_name(axis),
                u64::from(grid.get(axis).copied().unwrap_or(0))
                    * u64::from(block.get(axis).copied().unwrap_or(0))
            ),
            GeometryError::SharedMemory {
                static_bytes: 0,
                dynamic_bytes,
                limit,
            } => write!(
                f,
                "the launch asks for {dynamic_bytes} bytes of dynamic shared memory, more than \
                 this device's limit of {limit} bytes per block"
            ),
            GeometryError::SharedMemory {
                static_bytes,
                dynamic_bytes,
                limit,
            } => write!(
                f,
                "the launch asks for {dynamic_bytes} bytes of dynamic shared memory; with the \
                 kernel's {static_bytes} bytes of static shared memory that is {} bytes, more \
                 than this device's limit of {limit} bytes per block",
                u64::from(static_bytes) + u64::from(dynamic_bytes)
            ),
        }
    }
}

impl core::error::Error for GeometryError {}

impl LaunchLimits {
    /// Checks a launch's geometry against the limits: a dimension of 0 in
    /// the block or the grid first (never valid, whatever the limits), then
    /// the threads of a block (the usual mistake), then each dimension of
    /// the block, of the grid, and of the grid in threads. Shared memory is
    /// checked per kernel ([`LaunchLimits::check_shared`]), which needs the
    /// kernel's static size.
    pub fn check(&self, grid: [u32; 3], block: [u32; 3]) -> Result<(), GeometryError> {
        for (what, dims) in [(Dims::Block, block), (Dims::Grid, grid)] {
            if dims.contains(&0) {
                return Err(GeometryError::ZeroDimension { what, dims });
            }
        }
        if self.threads_per_block > 0 && threads(block) > u128::from(self.threads_per_block) {
            return Err(GeometryError::ThreadsPerBlock {
                block,
                limit: self.threads_per_block,
            });
        }
        for (what, dims, limits) in [
            (Dims::Block, block, self.block),
            (Dims::Grid, grid, self.grid),
        ] {
            for axis in 0..3 {
                if limits[axis] > 0 && dims[axis] > limits[axis] {
                    return Err(GeometryError::Dimension {
                        what,
                        dims,
                        axis,
                        limit: limits[axis],
                    });
                }
            }
        }
        for axis in 0..3 {
            let limit = self.grid_threads[axis];
            if limit > 0 && u64::from(grid[axis]) * u64::from(block[axis]) > u64::from(limit) {
                return Err(GeometryError::GridThreads {
                    grid,
                    block,
                    axis,
                    limit,
                });
            }
        }
        Ok(())
    }

    /// Checks a kernel's static shared memory plus a launch's dynamic shared
    /// memory against `shared_optin`, which bounds the two together.
    pub fn check_shared(&self, static_bytes: u32, dynamic_bytes: u32) -> Result<(), GeometryError> {
        let total = u64::from(static_bytes) + u64::from(dynamic_bytes);
        if self.shared_optin > 0 && total > u64::from(self.shared_optin) {
            return Err(GeometryError::SharedMemory {
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
    extern crate std;
    use super::*;
    use std::string::ToString;

    /// An H200's launch limits.
    const H200: LaunchLimits = LaunchLimits {
        threads_per_block: 1024,
        block: [1024, 1024, 64],
        grid: [i32::MAX as u32, 65535, 65535],
        grid_threads: [0; 3],
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
                .contains(&std::format!("{} threads", u128::from(u32::MAX).pow(3))),
            "{e}"
        );
        assert_eq!(h200.check_shared(16 << 10, 211 << 10), Ok(()));
        assert_eq!(
            h200.check_shared(16 << 10, 212 << 10),
            Err(GeometryError::SharedMemory {
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
                    Err(GeometryError::ZeroDimension {
                        what: Dims::Grid,
                        dims: zero
                    })
                );
                assert_eq!(
                    limits.check([4, 1, 1], zero),
                    Err(GeometryError::ZeroDimension {
                        what: Dims::Block,
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

    #[test]
    fn a_grid_counted_in_threads_is_checked_per_dimension() {
        let gpu = LaunchLimits {
            grid_threads: [u32::MAX, 1 << 16, 1 << 16],
            ..LaunchLimits::default()
        };
        assert_eq!(gpu.check([1 << 20, 1, 1], [1024, 1, 1]), Ok(()));
        let e = gpu.check([1, 1 << 10, 1], [1, 128, 1]).unwrap_err();
        assert_eq!(
            e,
            GeometryError::GridThreads {
                grid: [1, 1 << 10, 1],
                block: [1, 128, 1],
                axis: 1,
                limit: 1 << 16
            }
        );
        assert_eq!(
            e.to_string(),
            "grid 1024 x block 128 in y is 131072 threads, beyond this device's limit of 65536"
        );
        // No overflow in u32.
        assert!(gpu.check([u32::MAX, 1, 1], [2, 1, 1]).is_err());
    }
}
