//! The driver's own entry points, found past the interposer
//! (`dlsym(RTLD_NEXT, ...)`): every call the interposer makes goes to them,
//! never back into its own hooks.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

/// `CUresult`.
pub type CuResult = c_int;
/// `CUdeviceptr`.
pub type DevPtr = u64;
/// `CUmodule`, `CUfunction`, `CUstream`, `CUcontext`: opaque pointers.
pub type Handle = *mut c_void;

/// `CUDA_SUCCESS`.
pub const SUCCESS: CuResult = 0;
/// `CU_STREAM_PER_THREAD`: the per-thread default stream, as a handle any
/// entry point takes.
pub const STREAM_PER_THREAD: usize = 0x2;

/// The stream a call means: in a `_ptsz`/`_ptds` call (`per_thread_call`)
/// stream 0 is the thread's default stream.
pub fn stream_meant(stream: Handle, per_thread_call: bool) -> Handle {
    if per_thread_call && stream.is_null() {
        STREAM_PER_THREAD as Handle
    } else {
        stream
    }
}

/// `CUDA_ERROR_INVALID_VALUE`.
pub const ERROR_INVALID_VALUE: CuResult = 1;
/// `CUDA_ERROR_NOT_FOUND`.
pub const ERROR_NOT_FOUND: CuResult = 500;

/// `CUmemLocation` (cuda.h): a device by ordinal.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MemLocation {
    /// `CU_MEM_LOCATION_TYPE_DEVICE` = 1.
    pub kind: c_uint,
    /// The device ordinal.
    pub id: c_int,
}

/// `CUmemAllocationProp` (cuda.h, 32 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MemAllocationProp {
    /// `CU_MEM_ALLOCATION_TYPE_PINNED` = 1.
    pub kind: c_uint,
    /// `CU_MEM_HANDLE_TYPE_NONE` = 0.
    pub handle_types: c_uint,
    /// Where the memory lives.
    pub location: MemLocation,
    /// Windows only.
    pub win32: *mut c_void,
    /// `allocFlags`: compression, RDMA, usage, reserved.
    pub flags: [u8; 8],
}

/// `CUmemAccessDesc` (cuda.h).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MemAccessDesc {
    /// The device given access.
    pub location: MemLocation,
    /// `CU_MEM_ACCESS_FLAGS_PROT_READWRITE` = 3.
    pub flags: c_uint,
}

macro_rules! real {
    ($($name:ident: fn($($arg:ty),*) -> $ret:ty;)*) => {
        /// The driver's entry points, named as the driver exports them.
        #[allow(non_snake_case, missing_docs)]
        pub struct Real {
            $(pub $name: unsafe extern "C" fn($($arg),*) -> $ret,)*
        }

        impl Real {
            fn resolve() -> Result<Real, &'static str> {
                Ok(Real {
                    $($name: {
                        let p = lookup(concat!(stringify!($name), "\0"));
                        if p.is_null() {
                            return Err(stringify!($name));
                        }
                        // SAFETY: the symbol is the driver's function of the
                        // signature cuda.h declares, restated here.
                        unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) -> $ret>(p) }
                    },)*
                })
            }
        }
    };
}

real! {
    cuMemAlloc_v2: fn(*mut DevPtr, usize) -> CuResult;
    cuMemFree_v2: fn(DevPtr) -> CuResult;
    cuModuleLoadData: fn(*mut Handle, *const c_void) -> CuResult;
    cuModuleGetFunction: fn(*mut Handle, Handle, *const c_char) -> CuResult;
    cuModuleGetGlobal_v2: fn(*mut DevPtr, *mut usize, Handle, *const c_char) -> CuResult;
    cuLaunchKernel: fn(Handle, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Handle, *mut *mut c_void, *mut *mut c_void) -> CuResult;
    cuMemcpyHtoDAsync_v2: fn(DevPtr, *const c_void, usize, Handle) -> CuResult;
    cuMemcpyDtoHAsync_v2: fn(*mut c_void, DevPtr, usize, Handle) -> CuResult;
    cuMemcpyDtoDAsync_v2: fn(DevPtr, DevPtr, usize, Handle) -> CuResult;
    cuStreamSynchronize: fn(Handle) -> CuResult;
    cuMemGetAllocationGranularity: fn(*mut usize, *const MemAllocationProp, c_int) -> CuResult;
    cuMemAddressReserve: fn(*mut DevPtr, usize, usize, DevPtr, u64) -> CuResult;
    cuMemAddressFree: fn(DevPtr, usize) -> CuResult;
    cuMemCreate: fn(*mut u64, usize, *const MemAllocationProp, u64) -> CuResult;
    cuMemRelease: fn(u64) -> CuResult;
    cuMemMap: fn(DevPtr, usize, usize, u64, u64) -> CuResult;
    cuMemUnmap: fn(DevPtr, usize) -> CuResult;
    cuMemSetAccess: fn(DevPtr, usize, *const MemAccessDesc, usize) -> CuResult;
    cuGetErrorName: fn(CuResult, *mut *const c_char) -> CuResult;
}

/// The driver's entry points the recording needs, or the first one
/// missing (looked up again at the next call: the program may not have
/// loaded the driver yet).
pub fn real() -> Result<&'static Real, &'static str> {
    static REAL: OnceLock<Real> = OnceLock::new();
    if let Some(r) = REAL.get() {
        return Ok(r);
    }
    let r = Real::resolve()?;
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

/// `cuCtxGetDevice` (`CUresult cuCtxGetDevice(CUdevice *)`).
pub type CtxGetDevice = unsafe extern "C" fn(*mut c_int) -> CuResult;
/// `cuCtxGetCurrent`.
pub type CtxGetCurrent = unsafe extern "C" fn(*mut Handle) -> CuResult;
/// `cuModuleLoadDataEx`.
pub type ModuleLoadDataEx = unsafe extern "C" fn(
    *mut Handle,
    *const c_void,
    c_uint,
    *mut c_int,
    *mut *mut c_void,
) -> CuResult;

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

/// `cuLibraryLoadData` (CUDA 12).
pub type LibraryLoadData = unsafe extern "C" fn(
    *mut Handle,
    *const c_void,
    *mut c_int,
    *mut *mut c_void,
    c_uint,
    *mut c_int,
    *mut *mut c_void,
    c_uint,
) -> CuResult;
/// `cuLibraryLoadFromFile` (CUDA 12).
pub type LibraryLoadFromFile = unsafe extern "C" fn(
    *mut Handle,
    *const c_char,
    *mut c_int,
    *mut *mut c_void,
    c_uint,
    *mut c_int,
    *mut *mut c_void,
    c_uint,
) -> CuResult;
/// `cuFuncGetAttribute`.
pub type FuncGetAttribute = unsafe extern "C" fn(*mut c_int, c_int, Handle) -> CuResult;
/// `cuDeviceGetAttribute`.
pub type DeviceGetAttribute = unsafe extern "C" fn(*mut c_int, c_int, c_int) -> CuResult;
/// `cuModuleLoad`.
pub type ModuleLoad = unsafe extern "C" fn(*mut Handle, *const c_char) -> CuResult;
/// `cuLibraryGetModule`.
pub type LibraryGetModule = unsafe extern "C" fn(*mut Handle, Handle) -> CuResult;
/// `cuLibraryGetKernel`.
pub type LibraryGetKernel = unsafe extern "C" fn(*mut Handle, Handle, *const c_char) -> CuResult;
/// `cuKernelGetFunction`.
pub type KernelGetFunction = unsafe extern "C" fn(*mut Handle, Handle) -> CuResult;
/// `cuFuncGetName`.
pub type FuncGetName = unsafe extern "C" fn(*mut *const c_char, Handle) -> CuResult;
/// `cuFuncGetModule`.
pub type FuncGetModule = unsafe extern "C" fn(*mut Handle, Handle) -> CuResult;
/// `cuMemAllocAsync`.
pub type MemAllocAsync = unsafe extern "C" fn(*mut DevPtr, usize, Handle) -> CuResult;
/// `cuMemAllocFromPoolAsync`.
pub type MemAllocFromPoolAsync =
    unsafe extern "C" fn(*mut DevPtr, usize, Handle, Handle) -> CuResult;
/// `cuMemHostRegister_v2`.
pub type MemHostRegister = unsafe extern "C" fn(*mut c_void, usize, c_uint) -> CuResult;
/// `cuPointerGetAttribute`.
pub type PointerGetAttribute = unsafe extern "C" fn(*mut c_void, c_int, DevPtr) -> CuResult;
/// `cuPointerGetAttributes`.
pub type PointerGetAttributes =
    unsafe extern "C" fn(c_uint, *mut c_int, *mut *mut c_void, DevPtr) -> CuResult;
/// `cuStreamDestroy_v2`.
pub type StreamDestroy = unsafe extern "C" fn(Handle) -> CuResult;
/// `cuMemFreeAsync`.
pub type MemFreeAsync = unsafe extern "C" fn(DevPtr, Handle) -> CuResult;
/// `cuInit`.
pub type Init = unsafe extern "C" fn(c_uint) -> CuResult;
/// `cuCtxSetCurrent`, `cuCtxPushCurrent_v2`.
pub type CtxSetCurrent = unsafe extern "C" fn(Handle) -> CuResult;
/// `cuCtxCreate_v2`.
pub type CtxCreate = unsafe extern "C" fn(*mut Handle, c_uint, c_int) -> CuResult;
/// `cuStreamIsCapturing`.
pub type StreamIsCapturing = unsafe extern "C" fn(Handle, *mut c_int) -> CuResult;
/// `cuStreamBeginCapture_v2`.
pub type StreamBeginCapture = unsafe extern "C" fn(Handle, c_int) -> CuResult;
/// `cuStreamEndCapture`.
pub type StreamEndCapture = unsafe extern "C" fn(Handle, *mut Handle) -> CuResult;
/// `cuGraphLaunch`.
pub type GraphLaunch = unsafe extern "C" fn(Handle, Handle) -> CuResult;
/// `cuMemAllocPitch_v2`.
pub type MemAllocPitch =
    unsafe extern "C" fn(*mut DevPtr, *mut usize, usize, usize, c_uint) -> CuResult;
/// `cuMemGetAddressRange_v2`.
pub type MemGetAddressRange = unsafe extern "C" fn(*mut DevPtr, *mut usize, DevPtr) -> CuResult;
/// `cuMemGetInfo_v2`.
pub type MemGetInfo = unsafe extern "C" fn(*mut usize, *mut usize) -> CuResult;
/// `cuMemAllocManaged`.
pub type MemAllocManaged = unsafe extern "C" fn(*mut DevPtr, usize, c_uint) -> CuResult;
/// `cuMemHostAlloc`.
pub type MemHostAlloc = unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> CuResult;
/// `cuMemAllocHost_v2`.
pub type MemAllocHost = unsafe extern "C" fn(*mut *mut c_void, usize) -> CuResult;
/// `cuMemFreeHost`.
pub type MemFreeHost = unsafe extern "C" fn(*mut c_void) -> CuResult;
/// `cuModuleLoadData`.
pub type ModuleLoadData = unsafe extern "C" fn(*mut Handle, *const c_void) -> CuResult;
/// `cuModuleGetFunction`.
pub type ModuleGetFunction = unsafe extern "C" fn(*mut Handle, Handle, *const c_char) -> CuResult;
/// `cuModuleLoadFatBinary`.
pub type ModuleLoadFatBinary = unsafe extern "C" fn(*mut Handle, *const c_void) -> CuResult;
/// `cuModuleGetGlobal_v2`.
pub type ModuleGetGlobal =
    unsafe extern "C" fn(*mut DevPtr, *mut usize, Handle, *const c_char) -> CuResult;
/// `cuLaunchKernel` and its `_ptsz` variant.
pub type LaunchKernel = unsafe extern "C" fn(
    Handle,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    Handle,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CuResult;
/// `cuLaunchCooperativeKernel` and its `_ptsz` variant.
pub type LaunchCooperative = unsafe extern "C" fn(
    Handle,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    Handle,
    *mut *mut c_void,
) -> CuResult;
