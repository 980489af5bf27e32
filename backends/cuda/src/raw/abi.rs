//! The driver's C interface as `cuda.h` declares it, for code that finds
//! the driver's entry points with `dlsym` itself rather than through
//! cudarc: the interposer (past its own hooks) and `reprise bench`'s launch
//! loop (through them, as an unmodified program does). Types only, and
//! [`driver_table!`](crate::abi::driver_table), which declares a table of
//! entry points and looks them up; the calls through them are their
//! callers' to make.

use std::ffi::{c_char, c_int, c_uint, c_void};

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

/// `CUDA_ERROR_INVALID_VALUE`.
pub const ERROR_INVALID_VALUE: CuResult = 1;
/// `CUDA_ERROR_NOT_FOUND`.
pub const ERROR_NOT_FOUND: CuResult = 500;
/// `CUDA_ERROR_NOT_READY`: queued work has not completed (`cuStreamQuery`).
pub const ERROR_NOT_READY: CuResult = 600;

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

/// `cuDeviceGet`.
pub type DeviceGet = unsafe extern "C" fn(*mut c_int, c_int) -> CuResult;
/// `cuDevicePrimaryCtxRetain`.
pub type DevicePrimaryCtxRetain = unsafe extern "C" fn(*mut Handle, c_int) -> CuResult;
/// `cuMemAlloc_v2`.
pub type MemAlloc = unsafe extern "C" fn(*mut DevPtr, usize) -> CuResult;
/// `cuMemFree_v2`.
pub type MemFree = unsafe extern "C" fn(DevPtr) -> CuResult;
/// `cuMemcpyHtoD_v2`.
pub type MemcpyHtoD = unsafe extern "C" fn(DevPtr, *const c_void, usize) -> CuResult;
/// `cuMemcpyDtoH_v2`.
pub type MemcpyDtoH = unsafe extern "C" fn(*mut c_void, DevPtr, usize) -> CuResult;
/// `cuMemcpyHtoDAsync_v2`.
pub type MemcpyHtoDAsync = unsafe extern "C" fn(DevPtr, *const c_void, usize, Handle) -> CuResult;
/// `cuMemcpyDtoHAsync_v2`.
pub type MemcpyDtoHAsync = unsafe extern "C" fn(*mut c_void, DevPtr, usize, Handle) -> CuResult;
/// `cuMemcpyDtoDAsync_v2`.
pub type MemcpyDtoDAsync = unsafe extern "C" fn(DevPtr, DevPtr, usize, Handle) -> CuResult;
/// `cuStreamCreate`.
pub type StreamCreate = unsafe extern "C" fn(*mut Handle, c_uint) -> CuResult;
/// `cuStreamSynchronize`.
pub type StreamSynchronize = unsafe extern "C" fn(Handle) -> CuResult;
/// `cuMemGetAllocationGranularity`.
pub type MemGetAllocationGranularity =
    unsafe extern "C" fn(*mut usize, *const MemAllocationProp, c_int) -> CuResult;
/// `cuMemAddressReserve`.
pub type MemAddressReserve =
    unsafe extern "C" fn(*mut DevPtr, usize, usize, DevPtr, u64) -> CuResult;
/// `cuMemAddressFree`.
pub type MemAddressFree = unsafe extern "C" fn(DevPtr, usize) -> CuResult;
/// `cuMemCreate`.
pub type MemCreate =
    unsafe extern "C" fn(*mut u64, usize, *const MemAllocationProp, u64) -> CuResult;
/// `cuMemRelease`.
pub type MemRelease = unsafe extern "C" fn(u64) -> CuResult;
/// `cuMemMap`.
pub type MemMap = unsafe extern "C" fn(DevPtr, usize, usize, u64, u64) -> CuResult;
/// `cuMemUnmap`.
pub type MemUnmap = unsafe extern "C" fn(DevPtr, usize) -> CuResult;
/// `cuMemSetAccess`.
pub type MemSetAccess =
    unsafe extern "C" fn(DevPtr, usize, *const MemAccessDesc, usize) -> CuResult;
/// `cuGetErrorName`.
pub type GetErrorName = unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult;
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
/// `cuEventCreate`.
pub type EventCreate = unsafe extern "C" fn(*mut Handle, c_uint) -> CuResult;
/// `cuEventRecord` (and `_ptsz`): the event, the stream.
pub type EventRecord = unsafe extern "C" fn(Handle, Handle) -> CuResult;
/// `cuEventQuery`.
pub type EventQuery = unsafe extern "C" fn(Handle) -> CuResult;
/// `cuEventDestroy_v2`.
pub type EventDestroy = unsafe extern "C" fn(Handle) -> CuResult;
/// `cuStreamQuery`.
pub type StreamQuery = unsafe extern "C" fn(Handle) -> CuResult;
/// `cuLaunchHostFunc`: the stream, the host function, its data.
pub type LaunchHostFunc = unsafe extern "C" fn(Handle, *mut c_void, *mut c_void) -> CuResult;
/// `cuStreamAddCallback`: the stream, the callback, its data, flags.
pub type StreamAddCallback =
    unsafe extern "C" fn(Handle, *mut c_void, *mut c_void, c_uint) -> CuResult;
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

/// Declares a table of the driver's entry points, one field each, named as
/// the driver exports them and typed with this module's prototypes, and
/// its `unsafe fn resolve(lookup)`, which asks `lookup` for each by name
/// and gives the table, or the name of the first entry point `lookup` did
/// not find (null).
///
/// `resolve`'s safety condition: each field's type is the prototype of the
/// driver function of the field's name, and `lookup` returns that function
/// (or null).
///
/// ```
/// reprise_cuda::abi::driver_table! {
///     /// What a program needs to start the driver.
///     pub struct Start {
///         cuInit: reprise_cuda::abi::Init,
///         cuGetErrorName: reprise_cuda::abi::GetErrorName,
///     }
/// }
/// // SAFETY: the fields are typed as cuda.h declares them; nothing is found.
/// let missing = unsafe { Start::resolve(|_| std::ptr::null_mut()) };
/// assert_eq!(missing.err(), Some("cuInit"));
/// ```
#[macro_export]
#[doc(hidden)]
macro_rules! __driver_table {
    ($(#[$meta:meta])* $vis:vis struct $table:ident { $($name:ident: $ty:ty,)* }) => {
        $(#[$meta])*
        #[allow(non_snake_case)]
        $vis struct $table {
            $(#[doc = concat!("`", stringify!($name), "`.")] pub $name: $ty,)*
        }

        impl $table {
            /// Each entry point as `lookup` finds it by name, or the name
            /// of the first it does not find.
            ///
            /// # Safety
            ///
            /// Each field's type is the prototype of the driver function of
            /// its name, and `lookup` returns that function or null.
            $vis unsafe fn resolve(
                mut lookup: impl FnMut(&'static str) -> *mut ::std::ffi::c_void,
            ) -> ::std::result::Result<Self, &'static str> {
                ::std::result::Result::Ok($table {
                    $($name: {
                        let p = lookup(stringify!($name));
                        if p.is_null() {
                            return ::std::result::Result::Err(stringify!($name));
                        }
                        // SAFETY: `p` is the driver's function of this
                        // name, of this type (the caller's promise).
                        unsafe { ::std::mem::transmute::<*mut ::std::ffi::c_void, $ty>(p) }
                    },)*
                })
            }
        }
    };
}

pub use __driver_table as driver_table;
