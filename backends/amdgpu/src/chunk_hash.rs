//! The chunk-hashing kernel a recorder runs to hash a region's store chunks
//! on the device (`RecordConfig::device_hashing` in reprise-std): the code
//! object of `fixtures/chunk_hash.hip`, its entry point and how to size its
//! output.
//!
//! `reprise_chunk_hashes(src, len, out, chunk_size)` writes into `out` the
//! BLAKE3 hash of each `chunk_size`-byte chunk of `src[0..len)` (the last
//! one shorter), as the chunk store names them: one work-group per chunk,
//! any number of work-items. `out` holds [`out_bytes`] bytes, the hashes
//! (32 bytes each, in order) first, then the kernel's scratch. A code
//! object is for one processor: this one is for gfx90a, and an agent of
//! another refuses to load it. On the simulated HSA runtime its C twin
//! runs.

/// The kernel's code object (gfx90a), as `scripts/gen-amdgpu-fixtures.sh`
/// makes it.
pub const CODE_OBJECT: &[u8] = include_bytes!("../fixtures/chunk_hash.gfx90a.hsaco");

/// The processor [`CODE_OBJECT`] is for.
pub const TARGET: &str = "gfx90a";

/// The kernel's entry point in [`CODE_OBJECT`].
pub const KERNEL: &str = "reprise_chunk_hashes";

/// Work-items per work-group a launch uses.
pub const THREADS: u32 = 64;

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
        assert_eq!(super::out_bytes(10_000, 4096), 32 * 3 + 32 * 3 * 4);
        assert_eq!(super::out_bytes(100, 64), 32 * 2 + 32 * 2);
        // An ELF code object naming its kernel.
        assert_eq!(&super::CODE_OBJECT[..4], b"\x7fELF");
        let name = super::KERNEL.as_bytes();
        assert!(super::CODE_OBJECT.windows(name.len()).any(|w| w == name));
    }
}
