//! Kernel faults as errors instead of the end of the process.
//!
//! A GPU driver reports a kernel's bad memory access as an error of the
//! launch (`CUDA_ERROR_ILLEGAL_ADDRESS`); on the host the same access is a
//! `SIGSEGV` that kills the process without a word. This module makes the
//! host executor behave like a GPU: a kernel runs inside
//! `reprise_guarded_call` (`guard.c`, compiled by the build script), and a
//! fault inside it comes back to the queue's worker as a [`Caught`], which the
//! queue reports at its next synchronize.
//!
//! In short: one process-wide handler for `SIGSEGV`, `SIGBUS`, `SIGFPE` and
//! `SIGILL` jumps back (`siglongjmp`) only for a fault raised by an
//! instruction of the kernel's own code (the executable segments the caller
//! passes to [`call_guarded`]), or a bad fetch that a call or return from
//! that code led to, read inside the thread's stack ([`thread_stack`]);
//! every other fault goes to the handler that was there before, or ends the
//! process as before, after one line on stderr. The handler's state lives in
//! thread-local storage, not on the stack a kernel can overrun, and a canary
//! in `reprise_guarded_call`'s frame tells whether the frames the jump
//! returns into are intact. Each worker has an alternate signal stack
//! ([`AltStack`]), so a stack overflow is caught too. The frames the jump
//! skips are the kernel's, [`crate::call::call`]'s and [`trampoline`]'s,
//! which own nothing with a destructor.
//!
//! The whole design (which faults are caught and why, where the state
//! lives, why the jump is sound, and the limitations) is the book's
//! chapter "Failure behaviour", section "How the host executor catches a
//! kernel fault" (`notes/failures.md`).

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use crate::call;

/// What a caught fault was; mirrors `struct reprise_fault` in `guard.c`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct Caught {
    /// The signal.
    pub signal: c_int,
    /// Its `si_code`.
    pub code: c_int,
    /// `si_addr`: the address accessed (`SIGSEGV`, `SIGBUS`), or the
    /// faulting instruction's (`SIGFPE`, `SIGILL`).
    pub addr: usize,
    /// The stack pointer at the fault.
    pub sp: usize,
}

/// The running kernel's code, and the calling thread's stack; mirrors
/// `struct reprise_code` in `guard.c`, which copies it (the first 16 ranges
/// and 200 bytes of the name) into the thread's guard state before the
/// call: the handler reads the copy, never this.
#[repr(C)]
struct RawCode {
    text: *const [usize; 2],
    ntext: usize,
    name: *const u8,
    name_len: usize,
    /// The calling thread's stack, `[stack_lo, stack_hi)`; both 0 when
    /// unknown. The handler reads stack words only from there.
    stack_lo: usize,
    stack_hi: usize,
}

#[cfg(target_os = "linux")]
unsafe extern "C" {
    fn reprise_guard_install() -> c_int;
    fn reprise_guarded_call(
        f: unsafe extern "C" fn(*mut c_void),
        data: *mut c_void,
        code: *const RawCode,
    ) -> c_int;
    fn reprise_guard_fault(out: *mut Caught);
    fn reprise_guard_report_to(fd: c_int);
    fn reprise_guard_report(buf: *const u8, len: usize);
    fn reprise_guard_note_file(start: usize, len: usize, path: *const u8, n: usize) -> c_int;
    fn reprise_guard_forget_files(start: usize, len: usize);
    fn reprise_guard_file_at(addr: usize, buf: *mut u8, cap: usize, offset: *mut usize) -> usize;
}

/// Notes that `[start, start + len)` maps the file open as `fd` from its
/// start, so that a fault reading a page the file no longer has (it was
/// truncated after it was mapped) names the file, whether a kernel or the
/// replay itself read it. Forgotten by [`forget_files`].
#[cfg(target_os = "linux")]
pub fn note_file(start: u64, len: u64, fd: c_int) {
    let path = std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .map(|p| p.as_os_str().as_encoded_bytes().to_vec())
        .unwrap_or_else(|_| format!("(file descriptor {fd})").into_bytes());
    // SAFETY: copies `path` (a live buffer of that length) into the
    // guard's table; a full table notes nothing.
    unsafe { reprise_guard_note_file(start as usize, len as usize, path.as_ptr(), path.len()) };
}

/// Forgets the files noted inside `[start, start + len)` (unmapped).
#[cfg(target_os = "linux")]
pub fn forget_files(start: u64, len: u64) {
    // SAFETY: clears entries of the guard's table.
    unsafe { reprise_guard_forget_files(start as usize, len as usize) };
}

/// The file noted at `addr` ([`note_file`]) and the offset into it.
#[cfg(target_os = "linux")]
pub fn file_at(addr: u64) -> Option<(String, u64)> {
    let mut buf = [0u8; 256];
    let mut offset = 0usize;
    // SAFETY: the C side writes at most `buf.len()` bytes into `buf` and
    // one word into `offset`.
    let n =
        unsafe { reprise_guard_file_at(addr as usize, buf.as_mut_ptr(), buf.len(), &mut offset) };
    (n > 0).then(|| {
        (
            String::from_utf8_lossy(&buf[..n]).into_owned(),
            offset as u64,
        )
    })
}

/// See the Linux version: nothing is noted elsewhere.
#[cfg(not(target_os = "linux"))]
pub fn note_file(_start: u64, _len: u64, _fd: c_int) {}

/// See the Linux version.
#[cfg(not(target_os = "linux"))]
pub fn forget_files(_start: u64, _len: u64) {}

/// See the Linux version.
#[cfg(not(target_os = "linux"))]
pub fn file_at(_addr: u64) -> Option<(String, u64)> {
    None
}

/// Sends fault reports to the descriptor `fd` too, besides stderr: a line
/// `fault TEXT` for each fault caught in a kernel (written by the queue's worker), and `fatal
/// TEXT` for one that ends the process (written by the signal handler).
/// A parent process that reads them can say why its child ended. A
/// negative `fd` stops it.
#[cfg(target_os = "linux")]
pub fn report_to(fd: c_int) {
    // SAFETY: stores an integer the handler reads.
    unsafe { reprise_guard_report_to(fd) }
}

/// See the Linux version: nothing is reported elsewhere.
#[cfg(not(target_os = "linux"))]
pub fn report_to(_fd: c_int) {}

/// Writes `line` (made one line: control characters escaped) to the
/// descriptor [`report_to`] named, if any.
pub fn report(line: &str) {
    let mut one = String::with_capacity(line.len() + 1);
    for c in line.chars() {
        if c.is_control() {
            one.extend(c.escape_default());
        } else {
            one.push(c);
        }
    }
    one.push('\n');
    #[cfg(target_os = "linux")]
    // SAFETY: the pointer and length are those of a live String.
    unsafe {
        reprise_guard_report(one.as_ptr(), one.len())
    };
}

/// Installs the process-wide handler (once). Returns the `errno` of a
/// failed `sigaction`, the same one on every call.
#[cfg(target_os = "linux")]
pub fn install() -> Result<(), c_int> {
    static INSTALLED: OnceLock<c_int> = OnceLock::new();
    // SAFETY: the shim only calls sigaction; once per process (OnceLock).
    let rc = *INSTALLED.get_or_init(|| unsafe { reprise_guard_install() });
    if rc == 0 { Ok(()) } else { Err(rc) }
}

/// The host executor runs on Linux only: nothing to install elsewhere.
#[cfg(not(target_os = "linux"))]
pub fn install() -> Result<(), c_int> {
    Ok(())
}

/// A kernel call, as [`trampoline`] receives it.
struct KernelCall<'a> {
    entry: usize,
    args: &'a [u64],
}

/// The callback `reprise_guarded_call` runs: calls the kernel.
///
/// # Safety
/// `data` points to a live [`KernelCall`] whose entry and arguments meet
/// [`call::call`]'s contract. This frame is skipped by `siglongjmp` when the
/// kernel faults: it must stay a plain old frame (nothing with a destructor,
/// no guard objects). Nothing in it is read after the jump: a kernel's
/// overrun may have written over it.
unsafe extern "C" fn trampoline(data: *mut c_void) {
    // SAFETY: per this function's contract.
    let c = unsafe { &*(data as *const KernelCall<'_>) };
    // SAFETY: per this function's contract.
    unsafe { call::call(c.entry, c.args) };
}

/// Calls the kernel `name` at `entry` with `args`; a fault of an
/// instruction inside `text` (the `[start, end)` ranges of its image's
/// executable segments), or one that a call from there or a return led to,
/// returns `Err` with what it was. A fault elsewhere (in a library the
/// kernel called) ends the process with a message naming `name`, and so
/// does a kernel that overwrote the stack above its own frames (the
/// canary: see the module docs). [`install`] must have succeeded.
///
/// `stack`: the calling thread's stack as [`thread_stack`] returned it on
/// this thread (lowest address and size), read once, outside the handler.
/// The handler reads words next to the stack pointer only inside it; with
/// `None`, none, and a fault at a bad address is never the kernel's.
///
/// # Panics
/// On a thread that is inside a guarded call already: guarded calls cannot
/// nest (one guard state per thread). The kernel is not called then.
///
/// # Safety
/// As [`call::call`]; `stack`, when given, is mapped readable memory: the
/// calling thread's stack. After an `Err`, the kernel stopped wherever it
/// was: see the module docs for what that leaves behind.
#[cfg(target_os = "linux")]
pub unsafe fn call_guarded(
    entry: usize,
    args: &[u64],
    text: &[[usize; 2]],
    name: &str,
    stack: Option<(u64, u64)>,
) -> Result<(), Caught> {
    let data = KernelCall { entry, args };
    let (stack_lo, stack_hi) = stack
        .and_then(|(low, size)| {
            let low = usize::try_from(low).ok()?;
            Some((low, low.checked_add(usize::try_from(size).ok()?)?))
        })
        .unwrap_or((0, 0));
    let code = RawCode {
        text: text.as_ptr(),
        ntext: text.len(),
        name: name.as_ptr(),
        name_len: name.len(),
        stack_lo,
        stack_hi,
    };
    // SAFETY: `trampoline` gets a pointer to `data`, which outlives the call
    // and meets its contract by ours. `code` and the slices it points to are
    // read (copied) before the kernel runs; the handler reads the copy, and
    // words inside the stack range: this thread's own stack, mapped (our
    // contract). The frames a fault skips are plain old frames (module
    // docs).
    let rc = unsafe {
        reprise_guarded_call(
            trampoline,
            std::ptr::from_ref(&data).cast_mut().cast(),
            &code,
        )
    };
    match rc {
        0 => Ok(()),
        1 => {
            let mut caught = Caught::default();
            // SAFETY: copies this thread's last caught fault, written by the
            // handler before it jumped back, into a valid `Caught`.
            unsafe { reprise_guard_fault(&mut caught) };
            Err(caught)
        }
        // Only the queue's worker calls this, and a kernel cannot call back
        // into it: a nested call is a bug of this crate.
        _ => panic!(
            "a guarded kernel call on a thread already inside one (`{name}`): guarded calls cannot nest"
        ),
    }
}

/// Elsewhere the executor never runs a kernel.
///
/// # Safety
/// As [`call::call`].
#[cfg(not(target_os = "linux"))]
pub unsafe fn call_guarded(
    entry: usize,
    args: &[u64],
    _text: &[[usize; 2]],
    _name: &str,
    _stack: Option<(u64, u64)>,
) -> Result<(), Caught> {
    // SAFETY: per this function's contract.
    unsafe { call::call(entry, args) };
    Ok(())
}

/// An alternate signal stack this thread did not have before; removed and
/// freed when dropped (on the same thread: it is not `Send`).
pub struct AltStack {
    map: *mut c_void,
    len: usize,
}

/// Bytes of an alternate signal stack that this module adds: plenty for the
/// handler and for Rust's (which runs on a stack of `SIGSTKSZ`).
const ALT_STACK: usize = 64 << 10;

impl AltStack {
    /// Gives the calling thread an alternate signal stack when it has none
    /// (Rust's runtime gives its threads one when it installed its
    /// stack-overflow handler). `None`: the thread already has one, or none
    /// could be made (then a stack overflow in a kernel is not caught, and
    /// ends the process as before).
    pub fn ensure() -> Option<AltStack> {
        // SAFETY: an all-zero stack_t is a valid value to be overwritten.
        let mut old: libc::stack_t = unsafe { std::mem::zeroed() };
        // SAFETY: querying only (null new stack), into a valid stack_t.
        if unsafe { libc::sigaltstack(std::ptr::null(), &mut old) } != 0
            || old.ss_flags & libc::SS_DISABLE == 0
        {
            return None;
        }
        let page = crate::os::page_size() as usize;
        let len = ALT_STACK + page;
        // The whole mapping starts inaccessible, and all but its first page
        // is then made the stack: the guard page below the stack (a handler
        // overflowing it faults, and ends the process, instead of writing
        // into a neighbour) cannot be missing.
        // SAFETY: a fresh private anonymous mapping, owned by the result.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            log::warn!(
                "no alternate signal stack for the queue's worker (a kernel overflowing its stack ends the process): mmap: {}",
                std::io::Error::last_os_error()
            );
            return None;
        }
        // SAFETY: `page` < `len`: inside the mapping.
        let stack_base = unsafe { map.cast::<u8>().add(page) }.cast::<c_void>();
        // SAFETY: all of the mapping just made but its first page.
        if unsafe { libc::mprotect(stack_base, ALT_STACK, libc::PROT_READ | libc::PROT_WRITE) } != 0
        {
            log::warn!(
                "no alternate signal stack for the queue's worker (a kernel overflowing its stack ends the process): mprotect: {}",
                std::io::Error::last_os_error()
            );
            // SAFETY: the mapping just made, used by nothing.
            unsafe { libc::munmap(map, len) };
            return None;
        }
        let stack = libc::stack_t {
            ss_sp: stack_base,
            ss_flags: 0,
            ss_size: ALT_STACK,
        };
        // SAFETY: the stack lies in a mapping that stays until `drop`, which
        // disables it first.
        if unsafe { libc::sigaltstack(&stack, std::ptr::null_mut()) } != 0 {
            // SAFETY: the mapping just made, used by nothing.
            unsafe { libc::munmap(map, len) };
            return None;
        }
        Some(AltStack { map, len })
    }
}

impl Drop for AltStack {
    fn drop(&mut self) {
        let off = libc::stack_t {
            ss_sp: std::ptr::null_mut(),
            ss_flags: libc::SS_DISABLE,
            ss_size: 0,
        };
        // SAFETY: this thread installed the stack (`AltStack` is not Send)
        // and is not running on it (no signal handler is active here);
        // once disabled, nothing uses the mapping.
        unsafe {
            if libc::sigaltstack(&off, std::ptr::null_mut()) == 0 {
                libc::munmap(self.map, self.len);
            }
        }
    }
}

/// The calling thread's stack: lowest usable address and size, where the
/// C library can tell.
pub fn thread_stack() -> Option<(u64, u64)> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: an all-zero pthread_attr_t is overwritten by
        // pthread_getattr_np before use, and destroyed after.
        unsafe {
            let mut attr: libc::pthread_attr_t = std::mem::zeroed();
            if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
                return None;
            }
            let mut addr: *mut c_void = std::ptr::null_mut();
            let mut size: libc::size_t = 0;
            let rc = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
            libc::pthread_attr_destroy(&mut attr);
            (rc == 0).then_some((addr as u64, size as u64))
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    None
}

#[cfg(all(test, target_os = "linux", target_arch = "x86_64"))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI32, Ordering};

    /// Every address counts as the kernel's code.
    const EVERYWHERE: [[usize; 2]; 1] = [[0, usize::MAX]];

    extern "C" fn store_to_8() {
        let p = std::hint::black_box(8usize) as *mut u64;
        // SAFETY: not safe at all: the store faults, and the guard catches
        // it (the test passes all of memory as the kernel's code).
        unsafe { p.write_volatile(1) };
    }

    unsafe extern "C" fn nothing(_: *mut c_void) {}

    static INNER: AtomicI32 = AtomicI32::new(i32::MIN);

    /// A "kernel" that tries a guarded call of its own.
    extern "C" fn nest() {
        let code = RawCode {
            text: EVERYWHERE.as_ptr(),
            ntext: EVERYWHERE.len(),
            name: "inner".as_ptr(),
            name_len: 5,
            stack_lo: 0,
            stack_hi: 0,
        };
        // SAFETY: `nothing` ignores its argument; `code` outlives the call.
        let rc = unsafe { reprise_guarded_call(nothing, std::ptr::null_mut(), &code) };
        INNER.store(rc, Ordering::SeqCst);
    }

    fn guarded(f: extern "C" fn()) -> Result<(), Caught> {
        install().unwrap();
        // SAFETY: `f` takes no arguments; a fault anywhere is taken for its
        // own, and the frames it skips (`f`'s, `call`'s, `trampoline`'s)
        // are plain old frames. The stack is this thread's.
        unsafe {
            call_guarded(
                f as *const () as usize,
                &[],
                &EVERYWHERE,
                "test",
                thread_stack(),
            )
        }
    }

    #[test]
    fn a_caught_fault_is_copied_out_and_the_thread_guards_again() {
        for _ in 0..3 {
            let caught = guarded(store_to_8).unwrap_err();
            assert_eq!(
                (caught.signal, caught.code, caught.addr),
                (libc::SIGSEGV, 1, 8)
            );
            assert_ne!(caught.sp, 0);
        }
        extern "C" fn fine() {}
        guarded(fine).unwrap();
    }

    #[test]
    fn a_nested_guarded_call_is_refused() {
        guarded(nest).unwrap();
        assert_eq!(INNER.load(Ordering::SeqCst), -1, "refused, f not called");
        // The refusal left the outer call's state alone, and the thread
        // guards again afterwards.
        assert_eq!(guarded(store_to_8).unwrap_err().addr, 8);
    }
}
