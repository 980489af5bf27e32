//! Shared memory and the device's launch limits: dynamic shared memory up
//! to the opt-in limit over 3-D blocks, static shared memory counted against
//! both limits, and launches beyond a limit refused as typed errors.

use reprise_core::exec::{
    DeviceRegion, Dims, Executor, GeometryError, KernelArgs, Launch, LaunchConfig, Queue,
    RegionRequest,
};
use reprise_cuda::{CudaError, CudaExecutor};

use crate::common::{self, buffer_with, fixture_kernel, gpu, seg, sync, u32s};
use crate::{MIB, read_device, simulated};

/// A launch of the shared_reverse fixture over `data` (`n` words, slices of
/// `per_block`) with `per_block` words of dynamic shared memory.
fn shared_reverse_launch(
    values: &[u64; 3],
    grid: [u32; 3],
    block: [u32; 3],
    per_block: u32,
) -> Launch<'_> {
    Launch {
        config: LaunchConfig {
            grid,
            block,
            shared_mem: 4 * per_block,
        },
        args: KernelArgs {
            values,
            sizes: &[8, 4, 4],
            data: &[],
        },
    }
}

/// `data` with each slice of `per_block` words reversed.
fn reversed_slices(data: &[u32], per_block: usize) -> Vec<u32> {
    data.chunks(per_block)
        .flat_map(|c| c.iter().rev().copied())
        .collect()
}

#[test]
fn dynamic_shared_memory_and_three_dimensional_blocks() {
    let Some((_lock, exec)) = gpu() else { return };
    let optin = exec.launch_limits().shared_optin;
    println!("opt-in limit: {optin} bytes of shared memory per block");
    if simulated() {
        assert_eq!(optin, 227 << 10, "the simulator's limit is an sm_90's");
    }
    reverse_through_shared_memory(&exec);
    if simulated() {
        // Devices that allow less: sm_75 (64 KiB), sm_86 and sm_89 (99 KiB).
        for optin in [64 << 10, 99 << 10] {
            common::sim::set_shared_optin(optin);
            let exec = CudaExecutor::new(0).unwrap();
            assert_eq!(exec.launch_limits().shared_optin, optin);
            reverse_through_shared_memory(&exec);
        }
        common::sim::reset();
    }
}

/// Runs shared_reverse with dynamic shared memory from 4 KiB to the most
/// the device allows, over 3-D grids of 3-D blocks.
fn reverse_through_shared_memory(exec: &CudaExecutor) {
    let region = exec.reserve(RegionRequest::new(None, 4 * MIB)).unwrap();
    let (image, kernel) = fixture_kernel(exec, "shared_reverse.ptx", "shared_reverse");
    let mut q = exec.queue().unwrap();
    // Another handle of the same function: what it allows must not undo
    // what the first allowed.
    let other = exec.kernel(&image, "shared_reverse").unwrap();
    // The most this device gives a block (the fixture has no static shared
    // memory), in words.
    let most = exec.launch_limits().shared_optin / 4;
    let past = (48 << 10) / 4 + 256;
    let mut cases = vec![(&kernel, [3, 2, 2], [8, 8, 4], 1024u32)];
    if most > past + 1 {
        // Past the 48 KiB a kernel gets without opting in; the most (the
        // opt-in is raised again); less through the other handle; the most
        // again.
        cases.extend([
            (&kernel, [2, 2, 2], [8, 4, 2], past),
            (&kernel, [1, 2, 2], [4, 4, 4], most),
            (&other, [2, 1, 1], [16, 2, 2], past + 1),
            (&kernel, [1, 1, 2], [4, 4, 4], most),
        ]);
    } else {
        println!("this device cannot opt in to more than 49 KiB: not tried");
    }
    // (handle, grid, block, words per block); the last slice is short.
    for (kernel, grid, block, per_block) in cases {
        let blocks = grid.iter().product::<u32>() as usize;
        let n = blocks * per_block as usize - 5;
        let data: Vec<u32> = (0..n as u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        q.upload(
            buffer_with(exec, &bytes),
            &[seg(region.base(), 0, bytes.len())],
        )
        .unwrap();
        let values = [region.base(), u64::from(per_block), n as u64];
        q.launch(
            kernel,
            &shared_reverse_launch(&values, grid, block, per_block),
        )
        .unwrap_or_else(|e| panic!("{} bytes of shared memory: {e}", 4 * per_block));
        let got = u32s(&read_device(exec, &mut q, region.base(), bytes.len()));
        assert!(
            got == reversed_slices(&data, per_block as usize),
            "grid {grid:?}, block {block:?}, {per_block} words per block"
        );
    }
}

#[test]
fn launches_beyond_the_device_limits_are_typed_errors() {
    let Some((_lock, exec)) = gpu() else { return };
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (_image, kernel) = fixture_kernel(&exec, "shared_reverse.ptx", "shared_reverse");
    let mut q = exec.queue().unwrap();
    let values = [region.base(), 16, 16];
    let launch = |grid, block, per_block| {
        let mut q2 = exec.queue().unwrap();
        q2.launch(
            &kernel,
            &shared_reverse_launch(&values, grid, block, per_block),
        )
        .and_then(|()| sync(&mut q2))
    };
    let err = launch([1, 1, 1], [2048, 1, 1], 16).unwrap_err();
    assert!(
        matches!(
            err,
            CudaError::Geometry(GeometryError::ThreadsPerBlock { block: [2048, 1, 1], limit })
                if limit >= 1024
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("block 2048x1x1 (2048 threads) exceeds this device's limit of"),
        "{err}"
    );
    let err = launch([1, 1, 1], [1, 1, 128], 16).unwrap_err();
    assert!(
        matches!(
            err,
            CudaError::Geometry(GeometryError::Dimension {
                what: Dims::Block,
                axis: 2,
                limit: 64,
                ..
            })
        ),
        "{err:?}"
    );
    let err = launch([1, 70_000, 1], [1, 1, 1], 16).unwrap_err();
    assert!(
        matches!(
            err,
            CudaError::Geometry(GeometryError::Dimension {
                what: Dims::Grid,
                axis: 1,
                limit: 65535,
                ..
            })
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("grid 1x70000x1"), "{err}");
    // A dimension of 0: a typed error too, not the driver's bare
    // CUDA_ERROR_INVALID_VALUE.
    let err = launch([0, 1, 1], [4, 1, 1], 16).unwrap_err();
    assert_eq!(
        err,
        CudaError::Geometry(GeometryError::ZeroDimension {
            what: Dims::Grid,
            dims: [0, 1, 1]
        })
    );
    assert_eq!(
        err.to_string(),
        "grid 0x1x1: every dimension must be at least 1"
    );
    let err = launch([1, 1, 1], [4, 1, 0], 16).unwrap_err();
    assert!(
        matches!(
            err,
            CudaError::Geometry(GeometryError::ZeroDimension {
                what: Dims::Block,
                dims: [4, 1, 0]
            })
        ),
        "{err:?}"
    );
    // More shared memory than a block may have, even opted in.
    let too_much = 300 << 10;
    let err = launch([1, 1, 1], [1, 1, 1], too_much / 4).unwrap_err();
    println!("{err}");
    match err {
        CudaError::Geometry(GeometryError::SharedMemory {
            static_bytes,
            dynamic_bytes,
            limit,
        }) => {
            assert_eq!((static_bytes, dynamic_bytes), (0, too_much));
            assert!((48 << 10..too_much).contains(&limit), "{limit}");
            assert_eq!(limit, exec.launch_limits().shared_optin);
            if simulated() {
                assert_eq!(limit, 227 << 10);
            }
            let m = err.to_string();
            assert!(
                m.contains(&format!("{too_much} bytes")) && m.contains(&format!("{limit} bytes")),
                "{m}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Nothing reached the device; the queue still works.
    q.launch(
        &kernel,
        &shared_reverse_launch(&values, [1, 1, 1], [4, 2, 2], 16),
    )
    .unwrap();
    sync(&mut q).unwrap();
}

#[test]
fn static_shared_memory_counts_against_both_shared_memory_limits() {
    let Some((_lock, exec)) = gpu() else { return };
    if !simulated() {
        println!("skipped: the fixture has no static shared memory on a real GPU");
        return;
    }
    // As an OpenMP kernel: 16 KiB of static shared memory, so 32 KiB of
    // dynamic shared memory without opting in, 211 KiB opted in.
    common::sim::set_static_shared(16 << 10);
    let region = exec.reserve(RegionRequest::new(None, 4 * MIB)).unwrap();
    let (_image, kernel) = fixture_kernel(&exec, "shared_reverse.ptx", "shared_reverse");
    let mut q = exec.queue().unwrap();
    // (grid, block, words per block): within the 32 KiB; 40 KiB, under the
    // device's 48 KiB but over what this kernel gets without opting in; all
    // that is left of the opt-in limit.
    for (grid, block, per_block) in [
        ([2, 1, 1], [8, 4, 2], 8u32 << 10),
        ([2, 2, 1], [8, 4, 2], 10 << 10),
        ([1, 1, 2], [4, 4, 4], (211 << 10) / 4),
    ] {
        let blocks = grid.iter().product::<u32>() as usize;
        let n = blocks * per_block as usize - 3;
        let data: Vec<u32> = (0..n as u32).map(|i| i ^ 0x5a5a_5a5a).collect();
        let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        q.upload(
            buffer_with(&exec, &bytes),
            &[seg(region.base(), 0, bytes.len())],
        )
        .unwrap();
        let values = [region.base(), u64::from(per_block), n as u64];
        q.launch(
            &kernel,
            &shared_reverse_launch(&values, grid, block, per_block),
        )
        .unwrap_or_else(|e| panic!("16 KiB static, {} dynamic: {e}", 4 * per_block));
        let got = u32s(&read_device(&exec, &mut q, region.base(), bytes.len()));
        assert!(
            got == reversed_slices(&data, per_block as usize),
            "{per_block} words"
        );
    }
    // One word more than fits beside the static shared memory: a typed
    // error naming both, before the driver is asked.
    let values = [region.base(), 16, 16];
    let dynamic = (211 << 10) + 4;
    let err = q
        .launch(
            &kernel,
            &shared_reverse_launch(&values, [1, 1, 1], [4, 1, 1], dynamic / 4),
        )
        .unwrap_err();
    assert_eq!(
        err,
        CudaError::Geometry(GeometryError::SharedMemory {
            static_bytes: 16 << 10,
            dynamic_bytes: dynamic,
            limit: 227 << 10,
        })
    );
    let m = err.to_string();
    for part in [
        "216068 bytes of dynamic",
        "16384 bytes of static",
        "232452 bytes",
        "232448 bytes per block",
    ] {
        assert!(m.contains(part), "{part}: {m}");
    }
    // The queue still works.
    q.launch(
        &kernel,
        &shared_reverse_launch(&values, [1, 1, 1], [4, 1, 1], 16),
    )
    .unwrap();
    sync(&mut q).unwrap();
}
