//! The thin layer over `cudarc::driver::sys`, and the only module that calls
//! its functions: finding the library and its symbols without panicking,
//! turning `CUresult`s into errors, one function per driver call the
//! executor makes, and owners of what the driver makes (the context retain,
//! reservations, device, host and physical memory, modules, streams and
//! events), whose methods are safe.
//!
//! cudarc's dynamic loading panics when the library or a symbol is missing,
//! so nothing here calls a `sys` function before [`library()`] has loaded
//! the library and checked the symbol is there. A safe function takes the
//! [`Library`] that proves it (only [`library()`] makes one), or an owner
//! made with one; an optional symbol is checked before it is called, an
//! image's extent against its slice, a function against its module. What
//! stays `unsafe` is what the types cannot show: that a copy's memory and a
//! launch's module outlive the work enqueued.
//!
//! A call that fails returns a [`Failure`]: the call and its raw code, which
//! a caller may match (`CUDA_ERROR_NOT_FOUND`, `CUDA_ERROR_NOT_READY`, ...)
//! before it becomes a [`DriverError`](crate::DriverError) (with `?`), as only that asks the
//! driver for the code's name and description.
//!
//! - [`abi`]: the driver's C interface, for code that looks it up itself;
//! - [`library`](mod@library): loading the library and checking its symbols;
//! - [`failure`]: the errors of driver calls;
//! - [`device`]: the driver, devices and their primary contexts;
//! - [`memory`]: virtual memory, device and page-locked host allocations,
//!   and copies;
//! - [`host_map`]: host memory at an exact address, mapped for the device;
//! - [`module`]: modules and their functions;
//! - [`stream`]: streams, events, launches and host callbacks.

pub mod abi;
mod device;
mod failure;
mod host_map;
mod library;
mod memory;
mod module;
mod stream;

pub(crate) use device::*;
pub(crate) use failure::{Failure, check};
pub(crate) use host_map::HostMapping;
pub(crate) use library::{Library, library};
pub(crate) use memory::*;
pub(crate) use module::*;
pub(crate) use stream::*;

#[cfg(test)]
mod tests {
    use cudarc::driver::sys;

    use super::failure::driver_error;
    use super::*;
    use crate::error::CudaError;

    #[test]
    fn no_driver_is_a_typed_error() {
        // SAFETY: only tries to load the library.
        if unsafe { sys::is_culib_present() } {
            return;
        }
        assert_eq!(library().unwrap_err(), CudaError::DriverNotFound);
        let e = driver_error("cuInit", sys::CUresult::CUDA_ERROR_NO_DEVICE);
        assert_eq!(e.name, "CUDA_ERROR_NO_DEVICE");
        assert_eq!(e.call, "cuInit");
    }
}
