//! Device-side staging: the same snapshots through the shadow buffer, and
//! queues and shadows kept alive for the copies that still use them.

use reprise_core::exec::{DeviceRegion, Executor, Queue};
use reprise_core::schedule::Mode;
use reprise_cuda::CudaExecutor;

use crate::common::{self, buffer_with, fixture_kernel, gpu, grid2d_launch, seg, sync};
use crate::saxpy::Saxpy;
use crate::{MIB, reserve, simulated};

#[test]
fn device_staging_takes_the_same_snapshots() {
    let Some((_lock, exec)) = gpu() else { return };
    let s = Saxpy::new(&exec, None);
    let (plain, _, _) = s.record(&exec, Mode::Async);
    let Some(staged_exec) = staged(&exec, 1024) else {
        return;
    };
    // On the simulator, copies out of the device delayed at random make the
    // two streams overlap unpredictably: over several rounds a missing
    // dependency between them shows.
    common::sim::set_copy_delay_us(2000);
    // (A missing wait of the synchronize for the drain goes unseen in a
    // round with probability about 5/6, so 40 rounds miss it about once in
    // 1500 runs.)
    let rounds = if simulated() { 40 } else { 1 };
    let modes = [Mode::Async, Mode::Async, Mode::Async, Mode::Sync];
    for mode in modes.into_iter().cycle().take(4 * rounds) {
        // Each recording runs the kernel on memory the last one left: put
        // the globals back first (`launches` counts launches).
        let mut q = staged_exec.queue().unwrap();
        let zero = [0.5f32.to_le_bytes(), 0u32.to_le_bytes()].concat();
        q.upload(buffer_with(&exec, &zero), &s.globals).unwrap();
        sync(&mut q).unwrap();
        let (rec, q, _) = s.record(&staged_exec, mode);
        // Async: the snapshot before the kernel (the only download of at
        // least 1024 bytes before the launch) went through the shadow. Sync
        // synchronizes between the steps, so the output's download starts a
        // new window and is staged too (drained at once; nothing to overlap).
        let staged = if mode == Mode::Async { 1 } else { 2 };
        assert_eq!(q.downloads_staged(), staged, "{mode:?}");
        let syncs = if mode == Mode::Async { 1 } else { 4 };
        assert_eq!(q.syncs_enqueued(), syncs, "{mode:?}");
        same(rec.input.as_ref(), plain.input.as_ref(), mode, "input");
        same(
            rec.globals.as_ref().unwrap().as_ref(),
            plain.globals.as_ref().unwrap().as_ref(),
            mode,
            "globals",
        );
        same(
            rec.output.as_ref().unwrap().as_ref(),
            plain.output.as_ref().unwrap().as_ref(),
            mode,
            "output",
        );
    }
    common::sim::set_copy_delay_us(0);
}

/// `exec` with device-side staging from `min_bytes` on, or `None` (after
/// saying so) where the driver lacks what staging needs.
fn staged(exec: &CudaExecutor, min_bytes: u64) -> Option<CudaExecutor> {
    let staged = exec.clone().with_device_staging(Some(min_bytes));
    if staged.device_staging().is_none() {
        println!("skipped: this driver lacks a function device-side staging needs");
        return None;
    }
    Some(staged)
}

/// Asserts two snapshots are equal, naming the first differing byte.
fn same(got: &[u8], want: &[u8], mode: Mode, what: &str) {
    assert_eq!(got.len(), want.len(), "{mode:?} {what}: length");
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!(
            "{mode:?} {what} snapshot differs from byte {i} of {}: {} instead of {}",
            got.len(),
            got[i],
            want[i]
        );
    }
}

#[test]
fn dropping_a_queue_waits_for_its_drains() {
    let Some((_lock, exec)) = gpu() else { return };
    let Some(staged) = staged(&exec, 0) else {
        return;
    };
    let region = reserve(&exec, None).unwrap();
    let (_image, kernel) = fixture_kernel(&exec, "grid2d.ptx", "grid2d");
    let mut q = staged.queue().unwrap();
    q.download(
        staged.buffer(65536).unwrap(),
        &[seg(region.base(), 0, 65536)],
    )
    .unwrap();
    // Slow copies: the drain after the launch is still running when the
    // queue drops, and must finish before its buffer is freed (the
    // simulator aborts on a free under a running copy).
    common::sim::set_copy_delay_us(20_000);
    let values = [region.base() + 65536, 8, 8];
    q.launch(&kernel, &grid2d_launch(&values, [1, 1, 1]))
        .unwrap();
    assert_eq!(q.downloads_staged(), 1);
    drop(q);
    common::sim::set_copy_delay_us(0);
}

#[test]
fn growing_the_shadow_waits_for_copies_still_using_it() {
    let Some((_lock, exec)) = gpu() else { return };
    let Some(staged) = staged(&exec, 0) else {
        return;
    };
    let region = reserve(&exec, None).unwrap();
    let data: Vec<u8> = (0..MIB as usize / 2).map(|i| (i % 251) as u8).collect();
    let mut q = staged.queue().unwrap();
    q.upload(
        buffer_with(&exec, &data),
        &[seg(region.base(), 0, data.len())],
    )
    .unwrap();
    sync(&mut q).unwrap();
    // Slow copies keep the first staged download's work queued while ...
    common::sim::set_copy_delay_us(20_000);
    let small = q
        .download(staged.buffer(4096).unwrap(), &[seg(region.base(), 0, 4096)])
        .unwrap();
    // ... a synchronize is polled once and given up on (it drains the
    // shadow on the queue's stream), and ...
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let _ = q.poll_synchronize(&mut cx);
    // ... a larger staged download replaces the shadow: the old one must not
    // be freed under the queued copies (the simulator aborts if it is).
    let large = q
        .download(
            staged.buffer(data.len()).unwrap(),
            &[seg(region.base(), 0, data.len())],
        )
        .unwrap();
    common::sim::set_copy_delay_us(0);
    sync(&mut q).unwrap();
    assert_eq!(q.downloads_staged(), 2);
    let mut back: Vec<_> = std::iter::from_fn(|| q.reclaim()).collect();
    back.sort_by_key(|(t, _)| t.0);
    let tickets: Vec<_> = back.iter().map(|(t, _)| *t).collect();
    assert!(tickets.contains(&small) && tickets.contains(&large));
    for (t, buf) in back.iter().filter(|(t, _)| *t == small || *t == large) {
        let len = buf.as_ref().len();
        assert_eq!(buf.as_ref(), &data[..len], "ticket {t:?}");
    }
}
