//! A kernel that faults: the synchronize reports the device's error instead
//! of hanging. Its own test binary, because a fault spoils the process's
//! context for every later test. On the real driver with
//! `REPRISE_GPU_TESTS=1`, else on the simulated one.

mod common;

use std::future::poll_fn;
use std::time::Duration;

use common::{block_on_for, fixture_kernel, gpu, grid2d_launch};
use reprise_core::exec::{Executor, Queue};
use reprise_cuda::CudaError;

#[test]
fn a_faulting_kernel_fails_the_synchronize() {
    let Some((_lock, exec)) = gpu() else { return };
    let (_image, kernel) = fixture_kernel(&exec, "grid2d.ptx", "grid2d");
    let mut q = exec.queue().unwrap();
    // On the simulator the kernel waits before it runs, so the launch
    // returns and the synchronize meets the fault (a waiting synchronize is
    // the case under test).
    common::sim::set_kernel_delay_us(50_000);
    // `out` points nowhere.
    let values = [0x10u64, 64, 64];
    let launched = q.launch(&kernel, &grid2d_launch(&values, [8, 8, 1]));
    if let Err(e) = launched {
        // A device may fault before the launch's own calls return.
        let code = e.driver().expect("a driver error").code;
        assert!([700, 719].contains(&code), "launch: {e}");
        return;
    }
    let result = block_on_for(
        poll_fn(|cx| q.poll_synchronize(cx)),
        Duration::from_secs(20),
    );
    let err = match result {
        Ok(r) => r.expect_err("a fault must fail the synchronize"),
        Err(timeout) => {
            // Say whether polling again would have found the error.
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            panic!(
                "{timeout}: the host function never signalled; polling again gives {:?}",
                q.poll_synchronize(&mut cx)
            );
        }
    };
    println!("fault reported: {err}");
    let code = err.driver().expect("a driver error").code;
    assert!(
        [700, 719].contains(&code),
        "expected an illegal address or launch failure, got {err}"
    );
    // The fault names the kernel, and says what it means for the context.
    match &err {
        CudaError::KernelFault { kernels, .. } => assert_eq!(kernels, &["grid2d"]),
        other => panic!("not a kernel fault: {other:?}"),
    }
    let m = err.to_string();
    assert!(
        m.starts_with("the kernel `grid2d` faulted: CUDA_ERROR_"),
        "{m}"
    );
    assert!(
        m.ends_with("; the device context is unusable until the process restarts"),
        "{m}"
    );
    if common::sim::driver() == Ok(common::sim::Driver::Simulated) {
        assert_eq!(
            m,
            "the kernel `grid2d` faulted: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory \
             access was encountered); the device context is unusable until the process restarts"
        );
    }
    // Later calls fail with the same code: their errors say it is the
    // earlier fault, not something wrong with the call.
    let later = exec.buffer(16).expect_err("the context is lost");
    assert_eq!(later.driver().map(|d| d.code), Some(code), "{later}");
    assert!(
        later.to_string().starts_with("cuMemHostAlloc failed: ")
            && later.to_string().ends_with(
                " (the context was lost to an earlier kernel fault; restart the process)"
            ),
        "{later}"
    );
    // The queue can still be dropped (its errors are kept, not panicked on).
    drop(q);
}
