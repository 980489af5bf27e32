//! Other handlers and signals: a handler installed before the guard's that
//! repairs faults (a fault inside a library that it repairs is no error and
//! says nothing; one it does not repair, restoring the default action as
//! Rust's does, is reported), and signals that are not faults of the kernel's
//! instruction.

use reprise_core::exec::{DeviceRegion, Executor, RegionRequest};
use reprise_host::HostExecutor;

use crate::child::{
    CHILD, child, child_command, install_by_faulting, launch_in_child, output_within_limit,
};
use crate::{read_u64, run};

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
    let out = child("handlers::child_faults_repaired_then_not");
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
    let out = child("handlers::child_gets_an_asynchronous_sigbus");
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
    let out = output_within_limit(child_command("handlers::child_is_sent_an_ignored_sigsegv"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("survived the ignored signal"),
        "{:?}\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
