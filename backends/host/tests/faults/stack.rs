//! The stack: a kernel overflowing it (caught, with or without Rust's own
//! handler), Rust's stack overflow report left working, and overruns of a
//! buffer on it, caught up to the guard's frame and fatal past it.

use reprise_core::exec::{DeviceRegion, Executor, RegionRequest};
use reprise_host::{FaultKind, FaultPlace, HostExecutor};

use crate::child::{
    CHILD, child, child_command, install_by_faulting, launch_in_child, output_within_limit,
};
use crate::{fault, good_launch, run};

#[test]
fn a_kernel_overflowing_the_stack_is_caught() {
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    let f = fault(run(&exec, &mut q, "recurse", &[region.base(), 1 << 40]));
    assert_eq!(f.kind, FaultKind::StackOverflow, "{f}");
    assert!(matches!(f.place, FaultPlace::Stack { .. }), "{f}");
    assert!(f.to_string().contains("stack overflow at 0x"), "{f}");
    // The worker's stack is usable again.
    run(&exec, &mut q, "recurse", &[region.base(), 100]).unwrap();
    good_launch(&exec, &mut q, &region, 7);
}

#[test]
#[ignore = "run by rusts_stack_overflow_report_still_works"]
fn child_overflows_a_rust_stack() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    install_by_faulting();
    fn deep(n: u64) -> u64 {
        let frame = std::hint::black_box([n; 64]);
        if n == 0 { 0 } else { deep(n - 1) + frame[3] }
    }
    std::thread::Builder::new()
        .name("overflowing".into())
        .stack_size(256 << 10)
        .spawn(|| deep(u64::MAX))
        .unwrap()
        .join()
        .unwrap();
    unreachable!("the thread overflows");
}

#[test]
fn rusts_stack_overflow_report_still_works() {
    use std::os::unix::process::ExitStatusExt;
    let out = child("stack::child_overflows_a_rust_stack");
    let err = String::from_utf8_lossy(&out.stderr);
    // "thread 'overflowing' (TID) has overflowed its stack" in newer Rusts.
    assert!(
        err.contains("thread 'overflowing'") && err.contains("has overflowed its stack"),
        "{err}"
    );
    assert_eq!(out.status.signal(), Some(libc::SIGABRT));
}

#[test]
#[ignore = "run by a_kernel_stack_overflow_is_caught_without_rusts_handler"]
fn child_overflows_a_kernel_stack_without_rusts_handler() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    // Started with SIGSEGV ignored, Rust's runtime installed no handler and
    // gives its threads no alternate signal stack: the executor's own
    // makes the overflow catchable.
    let alt = std::thread::spawn(|| {
        // SAFETY: an all-zero stack_t is overwritten by the query.
        let mut old: libc::stack_t = unsafe { std::mem::zeroed() };
        // SAFETY: a query into a valid stack_t.
        assert_eq!(unsafe { libc::sigaltstack(std::ptr::null(), &mut old) }, 0);
        old.ss_flags & libc::SS_DISABLE == 0
    })
    .join()
    .unwrap();
    assert!(!alt, "Rust gave the thread an alternate stack after all");
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    let f = fault(run(&exec, &mut q, "recurse", &[region.base(), 1 << 40]));
    assert_eq!(f.kind, FaultKind::StackOverflow, "{f}");
    good_launch(&exec, &mut q, &region, 8);
    println!("caught: {f}");
}

#[test]
fn a_kernel_stack_overflow_is_caught_without_rusts_handler() {
    use std::os::unix::process::CommandExt;
    let mut cmd = child_command("stack::child_overflows_a_kernel_stack_without_rusts_handler");
    // SAFETY: between fork and exec only `signal`, which is
    // async-signal-safe; an ignored disposition survives exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGSEGV, libc::SIG_IGN);
            libc::signal(libc::SIGBUS, libc::SIG_IGN);
            Ok(())
        });
    }
    let out = output_within_limit(cmd);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{:?}\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("caught: the kernel `recurse` faulted: stack overflow"),
        "{text}"
    );
}

#[test]
fn a_return_through_an_overwritten_return_address_is_caught() {
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    // A stack buffer overrun writes 0x4141414141 over the return address;
    // the `ret` goes there. The fetch faults outside the image, and the
    // word at the stack pointer is the caller's data, not a return address
    // into the kernel: what shows that the kernel's code led there is the
    // slot the `ret` popped, just below the stack pointer.
    let bad = 0x41_4141_4141;
    for _ in 0..2 {
        let f = fault(run(&exec, &mut q, "smash", &[bad, 8]));
        assert_eq!(
            (f.kind, f.signal, f.addr),
            (FaultKind::InvalidAccess, libc::SIGSEGV, bad),
            "{f}"
        );
        assert_eq!(f.kernel, "smash");
        good_launch(&exec, &mut q, &region, 10);
    }
    // An overrun that stops short of the return address returns normally.
    run(&exec, &mut q, "smash", &[bad, 2]).unwrap();
}

#[test]
fn an_overrun_into_the_frames_the_jump_skips_is_caught() {
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    // 1 KiB of 0x41 upward: over the kernel's return address and into the
    // frames between it and the guard's (the call's argument array), which
    // the jump back skips. The return to 0x4141414141414141, not a
    // canonical address, faults on the `ret` itself.
    for _ in 0..2 {
        let f = fault(run(&exec, &mut q, "smash_far", &[1024]));
        assert_eq!(
            (f.signal, f.kernel.as_str()),
            (libc::SIGSEGV, "smash_far"),
            "{f}"
        );
        good_launch(&exec, &mut q, &region, 11);
    }
}

#[test]
#[ignore = "run by a_stack_overrun_past_the_guards_frame_ends_the_process_with_a_message"]
fn child_smashes_far_up_the_stack() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    launch_in_child("smash_far", &[4096]);
}

#[test]
fn a_stack_overrun_past_the_guards_frame_ends_the_process_with_a_message() {
    use std::os::unix::process::ExitStatusExt;
    // 4 KiB of 0x41 upward from a kernel's stack buffer: over its return
    // address, the frames the jump back skips (some 3 KiB), and on into the
    // guard's own frame, over its canary, towards the worker's frames (the
    // thread's TLS, with the guard's state, lies further up). Returning
    // into them is unsafe: the process ends, saying why. (With the guard's
    // state on the stack, the handler read it overwritten, and the process
    // died by a fault inside the handler, without a word.)
    let out = child("stack::child_smashes_far_up_the_stack");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGABRT),
        "{err}\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        err.contains("reprise: the kernel `smash_far` overwrote the stack above its own frames ("),
        "{err}"
    );
    assert!(
        err.contains("); the process cannot continue safely\n"),
        "{err}"
    );
    assert_eq!(err.matches("reprise: ").count(), 1, "said once: {err}");
}
