//! The contract of the chunk-hashing kernel that executors able to run one
//! ship (CUDA's PTX, AMD's code object): its entry point and the size of
//! its output, the same for every executor.
//!
//! `reprise_chunk_hashes(src, len, out, chunk_size)` writes into `out` the
//! BLAKE3 hash of each `chunk_size`-byte chunk of `src[0..len)` (the last
//! one shorter), as a chunk store names them: one block (work-group) per
//! chunk, any number of threads. `out` holds [`out_bytes`] bytes, the
//! hashes (32 bytes each, in order) first, then the kernel's scratch.
//!
//! ```
//! // 3 chunks of 4 KiB (the last short): 3 hashes, 3 x 4 chaining values.
//! assert_eq!(reprise_core::chunk_hash::out_bytes(10_000, 4096), 32 * 3 + 32 * 3 * 4);
//! ```

/// The kernel's entry point.
pub const KERNEL: &str = "reprise_chunk_hashes";

/// Bytes of `out` for `len` bytes in chunks of `chunk_size` (0 is taken
/// as 1): 32 per chunk for the hashes, and 32 per 1 KiB BLAKE3 chunk of
/// each store chunk for the scratch (`b3_out_words` of the kernels'
/// `blake3_chunks.h`, in bytes).
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
        assert_eq!(super::out_bytes(0, 4096), 0);
    }
}
