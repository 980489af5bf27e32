//! reprise's AMD GPU executor, on the HSA runtime through [`hsa_sys`]
//! (loaded at run time, so the executor builds everywhere and a machine
//! without the runtime or a GPU gets a typed error).
//!
//! - [`AmdExecutor`]: regions, code objects, kernels, globals, staging
//!   buffers, queues;
//! - [`AmdQueue`]: AQL kernel dispatch and asynchronous copies chained by
//!   signals, one wait per synchronize through an asynchronous signal
//!   handler;
//! - [`code_object`]: reading AMDGPU code objects (target, kernels and
//!   their arguments, variables) without a GPU;
//! - [`AmdError`]: what goes wrong, with HSA status names.

mod args;
pub mod chunk_hash;
pub mod code_object;
mod error;
mod executor;
mod fault;
mod image;
mod info;
mod memory;
mod queue;
mod runtime;

pub use error::{AmdError, HsaError, status_name};
pub use executor::AmdExecutor;
pub use image::{AmdImage, AmdKernel};
pub use info::AmdImages;
pub use memory::{AmdBuffer, AmdRegion, FRESH_BASE};
pub use queue::AmdQueue;
