//! Declarations of the HSA runtime (and AMD's extensions) that reprise's AMD
//! executor uses, loaded at run time.
//!
//! No HSA binding crate is maintained, so these are reprise's own: the
//! types, constants and packet layouts of `hsa.h`/`hsa_ext_amd.h`
//! ([`types`], checked against the header's sizes and offsets by the tests)
//! and a table of entry points resolved with `libloading` from
//! `libhsa-runtime64.so.1` (then `libhsa-runtime64.so`), or from the one
//! file `REPRISE_HSA_LIBRARY` names ([`Hsa::load`]). A missing library or
//! required entry point is a [`LoadError`]; the optional virtual memory
//! entry points (`hsa_amd_vmem_*`, ROCm 6 and later) are looked up and
//! reported ([`Hsa::vmem`], [`Hsa::vmem_missing`]).
//!
//! ```no_run
//! let hsa = hsa_sys::Hsa::load()?;
//! // SAFETY: the entry point takes no arguments.
//! let status = unsafe { (hsa.fns.hsa_init)() };
//! println!("hsa_init: {}", hsa_sys::status::name(status).unwrap_or("unknown status"));
//! # Ok::<(), hsa_sys::LoadError>(())
//! ```

mod library;
pub mod types;

pub use library::{
    AgentCallback, DEFAULT_NAMES, Functions, Hsa, IsaCallback, LIBRARY_VARIABLE, LoadError,
    PoolCallback, QueueErrorCallback, SignalHandler, SystemEventCallback, Vmem,
};
pub use types::*;

#[cfg(test)]
mod tests;
