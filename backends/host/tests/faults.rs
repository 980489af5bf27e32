//! A kernel that faults is an error of its launch, reported by the next
//! synchronize; the queue, the executor and the process keep working. A
//! fault outside a kernel still ends the process, as it would without the
//! host executor.

use std::future::poll_fn;
use std::process::Command;

use reprise_core::block_on;
use reprise_core::exec::{
    DeviceRegion, Executor, KernelArgs, Launch, LaunchConfig, Queue, RegionRequest, Segment,
};
use reprise_host::{FaultKind, FaultPlace, HostError, HostExecutor, HostQueue, KernelFault};

const FAULTS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels/faults.so"));

fn sync(q: &mut HostQueue) -> Result<(), HostError> {
    block_on(poll_fn(|cx| q.poll_synchronize(cx)))
}

/// Launches `name` from the faults image with `args` and synchronizes.
fn run(exec: &HostExecutor, q: &mut HostQueue, name: &str, args: &[u64]) -> Result<(), HostError> {
    let image = exec.load_image(FAULTS)?;
    let kernel = exec.kernel(&image, name)?;
    q.launch(&kernel, &launch(args))?;
    sync(q)
}

/// A one-thread launch with pointer-sized arguments.
fn launch(values: &[u64]) -> Launch<'_> {
    Launch {
        config: LaunchConfig {
            grid: [1, 1, 1],
            block: [1, 1, 1],
            shared_mem: 0,
        },
        args: KernelArgs {
            values,
            sizes: &[],
            data: &[],
        },
    }
}

fn fault(r: Result<(), HostError>) -> KernelFault {
    match r {
        Err(HostError::KernelFault(f)) => *f,
        other => panic!("expected a kernel fault, got {other:?}"),
    }
}

/// Reads the 8 bytes at `addr` through the queue.
fn read_u64(exec: &HostExecutor, q: &mut HostQueue, addr: u64) -> u64 {
    let buf = exec.buffer(8).unwrap();
    let seg = Segment {
        device: addr,
        host_offset: 0,
        len: 8,
    };
    q.download(buf, &[seg]).unwrap();
    sync(q).unwrap();
    let (_, buf) = q.reclaim().unwrap();
    u64::from_le_bytes(buf.as_ref().try_into().unwrap())
}

/// Stores through a good pointer, checks it landed.
fn good_launch(exec: &HostExecutor, q: &mut HostQueue, region: &impl DeviceRegion, v: u64) {
    run(exec, q, "store", &[region.base() + 64, v]).expect("a good launch succeeds");
    assert_eq!(read_u64(exec, q, region.base() + 64), v);
}

#[test]
fn a_wild_store_is_an_error_and_later_launches_work() {
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    let f = fault(run(&exec, &mut q, "store", &[8, 1]));
    assert_eq!(f.kind, FaultKind::InvalidAccess);
    assert_eq!((f.signal, f.code, f.addr), (libc::SIGSEGV, 1, 8));
    assert_eq!(f.kernel, "store");
    match &f.place {
        FaultPlace::Outside { regions } => assert!(
            regions.contains(&(region.base(), region.base() + region.capacity())),
            "{regions:x?}"
        ),
        other => panic!("{other:?}"),
    }
    let text = f.to_string();
    let want = "the kernel `store` faulted: invalid memory access at 0x8 (SIGSEGV: address not mapped), outside";
    assert!(text.starts_with(want), "{text}");
    assert!(
        text.contains(&format!(
            "{:#x}..{:#x}",
            region.base(),
            region.base() + region.capacity()
        )),
        "{text}"
    );

    // The same queue, after the error was reported: works.
    good_launch(&exec, &mut q, &region, 42);
    // A store just past the region's end is outside it, too.
    let end = region.base() + region.capacity();
    let f = fault(run(&exec, &mut q, "store", &[end, 1]));
    assert_eq!(f.addr, end);
    assert!(matches!(f.place, FaultPlace::Outside { .. }), "{f}");
    // Again and again: each fault is caught, not just the first.
    for _ in 0..3 {
        fault(run(&exec, &mut q, "store", &[16, 1]));
    }
    good_launch(&exec, &mut q, &region, 43);
    drop(q);
    drop(region);

    // A fresh executor and queue in the same process.
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    good_launch(&exec, &mut q, &region, 44);
}

#[test]
fn work_queued_after_a_fault_is_skipped_until_the_synchronize() {
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    let image = exec.load_image(FAULTS).unwrap();
    let store = exec.kernel(&image, "store").unwrap();
    q.launch(&store, &launch(&[8, 1])).unwrap();
    q.launch(&store, &launch(&[region.base(), 7])).unwrap();
    assert!(matches!(sync(&mut q), Err(HostError::KernelFault(_))));
    assert_eq!(read_u64(&exec, &mut q, region.base()), 0, "skipped");
}

#[test]
fn a_store_to_read_only_memory_is_a_protection_fault() {
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    let f = fault(run(&exec, &mut q, "store_read_only", &[1]));
    assert_eq!(
        (f.kind, f.signal, f.code),
        (FaultKind::Protection, libc::SIGSEGV, 2)
    );
    assert!(f.to_string().contains("protection fault at 0x"), "{f}");
    good_launch(&exec, &mut q, &region, 5);
}

#[test]
fn division_by_zero_and_illegal_instructions_are_caught() {
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    let f = fault(run(&exec, &mut q, "divide", &[region.base(), 1, 0]));
    assert_eq!((f.kind, f.signal), (FaultKind::Arithmetic, libc::SIGFPE));
    assert_eq!(f.place, FaultPlace::Instruction);
    assert!(
        f.to_string()
            .contains("arithmetic fault by the instruction at 0x"),
        "{f}"
    );
    assert!(f.to_string().contains("integer division by zero"), "{f}");
    let f = fault(run(&exec, &mut q, "illegal", &[]));
    assert_eq!(
        (f.kind, f.signal),
        (FaultKind::IllegalInstruction, libc::SIGILL)
    );
    good_launch(&exec, &mut q, &region, 6);
}

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
fn a_region_at_address_zero_is_refused() {
    let exec = HostExecutor::new().unwrap();
    let err = exec
        .reserve(RegionRequest::new(Some(0), 1 << 20))
        .unwrap_err();
    assert_eq!(err, HostError::NullBase(0));
    assert_eq!(err.to_string(), "region base 0x0 is not a usable address");
}

// ---------------------------------------------------------------------------
// Faults outside kernels: run in a child process (this test binary, one
// ignored test selected by name), which must die as it would without the
// executor's handler.

const CHILD: &str = "REPRISE_HOST_FAULT_CHILD";

fn child(test: &str) -> std::process::Output {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            test,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.code(),
        None,
        "the child exited instead of dying by a signal: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.signal().is_some());
    out
}

/// Catches one kernel fault first, so the handler is installed.
fn install_by_faulting() {
    let exec = HostExecutor::new().unwrap();
    let mut q = exec.queue().unwrap();
    fault(run(&exec, &mut q, "store", &[8, 1]));
}

#[test]
#[ignore = "run by a_fault_outside_a_kernel_still_kills_the_process"]
fn child_faults_outside_a_kernel() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    install_by_faulting();
    let p = std::hint::black_box(8usize) as *mut u64;
    // SAFETY: not safe at all: this child process is meant to die here.
    unsafe { p.write_volatile(1) };
    unreachable!("the store faults");
}

#[test]
fn a_fault_outside_a_kernel_still_kills_the_process() {
    use std::os::unix::process::ExitStatusExt;
    let out = child("child_faults_outside_a_kernel");
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV));
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
    let out = child("child_overflows_a_rust_stack");
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
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "child_overflows_a_kernel_stack_without_rusts_handler",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, "1");
    // SAFETY: between fork and exec only `signal`, which is
    // async-signal-safe; an ignored disposition survives exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGSEGV, libc::SIG_IGN);
            libc::signal(libc::SIGBUS, libc::SIG_IGN);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
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
