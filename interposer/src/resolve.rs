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
            cuMemFreeAsync => hooks::cuMemFreeAsync,
            cuMemGetAddressRange_v2 => hooks::cuMemGetAddressRange_v2,
            cuMemGetInfo_v2 => hooks::cuMemGetInfo_v2,
            cuMemAllocManaged => hooks::cuMemAllocManaged,
            cuMemHostAlloc => hooks::cuMemHostAlloc,
            cuMemAllocHost_v2 => hooks::cuMemAllocHost_v2,
            cuMemFreeHost => hooks::cuMemFreeHost,
            cuModuleLoadData => hooks::cuModuleLoadData,
            cuModuleLoadDataEx => hooks::cuModuleLoadDataEx,
            cuModuleLoadFatBinary => hooks::cuModuleLoadFatBinary,
            cuModuleGetFunction => hooks::cuModuleGetFunction,
            cuModuleGetGlobal_v2 => hooks::cuModuleGetGlobal_v2,
            cuLibraryLoadData => hooks::cuLibraryLoadData,
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

/// `dlsym`: for a driver entry point the interposer hooks, looked up in a
/// library that has it (the driver), the hook; everything else as the C
/// library answers.
///
/// # Safety
/// As the C library's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    let Some(real) = real_dlsym() else {
        return std::ptr::null_mut();
    };
    // SAFETY: forwarded unchanged.
    let found = unsafe { real(handle, name) };
    if found.is_null() || name.is_null() || handle == libc::RTLD_NEXT {
        return found;
    }
    // SAFETY: the C library read `name` as a C string.
    let name = unsafe { CStr::from_ptr(name) }.to_bytes();
    if name.starts_with(b"cu")
        && let Some(ours) = hook(name)
        && ours != found
    {
        return ours;
    }
    found
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
