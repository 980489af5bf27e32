//! Dev-only support for reprise's tests: the simulated CUDA driver
//! ([`cuda_driver`]) and the simulated HSA runtime ([`hsa_runtime`]) that
//! the CUDA and AMD tests run on where there is no GPU. Each is C source
//! beside its module, built with the system C compiler the first time a
//! test asks for it (once per source version, kept in this crate's
//! `OUT_DIR`). The simulators follow what NVIDIA's and AMD's documentation
//! says the driver and runtime do, and cite it.
//!
//! A dev-dependency of the backends and the command line only: nothing
//! that ships links it.

#![allow(missing_docs)]

pub mod cuda_driver;
pub mod hsa_runtime;
