//! Driver calls on memory: the virtual memory API (regions), device
//! allocations (staging shadows), page-locked host buffers, and copies.
//!
//! Every function requires the library loaded (a `Device` held, see the
//! [parent module](super)) and the context bound on the calling thread
//! (`Device::bind`) where the driver needs it.

use std::ffi::c_void;

use cudarc::driver::sys;

use super::failure::{Failure, result};

/// `cuMemGetAllocationGranularity`: the granularity of allocations made
/// with `prop`.
///
/// # Safety
///
/// The library is loaded with the [`VMM`](super::library::VMM) symbols.
pub(crate) unsafe fn mem_get_allocation_granularity(
    prop: &sys::CUmemAllocationProp,
    option: sys::CUmemAllocationGranularity_flags,
) -> Result<usize, Failure> {
    let mut gran = 0usize;
    // SAFETY: the symbol is present (the caller's contract); `prop` is a
    // live descriptor; `gran` is a live out-parameter.
    result("cuMemGetAllocationGranularity", unsafe {
        sys::cuMemGetAllocationGranularity(&mut gran, prop, option)
    })?;
    Ok(gran)
}

/// `cuMemAddressReserve`: reserves `size` bytes of address space at `addr`
/// (a hint; 0 for any) aligned to `align` (0 for the default); returns where
/// the driver put them.
///
/// # Safety
///
/// The library is loaded with the [`VMM`](super::library::VMM) symbols and the
/// context is bound.
pub(crate) unsafe fn mem_address_reserve(
    size: usize,
    align: usize,
    addr: u64,
) -> Result<u64, Failure> {
    let mut got = 0;
    // SAFETY: the symbols are present and the context bound (the caller's
    // contract); `got` is a live out-parameter; flags must be 0.
    result("cuMemAddressReserve", unsafe {
        sys::cuMemAddressReserve(&mut got, size, align, addr, 0)
    })?;
    Ok(got)
}

/// `cuMemAddressFree`: frees a reservation.
///
/// # Safety
///
/// The library is loaded with the [`VMM`](super::library::VMM) symbols;
/// `[base, base + size)` is one reservation made by [`mem_address_reserve`],
/// nothing is mapped in it, and it is not used after this.
pub(crate) unsafe fn mem_address_free(base: u64, size: usize) -> Result<(), Failure> {
    // SAFETY: an unmapped reservation of the caller's (its contract).
    result("cuMemAddressFree", unsafe {
        sys::cuMemAddressFree(base, size)
    })
}

/// `cuMemCreate`: `size` bytes of physical memory described by `prop`.
///
/// # Safety
///
/// The library is loaded with the [`VMM`](super::library::VMM) symbols, the context
/// is bound, and `size` is a multiple of `prop`'s granularity.
pub(crate) unsafe fn mem_create(
    size: usize,
    prop: &sys::CUmemAllocationProp,
) -> Result<sys::CUmemGenericAllocationHandle, Failure> {
    let mut handle = 0;
    // SAFETY: `prop` is a live descriptor and `size` a multiple of its
    // granularity (the caller's contract); `handle` is a live out-parameter;
    // flags must be 0.
    result("cuMemCreate", unsafe {
        sys::cuMemCreate(&mut handle, size, prop, 0)
    })?;
    Ok(handle)
}

/// `cuMemRelease`: releases physical memory.
///
/// # Safety
///
/// The library is loaded with the [`VMM`](super::library::VMM) symbols; `handle`
/// came from [`mem_create`], is no longer mapped, and is not used after
/// this.
pub(crate) unsafe fn mem_release(handle: sys::CUmemGenericAllocationHandle) -> Result<(), Failure> {
    // SAFETY: an unmapped handle of the caller's (its contract).
    result("cuMemRelease", unsafe { sys::cuMemRelease(handle) })
}

/// `cuMemMap`: maps the first `size` bytes of `handle` at `addr`.
///
/// # Safety
///
/// The library is loaded with the [`VMM`](super::library::VMM) symbols;
/// `[addr, addr + size)` lies in a reservation of the caller's with nothing
/// mapped there, and `handle` (from [`mem_create`]) holds at least `size`
/// bytes.
pub(crate) unsafe fn mem_map(
    addr: u64,
    size: usize,
    handle: sys::CUmemGenericAllocationHandle,
) -> Result<(), Failure> {
    // SAFETY: the range and the handle are the caller's (its contract);
    // offset and flags must be 0.
    result("cuMemMap", unsafe {
        sys::cuMemMap(addr, size, 0, handle, 0)
    })
}

/// `cuMemUnmap`: unmaps `[addr, addr + size)`.
///
/// # Safety
///
/// The library is loaded with the [`VMM`](super::library::VMM) symbols; the range was
/// mapped by [`mem_map`] and nothing queued or running uses it.
pub(crate) unsafe fn mem_unmap(addr: u64, size: usize) -> Result<(), Failure> {
    // SAFETY: a mapped, idle range of the caller's (its contract).
    result("cuMemUnmap", unsafe { sys::cuMemUnmap(addr, size) })
}

/// `cuMemSetAccess`: gives `access` to `[addr, addr + size)`.
///
/// # Safety
///
/// The library is loaded with the [`VMM`](super::library::VMM) symbols and the range
/// is mapped ([`mem_map`]).
pub(crate) unsafe fn mem_set_access(
    addr: u64,
    size: usize,
    access: &sys::CUmemAccessDesc,
) -> Result<(), Failure> {
    // SAFETY: the range is mapped (the caller's contract); `access` is one
    // live descriptor.
    result("cuMemSetAccess", unsafe {
        sys::cuMemSetAccess(addr, size, access, 1)
    })
}

/// `cuMemAlloc_v2`: `len` bytes of device memory.
///
/// # Safety
///
/// The library is loaded with the [`STAGING`](super::library::STAGING) symbols and
/// the context is bound.
pub(crate) unsafe fn mem_alloc(len: usize) -> Result<u64, Failure> {
    let mut ptr = 0;
    // SAFETY: the symbol is present and the context bound (the caller's
    // contract); `ptr` is a live out-parameter.
    result("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut ptr, len) })?;
    Ok(ptr)
}

/// `cuMemFree_v2`: frees device memory.
///
/// # Safety
///
/// The library is loaded with the [`STAGING`](super::library::STAGING) symbols;
/// `ptr` came from [`mem_alloc`], nothing queued or running uses it, and it
/// is not used after this.
pub(crate) unsafe fn mem_free(ptr: u64) -> Result<(), Failure> {
    // SAFETY: an idle allocation of the caller's (its contract).
    result("cuMemFree", unsafe { sys::cuMemFree_v2(ptr) })
}

/// `cuMemHostAlloc`: `len` (more than 0) bytes of page-locked host memory.
///
/// # Safety
///
/// The library is loaded and the context is bound; `flags` are
/// `CU_MEMHOSTALLOC_*` flags.
pub(crate) unsafe fn mem_host_alloc(len: usize, flags: u32) -> Result<*mut c_void, Failure> {
    let mut p = std::ptr::null_mut();
    // SAFETY: the context is bound (the caller's contract); `p` is a live
    // out-parameter.
    result("cuMemHostAlloc", unsafe {
        sys::cuMemHostAlloc(&mut p, len, flags)
    })?;
    Ok(p)
}

/// `cuMemFreeHost`: frees page-locked host memory.
///
/// # Safety
///
/// The library is loaded; `p` came from [`mem_host_alloc`], no copy queued
/// or running uses it, and it is not used after this.
pub(crate) unsafe fn mem_free_host(p: *mut c_void) -> Result<(), Failure> {
    // SAFETY: an idle allocation of the caller's (its contract).
    result("cuMemFreeHost", unsafe { sys::cuMemFreeHost(p) })
}

/// `cuMemcpyHtoDAsync_v2`: enqueues a copy of `len` bytes from `host` to
/// `device` on `stream`.
///
/// # Safety
///
/// The library is loaded, the context is bound and `stream` is live;
/// `host .. host + len` is page-locked memory (from [`mem_host_alloc`])
/// that stays allocated and unwritten until the copy completes. The device
/// range may be anything (the driver fails the copy if it is not mapped).
pub(crate) unsafe fn memcpy_htod_async(
    device: u64,
    host: *const c_void,
    len: usize,
    stream: sys::CUstream,
) -> Result<(), Failure> {
    // SAFETY: the host range outlives the copy (the caller's contract).
    result("cuMemcpyHtoDAsync", unsafe {
        sys::cuMemcpyHtoDAsync_v2(device, host, len, stream)
    })
}

/// `cuMemcpyDtoHAsync_v2`: enqueues a copy of `len` bytes from `device` to
/// `host` on `stream`.
///
/// # Safety
///
/// The library is loaded, the context is bound and `stream` is live;
/// `host .. host + len` is page-locked memory (from [`mem_host_alloc`])
/// that stays allocated, and is neither read nor written otherwise, until
/// the copy completes. The device range may be anything (the driver fails
/// the copy if it is not mapped).
pub(crate) unsafe fn memcpy_dtoh_async(
    host: *mut c_void,
    device: u64,
    len: usize,
    stream: sys::CUstream,
) -> Result<(), Failure> {
    // SAFETY: the host range outlives the copy and nothing else touches it
    // meanwhile (the caller's contract).
    result("cuMemcpyDtoHAsync", unsafe {
        sys::cuMemcpyDtoHAsync_v2(host, device, len, stream)
    })
}

/// `cuMemcpyDtoDAsync_v2`: enqueues a copy of `len` bytes from `src` to
/// `dst`, both device addresses, on `stream`.
///
/// # Safety
///
/// The library is loaded with the [`STAGING`](super::library::STAGING) symbols, the
/// context is bound and `stream` is live; the ranges may be anything (the
/// driver fails the copy if one is not mapped), but a range the caller
/// allocated stays allocated until the copy completes.
pub(crate) unsafe fn memcpy_dtod_async(
    dst: u64,
    src: u64,
    len: usize,
    stream: sys::CUstream,
) -> Result<(), Failure> {
    // SAFETY: device ranges only, which the driver checks (the caller's
    // contract).
    result("cuMemcpyDtoDAsync", unsafe {
        sys::cuMemcpyDtoDAsync_v2(dst, src, len, stream)
    })
}
