//! Allocations: `cuMemAlloc`, `cuMemAllocPitch`, `cuMemAllocAsync` and
//! `cuMemAllocFromPoolAsync` are served from the recording region while it
//! has room (256-byte aligned, as the driver's); `cuMemGetAddressRange` and
//! `cuMemGetInfo` answer for region memory as they would for the driver's.
//! Managed, page-locked and registered host memory are the driver's, and
//! are kept track of: a recorded launch holds their bytes (see
//! [`crate::state::launch`]). Allocations the region has no room for are
//! the driver's too: a launch that points into them is recorded with a
//! mark (`ArgsOutside`).

use std::ffi::{c_int, c_uint, c_void};

use super::forward;
use crate::heap::{Outside, heap};
use crate::real::*;
use crate::state;

/// The driver's allocation `alloc()` made, tracked as outside the region.
fn driver_alloc(
    dptr: *mut DevPtr,
    size: u64,
    kind: Outside,
    alloc: impl FnOnce() -> CuResult,
) -> CuResult {
    let rc = alloc();
    if rc == SUCCESS && !dptr.is_null() {
        // SAFETY: the driver wrote the allocation's address.
        state::placed_outside(unsafe { *dptr }, size, kind);
    }
    rc
}

/// `cuMemAlloc_v2`.
///
/// # Safety
/// As the driver's: `dptr` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut DevPtr, size: usize) -> CuResult {
    if !dptr.is_null()
        && let Some(addr) = state::alloc(size as u64, None)
    {
        // SAFETY: the caller's out-pointer, checked non-null.
        unsafe { *dptr = addr };
        return SUCCESS;
    }
    driver_alloc(dptr, size as u64, Outside::Driver, || {
        forward!(MemAlloc, "cuMemAlloc_v2", dptr, size)
    })
}

/// `cuMemAlloc_v2`'s type.
type MemAlloc = unsafe extern "C" fn(*mut DevPtr, usize) -> CuResult;

/// `cuMemAllocPitch_v2`: rows padded to 512 bytes (the driver's texture
/// pitch alignment), from the region.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocPitch_v2(
    dptr: *mut DevPtr,
    pitch: *mut usize,
    width: usize,
    height: usize,
    element: c_uint,
) -> CuResult {
    let valid = !dptr.is_null() && !pitch.is_null() && matches!(element, 4 | 8 | 16);
    let row = (width as u64).div_ceil(512).saturating_mul(512);
    if valid
        && width > 0
        && height > 0
        && let Some(bytes) = row.checked_mul(height as u64)
        && let Some(addr) = state::alloc(bytes, None)
    {
        // SAFETY: the caller's out-pointers, checked non-null.
        unsafe {
            *dptr = addr;
            *pitch = row as usize;
        }
        return SUCCESS;
    }
    driver_alloc(
        dptr,
        row.saturating_mul(height as u64),
        Outside::Driver,
        || {
            forward!(
                MemAllocPitch,
                "cuMemAllocPitch_v2",
                dptr,
                pitch,
                width,
                height,
                element
            )
        },
    )
}

/// `cuMemAllocAsync[_ptsz]`: from the region (a block freed earlier on
/// the same stream first), usable by work queued on `stream` after it.
fn alloc_async(
    dptr: *mut DevPtr,
    size: usize,
    stream: Handle,
    per_thread: bool,
    real: Option<MemAllocAsync>,
) -> CuResult {
    let meant = stream_meant(stream, per_thread);
    if !dptr.is_null()
        && let Some(addr) = state::alloc(
            size as u64,
            Some((meant, state::stream_key(stream, per_thread))),
        )
    {
        // SAFETY: the caller's out-pointer, checked non-null.
        unsafe { *dptr = addr };
        return SUCCESS;
    }
    driver_alloc(dptr, size as u64, Outside::Driver, || match real {
        // SAFETY: the program's call, forwarded unchanged.
        Some(f) => unsafe { f(dptr, size, stream) },
        None => ERROR_NOT_FOUND,
    })
}

/// `cuMemAllocAsync`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocAsync(
    dptr: *mut DevPtr,
    size: usize,
    stream: Handle,
) -> CuResult {
    alloc_async(
        dptr,
        size,
        stream,
        false,
        crate::driver_fn!(MemAllocAsync, "cuMemAllocAsync"),
    )
}

/// `cuMemAllocAsync_ptsz` (stream 0 is the thread's default stream).
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocAsync_ptsz(
    dptr: *mut DevPtr,
    size: usize,
    stream: Handle,
) -> CuResult {
    alloc_async(
        dptr,
        size,
        stream,
        true,
        crate::driver_fn!(MemAllocAsync, "cuMemAllocAsync_ptsz"),
    )
}

/// `cuMemAllocFromPoolAsync[_ptsz]`: as `cuMemAllocAsync`, from the
/// region (a block freed earlier on the same stream first); the pool's
/// when the region cannot serve it (then kept track of). The program's
/// pool is checked first, so that a pool it destroyed is its error, as
/// the driver would say.
fn alloc_from_pool(
    dptr: *mut DevPtr,
    size: usize,
    pool: Handle,
    stream: Handle,
    per_thread: bool,
    real: Option<MemAllocFromPoolAsync>,
) -> CuResult {
    type MemPoolTrimTo = unsafe extern "C" fn(Handle, usize) -> CuResult;
    // Trimming to keep everything releases nothing, and fails on a pool
    // that is not there (CUDA Driver API, Stream Ordered Memory Allocator,
    // cuMemPoolTrimTo: "releases memory back to the OS until the pool
    // contains fewer than minBytesToKeep reserved bytes").
    let live = crate::driver_fn!(MemPoolTrimTo, "cuMemPoolTrimTo")
        // SAFETY: the program's pool; no memory is touched.
        .is_some_and(|trim| unsafe { trim(pool, usize::MAX) } == SUCCESS);
    if !live {
        return match real {
            // SAFETY: the program's call, forwarded unchanged.
            Some(f) => unsafe { f(dptr, size, pool, stream) },
            None => ERROR_NOT_FOUND,
        };
    }
    let meant = stream_meant(stream, per_thread);
    if !dptr.is_null()
        && let Some(addr) = state::alloc(
            size as u64,
            Some((meant, state::stream_key(stream, per_thread))),
        )
    {
        // SAFETY: the caller's out-pointer, checked non-null.
        unsafe { *dptr = addr };
        return SUCCESS;
    }
    driver_alloc(dptr, size as u64, Outside::Driver, || match real {
        // SAFETY: the program's call, forwarded unchanged.
        Some(f) => unsafe { f(dptr, size, pool, stream) },
        None => ERROR_NOT_FOUND,
    })
}

/// `cuMemAllocFromPoolAsync`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocFromPoolAsync(
    dptr: *mut DevPtr,
    size: usize,
    pool: Handle,
    stream: Handle,
) -> CuResult {
    alloc_from_pool(
        dptr,
        size,
        pool,
        stream,
        false,
        crate::driver_fn!(MemAllocFromPoolAsync, "cuMemAllocFromPoolAsync"),
    )
}

/// `cuMemAllocFromPoolAsync_ptsz` (stream 0 is the thread's default
/// stream).
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocFromPoolAsync_ptsz(
    dptr: *mut DevPtr,
    size: usize,
    pool: Handle,
    stream: Handle,
) -> CuResult {
    alloc_from_pool(
        dptr,
        size,
        pool,
        stream,
        true,
        crate::driver_fn!(MemAllocFromPoolAsync, "cuMemAllocFromPoolAsync_ptsz"),
    )
}

/// `cuMemFree_v2`: a region block goes back to the recorder's allocator,
/// which hands it out again (see [`state::freed`]); the rest goes to the
/// driver.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFree_v2(dptr: DevPtr) -> CuResult {
    let held = {
        let mut heap = heap();
        heap.in_region(dptr).then(|| heap.free(dptr))
    };
    match held {
        Some(Some(size)) => {
            state::freed(dptr, size);
            return SUCCESS;
        }
        // Freeing what the region never handed out is the program's
        // error, as the driver would say.
        Some(None) => return ERROR_INVALID_VALUE,
        None => {}
    }
    let rc = forward!(MemFree, "cuMemFree_v2", dptr);
    if rc == SUCCESS {
        heap().forget_outside(dptr);
    }
    rc
}

/// `cuMemFree_v2`'s type.
type MemFree = unsafe extern "C" fn(DevPtr) -> CuResult;

/// `cuMemFreeAsync[_ptsz]`: a region block may serve a later
/// `cuMemAllocAsync` on the same stream.
fn free_async(
    dptr: DevPtr,
    stream: Handle,
    per_thread: bool,
    real: Option<MemFreeAsync>,
) -> CuResult {
    let meant = stream_meant(stream, per_thread);
    if heap().in_region(dptr) {
        // During a capture the free belongs to the graph, and happens when
        // it runs: the block is never handed out again.
        let capturing = state::capturing(meant);
        let mut heap = heap();
        let freed = if capturing {
            heap.free(dptr).is_some()
        } else {
            heap.free_async(dptr, state::stream_key(stream, per_thread))
        };
        return if freed { SUCCESS } else { ERROR_INVALID_VALUE };
    }
    let rc = match real {
        // SAFETY: the program's call, forwarded unchanged.
        Some(f) => unsafe { f(dptr, stream) },
        None => ERROR_NOT_FOUND,
    };
    if rc == SUCCESS {
        heap().forget_outside(dptr);
    }
    rc
}

/// `cuMemFreeAsync`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFreeAsync(dptr: DevPtr, stream: Handle) -> CuResult {
    free_async(
        dptr,
        stream,
        false,
        crate::driver_fn!(MemFreeAsync, "cuMemFreeAsync"),
    )
}

/// `cuMemFreeAsync_ptsz`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFreeAsync_ptsz(dptr: DevPtr, stream: Handle) -> CuResult {
    free_async(
        dptr,
        stream,
        true,
        crate::driver_fn!(MemFreeAsync, "cuMemFreeAsync_ptsz"),
    )
}

/// `cuStreamDestroy_v2`: blocks freed on the stream are not handed out
/// again.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamDestroy_v2(stream: Handle) -> CuResult {
    heap().forget_stream(state::stream_key(stream, false));
    forward!(StreamDestroy, "cuStreamDestroy_v2", stream)
}

/// `cuMemHostRegister_v2`: registered host memory kernels may reach, kept
/// track of.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostRegister_v2(
    p: *mut c_void,
    size: usize,
    flags: c_uint,
) -> CuResult {
    let rc = forward!(MemHostRegister, "cuMemHostRegister_v2", p, size, flags);
    if rc == SUCCESS {
        state::placed_outside(p as u64, size as u64, Outside::Registered);
    }
    rc
}

/// `cuMemHostUnregister`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostUnregister(p: *mut c_void) -> CuResult {
    let rc = forward!(MemFreeHost, "cuMemHostUnregister", p);
    if rc == SUCCESS {
        heap().forget_outside(p as u64);
    }
    rc
}

/// `cuMemGetAddressRange_v2`: for region memory, the allocation the
/// program made (the driver would answer with the whole mapping behind it).
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetAddressRange_v2(
    base: *mut DevPtr,
    size: *mut usize,
    dptr: DevPtr,
) -> CuResult {
    {
        let heap = heap();
        if heap.in_region(dptr) {
            let Some((start, len)) = heap.allocation(dptr) else {
                return ERROR_NOT_FOUND;
            };
            // SAFETY: the caller's out-pointers; either may be null.
            unsafe {
                if !base.is_null() {
                    *base = start;
                }
                if !size.is_null() {
                    *size = len as usize;
                }
            }
            return SUCCESS;
        }
    }
    forward!(
        MemGetAddressRange,
        "cuMemGetAddressRange_v2",
        base,
        size,
        dptr
    )
}

/// `cuMemGetInfo_v2`: the driver's figures, with the region's mapped but
/// unallocated memory counted as free (the program's next allocations
/// take it).
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CuResult {
    let rc = forward!(MemGetInfo, "cuMemGetInfo_v2", free, total);
    if rc == SUCCESS && !free.is_null() && !total.is_null() {
        let spare = heap().mapped_unused() as usize;
        // SAFETY: the driver wrote both.
        unsafe { *free = (*free).saturating_add(spare).min(*total) };
    }
    rc
}

/// `cuMemAllocManaged`: the driver's (it chooses managed addresses), kept
/// track of.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocManaged(
    dptr: *mut DevPtr,
    size: usize,
    flags: c_uint,
) -> CuResult {
    driver_alloc(dptr, size as u64, Outside::Managed, || {
        forward!(MemAllocManaged, "cuMemAllocManaged", dptr, size, flags)
    })
}

/// `cuMemHostAlloc`: page-locked host memory, which kernels may reach.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostAlloc(
    p: *mut *mut c_void,
    size: usize,
    flags: c_uint,
) -> CuResult {
    driver_alloc(p as *mut DevPtr, size as u64, Outside::Host, || {
        forward!(MemHostAlloc, "cuMemHostAlloc", p, size, flags)
    })
}

/// `cuMemAllocHost_v2`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocHost_v2(p: *mut *mut c_void, size: usize) -> CuResult {
    driver_alloc(p as *mut DevPtr, size as u64, Outside::Host, || {
        forward!(MemAllocHost, "cuMemAllocHost_v2", p, size)
    })
}

/// `cuMemFreeHost`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFreeHost(p: *mut c_void) -> CuResult {
    let rc = forward!(MemFreeHost, "cuMemFreeHost", p);
    if rc == SUCCESS {
        heap().forget_outside(p as u64);
    }
    rc
}

/// `CU_POINTER_ATTRIBUTE_RANGE_START_ADDR` and `_RANGE_SIZE` (cuda.h).
const RANGE_START_ADDR: c_int = 11;
const RANGE_SIZE: c_int = 12;

/// Writes the program's allocation as the range attribute `attribute` of
/// `ptr` into `data`, when `ptr` is in a region allocation and the
/// attribute is a range one (the driver would answer with the mapping).
///
/// # Safety
/// `data` is valid for the attribute's type, as the driver requires.
unsafe fn region_range(data: *mut c_void, attribute: c_int, ptr: DevPtr) {
    if data.is_null() || !matches!(attribute, RANGE_START_ADDR | RANGE_SIZE) {
        return;
    }
    let Some((start, len)) = heap().allocation(ptr) else {
        return;
    };
    // SAFETY: the caller's guarantee: a CUdeviceptr for the start, a
    // size_t for the size.
    unsafe {
        if attribute == RANGE_START_ADDR {
            *(data as *mut DevPtr) = start;
        } else {
            *(data as *mut usize) = len as usize;
        }
    }
}

/// `cuPointerGetAttribute`: the driver's answer, with the range attributes
/// of region memory being the program's allocation.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuPointerGetAttribute(
    data: *mut c_void,
    attribute: c_int,
    ptr: DevPtr,
) -> CuResult {
    let rc = forward!(
        PointerGetAttribute,
        "cuPointerGetAttribute",
        data,
        attribute,
        ptr
    );
    if rc == SUCCESS {
        // SAFETY: the driver wrote the attribute there.
        unsafe { region_range(data, attribute, ptr) };
    }
    rc
}

/// `cuPointerGetAttributes`: as [`cuPointerGetAttribute`], for each.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuPointerGetAttributes(
    n: c_uint,
    attributes: *mut c_int,
    data: *mut *mut c_void,
    ptr: DevPtr,
) -> CuResult {
    let rc = forward!(
        PointerGetAttributes,
        "cuPointerGetAttributes",
        n,
        attributes,
        data,
        ptr
    );
    if rc == SUCCESS && !attributes.is_null() && !data.is_null() {
        for i in 0..n as usize {
            // SAFETY: the driver read `n` attributes and data pointers.
            unsafe { region_range(*data.add(i), *attributes.add(i), ptr) };
        }
    }
    rc
}
