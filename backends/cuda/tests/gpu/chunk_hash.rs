//! The chunk-hashing kernel (fixtures/chunk_hash.cu, for device-side
//! hashing): on the device, each store chunk of a region hashes to what the
//! chunk store names it, BLAKE3 of its bytes, for store chunks of one
//! BLAKE3 chunk or many, a short last one, and several chunk sizes. On the
//! simulated driver its C twin runs (test-support's kernels.c, on the same
//! BLAKE3 code as the kernel: blake3_chunks.h).

use reprise_core::exec::{
    DeviceRegion, Executor, KernelArgs, Launch, LaunchConfig, Queue, RegionRequest,
};

use crate::common::{buffer_with, fixture_kernel, gpu, seg, sync};
use crate::{MIB, read_device};

/// Words of the kernel's `out` for `len` bytes in chunks of `chunk`: the
/// hashes, then the scratch (blake3_chunks.h's `b3_out_words`).
fn out_words(len: u64, chunk: u64) -> u64 {
    let n = len.div_ceil(chunk);
    8 * n + 8 * n * chunk.div_ceil(1024).max(1)
}

#[test]
fn each_store_chunk_hashes_on_the_device_as_the_store_names_it() {
    let Some((_lock, exec)) = gpu() else {
        return;
    };
    let (_image, kernel) = fixture_kernel(&exec, "chunk_hash.ptx", "reprise_chunk_hashes");
    // Bytes that are no pattern a shortcut could get right: an xorshift.
    let len = 3 * MIB as usize / 2 + 4096 + 77;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let data: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let src = exec.reserve(RegionRequest::new(None, 2 * MIB)).unwrap();
    let mut q = exec.queue().unwrap();
    q.upload(buffer_with(&exec, &data), &[seg(src.base(), 0, len)])
        .unwrap();
    sync(&mut q).unwrap();
    while q.reclaim().is_some() {}
    // 4 KiB (four BLAKE3 chunks: a tree of two levels), 5 KiB + 1 (six:
    // an odd carry), 64 KiB, 1 MiB (the default), and one chunk of it all.
    for chunk in [4096u64, 5 * 1024 + 1, 64 << 10, MIB, 2 * MIB] {
        let words = out_words(len as u64, chunk);
        let out = exec.reserve(RegionRequest::new(None, 4 * words)).unwrap();
        let chunks = (len as u64).div_ceil(chunk);
        let values = [src.base(), len as u64, out.base(), chunk];
        let launch = Launch {
            config: LaunchConfig {
                grid: [chunks as u32, 1, 1],
                block: [128, 1, 1],
                shared_mem: 0,
            },
            args: KernelArgs {
                values: &values,
                sizes: &[8, 8, 8, 4],
                data: &[],
            },
        };
        q.launch(&kernel, &launch).unwrap();
        sync(&mut q).unwrap();
        let got = read_device(&exec, &mut q, out.base(), 32 * chunks as usize);
        for (i, (bytes, hash)) in data.chunks(chunk as usize).zip(got.chunks(32)).enumerate() {
            assert_eq!(
                hash,
                blake3::hash(bytes).as_bytes(),
                "chunk {i} of {chunk} bytes ({} bytes)",
                bytes.len()
            );
        }
    }
}
