//! The driver's own entry points, found past the interposer
//! (`dlsym(RTLD_NEXT, ...)`): every call the interposer makes goes to them,
//! never back into its own hooks.

use std::ffi::{c_char, c_void};
use std::sync::OnceLock;

pub use reprise_cuda::abi::*;

/// The stream a call means: in a `_ptsz`/`_ptds` call (`per_thread_call`)
/// stream 0 is the thread's default stream.
pub fn stream_meant(stream: Handle, per_thread_call: bool) -> Handle {
    if per_thread_call && stream.is_null() {
        STREAM_PER_THREAD as Handle
    } else {
        stream
    }
}

reprise_cuda::abi::driver_table! {
    /// The driver's entry points the recording needs.
    pub struct Real {
        cuMemAlloc_v2: MemAlloc,
        cuMemFree_v2: MemFree,
        cuModuleLoadData: ModuleLoadData,
        cuModuleGetFunction: ModuleGetFunction,
        cuModuleGetGlobal_v2: ModuleGetGlobal,
        cuLaunchKernel: LaunchKernel,
        cuMemcpyHtoDAsync_v2: MemcpyHtoDAsync,
        cuMemcpyDtoHAsync_v2: MemcpyDtoHAsync,
        cuMemcpyDtoDAsync_v2: MemcpyDtoDAsync,
        cuStreamSynchronize: StreamSynchronize,
        cuMemGetAllocationGranularity: MemGetAllocationGranularity,
        cuMemAddressReserve: MemAddressReserve,
        cuMemAddressFree: MemAddressFree,
        cuMemCreate: MemCreate,
        cuMemRelease: MemRelease,
        cuMemMap: MemMap,
        cuMemUnmap: MemUnmap,
        cuMemSetAccess: MemSetAccess,
        cuGetErrorName: GetErrorName,
    }
}

/// The driver's entry points the recording needs, or the first one
/// missing (looked up again at the next call: the program may not have
/// loaded the driver yet).
pub fn real() -> Result<&'static Real, &'static str> {
    static REAL: OnceLock<Real> = OnceLock::new();
    if let Some(r) = REAL.get() {
        return Ok(r);
    }
    // SAFETY: the table's types are cuda.h's prototypes of the functions
    // of their names, which `lookup` finds in the driver (or not).
    let r = unsafe { Real::resolve(lookup) }?;
    Ok(REAL.get_or_init(|| r))
}

/// The driver's name of `rc` ("CUDA_ERROR_INVALID_VALUE"); without a
/// driver to ask, the CUDA executor's table's, or its number.
pub fn error_name(rc: CuResult) -> String {
    if let Ok(r) = real() {
        let mut p: *const c_char = std::ptr::null();
        // SAFETY: a valid out-pointer; the driver writes a static string.
        if unsafe { (r.cuGetErrorName)(rc, &mut p) } == SUCCESS && !p.is_null() {
            // SAFETY: NUL-terminated static string owned by the driver.
            return unsafe { std::ffi::CStr::from_ptr(p) }
                .to_string_lossy()
                .into_owned();
        }
    }
    u32::try_from(rc)
        .ok()
        .and_then(reprise_cuda::error::code_name)
        .map_or_else(|| format!("CUresult {rc}"), |(name, _)| name.to_string())
}

/// The driver's function `$name` of type `$ty` (an `Option`), looked up
/// past the interposer once and then kept (a miss is looked up again).
#[macro_export]
#[doc(hidden)]
macro_rules! driver_fn {
    ($ty:ty, $name:expr) => {{
        static F: std::sync::OnceLock<$ty> = std::sync::OnceLock::new();
        match F.get() {
            Some(f) => Some(*f),
            None => $crate::real::optional::<$ty>($name).map(|f| *F.get_or_init(|| f)),
        }
    }};
}

/// An entry point a driver may lack, looked up past the interposer.
pub fn optional<F: Copy>(name: &'static str) -> Option<F> {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    let c = std::ffi::CString::new(name).ok()?;
    let p = lookup(c.to_str().ok()?);
    // SAFETY: `F` is the function pointer type of `name` as cuda.h declares
    // it (the callers pass matching pairs), of a pointer's size.
    (!p.is_null()).then(|| unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

type Dlsym = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;

/// The C library's `dlsym`, past the interposer's own (which hands out
/// hooks).
pub fn real_dlsym() -> Option<Dlsym> {
    static REAL: OnceLock<Option<usize>> = OnceLock::new();
    let p = *REAL.get_or_init(|| {
        // GLIBC_2.34 where libdl moved into the C library, else each
        // architecture's first version (x86-64, aarch64, ppc64le, i386).
        [
            c"GLIBC_2.34",
            c"GLIBC_2.2.5",
            c"GLIBC_2.17",
            c"GLIBC_2.3",
            c"GLIBC_2.0",
        ]
        .iter()
        .find_map(|v| {
            // SAFETY: NUL-terminated names; `dlvsym` is not interposed.
            let p = unsafe { libc::dlvsym(libc::RTLD_NEXT, c"dlsym".as_ptr(), v.as_ptr()) };
            (!p.is_null()).then_some(p as usize)
        })
    });
    // SAFETY: the C library's `dlsym`, of this signature.
    p.map(|p| unsafe { std::mem::transmute::<usize, Dlsym>(p) })
}

/// The driver's function `name` (NUL-terminated or not): past the
/// interposer in the global scope (a program linked with `-lcuda`), else in
/// the `libcuda.so.1` the program opened itself (`dlopen`, local to it, as
/// CUDA's runtime does). Null when neither has it.
pub fn lookup(name: &str) -> *mut c_void {
    let Some(dlsym) = real_dlsym() else {
        return std::ptr::null_mut();
    };
    let Ok(c) = std::ffi::CString::new(name.trim_end_matches('\0')) else {
        return std::ptr::null_mut();
    };
    // SAFETY: a NUL-terminated name; RTLD_NEXT searches the objects loaded
    // after this one.
    let p = unsafe { dlsym(libc::RTLD_NEXT, c.as_ptr()) };
    if !p.is_null() {
        return p;
    }
    // SAFETY: RTLD_NOLOAD only finds a library already loaded.
    let handle = unsafe {
        libc::dlopen(
            c"libcuda.so.1".as_ptr(),
            libc::RTLD_LAZY | libc::RTLD_NOLOAD,
        )
    };
    if handle.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: a handle of a loaded library and a NUL-terminated name; the
    // reference NOLOAD took is dropped at once (the program keeps its own).
    unsafe {
        let p = dlsym(handle, c.as_ptr());
        libc::dlclose(handle);
        p
    }
}
