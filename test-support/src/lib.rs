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

/// FNV-1a of a simulator's sources (`(file name, text)`), its build recipe
/// and the build's defines: an edited simulator, or one built otherwise,
/// gets a directory of its own.
pub(crate) fn source_hash(sources: &[(&str, &str)], recipe: &str, defines: &[&str]) -> u64 {
    let bytes = sources
        .iter()
        .flat_map(|(name, text)| name.bytes().chain(text.bytes()))
        .chain(recipe.bytes())
        .chain(defines.iter().flat_map(|d| d.bytes()));
    bytes.fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
