//! The chunk-hashing kernel a recorder runs to hash a region's store chunks
//! on the device (`RecordConfig::device_hashing` in reprise-std): the PTX
//! of `fixtures/chunk_hash.cu`, its entry point and how to size its output.
//!
//! `reprise_chunk_hashes(src, len, out, chunk_size)` writes into `out` the
//! BLAKE3 hash of each `chunk_size`-byte chunk of `src[0..len)` (the last
//! one shorter), as the chunk store names them: one block per chunk, any
//! number of threads. `out` holds [`out_bytes`] bytes, the hashes (32 bytes
//! each, in order) first, then the kernel's scratch. The PTX targets sm_80
//! and later; on the simulated driver its C twin runs.

/// The kernel's PTX (sm_80), as `scripts/gen-ptx-fixtures.sh` makes it.
pub const PTX: &[u8] = include_bytes!("../fixtures/chunk_hash.ptx");

/// The kernel's entry point in [`PTX`].
pub const KERNEL: &str = "reprise_chunk_hashes";

/// Threads per block a launch uses (any number works; each hashes 1 KiB
/// BLAKE3 chunks of its block's store chunk).
pub const THREADS: u32 = 128;

/// Bytes of `out` for `len` bytes in chunks of `chunk_size` (more than 0):
/// 32 per chunk for the hashes, and 32 per 1 KiB BLAKE3 chunk of each
/// store chunk for the scratch (`b3_out_words` of blake3_chunks.h, in
/// bytes).
pub fn out_bytes(len: u64, chunk_size: u32) -> u64 {
    let chunk = u64::from(chunk_size.max(1));
    let n = len.div_ceil(chunk);
    32 * n + 32 * n * chunk.div_ceil(1024).max(1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_output_holds_the_hashes_and_the_scratch() {
        // 3 chunks of 4 KiB (the last short): 3 hashes, 3 x 4 chaining values.
        assert_eq!(super::out_bytes(10_000, 4096), 32 * 3 + 32 * 3 * 4);
        // A chunk smaller than a BLAKE3 chunk still has one scratch slot.
        assert_eq!(super::out_bytes(100, 64), 32 * 2 + 32 * 2);
        assert!(
            std::str::from_utf8(super::PTX)
                .unwrap()
                .contains(super::KERNEL)
        );
    }
}
