//! A kernel that faults: the synchronize reports the device's error instead
//! of hanging. Its own test binary, because a fault spoils the process's
//! context for every later test. On the real driver with
//! `REPRISE_GPU_TESTS=1`, else on the simulated one.

mod common;

use std::future::poll_fn;
use std::time::Duration;

use common::{block_on_for, fixture, gpu, grid2d_launch};
use reprise_core::exec::{Executor, Queue};

#[test]
fn a_faulting_kernel_fails_the_synchronize() {
    let Some((_lock, exec)) = gpu() else { return };
    let image = exec.load_image(&fixture("grid2d.ptx")).unwrap();
    let kernel = exec.kernel(&image, "grid2d").unwrap();
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
    // The queue can still be dropped (its errors are kept, not panicked on).
    drop(q);
}
