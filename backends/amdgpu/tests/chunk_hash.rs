//! The chunk-hashing kernel (fixtures/chunk_hash.hip, for
//! device-side hashing) on the simulated HSA runtime, where its C twin runs
//! (test-support's kernels.c, on the same BLAKE3 code as the kernel:
//! blake3_chunks.h): each store chunk of a region hashes to what the chunk
//! store names it, BLAKE3 of its bytes, for store chunks of one BLAKE3
//! chunk or many, a short last one, several chunk sizes, and a launch with
//! fewer work-groups than chunks, which hashes only the first ones.

mod common;

use common::{fixture, synchronize};
use reprise_test_support::hsa_runtime as sim;

use reprise_amdgpu::AmdExecutor;
use reprise_core::exec::{
    DeviceRegion, Executor, KernelArgs, Launch, LaunchConfig, Queue, RegionRequest, Segment,
};

const MIB: u64 = 1 << 20;

fn whole(device: u64, len: usize) -> [Segment; 1] {
    [Segment {
        device,
        host_offset: 0,
        len,
    }]
}

/// Words of the kernel's `out` for `len` bytes in chunks of `chunk`: the
/// hashes, then the scratch (blake3_chunks.h's `b3_out_words`).
fn out_words(len: u64, chunk: u64) -> u64 {
    let n = len.div_ceil(chunk);
    8 * n + 8 * n * chunk.div_ceil(1024).max(1)
}

#[test]
fn each_store_chunk_hashes_on_the_device_as_the_store_names_it() {
    if let Err(why) = sim::available() {
        eprintln!("skipped: {why}");
        return;
    }
    sim::use_in_this_process().unwrap();
    let exec = AmdExecutor::new(0).unwrap();
    let image = exec
        .load_image(&fixture("chunk_hash.gfx90a.hsaco"))
        .unwrap();
    let kernel = exec.kernel(&image, "reprise_chunk_hashes").unwrap();
    let len = 3 * MIB as usize / 2 + 4096 + 77;
    let mut x = 0x2545_f491_4f6c_dd1du64;
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
    let mut b = exec.buffer(len).unwrap();
    b.as_mut().copy_from_slice(&data);
    q.upload(b, &whole(src.base(), len)).unwrap();
    synchronize(&mut q).unwrap();
    while q.reclaim().is_some() {}
    // (chunk size, work-groups: 0 for one per chunk)
    for (chunk, groups) in [
        (4096u64, 0u32),
        (5 * 1024 + 1, 0),
        (64 << 10, 0),
        (MIB, 0),
        (2 * MIB, 0),
        (64 << 10, 3),
    ] {
        let words = out_words(len as u64, chunk);
        let out = exec.reserve(RegionRequest::new(None, 4 * words)).unwrap();
        let chunks = (len as u64).div_ceil(chunk) as usize;
        let launched = if groups == 0 { chunks } else { groups as usize };
        // Zeros where no hash is written.
        let mut zeros = exec.buffer(32 * chunks).unwrap();
        zeros.as_mut().fill(0);
        q.upload(zeros, &whole(out.base(), 32 * chunks)).unwrap();
        let values = [src.base(), len as u64, out.base(), chunk];
        let launch = Launch {
            config: LaunchConfig {
                grid: [launched as u32, 1, 1],
                block: [64, 1, 1],
                shared_mem: 0,
            },
            args: KernelArgs {
                values: &values,
                sizes: &[8, 8, 8, 4],
                data: &[],
            },
        };
        q.launch(&kernel, &launch).unwrap();
        let t = q
            .download(
                exec.buffer(32 * chunks).unwrap(),
                &whole(out.base(), 32 * chunks),
            )
            .unwrap();
        synchronize(&mut q).unwrap();
        let got = std::iter::from_fn(|| q.reclaim())
            .find(|(u, _)| *u == t)
            .expect("the hashes come back")
            .1;
        for (i, (bytes, hash)) in data
            .chunks(chunk as usize)
            .zip(got.as_ref().chunks(32))
            .enumerate()
        {
            let want = if i < launched {
                *blake3::hash(bytes).as_bytes()
            } else {
                [0; 32]
            };
            assert_eq!(
                hash,
                want,
                "chunk {i} of {chunk} bytes ({} bytes)",
                bytes.len()
            );
        }
    }
}
