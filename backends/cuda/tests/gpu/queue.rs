//! A queue's copies and launches: parameters of mixed sizes, a 2-D grid,
//! segments of buffers, and a synchronize that may be cancelled.

use reprise_core::exec::{
    DeviceRegion, Executor, KernelArgs, Launch, LaunchConfig, Queue, RegionRequest,
};
use reprise_cuda::CudaError;

use crate::common::{buffer_with, f32s, fixture_kernel, gpu, grid2d_launch, seg, sync, u32s};
use crate::{MIB, read_device};

#[test]
fn mixed_parameters_with_sizes_from_the_driver() {
    let Some((_lock, exec)) = gpu() else { return };
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (image, kernel) = fixture_kernel(&exec, "mixed.ptx", "mixed");
    let mut sizes = [0u32; 4];
    let sizes: Vec<u32> = match exec.param_sizes(&kernel, &mut sizes).unwrap() {
        Some(n) => sizes[..n].to_vec(),
        None => vec![4, 4, 16, 8],
    };
    assert_eq!(sizes, [4, 4, 16, 8]);

    let mut q = exec.queue().unwrap();
    let table = exec.global(&image, "table").unwrap().unwrap();
    let table_vals: Vec<u8> = (0..16i32).flat_map(|i| (i * 100).to_le_bytes()).collect();
    q.upload(
        buffer_with(&exec, &table_vals),
        &[seg(table.addr, 0, table_vals.len())],
    )
    .unwrap();

    let (k, s) = (3i32, 0.25f32);
    let (pa, pb, pc, pd) = (1.5f32, 2.0f32, 4.0f32, 7i32);
    let data: Vec<u8> = [
        pa.to_le_bytes(),
        pb.to_le_bytes(),
        pc.to_le_bytes(),
        pd.to_le_bytes(),
    ]
    .concat();
    let out = region.base();
    let values = [k as u64, u64::from(s.to_bits()), 0, out];
    let threads = 64;
    q.launch(
        &kernel,
        &Launch {
            config: LaunchConfig {
                grid: [2, 1, 1],
                block: [32, 1, 1],
                shared_mem: 0,
            },
            args: KernelArgs {
                values: &values,
                sizes: &sizes,
                data: &data,
            },
        },
    )
    .unwrap();
    let got = f32s(&read_device(&exec, &mut q, out, 4 * threads));
    let expected: Vec<f32> = (0..threads as i32)
        .map(|i| (i * k) as f32 + s + pa + pb + pc + pd as f32 + ((i % 16) * 100) as f32)
        .collect();
    assert_eq!(got, expected);

    // A launch with too few arguments is refused before it reaches the
    // driver when the parameter sizes are known.
    if exec.has_param_info() {
        let err = q
            .launch(
                &kernel,
                &Launch {
                    config: LaunchConfig {
                        grid: [1, 1, 1],
                        block: [1, 1, 1],
                        shared_mem: 0,
                    },
                    args: KernelArgs {
                        values: &values[..3],
                        sizes: &sizes[..3],
                        data: &data,
                    },
                },
            )
            .unwrap_err();
        assert_eq!(
            err,
            CudaError::ArgumentCount {
                expected: 4,
                got: 3
            }
        );
    }
}

#[test]
fn grid2d_covers_a_two_dimensional_grid() {
    let Some((_lock, exec)) = gpu() else { return };
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (_image, kernel) = fixture_kernel(&exec, "grid2d.ptx", "grid2d");
    let (w, h) = (37u32, 19u32);
    let values = [region.base(), u64::from(w), u64::from(h)];
    let mut q = exec.queue().unwrap();
    q.launch(
        &kernel,
        &grid2d_launch(&values, [w.div_ceil(8), h.div_ceil(8), 1]),
    )
    .unwrap();
    let got = u32s(&read_device(
        &exec,
        &mut q,
        region.base(),
        (4 * w * h) as usize,
    ));
    for y in 0..h {
        for x in 0..w {
            assert_eq!(got[(y * w + x) as usize], x * 1000 + y, "({x}, {y})");
        }
    }
    assert!(q.last_kernel_time().is_some());
}

#[test]
fn copies_buffers_and_synchronize_is_cancel_safe() {
    let Some((_lock, exec)) = gpu() else { return };
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let mut q = exec.queue().unwrap();
    let zero = exec.buffer(0).unwrap();
    assert!(zero.as_ref().is_empty());
    let data: Vec<u8> = (0..=255).collect();
    // A zero-length segment is skipped; an out-of-bounds one refused.
    let err = q
        .upload(buffer_with(&exec, &data), &[seg(region.base(), 200, 100)])
        .unwrap_err();
    assert_eq!(
        err,
        CudaError::SegmentOutOfBounds {
            end: 300,
            buffer: 256
        }
    );
    let t0 = q.upload(zero, &[seg(region.base(), 0, 0)]).unwrap();
    let t1 = q
        .upload(
            buffer_with(&exec, &data),
            &[
                seg(region.base(), 0, 128),
                seg(region.base() + 4096, 128, 128),
            ],
        )
        .unwrap();
    // Poll once and give up (a cancelled synchronize) ...
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let first = q.poll_synchronize(&mut cx);
    println!("first poll: {first:?}");
    // ... nothing is handed back before a synchronize completed.
    if first.is_pending() {
        assert!(q.reclaim().is_none());
    }
    // The next synchronize finishes the same work with the same host
    // function.
    sync(&mut q).unwrap();
    assert_eq!(q.syncs_enqueued(), 1);
    assert_eq!(q.reclaim().map(|r| r.0), Some(t0));
    let (t, buf) = q.reclaim().unwrap();
    assert_eq!((t, buf.as_ref()), (t1, &data[..]));
    assert!(q.reclaim().is_none());
    // Nothing new: no host function.
    sync(&mut q).unwrap();
    assert_eq!(q.syncs_enqueued(), 1);
    let back = read_device(&exec, &mut q, region.base() + 4096, 128);
    assert_eq!(back, &data[128..]);
    // Dropping the queue with work in flight waits for it.
    q.upload(buffer_with(&exec, &data), &[seg(region.base(), 0, 256)])
        .unwrap();
    drop(q);
    // Queues and buffers work from another thread.
    let exec2 = exec.clone();
    let base = region.base();
    let got = std::thread::spawn(move || {
        let mut q = exec2.queue().unwrap();
        read_device(&exec2, &mut q, base, 256)
    })
    .join()
    .unwrap();
    assert_eq!(got, data);
}
