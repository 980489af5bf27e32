//! The chunk-hashing kernel a recorder runs to hash a region's store chunks
//! on the device (`RecordConfig::device_hashing` in reprise-std): the PTX
//! of `fixtures/chunk_hash.cu`, its entry point and how to size its output.
//!
//! `reprise_chunk_hashes(src, len, out, chunk_size)` writes into `out` the
//! BLAKE3 hash of each `chunk_size`-byte chunk of `src[0..len)` (the last
//! one shorter), as the chunk store names them: one block per chunk, any
//! number of threads (the contract: `reprise_core::chunk_hash`). The PTX
//! targets sm_80 and later; on the simulated driver its C twin runs.

/// The kernel's PTX (sm_80), as `scripts/gen-ptx-fixtures.sh` makes it.
pub const PTX: &[u8] = include_bytes!("../fixtures/chunk_hash.ptx");

pub use reprise_core::chunk_hash::{KERNEL, out_bytes};

/// Threads per block a launch uses (any number works; each hashes 1 KiB
/// BLAKE3 chunks of its block's store chunk).
pub const THREADS: u32 = 128;

#[cfg(test)]
mod tests {
    #[test]
    fn the_ptx_defines_the_kernel() {
        assert!(
            std::str::from_utf8(super::PTX)
                .unwrap()
                .contains(super::KERNEL)
        );
    }
}
