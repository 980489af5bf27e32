//! Error paths only the simulated driver can provoke: one driver call made to
//! fail at a chosen point, then a check that the executor reports it, names
//! the call, and leaves nothing behind (the simulator counts what is live).
//! Skipped (with the reason) on a real driver.

mod common;

use common::{buffer_with, fixture_kernel, gpu, grid2d_launch, seg, sim, sync};
use reprise_core::exec::{
    DeviceRegion, Executor, KernelArgs, Launch, LaunchConfig, Queue, RegionRequest,
};
use reprise_cuda::{CudaError, CudaExecutor, LaunchLimits};

const MIB: u64 = 1 << 20;
/// `CUDA_ERROR_INVALID_VALUE`.
const INVALID_VALUE: u32 = 1;
/// `CUDA_ERROR_OUT_OF_MEMORY`.
const OUT_OF_MEMORY: u32 = 2;
/// `CUDA_ERROR_LAUNCH_FAILED`.
const LAUNCH_FAILED: u32 = 719;
/// `CUDA_ERROR_ILLEGAL_ADDRESS`.
const ILLEGAL_ADDRESS: u32 = 700;
/// What a kernel fault adds to the message of a driver error.
const CONTEXT_LOST: &str =
    " (the context was lost to an earlier kernel fault; restart the process)";

/// The executor on the simulated driver (holding the device lock), or
/// `None` after saying why.
fn simulated() -> Option<(std::sync::MutexGuard<'static, ()>, CudaExecutor)> {
    if sim::driver() != Ok(sim::Driver::Simulated) {
        println!("skipped: needs the simulated CUDA driver");
        return None;
    }
    gpu()
}

#[test]
fn a_failed_step_of_a_region_undoes_every_earlier_step() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    // A fresh region falls back to any address when the suggested one
    // fails, so the reservation itself is made to fail at a recorded
    // address, for both tries (the plain hint, then the aligned one).
    let recorded = reprise_cuda::SUGGESTED_BASE + (64 << 30);
    for (call, base, times) in [
        ("cuMemGetAllocationGranularity", None, 1),
        ("cuMemAddressReserve", Some(recorded), 2),
        ("cuMemCreate", None, 1),
        ("cuMemMap", Some(recorded), 1),
        ("cuMemSetAccess", None, 1),
    ] {
        let before = sim::counts().unwrap();
        assert!(sim::fail_times(call, OUT_OF_MEMORY, 0, times));
        let err = exec.reserve(RegionRequest::new(base, MIB)).expect_err(call);
        assert!(err.to_string().contains(call), "{call}: {err}");
        assert_eq!(
            sim::counts().unwrap(),
            before,
            "{call} left something behind"
        );
    }
    // And the executor still works.
    let r = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    assert!(r.capacity() >= MIB);
}

#[test]
fn a_recorded_address_is_tried_aligned_when_the_plain_hint_fails_outright() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    let recorded = reprise_cuda::SUGGESTED_BASE + (96 << 30);
    // The plain hint fails; the aligned try gets the address.
    assert!(sim::fail("cuMemAddressReserve", OUT_OF_MEMORY, 0));
    let r = exec
        .reserve(RegionRequest::new(Some(recorded), MIB))
        .unwrap_or_else(|e| panic!("the aligned try was not made: {e}"));
    assert_eq!(r.base(), recorded);
    drop(r);
    // Both fail outright: the driver's error, naming the address.
    let before = sim::counts().unwrap();
    assert!(sim::fail_times("cuMemAddressReserve", OUT_OF_MEMORY, 0, 2));
    let err = exec
        .reserve(RegionRequest::new(Some(recorded), MIB))
        .expect_err("both tries failed");
    assert!(
        matches!(err, reprise_cuda::CudaError::AddressUnavailable { requested, .. } if requested == recorded),
        "{err:?}"
    );
    assert!(err.to_string().contains("0x155140000000"), "{err}");
    assert_eq!(sim::counts().unwrap(), before);
}

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
fn a_fault_found_by_a_synchronize_names_the_kernels_it_covers() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (_grid2d_image, grid2d) = fixture_kernel(&exec, "grid2d.ptx", "grid2d");
    let (_reverse_image, reverse) = fixture_kernel(&exec, "shared_reverse.ptx", "shared_reverse");
    let mut q = exec.queue().unwrap();
    let values = [region.base(), 8, 8];
    let nothing = [region.base(), 0, 0];
    // The driver hands the callback a fault (the context stays usable: the
    // simulator only says so).
    for _ in 0..2 {
        q.launch(&grid2d, &grid2d_launch(&values, [1, 1, 1]))
            .unwrap();
    }
    sim::set_callback_status(LAUNCH_FAILED);
    let err = sync(&mut q).expect_err("the callback's status");
    match &err {
        CudaError::KernelFault { kernels, source } => {
            assert_eq!(kernels, &["grid2d"], "each kernel named once");
            assert_eq!(source.code, LAUNCH_FAILED);
            assert!(source.call.contains("synchronize's callback"), "{source}");
            // The source is the fault, not a context lost earlier, though
            // the context is lost all the same.
            assert!(!source.to_string().contains("context was lost"), "{source}");
            assert!(source.context_lost() && err.context_lost());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "the kernel `grid2d` faulted: CUDA_ERROR_LAUNCH_FAILED (unspecified launch \
         failure); the device context is unusable until the process restarts"
    );
    assert_eq!(
        std::error::Error::source(&err).map(ToString::to_string),
        err.driver().map(ToString::to_string)
    );
    // Two kernels since the last synchronize: either may have faulted.
    q.launch(&grid2d, &grid2d_launch(&values, [1, 1, 1]))
        .unwrap();
    q.launch(&reverse, &shared_reverse(&nothing, [4, 1, 1], 0))
        .unwrap();
    sim::set_callback_status(LAUNCH_FAILED);
    let err = sync(&mut q).expect_err("the callback's status");
    assert!(
        err.to_string()
            .starts_with("one of the kernels `grid2d`, `shared_reverse` faulted: "),
        "{err}"
    );
    // A kernel a synchronize covered is not blamed for a later fault.
    q.launch(&grid2d, &grid2d_launch(&values, [1, 1, 1]))
        .unwrap();
    sync(&mut q).unwrap();
    q.upload(buffer_with(&exec, &[1; 64]), &[seg(region.base(), 0, 64)])
        .unwrap();
    sim::set_callback_status(LAUNCH_FAILED);
    let err = sync(&mut q).expect_err("the callback's status");
    assert!(matches!(err, CudaError::Driver(_)), "{err:?}");
    assert!(err.to_string().ends_with(CONTEXT_LOST), "{err}");
}

#[test]
fn a_fault_found_by_a_copy_or_launch_names_the_kernels_before_it_once() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (_image, kernel) = fixture_kernel(&exec, "grid2d.ptx", "grid2d");
    let mut q = exec.queue().unwrap();
    let values = [region.base(), 8, 8];
    let launch = grid2d_launch(&values, [1, 1, 1]);
    // A copy queued after the kernel meets the fault (as a driver reports
    // it to every call once a kernel faulted).
    q.launch(&kernel, &launch).unwrap();
    assert!(sim::fail("cuMemcpyDtoHAsync_v2", ILLEGAL_ADDRESS, 0));
    let err = q
        .download(exec.buffer(64).unwrap(), &[seg(region.base(), 0, 64)])
        .expect_err("the fault");
    assert!(
        matches!(&err, CudaError::KernelFault { kernels, .. } if kernels == &["grid2d"]),
        "{err:?}"
    );
    assert_eq!(err.driver().map(|d| d.call), Some("cuMemcpyDtoHAsync"));
    // Named once: the next call that meets it says the context is lost.
    assert!(sim::fail("cuLaunchKernel", ILLEGAL_ADDRESS, 0));
    let err = q.launch(&kernel, &launch).expect_err("the fault");
    assert_eq!(
        err.to_string(),
        format!(
            "cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory \
             access was encountered{CONTEXT_LOST}"
        )
    );
    // (The simulated context never faulted.)
    sync(&mut q).unwrap();
    // Errors that do not mean a fault are left as they are.
    q.launch(&kernel, &launch).unwrap();
    assert!(sim::fail("cuMemcpyHtoDAsync_v2", INVALID_VALUE, 0));
    let err = q
        .upload(buffer_with(&exec, &[1; 64]), &[seg(region.base(), 0, 64)])
        .expect_err("injected");
    assert!(
        matches!(err, CudaError::Driver(d) if d.code == INVALID_VALUE),
        "{err:?}"
    );
    sync(&mut q).unwrap();
}

/// The message of a fault of `kernels` found on the simulator.
fn illegal_address_of(kernels: &str) -> String {
    format!(
        "{kernels} faulted: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was \
         encountered); the device context is unusable until the process restarts"
    )
}

/// After a test that spoiled the context with a real fault and dropped
/// every executor: the simulator reset the context on its last release
/// (as releasing a device's primary context does), so the next test has a
/// usable one.
fn a_fresh_context_works() {
    let exec = CudaExecutor::new(0).unwrap();
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let mut q = exec.queue().unwrap();
    q.upload(buffer_with(&exec, &[1; 64]), &[seg(region.base(), 0, 64)])
        .unwrap();
    sync(&mut q).expect("a fresh context");
}

#[test]
fn a_fault_on_one_queue_is_pinned_on_its_kernel_by_every_queue_that_meets_it() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    {
        // Another executor of the device: its own handle on the same
        // (primary) context, as two recorders have.
        let other = CudaExecutor::new(0).unwrap();
        let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
        let (_grid2d_image, grid2d) = fixture_kernel(&exec, "grid2d.ptx", "grid2d");
        let (_reverse_image, reverse) =
            fixture_kernel(&other, "shared_reverse.ptx", "shared_reverse");
        let mut a = exec.queue().unwrap();
        let mut b = other.queue().unwrap();
        let nothing = [region.base(), 0, 0];
        let buffers = [buffer_with(&exec, &[1; 64]), buffer_with(&other, &[2; 64])];
        // b's kernel runs, and a synchronize of b covers it: it faulted
        // nowhere.
        b.launch(&reverse, &shared_reverse(&nothing, [4, 1, 1], 0))
            .unwrap();
        sync(&mut b).unwrap();
        // a's kernel writes nowhere: a fault that spoils the context, as on
        // a device. It waits before it runs, so a synchronize finds it.
        sim::set_kernel_delay_us(50_000);
        let nowhere = [0x10, 64, 64];
        a.launch(&grid2d, &grid2d_launch(&nowhere, [8, 8, 1]))
            .unwrap();
        sim::set_kernel_delay_us(0);
        let fault = illegal_address_of("the kernel `grid2d`");
        let err = sync(&mut a).expect_err("the fault");
        assert_eq!(err.to_string(), fault);
        // b meets the fault at its next call: it names a's kernel, not its
        // own good one.
        let err = b
            .launch(&reverse, &shared_reverse(&nothing, [4, 1, 1], 0))
            .expect_err("the context is lost");
        assert!(
            matches!(&err, CudaError::KernelFault { kernels, .. } if kernels == &["grid2d"]),
            "{err:?}"
        );
        assert_eq!(err.to_string(), fault);
        assert_eq!(err.driver().map(|d| d.code), Some(ILLEGAL_ADDRESS));
        assert!(err.context_lost());
        // Each queue names it once: their later errors say the context was
        // lost.
        for (q, buffer) in [&mut a, &mut b].into_iter().zip(buffers) {
            let err = q
                .upload(buffer, &[seg(region.base(), 0, 64)])
                .expect_err("the context is lost");
            assert!(matches!(err, CudaError::Driver(_)), "{err:?}");
            assert!(err.to_string().ends_with(CONTEXT_LOST), "{err}");
            assert!(err.context_lost());
        }
    }
    drop(exec);
    a_fresh_context_works();
}

#[test]
fn kernels_in_flight_on_two_queues_when_a_fault_is_found_are_each_a_suspect() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    {
        let other = CudaExecutor::new(0).unwrap();
        let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
        let (_grid2d_image, grid2d) = fixture_kernel(&exec, "grid2d.ptx", "grid2d");
        let (_reverse_image, reverse) =
            fixture_kernel(&other, "shared_reverse.ptx", "shared_reverse");
        let mut a = exec.queue().unwrap();
        let mut b = other.queue().unwrap();
        // b's kernel is good, but no synchronize of b says so when a's
        // faults: the driver does not say which kernel faulted, so either
        // may have, whichever queue finds the fault.
        let nothing = [region.base(), 0, 0];
        b.launch(&reverse, &shared_reverse(&nothing, [4, 1, 1], 0))
            .unwrap();
        sim::set_kernel_delay_us(50_000);
        a.launch(&grid2d, &grid2d_launch(&[0x10, 64, 64], [8, 8, 1]))
            .unwrap();
        sim::set_kernel_delay_us(0);
        let both = illegal_address_of("one of the kernels `shared_reverse`, `grid2d`");
        let err = sync(&mut a).expect_err("the fault");
        assert_eq!(err.to_string(), both);
        // Not b's kernel alone.
        let err = sync(&mut b).expect_err("the context is lost");
        assert_eq!(err.to_string(), both);
        assert!(err.context_lost());
    }
    drop(exec);
    a_fresh_context_works();
}

#[test]
fn a_fault_met_while_the_faulting_launch_call_is_under_way_names_that_kernel() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    {
        let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
        let (_image, kernel) = fixture_kernel(&exec, "grid2d.ptx", "grid2d");
        let mut a = exec.queue().unwrap();
        let mut b = exec.queue().unwrap();
        let buffer = buffer_with(&exec, &[1; 64]);
        // b's launch call returns a second after it queued a kernel that
        // writes nowhere, which faults meanwhile.
        sim::set_launch_return_delay_us(1_000_000);
        let launching = std::thread::spawn(move || {
            let r = b.launch(&kernel, &grid2d_launch(&[0x10, 64, 64], [8, 8, 1]));
            (b, r)
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        sim::set_launch_return_delay_us(0);
        // a meets the fault before b's launch call returns: the kernel is
        // in flight already.
        let met = a
            .upload(buffer, &[seg(region.base(), 0, 64)])
            .map(drop)
            .and_then(|()| sync(&mut a));
        let (mut b, launched) = launching.join().unwrap();
        let err = met.expect_err("the fault");
        assert_eq!(err.to_string(), illegal_address_of("the kernel `grid2d`"));
        // b meets it too, once the kernel is queued (recording the timing
        // event after it).
        let err = launched.and_then(|()| sync(&mut b)).expect_err("the fault");
        assert_eq!(err.to_string(), illegal_address_of("the kernel `grid2d`"));
    }
    drop(exec);
    a_fresh_context_works();
}

#[test]
fn a_failed_launch_is_never_named_for_a_fault() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (_image, kernel) = fixture_kernel(&exec, "grid2d.ptx", "grid2d");
    let mut q = exec.queue().unwrap();
    let values = [region.base(), 8, 8];
    assert!(sim::fail("cuLaunchKernel", INVALID_VALUE, 0));
    q.launch(&kernel, &grid2d_launch(&values, [1, 1, 1]))
        .expect_err("injected");
    q.upload(buffer_with(&exec, &[1; 64]), &[seg(region.base(), 0, 64)])
        .unwrap();
    sim::set_callback_status(LAUNCH_FAILED);
    let err = sync(&mut q).expect_err("the callback's status");
    assert!(matches!(err, CudaError::Driver(_)), "{err:?}");
    assert!(err.to_string().ends_with(CONTEXT_LOST), "{err}");
}

#[test]
fn a_synchronize_that_fails_without_a_fault_clears_the_kernels_it_covers() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (_image, kernel) = fixture_kernel(&exec, "grid2d.ptx", "grid2d");
    let mut q = exec.queue().unwrap();
    let values = [region.base(), 8, 8];
    q.launch(&kernel, &grid2d_launch(&values, [1, 1, 1]))
        .unwrap();
    // An error that is not a fault: the kernel finished all the same.
    sim::set_callback_status(INVALID_VALUE);
    let err = sync(&mut q).expect_err("the callback's status");
    assert!(
        matches!(err, CudaError::Driver(d) if d.code == INVALID_VALUE),
        "{err:?}"
    );
    // A fault found later is not blamed on it.
    q.upload(buffer_with(&exec, &[1; 64]), &[seg(region.base(), 0, 64)])
        .unwrap();
    sim::set_callback_status(LAUNCH_FAILED);
    let err = sync(&mut q).expect_err("the callback's status");
    assert!(matches!(err, CudaError::Driver(_)), "{err:?}");
    assert!(err.to_string().ends_with(CONTEXT_LOST), "{err}");
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

/// The limits as one list: threads per block, block x/y/z, grid x/y/z,
/// shared memory without and with opting in.
fn limit_list(l: &LaunchLimits) -> Vec<u32> {
    let mut v = vec![l.threads_per_block];
    v.extend(l.block);
    v.extend(l.grid);
    v.extend([l.shared_default, l.shared_optin]);
    v
}

/// A launch of the shared_reverse fixture (`values`: data, words per block,
/// words) over one block with `shared` bytes of dynamic shared memory.
fn shared_reverse(values: &[u64; 3], block: [u32; 3], shared: u32) -> Launch<'_> {
    Launch {
        config: LaunchConfig {
            grid: [1, 1, 1],
            block,
            shared_mem: shared,
        },
        args: KernelArgs {
            values,
            sizes: &[8, 4, 4],
            data: &[],
        },
    }
}

#[test]
fn a_device_attribute_the_driver_will_not_report_is_an_unchecked_limit() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    let known = limit_list(&exec.launch_limits());
    assert!(known.iter().all(|&l| l > 0), "{known:?}");
    // Each limit in turn unknown (as to a driver older than the attribute):
    // the device still opens, with only that limit 0.
    for skip in 0..known.len() as u32 {
        assert!(sim::fail("cuDeviceGetAttribute", INVALID_VALUE, skip));
        let exec = CudaExecutor::new(0).unwrap_or_else(|e| panic!("attribute #{skip}: {e}"));
        let got = limit_list(&exec.launch_limits());
        let zeroed: Vec<usize> = (0..known.len()).filter(|&i| got[i] != known[i]).collect();
        assert_eq!(zeroed.len(), 1, "attribute #{skip}: {got:?}");
        assert_eq!(got[zeroed[0]], 0, "attribute #{skip}: {got:?}");
    }
    sim::reset();
    // None known: nothing is checked, and the driver has the last word.
    assert!(sim::fail_times(
        "cuDeviceGetAttribute",
        INVALID_VALUE,
        0,
        known.len() as u32
    ));
    let blind = CudaExecutor::new(0).unwrap();
    sim::reset();
    assert_eq!(blind.launch_limits(), LaunchLimits::default());
    let region = blind.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (_image, kernel) = fixture_kernel(&blind, "shared_reverse.ptx", "shared_reverse");
    let mut q = blind.queue().unwrap();
    let values = [region.base(), 16, 16];
    // The kernel's own thread limit unknown too (asked once, at its first
    // launch).
    assert!(sim::fail("cuFuncGetAttribute", INVALID_VALUE, 0));
    let err = q
        .launch(&kernel, &shared_reverse(&values, [2048, 1, 1], 64))
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE"),
        "{err}"
    );
    // A dimension of 0 is refused all the same.
    let err = q
        .launch(&kernel, &shared_reverse(&values, [4, 0, 1], 64))
        .unwrap_err();
    assert_eq!(
        err,
        CudaError::ZeroDimension {
            what: "block",
            dims: [4, 0, 1]
        }
    );
    // Dynamic shared memory past 48 KiB is still opted in to (the opt-in
    // limit unknown is no limit), and beyond the device's limit the driver
    // refuses it.
    q.launch(&kernel, &shared_reverse(&values, [4, 1, 1], 64 << 10))
        .unwrap();
    sync(&mut q).unwrap();
    let err = q
        .launch(&kernel, &shared_reverse(&values, [4, 1, 1], 300 << 10))
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cuFuncSetAttribute failed: CUDA_ERROR_INVALID_VALUE"),
        "{err}"
    );
}

#[test]
fn a_kernels_shared_memory_is_asked_of_the_driver_once() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    sim::set_static_shared(8 << 10);
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (image, kernel) = fixture_kernel(&exec, "shared_reverse.ptx", "shared_reverse");
    let mut q = exec.queue().unwrap();
    let values = [region.base(), 16, 16];
    // A launch without dynamic shared memory asks only the kernel's thread
    // limit; a driver that cannot say leaves the block to its own check
    // (the launch does nothing: no words).
    assert!(sim::fail("cuFuncGetAttribute", INVALID_VALUE, 0));
    let nothing = [region.base(), 0, 0];
    q.launch(&kernel, &shared_reverse(&nothing, [4, 1, 1], 0))
        .unwrap();
    // The first with some asks for the shared memory; when that fails, the
    // launch does, naming the call, and nothing is kept.
    assert!(sim::fail("cuFuncGetAttribute", INVALID_VALUE, 0));
    let err = q
        .launch(&kernel, &shared_reverse(&values, [4, 1, 1], 64))
        .unwrap_err();
    assert!(err.to_string().contains("cuFuncGetAttribute"), "{err}");
    q.launch(&kernel, &shared_reverse(&values, [4, 1, 1], 64))
        .unwrap();
    // Then never again, through any handle of the function: 44 KiB needs
    // opting in (8 KiB static), which is remembered too.
    assert!(sim::fail_times("cuFuncGetAttribute", INVALID_VALUE, 0, 100));
    let other = exec.kernel(&image, "shared_reverse").unwrap();
    for (k, shared) in [(&kernel, 44 << 10), (&other, 44 << 10), (&other, 64)] {
        q.launch(k, &shared_reverse(&values, [4, 1, 1], shared))
            .unwrap_or_else(|e| panic!("{shared} bytes: {e}"));
    }
    assert!(sim::fail_times("cuFuncSetAttribute", INVALID_VALUE, 0, 100));
    q.launch(&other, &shared_reverse(&values, [4, 1, 1], 40 << 10))
        .unwrap();
    sim::reset();
    sync(&mut q).unwrap();
    // A typed error beyond the opt-in limit, from what was kept.
    let err = q
        .launch(&kernel, &shared_reverse(&values, [4, 1, 1], 220 << 10))
        .unwrap_err();
    assert!(
        matches!(
            err,
            CudaError::SharedMemory {
                static_bytes: 8192,
                dynamic_bytes: 225_280,
                limit: 232_448
            }
        ),
        "{err:?}"
    );
}
