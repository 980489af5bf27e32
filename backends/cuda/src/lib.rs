//! reprise's CUDA executor: the driver API through [`cudarc`], loaded at run
//! time, so one binary builds and runs everywhere and a machine without an
//! NVIDIA driver gets [`CudaError::DriverNotFound`] instead of a crash.
//!
//! [`cudarc`]: https://docs.rs/cudarc/0.19
//!
//! - [`CudaExecutor`] is one device (its primary context) and implements
//!   [`reprise_core::exec::Executor`];
//! - [`CudaRegion`]: a region reserved at an exact address through the
//!   virtual memory API (reserve, create, map, set access);
//! - [`CudaImage`]/[`CudaKernel`]: PTX, cubins and fat binaries loaded with
//!   `cuModuleLoadData`; globals found by parsing the image ([`ptx`],
//!   [`cubin`]) and sized by `cuModuleGetGlobal`;
//! - [`CudaBuffer`]: page-locked host memory for asynchronous copies;
//! - [`CudaQueue`]: one stream; a synchronize enqueues a host callback
//!   (`cuStreamAddCallback`, which runs even after a device fault, else
//!   `cuLaunchHostFunc`) that only signals a
//!   [`reprise_core::completion::Completion`]. A launch is checked against
//!   the device's limits ([`LaunchLimits`]: threads per block, block and grid
//!   dimensions, shared memory; queried once, when the executor is made), and
//!   for dimensions of 0, so a geometry the device cannot run is a
//!   [`CudaError`] naming the limit rather than the driver's bare
//!   `CUDA_ERROR_INVALID_VALUE`; a launch with
//!   more dynamic shared memory than the kernel may use (by default 48 KiB
//!   less its static shared memory, asked of the driver once per kernel)
//!   first lets the kernel have it (`cuFuncSetAttribute`), once its static
//!   and dynamic shared memory together are known to fit the device. A
//!   kernel that faults is [`CudaError::KernelFault`], naming the kernels
//!   in flight on the device (on any queue of any of its executors, as the
//!   fault spoils the whole context); the driver then fails every later
//!   call with the same code, and those errors say the context was lost to
//!   an earlier fault ([`CudaError::context_lost`] says so of both).
//!
//! ```
//! use reprise_cuda::{CudaError, CudaExecutor};
//! match CudaExecutor::new(0) {
//!     Ok(gpu) => println!("CUDA device {}", gpu.ordinal()),
//!     Err(CudaError::DriverNotFound) => println!("no NVIDIA driver here"),
//!     Err(e) => println!("no CUDA device: {e}"),
//! }
//! ```
//!
//! Lifetimes on the device: a queue keeps the buffers of its copies, the
//! modules of its launches and the modules of the globals its copies read or
//! write until a synchronize has covered them, and its `Drop` waits for the
//! stream; so a module unloads (when its last image or kernel goes and no
//! queue keeps it) without waiting for anything. A region's `Drop`
//! synchronizes the context before unmapping. Errors raised in `Drop` are
//! reported by the next synchronize of any queue of the executor.

pub mod args;
pub mod chunk_hash;
mod context;
pub mod cubin;
mod device;
pub mod error;
mod executor;
mod info;
pub mod jit;
mod memory;
mod module;
mod options;
pub mod ptx;
mod queue;
mod raw;
mod stream;
pub mod targets;

pub use args::PackedArgs;
pub use device::LaunchLimits;
pub use error::{CudaError, DriverError};
pub use executor::CudaExecutor;
pub use info::{CudaImages, global_names};
pub use jit::{Compiled, CompiledKernels, JitLog, JitOption, JitOptions};
pub use memory::{CudaBuffer, CudaRegion, FRESH_ALIGN, SUGGESTED_BASE};
pub use module::{CudaImage, CudaKernel};
pub use options::CudaOptions;
pub use queue::CudaQueue;
pub use raw::abi;

/// Whether the CUDA driver library can be loaded on this machine (it may
/// still have no device).
pub fn driver_present() -> bool {
    !matches!(raw::library(), Err(CudaError::DriverNotFound))
}
