//! A queue's failures: a failed status handed to the stream callback, an
//! error in a drop, a queue that fails to start, and device-side staging that
//! falls back or whose drains fail, each reported once and leaving nothing
//! behind.

use reprise_core::exec::{DeviceRegion, Executor, Queue, RegionRequest};

use crate::common::{buffer_with, fixture_kernel, grid2d_launch, seg, sim, sync};
use crate::{INVALID_VALUE, LAUNCH_FAILED, MIB, OUT_OF_MEMORY, simulated};

#[test]
fn a_failed_status_given_to_the_stream_callback_fails_the_synchronize() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let mut q = exec.queue().unwrap();
    q.upload(buffer_with(&exec, &[1; 64]), &[seg(region.base(), 0, 64)])
        .unwrap();
    // The stream itself stays clean: only the callback hears of it.
    sim::set_callback_status(LAUNCH_FAILED);
    let err = sync(&mut q).expect_err("the callback's status");
    assert_eq!(err.driver().map(|d| d.code), Some(LAUNCH_FAILED), "{err}");
    assert!(
        err.to_string().contains("CUDA_ERROR_LAUNCH_FAILED"),
        "{err}"
    );
    // The failure is the stream's earlier work, not the callback's
    // enqueueing, which succeeded.
    // No kernel is in flight, so none is blamed: the error says the
    // context was lost, not which kernel.
    assert_eq!(
        err.to_string(),
        "work queued on the stream (status handed to the synchronize's callback) failed: \
         CUDA_ERROR_LAUNCH_FAILED (719): unspecified launch failure (the context was lost \
         to an earlier kernel fault; restart the process)"
    );
    // Reported once.
    q.upload(buffer_with(&exec, &[2; 64]), &[seg(region.base(), 0, 64)])
        .unwrap();
    sync(&mut q).unwrap();
}

#[test]
fn an_error_in_a_drop_is_reported_by_the_next_synchronize() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let mut q = exec.queue().unwrap();
    let buffer = exec.buffer(4096).unwrap();
    assert!(sim::fail("cuMemFreeHost", INVALID_VALUE, 0));
    drop(buffer);
    q.upload(buffer_with(&exec, &[7; 64]), &[seg(region.base(), 0, 64)])
        .unwrap();
    let err = sync(&mut q).expect_err("the kept error");
    assert!(err.to_string().contains("cuMemFreeHost"), "{err}");
    // Reported once: the next synchronize is clean.
    q.upload(buffer_with(&exec, &[8; 64]), &[seg(region.base(), 0, 64)])
        .unwrap();
    sync(&mut q).unwrap();
}

#[test]
fn a_failed_queue_leaves_no_stream_or_event_behind() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    let staged = exec.clone().with_device_staging(Some(0));
    // A queue makes its stream and two events, then (staging) a copy stream
    // and two more events: fail each in turn.
    for (call, skip) in [
        ("cuStreamCreate", 0),
        ("cuEventCreate", 1),
        ("cuStreamCreate", 1),
        ("cuEventCreate", 3),
    ] {
        let before = sim::counts().unwrap();
        assert!(sim::fail(call, OUT_OF_MEMORY, skip));
        let err = staged.queue().expect_err(call);
        assert!(err.to_string().contains(call), "{call}: {err}");
        assert_eq!(sim::counts().unwrap(), before, "{call} #{skip}");
    }
}

#[test]
fn staging_falls_back_to_direct_downloads_when_the_device_is_full() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let staged = exec.clone().with_device_staging(Some(0));
    let mut q = staged.queue().unwrap();
    let data: Vec<u8> = (0..4096).map(|i| i as u8).collect();
    q.upload(buffer_with(&exec, &data), &[seg(region.base(), 0, 4096)])
        .unwrap();
    sync(&mut q).unwrap();
    assert!(sim::fail("cuMemAlloc_v2", OUT_OF_MEMORY, 0));
    let t = q
        .download(staged.buffer(4096).unwrap(), &[seg(region.base(), 0, 4096)])
        .unwrap();
    sync(&mut q).unwrap();
    assert_eq!(q.downloads_staged(), 0, "no shadow, so no staging");
    let (got, buf) = std::iter::from_fn(|| q.reclaim())
        .find(|(got, _)| *got == t)
        .unwrap();
    assert_eq!((got, buf.as_ref()), (t, &data[..]));
}

#[test]
fn a_failed_drain_fails_the_launch_and_the_next_synchronize_once() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    let before = sim::counts().unwrap();
    {
        let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
        let (_image, kernel) = fixture_kernel(&exec, "grid2d.ptx", "grid2d");
        let staged = exec.clone().with_device_staging(Some(0));
        let mut q = staged.queue().unwrap();
        let snapshot = q
            .download(staged.buffer(4096).unwrap(), &[seg(region.base(), 0, 4096)])
            .unwrap();
        assert_eq!(q.downloads_staged(), 1);
        // The copy stream's wait for the staged copies fails.
        assert!(sim::fail("cuStreamWaitEvent", INVALID_VALUE, 0));
        let values = [region.base(), 8, 8];
        let launch = grid2d_launch(&values, [1, 1, 1]);
        let err = q.launch(&kernel, &launch).expect_err("the drain failed");
        assert!(err.to_string().contains("cuStreamWaitEvent"), "{err}");
        // The synchronize covering the staged download fails too ...
        let again = sync(&mut q).expect_err("the staged download is incomplete");
        assert_eq!(again, err);
        // ... once: the next one is clean, and every buffer comes back.
        q.launch(&kernel, &launch).unwrap();
        sync(&mut q).unwrap();
        let back: Vec<_> = std::iter::from_fn(|| q.reclaim()).collect();
        assert!(back.iter().any(|(t, _)| *t == snapshot), "{back:?}");
    }
    // The queue, region, image and buffers are gone without a trace.
    assert_eq!(sim::counts().unwrap(), before);
}

#[test]
fn a_drain_that_fails_at_a_synchronize_is_reported_by_that_synchronize_only() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let staged = exec.clone().with_device_staging(Some(0));
    let mut q = staged.queue().unwrap();
    q.download(staged.buffer(4096).unwrap(), &[seg(region.base(), 0, 4096)])
        .unwrap();
    // No launch: the synchronize drains on the queue's own stream, and that
    // copy fails.
    assert!(sim::fail("cuMemcpyDtoHAsync_v2", INVALID_VALUE, 0));
    let err = sync(&mut q).expect_err("the drain failed");
    assert!(err.to_string().contains("cuMemcpyDtoHAsync"), "{err}");
    sync(&mut q).unwrap();
}
