//! The resolver path CUDA's runtime takes: `dlopen("libcuda.so.1")`,
//! `dlsym` of `cuGetProcAddress_v2`, then every entry point through it.
//! Exporting `cu*` catches only programs linked with `-lcuda` (a `dlsym` on
//! the driver's handle searches the driver alone), so the interposer also
//! exports `dlsym`, which hands out its hooks for the driver's names, and
//! hooks `cuGetProcAddress[_v2]`, which replaces every variant the driver
//! resolves to a hooked entry point with the hook, and itself with itself
//! (HAMi-core and vcuda-controller take the same way).

use std::ffi::{CStr, c_char, c_int, c_void};

use crate::hooks;
use crate::real::*;

/// The hook that stands for the driver's `name`.
fn hook(name: &[u8]) -> Option<*mut c_void> {
    Some(match name {
        b"cuGetProcAddress_v2" => cuGetProcAddress_v2 as *mut c_void,
        b"cuGetProcAddress" => cuGetProcAddress as *mut c_void,
        b"cuMemAlloc_v2" => hooks::cuMemAlloc_v2 as *mut c_void,
        b"cuMemFree_v2" => hooks::cuMemFree_v2 as *mut c_void,
        b"cuModuleLoadData" => hooks::cuModuleLoadData as *mut c_void,
        b"cuModuleLoadDataEx" => hooks::cuModuleLoadDataEx as *mut c_void,
        b"cuModuleGetFunction" => hooks::cuModuleGetFunction as *mut c_void,
        b"cuLaunchKernel" => hooks::cuLaunchKernel as *mut c_void,
        b"cuLaunchKernel_ptsz" => hooks::cuLaunchKernel_ptsz as *mut c_void,
        b"cuMemAllocAsync" => hooks::cuMemAllocAsync as *mut c_void,
        b"cuMemFreeAsync" => hooks::cuMemFreeAsync as *mut c_void,
        b"cuLibraryLoadData" => hooks::cuLibraryLoadData as *mut c_void,
        b"cuLibraryGetKernel" => hooks::cuLibraryGetKernel as *mut c_void,
        b"cuKernelGetFunction" => hooks::cuKernelGetFunction as *mut c_void,
        b"cuLaunchKernelEx" => hooks::cuLaunchKernelEx as *mut c_void,
        b"cuLaunchKernelEx_ptsz" => hooks::cuLaunchKernelEx_ptsz as *mut c_void,
        _ => return None,
    })
}

/// Names of the driver's functions the hooks stand for.
const HOOKED: [&CStr; 16] = [
    c"cuGetProcAddress_v2",
    c"cuGetProcAddress",
    c"cuMemAlloc_v2",
    c"cuMemFree_v2",
    c"cuModuleLoadData",
    c"cuModuleLoadDataEx",
    c"cuModuleGetFunction",
    c"cuLaunchKernel",
    c"cuLaunchKernel_ptsz",
    c"cuMemAllocAsync",
    c"cuMemFreeAsync",
    c"cuLibraryLoadData",
    c"cuLibraryGetKernel",
    c"cuKernelGetFunction",
    c"cuLaunchKernelEx",
    c"cuLaunchKernelEx_ptsz",
];

/// The hook for a function pointer the driver handed out, if it is one of
/// the driver's hooked functions.
fn hook_for_pointer(p: *mut c_void) -> Option<*mut c_void> {
    HOOKED.iter().find_map(|name| {
        let real = lookup(name.to_str().ok()?);
        (!real.is_null() && real == p)
            .then(|| hook(name.to_bytes()))
            .flatten()
    })
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
