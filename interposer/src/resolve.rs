//! The resolver path CUDA's runtime takes: `dlopen("libcuda.so.1")`,
//! `dlsym` of `cuGetProcAddress_v2`, then every entry point through it.
//! Exporting `cu*` catches only programs linked with `-lcuda` (a `dlsym` on
//! the driver's handle searches the driver alone), so the interposer also
//! exports `dlsym`, which hands out its hooks for the driver's names, and
//! hooks `cuGetProcAddress[_v2]`, which replaces every variant the driver
//! resolves to a hooked entry point with the hook, and itself with itself
//! (HAMi-core and vcuda-controller take the same way).

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::hooks;
use crate::real::*;

/// The hooks, by the name of the driver function each stands for.
fn hooks() -> &'static [(&'static CStr, usize)] {
    macro_rules! table {
        ($($name:ident => $f:path,)*) => {
            [$((
                match CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()) {
                    Ok(c) => c,
                    Err(_) => unreachable!(),
                },
                $f as *const () as usize,
            ),)*]
        };
    }
    static TABLE: OnceLock<Vec<(&'static CStr, usize)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        table! {
            cuGetProcAddress_v2 => cuGetProcAddress_v2,
            cuGetProcAddress => cuGetProcAddress,
            cuInit => hooks::cuInit,
            cuCtxSetCurrent => hooks::cuCtxSetCurrent,
            cuCtxPushCurrent_v2 => hooks::cuCtxPushCurrent_v2,
            cuCtxCreate_v2 => hooks::cuCtxCreate_v2,
            cuMemAlloc_v2 => hooks::cuMemAlloc_v2,
            cuMemAllocPitch_v2 => hooks::cuMemAllocPitch_v2,
            cuMemFree_v2 => hooks::cuMemFree_v2,
            cuMemAllocAsync => hooks::cuMemAllocAsync,
            cuMemAllocAsync_ptsz => hooks::cuMemAllocAsync_ptsz,
            cuMemFreeAsync => hooks::cuMemFreeAsync,
            cuMemFreeAsync_ptsz => hooks::cuMemFreeAsync_ptsz,
            cuMemAllocFromPoolAsync => hooks::cuMemAllocFromPoolAsync,
            cuMemAllocFromPoolAsync_ptsz => hooks::cuMemAllocFromPoolAsync_ptsz,
            cuMemHostRegister_v2 => hooks::cuMemHostRegister_v2,
            cuMemHostUnregister => hooks::cuMemHostUnregister,
            cuStreamDestroy_v2 => hooks::cuStreamDestroy_v2,
            cuMemGetAddressRange_v2 => hooks::cuMemGetAddressRange_v2,
            cuMemGetInfo_v2 => hooks::cuMemGetInfo_v2,
            cuPointerGetAttribute => hooks::cuPointerGetAttribute,
            cuPointerGetAttributes => hooks::cuPointerGetAttributes,
            cuMemAllocManaged => hooks::cuMemAllocManaged,
            cuMemHostAlloc => hooks::cuMemHostAlloc,
            cuMemAllocHost_v2 => hooks::cuMemAllocHost_v2,
            cuMemFreeHost => hooks::cuMemFreeHost,
            cuModuleLoad => hooks::cuModuleLoad,
            cuModuleLoadData => hooks::cuModuleLoadData,
            cuModuleLoadDataEx => hooks::cuModuleLoadDataEx,
            cuModuleLoadFatBinary => hooks::cuModuleLoadFatBinary,
            cuModuleGetFunction => hooks::cuModuleGetFunction,
            cuModuleGetGlobal_v2 => hooks::cuModuleGetGlobal_v2,
            cuLibraryLoadData => hooks::cuLibraryLoadData,
            cuLibraryLoadFromFile => hooks::cuLibraryLoadFromFile,
            cuLibraryGetKernel => hooks::cuLibraryGetKernel,
            cuKernelGetFunction => hooks::cuKernelGetFunction,
            cuLaunchKernel => hooks::cuLaunchKernel,
            cuLaunchKernel_ptsz => hooks::cuLaunchKernel_ptsz,
            cuLaunchKernelEx => hooks::cuLaunchKernelEx,
            cuLaunchKernelEx_ptsz => hooks::cuLaunchKernelEx_ptsz,
            cuLaunchCooperativeKernel => hooks::cuLaunchCooperativeKernel,
            cuLaunchCooperativeKernel_ptsz => hooks::cuLaunchCooperativeKernel_ptsz,
            cuGraphLaunch => hooks::cuGraphLaunch,
            cuGraphLaunch_ptsz => hooks::cuGraphLaunch_ptsz,
            cuLaunchHostFunc => hooks::cuLaunchHostFunc,
            cuLaunchHostFunc_ptsz => hooks::cuLaunchHostFunc_ptsz,
            cuStreamAddCallback => hooks::cuStreamAddCallback,
            cuStreamAddCallback_ptsz => hooks::cuStreamAddCallback_ptsz,
            cuStreamBeginCapture_v2 => hooks::cuStreamBeginCapture_v2,
            cuStreamBeginCapture_v2_ptsz => hooks::cuStreamBeginCapture_v2_ptsz,
            cuStreamEndCapture => hooks::cuStreamEndCapture,
            cuStreamEndCapture_ptsz => hooks::cuStreamEndCapture_ptsz,
        }
        .to_vec()
    })
}

/// The hook that stands for the driver's `name`.
fn hook(name: &[u8]) -> Option<*mut c_void> {
    hooks()
        .iter()
        .find(|(n, _)| n.to_bytes() == name)
        .map(|&(_, f)| f as *mut c_void)
}

/// The driver's own function for each hook, looked up once (the first
/// `cuGetProcAddress` comes after the program loaded the driver).
fn drivers_own() -> &'static [(usize, usize)] {
    static OWN: OnceLock<Vec<(usize, usize)>> = OnceLock::new();
    OWN.get_or_init(|| {
        hooks()
            .iter()
            .filter_map(|&(name, hook)| {
                let real = lookup(name.to_str().ok()?);
                (!real.is_null()).then_some((real as usize, hook))
            })
            .collect()
    })
}

/// The hook for a function pointer the driver handed out, if it is one of
/// the driver's hooked functions.
fn hook_for_pointer(p: *mut c_void) -> Option<*mut c_void> {
    drivers_own()
        .iter()
        .find(|&&(real, _)| real == p as usize)
        .map(|&(_, hook)| hook as *mut c_void)
}

/// The C library's `dlsym` once found (0 before): the trampoline jumps to
/// it for `RTLD_NEXT` and `RTLD_DEFAULT`, whose answers depend on the
/// caller, so that the C library sees the program's return address and
/// searches from the caller, not from the interposer.
static REAL_DLSYM: AtomicUsize = AtomicUsize::new(0);

/// Finds the C library's `dlsym` when the interposer is loaded. (Libraries
/// loaded after it may run their constructors first: the trampoline then
/// finds it itself, through [`find_dlsym_now`].)
#[used]
#[unsafe(link_section = ".init_array")]
static FIND_DLSYM: extern "C" fn() = find_dlsym;

extern "C" fn find_dlsym() {
    find_dlsym_now();
}

/// The C library's `dlsym` (0 when there is none), kept in [`REAL_DLSYM`].
extern "C" fn find_dlsym_now() -> usize {
    let f = real_dlsym().map_or(0, |f| f as usize);
    REAL_DLSYM.store(f, Ordering::Release);
    f
}

/// `dlsym`: `RTLD_NEXT` and `RTLD_DEFAULT` straight to the C library with
/// the caller's return address; every other handle through
/// [`dlsym_from`], with the caller's address.
///
/// # Safety
/// As the C library's.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    // rdi = handle, rsi = name; the return address is at [rsp] (rsp is 8
    // past a 16-byte boundary). Jumps keep it there for whichever function
    // answers; the one call keeps the stack aligned (two pushes and 8).
    core::arch::naked_asm!(
        "cmp rdi, -1",
        "je 3f",
        "test rdi, rdi",
        "jne 2f",
        "3:",
        "mov rax, qword ptr [rip + {real}]",
        "test rax, rax",
        "jnz 4f",
        "push rdi",
        "push rsi",
        "sub rsp, 8",
        "call {find}",
        "add rsp, 8",
        "pop rsi",
        "pop rdi",
        "test rax, rax",
        "jz 2f",
        "4:",
        "jmp rax",
        "2:",
        "mov rdx, qword ptr [rsp]",
        "jmp {from}",
        real = sym REAL_DLSYM,
        find = sym find_dlsym_now,
        from = sym dlsym_from,
    )
}

/// `dlsym`, as on x86-64: the return address is the link register, x30.
///
/// # Safety
/// As the C library's.
#[cfg(target_arch = "aarch64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    // x0 = handle, x1 = name, x30 = the return address. Branches without
    // link keep x30 for whichever function answers; the one call saves and
    // restores it (and the arguments) on a 16-byte-aligned frame.
    core::arch::naked_asm!(
        "cmn x0, #1",
        "b.eq 3f",
        "cbnz x0, 2f",
        "3:",
        "adrp x16, {real}",
        "ldr x16, [x16, :lo12:{real}]",
        "cbnz x16, 4f",
        "stp x0, x1, [sp, #-32]!",
        "str x30, [sp, #16]",
        "bl {find}",
        "mov x16, x0",
        "ldr x30, [sp, #16]",
        "ldp x0, x1, [sp], #32",
        "cbz x16, 2f",
        "4:",
        "br x16",
        "2:",
        "mov x2, x30",
        "b {from}",
        real = sym REAL_DLSYM,
        find = sym find_dlsym_now,
        from = sym dlsym_from,
    )
}

/// `dlsym` where no trampoline is written: `RTLD_NEXT` and `RTLD_DEFAULT`
/// are then answered as the interposer's own (skipping objects between the
/// caller and it), and every caller gets the hooks.
///
/// # Safety
/// As the C library's.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    // SAFETY: the caller's arguments; no caller address known.
    unsafe { dlsym_from(handle, name, std::ptr::null()) }
}

/// `dlsym` for a caller at `caller`: for a driver entry point the
/// interposer hooks, looked up in a library that has it (the driver), the
/// hook, unless the caller is the driver itself or a library that defines
/// the same entry point (another interposer stacked after this one, which
/// must reach the driver's, not this one's, or the two would call each
/// other for ever); everything else as the C library answers.
///
/// # Safety
/// As the C library's `dlsym`; `caller` is null or a code address.
unsafe extern "C" fn dlsym_from(
    handle: *mut c_void,
    name: *const c_char,
    caller: *const c_void,
) -> *mut c_void {
    let Some(real) = real_dlsym() else {
        return std::ptr::null_mut();
    };
    // SAFETY: forwarded unchanged.
    let found = unsafe { real(handle, name) };
    if found.is_null() || name.is_null() || handle == libc::RTLD_NEXT {
        return found;
    }
    // SAFETY: the C library read `name` as a C string.
    let bytes = unsafe { CStr::from_ptr(name) }.to_bytes();
    if !bytes.starts_with(b"cu") {
        return found;
    }
    match hook(bytes) {
        // SAFETY: `caller` is the caller's code address, `name` a C string.
        Some(ours) if ours != found && !unsafe { wants_the_driver(caller, name, found) } => ours,
        _ => found,
    }
}

/// The object (its load base) `addr` lies in, and its file name.
fn object_of(addr: *const c_void) -> Option<(usize, *const c_char)> {
    // SAFETY: Dl_info is plain data (pointers), all-zero valid.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-pointer; dladdr only reads the loader's tables.
    let found = unsafe { libc::dladdr(addr, &mut info) } != 0;
    (found && !info.dli_fbase.is_null()).then_some((info.dli_fbase as usize, info.dli_fname))
}

/// Whether the code at `caller` must get the driver's `name` (at `found`),
/// not the hook: it is the driver's own, or its object defines `name`
/// itself (an interposer of it).
///
/// # Safety
/// `name` is a C string.
unsafe fn wants_the_driver(caller: *const c_void, name: *const c_char, found: *mut c_void) -> bool {
    let Some((base, file)) = (!caller.is_null()).then(|| object_of(caller)).flatten() else {
        return false;
    };
    if object_of(found).is_some_and(|(driver, _)| driver == base) {
        return true;
    }
    let Some(real) = real_dlsym() else {
        return false;
    };
    // SAFETY: `file` is the loader's NUL-terminated name of a loaded
    // object; RTLD_NOLOAD only finds it, taking a reference dropped below.
    let own = unsafe { libc::dlopen(file, libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    if own.is_null() {
        // Not an object the loader opens by that name (the main program,
        // started by a relative path): its failure is not the caller's to
        // find in dlerror().
        // SAFETY: clears this thread's error text, nothing else.
        unsafe { libc::dlerror() };
        return false;
    }
    // SAFETY: a loaded object's handle and the caller's C string.
    let theirs = unsafe { real(own, name) };
    // SAFETY: the reference RTLD_NOLOAD took.
    unsafe { libc::dlclose(own) };
    !theirs.is_null() && object_of(theirs).is_some_and(|(b, _)| b == base)
}

type GetProcAddressV2 =
    unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_int) -> CuResult;
type GetProcAddress = unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64) -> CuResult;

/// Replaces a resolved driver function with its hook.
///
/// # Safety
/// `pfn` is valid for reads and writes.
unsafe fn swap(rc: CuResult, pfn: *mut *mut c_void) -> CuResult {
    if rc == SUCCESS
        && !pfn.is_null()
        // SAFETY: the caller's guarantee.
        && let Some(ours) = hook_for_pointer(unsafe { *pfn })
    {
        // SAFETY: as above.
        unsafe { *pfn = ours };
    }
    rc
}

/// `cuGetProcAddress_v2` (CUDA 12): the driver's answer, with hooked
/// functions replaced by their hooks.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetProcAddress_v2(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
) -> CuResult {
    let Some(real) = optional::<GetProcAddressV2>("cuGetProcAddress_v2") else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: forwarded unchanged; then `pfn` as the driver left it.
    unsafe { swap(real(symbol, pfn, version, flags, status), pfn) }
}

/// `cuGetProcAddress` (CUDA 11.3 to 11.8).
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetProcAddress(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
) -> CuResult {
    let Some(real) = optional::<GetProcAddress>("cuGetProcAddress") else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: forwarded unchanged; then `pfn` as the driver left it.
    unsafe { swap(real(symbol, pfn, version, flags), pfn) }
}
