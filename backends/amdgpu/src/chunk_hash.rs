//! The chunk-hashing kernel a recorder runs to hash a region's store chunks
//! on the device (`RecordConfig::device_hashing` in reprise-std): the code
//! object of `fixtures/chunk_hash.hip`, its entry point and how to size its
//! output.
//!
//! `reprise_chunk_hashes(src, len, out, chunk_size)` writes into `out` the
//! BLAKE3 hash of each `chunk_size`-byte chunk of `src[0..len)` (the last
//! one shorter), as the chunk store names them: one work-group per chunk,
//! any number of work-items (the contract: `reprise_core::chunk_hash`). A code
//! object is for one processor: this one is for gfx90a, and an agent of
//! another refuses to load it. On the simulated HSA runtime its C twin
//! runs.

/// The kernel's code object (gfx90a), as `scripts/gen-amdgpu-fixtures.sh`
/// makes it.
pub const CODE_OBJECT: &[u8] = include_bytes!("../fixtures/chunk_hash.gfx90a.hsaco");

/// The processor [`CODE_OBJECT`] is for.
pub const TARGET: &str = "gfx90a";

pub use reprise_core::chunk_hash::{KERNEL, out_bytes};

/// Work-items per work-group a launch uses.
pub const THREADS: u32 = 64;

#[cfg(test)]
mod tests {
    #[test]
    fn the_code_object_is_an_elf_naming_the_kernel() {
        assert_eq!(&super::CODE_OBJECT[..4], b"\x7fELF");
        let name = super::KERNEL.as_bytes();
        assert!(super::CODE_OBJECT.windows(name.len()).any(|w| w == name));
    }
}
