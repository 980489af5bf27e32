//! Kernel faults: found by a synchronize, a copy or a launch, on one queue or
//! several, each named with the kernels in flight that may have caused it (and
//! no kernel whose launch failed), and a fresh context once every executor is
//! gone.

use reprise_core::exec::{DeviceRegion, Executor, Queue, RegionRequest};
use reprise_cuda::{CudaError, CudaExecutor};

use crate::common::{buffer_with, fixture_kernel, grid2d_launch, seg, sim, sync};
use crate::{
    CONTEXT_LOST, ILLEGAL_ADDRESS, INVALID_VALUE, LAUNCH_FAILED, MIB, shared_reverse, simulated,
};

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
