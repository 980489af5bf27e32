//! Shared memory and launch geometry against the device's limits:
//! dynamic and static shared memory over 3-D grids, a block beyond the
//! device's limit, and dimensions of zero, each refusal naming the limit.

use std::path::PathBuf;

use reprise::{Args, CudaExecutor, LaunchConfig, Recorder};

use crate::common::*;
use crate::{SAXPY, SHARED_REVERSE, config, record_saxpy, replay_ok, replay_with, simulated};

/// Records one launch of the shared_reverse fixture (each block reverses
/// its slice of `per_block` words through dynamic shared memory of that
/// size) over a 3-D grid of 3-D blocks; checks the kernel ran and returns
/// the capture.
fn record_shared_reverse(
    gpu: CudaExecutor,
    dir: &std::path::Path,
    grid: [u32; 3],
    block: [u32; 3],
    per_block: u32,
) -> PathBuf {
    let blocks = grid.iter().product::<u32>();
    // The last slice is short.
    let n = blocks * per_block - 3;
    let mut rec = Recorder::new(gpu, 0, config(dir)).unwrap();
    let data = rec.alloc(u64::from(n) * 4, 256).unwrap();
    let values: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    rec.upload(data, &bytes).unwrap();
    let image = rec.load_image(SHARED_REVERSE).unwrap();
    let k = rec.kernel(image, "shared_reverse").unwrap();
    let geometry = LaunchConfig {
        grid,
        block,
        shared_mem: 4 * per_block,
    };
    let args = Args::new().ptr(data).i32(per_block as i32).i32(n as i32);
    let written = reprise::block_on(async {
        rec.launch(&k, geometry, &args).await.unwrap();
        let out = rec.download(data, bytes.len()).await.unwrap();
        let want: Vec<u8> = values
            .chunks(per_block as usize)
            .flat_map(|c| c.iter().rev().flat_map(|v| v.to_le_bytes()))
            .collect();
        assert!(out == want, "the kernel did not reverse the slices");
        rec.finish().await.unwrap()
    });
    written.into_iter().next().expect("one capture")
}

#[test]
fn dynamic_shared_memory_and_three_dimensional_geometry_replay() {
    let Some(gpu) = gpu() else { return };
    // 4 KiB of shared memory; up to 64 KiB, more than a kernel gets without
    // opting in (48 KiB), which the replaying process must opt in to again,
    // within what this device allows (64 KiB on sm_75, 99 KiB on sm_86/89).
    let most = gpu.launch_limits().shared_optin / 4;
    let mut cases = vec![([3, 2, 2], [8, 8, 4], 1024)];
    if most > (48 << 10) / 4 {
        cases.push(([2, 2, 2], [8, 4, 2], most.min(16 << 10)));
    } else {
        eprintln!("this device cannot opt in to more than 48 KiB: not tried");
    }
    for (grid, block, per_block) in cases {
        let dir = tempfile::tempdir().unwrap();
        let capture = record_shared_reverse(gpu.clone(), dir.path(), grid, block, per_block);
        let c = reprise::Capture::open(&capture).unwrap();
        assert_eq!((c.record.grid, c.record.block), (grid, block));
        assert_eq!(c.record.shared_mem, 4 * per_block);
        replay_ok(&capture, &[]);
        let out = reprise(&["inspect", s(&capture)]);
        assert_exit(&out, 0);
        let want = format!("block {} x {} x {}", block[0], block[1], block[2]);
        assert!(text(&out).0.contains(&want), "{}", text(&out).0);
    }
}

#[test]
fn static_shared_memory_of_the_replayed_kernel_counts_against_the_limits() {
    // The simulator gives the replaying process's kernels 16 KiB of static
    // shared memory (as OpenMP kernels always have some).
    let Some(gpu) = simulated() else { return };
    let static_shared = [("REPRISE_SIM_CUDA_STATIC_SHARED", "16384")];
    // 40 KiB of dynamic shared memory: under the device's 48 KiB, but over
    // the 32 KiB left beside the static 16 KiB, so the replay must opt in.
    let dir = tempfile::tempdir().unwrap();
    let capture = record_shared_reverse(gpu.clone(), dir.path(), [2, 1, 2], [8, 4, 2], 10 << 10);
    let out = replay_with(&capture, &static_shared);
    let (stdout, stderr) = text(&out);
    assert_exit(&out, 0);
    assert!(stdout.contains("verification: PASS"), "{stdout}{stderr}");
    // 220 KiB fits the opt-in limit (227 KiB) alone, not beside 16 KiB:
    // an error naming both, not the driver's bare answer.
    let dir = tempfile::tempdir().unwrap();
    let capture = record_shared_reverse(gpu, dir.path(), [1, 1, 1], [4, 4, 4], 55 << 10);
    let out = replay_with(&capture, &static_shared);
    assert_error(
        &out,
        &[
            "225280 bytes of dynamic shared memory",
            "16384 bytes of static shared memory",
            "232448 bytes per block",
            s(&capture),
        ],
    );
    assert!(
        !text(&out).1.contains("CUDA_ERROR_INVALID_VALUE"),
        "{}",
        text(&out).1
    );
}

#[test]
fn a_block_beyond_the_device_limit_is_named_with_the_limit() {
    let Some(gpu) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let capture = record_saxpy(gpu, dir.path());
    let out = reprise(&[
        "replay",
        "--backend",
        "cuda",
        "--num-threads",
        "2048",
        s(&capture),
    ]);
    assert_error(
        &out,
        &[
            "block 2048x1x1 (2048 threads) exceeds this device's limit of 1024 threads per block",
            s(&capture),
        ],
    );
    // Not the driver's bare answer.
    assert!(
        !text(&out).1.contains("CUDA_ERROR_INVALID_VALUE"),
        "{}",
        text(&out).1
    );
}

#[test]
fn a_grid_or_block_dimension_of_zero_is_named() {
    let Some(gpu) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Recorder::new(gpu, 0, config(dir.path())).unwrap();
    let x = rec.alloc(4096, 256).unwrap();
    let image = rec.load_image(SAXPY).unwrap();
    let k = rec.kernel(image, "saxpy").unwrap();
    let args = Args::new().f32(2.0).ptr(x).ptr(x).i32(1024);
    for (grid, block, want) in [
        (
            [0, 1, 1],
            [256, 1, 1],
            "grid 0x1x1: every dimension must be at least 1",
        ),
        (
            [4, 1, 1],
            [256, 0, 1],
            "block 256x0x1: every dimension must be at least 1",
        ),
    ] {
        let geometry = LaunchConfig {
            grid,
            block,
            shared_mem: 0,
        };
        let err = reprise::block_on(rec.launch(&k, geometry, &args)).expect_err(want);
        assert!(err.to_string().contains(want), "{err}");
        // Not the driver's bare answer.
        assert!(
            !err.to_string().contains("CUDA_ERROR_INVALID_VALUE"),
            "{err}"
        );
    }
}
