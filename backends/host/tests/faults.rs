//! A kernel that faults is an error of its launch, reported by the next
//! synchronize; the queue, the executor and the process keep working. A
//! fault outside a kernel still ends the process, as it would without the
//! host executor.

use std::future::poll_fn;
use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

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

/// A child's longest run: far more than any child needs, so reaching it
/// means the child hung.
const CHILD_LIMIT: Duration = Duration::from_secs(60);

/// This test binary running the ignored test `test` alone, as a child.
fn child_command(test: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        test,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, "1")
    .env("RUST_BACKTRACE", "0");
    cmd
}

/// Runs `cmd` to its end, or kills it and fails the test when it has not
/// ended after [`CHILD_LIMIT`].
fn output_within_limit(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > CHILD_LIMIT {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "the child hung for {CHILD_LIMIT:?}\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&stdout.join().unwrap()),
                String::from_utf8_lossy(&stderr.join().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Runs the ignored test `test` in a child, which must die by a signal
/// (within [`CHILD_LIMIT`]).
fn child(test: &str) -> Output {
    let out = output_within_limit(child_command(test));
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.code(),
        None,
        "the child exited instead of dying by a signal: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
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
    let mut cmd = child_command("child_overflows_a_kernel_stack_without_rusts_handler");
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
fn a_call_through_a_wild_pointer_is_caught() {
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    // The fetch at 0x8 faults outside the image, but the return address the
    // call pushed is the kernel's: nothing outside it ran.
    let f = fault(run(&exec, &mut q, "call_pointer", &[8]));
    assert_eq!(
        (f.kind, f.signal, f.addr),
        (FaultKind::InvalidAccess, libc::SIGSEGV, 8)
    );
    good_launch(&exec, &mut q, &region, 9);
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
    let out = child("child_smashes_far_up_the_stack");
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

// ---------------------------------------------------------------------------
// Faults inside a library the kernel called: the library may hold a lock
// (malloc's, stdio's) that the worker, reporting the fault, would wait on
// forever. The process dies instead, saying why, as it did before faults
// were caught.

/// Launches `name` with `args` on a fresh queue and synchronizes, printing
/// what came of it (reached only if the process survives).
fn launch_in_child(name: &str, args: &[u64]) {
    let exec = HostExecutor::new().unwrap();
    let mut q = exec.queue().unwrap();
    let r = run(&exec, &mut q, name, args);
    println!("the launch returned: {r:?}");
}

#[test]
#[ignore = "run by a_fault_inside_libc_ends_the_process_with_a_message"]
fn child_faults_inside_memset() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    launch_in_child("libc_memset", &[8, 4096]);
}

#[test]
fn a_fault_inside_libc_ends_the_process_with_a_message() {
    use std::os::unix::process::ExitStatusExt;
    let out = child("child_faults_inside_memset");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{err}");
    let want =
        "reprise: the kernel `libc_memset` faulted inside a library it called (SIGSEGV at 0x";
    assert!(err.contains(want), "{err}");
    assert!(
        err.contains(", instruction 0x") && err.contains("); the process cannot continue safely\n"),
        "{err}"
    );
    assert_eq!(err.matches("reprise: ").count(), 1, "said once: {err}");
}

#[test]
#[ignore = "run by a_fault_inside_fwrite_ends_the_process_instead_of_hanging"]
fn child_faults_inside_fwrite() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    launch_in_child("libc_write", &[8, 16]);
    // Had the fault been caught, stdout's lock would still be held by the
    // worker, and this would wait for it forever.
    // SAFETY: a NUL-terminated format without conversions.
    unsafe {
        libc::printf(c"stdout is usable\n".as_ptr());
        libc::fflush(std::ptr::null_mut());
    }
}

#[test]
fn a_fault_inside_fwrite_ends_the_process_instead_of_hanging() {
    use std::os::unix::process::ExitStatusExt;
    let out = child("child_faults_inside_fwrite");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{err}");
    assert!(
        err.contains("reprise: the kernel `libc_write` faulted inside a library it called"),
        "{err}"
    );
}

#[test]
#[ignore = "run by a_jump_to_a_wild_address_ends_the_process_with_a_message"]
fn child_jumps_to_a_wild_address() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    launch_in_child("jump_pointer", &[8]);
}

#[test]
fn a_jump_to_a_wild_address_ends_the_process_with_a_message() {
    use std::os::unix::process::ExitStatusExt;
    // A tail call leaves no return address into the kernel: nothing tells
    // its jump from one in a library it called.
    let out = child("child_jumps_to_a_wild_address");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{err}");
    assert!(
        err.contains(
            "reprise: the kernel `jump_pointer` continued at 0x8, outside its own code (SIGSEGV); the process cannot continue safely"
        ),
        "{err}"
    );
}

#[test]
#[ignore = "run by a_wild_stack_pointer_at_a_bad_address_ends_the_process_with_a_message"]
fn child_jumps_with_a_wild_stack_pointer() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    launch_in_child("wild_stack", &[8, 16]);
}

#[test]
fn a_wild_stack_pointer_at_a_bad_address_ends_the_process_with_a_message() {
    use std::os::unix::process::ExitStatusExt;
    // The stack pointer (0x10) is outside the worker's stack, so neither
    // word that would tell a call or a return apart is read: reading them
    // would fault inside the handler, which ends the process silently.
    let out = child("child_jumps_with_a_wild_stack_pointer");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{err}");
    assert!(
        err.contains(
            "reprise: the kernel `wild_stack` continued at 0x8, outside its own code, with the stack pointer at 0x10, outside its thread's stack (SIGSEGV); the process cannot continue safely\n"
        ),
        "{err}"
    );
}

// ---------------------------------------------------------------------------
// A handler installed before the guard's that repairs faults: a fault inside
// a library that it repairs is no error and says nothing; one it does not
// repair (it restores the default action, as Rust's does) is reported.

/// The page [`repairing_handler`] makes writable on a fault inside it.
static REPAIRABLE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

extern "C" fn repairing_handler(
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    _: *mut libc::c_void,
) {
    use std::sync::atomic::Ordering;
    let page = REPAIRABLE.load(Ordering::SeqCst);
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    let len = page_size();
    // SAFETY: mprotect and signal are async-signal-safe system calls; the
    // page is this test's own mapping.
    unsafe {
        if page != 0 && addr >= page && addr - page < len {
            libc::mprotect(
                page as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
            );
        } else {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

#[test]
#[ignore = "run by a_fault_a_previous_handler_repairs_says_nothing"]
fn child_faults_repaired_then_not() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let len = page_size();
    // SAFETY: installs a handler (before the guard's, which chains to it)
    // and makes a fresh inaccessible mapping, owned by this process.
    let page = unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = repairing_handler as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGSEGV, &sa, std::ptr::null_mut()), 0);
        let page = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(page, libc::MAP_FAILED);
        page as usize
    };
    REPAIRABLE.store(page, std::sync::atomic::Ordering::SeqCst);
    // memset faults on the page inside libc; the handler makes it writable
    // and memset goes on.
    launch_in_child("libc_memset", &[page as u64, len as u64]);
    // This one the handler does not repair: the process ends, with the
    // message.
    launch_in_child("libc_write", &[8, 16]);
}

#[test]
fn a_fault_a_previous_handler_repairs_says_nothing() {
    use std::os::unix::process::ExitStatusExt;
    let out = child("child_faults_repaired_then_not");
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{err}");
    assert!(
        text.contains("the launch returned: Ok(())"),
        "{text}\n{err}"
    );
    assert_eq!(err.matches("reprise: ").count(), 1, "{err}");
    assert!(
        err.contains("reprise: the kernel `libc_write` faulted inside a library it called"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------
// Signals that are not faults of the kernel's instruction.

#[test]
#[ignore = "run by an_asynchronous_memory_error_is_not_a_kernel_fault"]
fn child_gets_an_asynchronous_sigbus() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    // The default action, not Rust's handler, before the guard's.
    // SAFETY: setting a disposition; nothing else runs yet.
    unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    let r = run(&exec, &mut q, "send_async_bus", &[region.base()]);
    let sent = read_u64(&exec, &mut q, region.base()) as i64;
    println!("the launch returned {r:?}; the syscall {sent}");
}

#[test]
fn an_asynchronous_memory_error_is_not_a_kernel_fault() {
    use std::os::unix::process::ExitStatusExt;
    // BUS_MCEERR_AO reports memory found bad in the background, not a fault
    // of the instruction running: it takes its default action (the end of
    // the process), even while the kernel's own code runs.
    let out = child("child_gets_an_asynchronous_sigbus");
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGBUS),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("reprise: "));
}

#[test]
#[ignore = "run by a_sent_signal_ignored_with_sa_siginfo_stays_ignored"]
fn child_is_sent_an_ignored_sigsegv() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    // SIG_IGN with SA_SIGINFO: the handler union holds 1, which is no
    // function to call.
    // SAFETY: an all-zero sigaction is valid; setting a disposition.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = libc::SIG_IGN;
        sa.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGSEGV, &sa, std::ptr::null_mut()), 0);
    }
    install_by_faulting();
    // SAFETY: sends this thread a signal that stays ignored.
    assert_eq!(unsafe { libc::raise(libc::SIGSEGV) }, 0);
    println!("survived the ignored signal");
}

#[test]
fn a_sent_signal_ignored_with_sa_siginfo_stays_ignored() {
    let out = output_within_limit(child_command("child_is_sent_an_ignored_sigsegv"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("survived the ignored signal"),
        "{:?}\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
