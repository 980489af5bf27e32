//! Faults the process dies of, as it would without the executor, saying
//! why: outside a kernel; inside a library the kernel called, which may hold
//! a lock (malloc's, stdio's) that the worker reporting the fault would wait
//! on forever; and jumps outside the kernel's code.

use reprise_core::exec::{Executor, MapFile};
use reprise_host::HostExecutor;

use crate::child::{CHILD, child, install_by_faulting, launch_in_child};

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
    let out = child("fatal::child_faults_outside_a_kernel");
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV));
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
    let out = child("fatal::child_faults_inside_memset");
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
    let out = child("fatal::child_faults_inside_fwrite");
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
    let out = child("fatal::child_jumps_to_a_wild_address");
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
    let out = child("fatal::child_jumps_with_a_wild_stack_pointer");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{err}");
    assert!(
        err.contains(
            "reprise: the kernel `wild_stack` continued at 0x8, outside its own code, with the stack pointer at 0x10, outside its thread's stack (SIGSEGV); the process cannot continue safely\n"
        ),
        "{err}"
    );
}

/// The file the child maps, from the parent.
const MAPPED: &str = "REPRISE_HOST_FAULT_MAPPED";

#[test]
#[ignore = "run by a_file_truncated_under_its_mapping_is_named"]
fn child_reads_a_truncated_mapping() {
    use std::os::fd::AsRawFd;
    let Some(path) = std::env::var_os(MAPPED).filter(|_| std::env::var_os(CHILD).is_some()) else {
        return;
    };
    install_by_faulting();
    let exec = HostExecutor::new().unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let len = file.metadata().unwrap().len();
    let buf = exec
        .buffer_mapped(MapFile {
            fd: file.as_raw_fd(),
            len,
        })
        .unwrap()
        .expect("the host maps files");
    // Another process cuts the file short while the replay holds it.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(0)
        .unwrap();
    let last = buf.as_ref()[len as usize - 1];
    unreachable!("a page past the file's end read {last}");
}

/// A snapshot or chunk file truncated while a replay maps it: the process
/// dies of the bus error, and says which file changed, not that the image
/// is corrupt.
#[test]
fn a_file_truncated_under_its_mapping_is_named() {
    use std::os::unix::process::ExitStatusExt;
    let path = std::env::temp_dir().join(format!(
        "reprise-host-truncated-{}.chunk",
        std::process::id()
    ));
    std::fs::write(&path, vec![7u8; 3 * 4096]).unwrap();
    let mut cmd = crate::child::child_command("fatal::child_reads_a_truncated_mapping");
    cmd.env(MAPPED, &path);
    let out = crate::child::output_within_limit(cmd);
    let _ = std::fs::remove_file(&path);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGBUS), "{err}");
    assert!(
        err.contains(&format!(
            "reprise: the file {} changed under the replay: reading it at offset 0x2fff \
             faulted (SIGBUS)",
            path.display()
        )),
        "{err}"
    );
}
