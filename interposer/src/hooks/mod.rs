//! The driver entry points the interposer exports. Each calls the driver's
//! own function first, as the program would have, and records alongside;
//! a failure of the recording turns recording off for the rest of the run
//! (one line on stderr) and never changes what the program's call returns.
//!
//! - [`context`]: `cuInit` and making a context current, where the region
//!   is reserved before the program allocates;
//! - [`memory`]: allocations, served from the region, and what the driver
//!   says about them;
//! - [`modules`]: images and the functions in them;
//! - [`launches`]: kernel launches, recorded when selected, and those that
//!   cannot be (captures, graphs, cooperative and cluster launches).

pub mod context;
pub mod launches;
pub mod memory;
pub mod modules;

pub use context::*;
pub use launches::*;
pub use memory::*;
pub use modules::*;

/// Calls the driver's `$name` (of type `$ty`) with the program's arguments,
/// unchanged; `CUDA_ERROR_NOT_FOUND` when the driver lacks it.
macro_rules! forward {
    ($ty:ty, $name:expr $(, $arg:expr)* $(,)?) => {
        match $crate::driver_fn!($ty, $name) {
            // SAFETY: the program's own call, forwarded unchanged.
            Some(f) => unsafe { f($($arg),*) },
            None => $crate::real::ERROR_NOT_FOUND,
        }
    };
}
pub(crate) use forward;
