//! Driver calls on memory: the virtual memory API (regions), device
//! allocations (staging shadows), page-locked host buffers, and copies.
//!
//! Every function requires the library loaded (a `Device` held, see the
//! [parent module](super)) and the context bound on the calling thread
//! (`Device::bind`) where the driver needs it.

use std::ffi::c_void;

use cudarc::driver::sys;

use super::failure::{Failure, refused, result};
use super::library::Library;
use super::stream::StreamHandle;

/// `Ok` when `offset .. offset + len` lies inside `total` bytes, else the
/// [`Failure`] of `call` with `CUDA_ERROR_INVALID_VALUE` (what the driver
/// says of a range outside an allocation).
fn inside(call: &'static str, offset: usize, len: usize, total: usize) -> Result<(), Failure> {
    match offset.checked_add(len) {
        Some(end) if end <= total => Ok(()),
        _ => Err(refused(call, sys::CUresult::CUDA_ERROR_INVALID_VALUE)),
    }
}

/// `Ok` when the library has every function of the group `has` stands
/// for, else the [`Failure`] of `call` with `CUDA_ERROR_NOT_SUPPORTED`
/// (never calling into a symbol the library lacks, which would panic).
fn needs(has: bool, call: &'static str) -> Result<(), Failure> {
    if has {
        Ok(())
    } else {
        Err(refused(call, sys::CUresult::CUDA_ERROR_NOT_SUPPORTED))
    }
}

/// `cuMemGetAllocationGranularity`: the granularity of allocations made
/// with `prop` (a failure without the [`VMM`](super::library::VMM)
/// symbols).
pub(crate) fn mem_get_allocation_granularity(
    lib: &Library,
    prop: &sys::CUmemAllocationProp,
    option: sys::CUmemAllocationGranularity_flags,
) -> Result<usize, Failure> {
    needs(lib.vmm, "cuMemGetAllocationGranularity")?;
    let mut gran = 0usize;
    // SAFETY: the symbol is present (checked above); `prop` is a live
    // descriptor; `gran` is a live out-parameter.
    result("cuMemGetAllocationGranularity", unsafe {
        sys::cuMemGetAllocationGranularity(&mut gran, prop, option)
    })?;
    Ok(gran)
}

/// `cuDeviceTotalMem_v2`: bytes of memory `device` has, or `None` where
/// the driver lacks the call or fails it.
pub(crate) fn device_total_mem(_: &Library, device: sys::CUdevice) -> Option<u64> {
    // SAFETY: the library is loaded (a `Library` is held); looking a symbol
    // up does not call it.
    let present = unsafe {
        sys::culib()
            .get::<unsafe extern "C" fn()>(b"cuDeviceTotalMem_v2")
            .is_ok()
    };
    if !present {
        return None;
    }
    let mut bytes = 0usize;
    // SAFETY: the symbol is present (above); a device is an ordinal the
    // driver checks; `bytes` is a live out-parameter.
    let rc = unsafe { sys::cuDeviceTotalMem_v2(&mut bytes, device) };
    (rc == sys::CUresult::CUDA_SUCCESS && bytes > 0).then_some(bytes as u64)
}

/// `cuMemAddressReserve`: reserves `size` bytes of address space at `addr`
/// (a hint; 0 for any) aligned to `align` (0 for the default) in the
/// current context; returns where the driver put them, to be freed once
/// with [`mem_address_free`] (or kept until the process exits).
fn mem_address_reserve(
    lib: &Library,
    size: usize,
    align: usize,
    addr: u64,
) -> Result<u64, Failure> {
    needs(lib.vmm, "cuMemAddressReserve")?;
    let mut got = 0;
    // SAFETY: the symbols are present (checked above); reserving takes
    // address space no one uses yet; `got` is a live out-parameter; flags
    // must be 0.
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
unsafe fn mem_address_free(base: u64, size: usize) -> Result<(), Failure> {
    // SAFETY: an unmapped reservation of the caller's (its contract).
    result("cuMemAddressFree", unsafe {
        sys::cuMemAddressFree(base, size)
    })
}

/// `cuMemCreate`: `size` bytes (a multiple of `prop`'s granularity, else
/// a failure) of physical memory described by `prop`, to be released once
/// with [`mem_release`] (or kept until the process exits).
fn mem_create(
    lib: &Library,
    size: usize,
    prop: &sys::CUmemAllocationProp,
) -> Result<sys::CUmemGenericAllocationHandle, Failure> {
    needs(lib.vmm, "cuMemCreate")?;
    let mut handle = 0;
    // SAFETY: the symbols are present (checked above); `prop` is a live
    // descriptor, and the driver checks the size against it; `handle` is
    // a live out-parameter; flags must be 0.
    result("cuMemCreate", unsafe {
        sys::cuMemCreate(&mut handle, size, prop, 0)
    })?;
    Ok(handle)
}

/// `cuMemRelease`: releases physical memory.
///
/// # Safety
///
/// The library is loaded with the [`VMM`](super::library::VMM) symbols;
/// `handle` came from [`mem_create`] and is not used after this (where it
/// is still mapped, the driver frees it once unmapped).
unsafe fn mem_release(handle: sys::CUmemGenericAllocationHandle) -> Result<(), Failure> {
    // SAFETY: a handle of the caller's, not used again (its contract).
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
unsafe fn mem_map(
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
unsafe fn mem_unmap(addr: u64, size: usize) -> Result<(), Failure> {
    // SAFETY: a mapped, idle range of the caller's (its contract).
    result("cuMemUnmap", unsafe { sys::cuMemUnmap(addr, size) })
}

/// `cuMemSetAccess`: gives `access` to `[addr, addr + size)`.
///
/// # Safety
///
/// The library is loaded with the [`VMM`](super::library::VMM) symbols and the range
/// is mapped ([`mem_map`]).
unsafe fn mem_set_access(
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

/// `cuMemAlloc_v2`: `len` bytes of device memory in the current context
/// (a failure without the [`STAGING`](super::library::STAGING) symbols),
/// to be freed once with [`mem_free`] (or kept until the process exits).
fn mem_alloc(lib: &Library, len: usize) -> Result<u64, Failure> {
    needs(lib.staging, "cuMemAlloc")?;
    let mut ptr = 0;
    // SAFETY: the symbol is present (checked above); `ptr` is a live
    // out-parameter.
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
unsafe fn mem_free(ptr: u64) -> Result<(), Failure> {
    // SAFETY: an idle allocation of the caller's (its contract).
    result("cuMemFree", unsafe { sys::cuMemFree_v2(ptr) })
}

/// `cuMemHostAlloc`: `len` (more than 0) bytes of page-locked host memory
/// with `CU_MEMHOSTALLOC_*` `flags`, to be freed once with
/// [`mem_free_host`] (or kept until the process exits).
fn mem_host_alloc(_: &Library, len: usize, flags: u32) -> Result<*mut c_void, Failure> {
    let mut p = std::ptr::null_mut();
    // SAFETY: the library is loaded (`Library`); the driver checks the
    // flags; `p` is a live out-parameter.
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
unsafe fn mem_free_host(p: *mut c_void) -> Result<(), Failure> {
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
unsafe fn memcpy_htod_async(
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

/// Which way a copy between host and device memory goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// An upload.
    HostToDevice,
    /// A download.
    DeviceToHost,
}

/// Page-locked host memory of fixed length, zeroed when made
/// ([`HostMemory::alloc`]), until [`HostMemory::free`] (dropped without
/// that, it is kept until the process exits). Enqueuing a copy to or from
/// it is the caller's `unsafe` promise to keep it until the copy is done.
#[derive(Debug)]
pub(crate) struct HostMemory {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: the memory is owned exclusively (like a `Box<[u8]>`); the driver
// lets any thread free it.
unsafe impl Send for HostMemory {}
// SAFETY: shared references give only `&[u8]`.
unsafe impl Sync for HostMemory {}

impl HostMemory {
    /// `len` zeroed bytes, allocated with `CU_MEMHOSTALLOC_*` `flags` in the
    /// current context (none for 0).
    pub(crate) fn alloc(lib: &Library, len: usize, flags: u32) -> Result<Self, Failure> {
        if len == 0 {
            return Ok(HostMemory {
                ptr: std::ptr::NonNull::dangling(),
                len: 0,
            });
        }
        let p = mem_host_alloc(lib, len, flags)?;
        let ptr = std::ptr::NonNull::new(p.cast::<u8>()).ok_or(refused(
            "cuMemHostAlloc",
            sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY,
        ))?;
        // SAFETY: `ptr` points to `len` writable bytes just allocated;
        // zeroing them makes the slice views below sound.
        unsafe { ptr.as_ptr().write_bytes(0, len) };
        Ok(HostMemory { ptr, len })
    }

    /// The first byte, for copies.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Enqueues a copy between the `len` bytes at `offset` in this memory
    /// and `device`, as `dir` says, on `stream` (`cuMemcpyHtoDAsync`,
    /// `cuMemcpyDtoHAsync`); the [`Failure`] is `CUDA_ERROR_INVALID_VALUE`
    /// when those bytes are not inside it. The device range may be
    /// anything (the driver fails the copy if it is not mapped). The
    /// context is to be bound.
    ///
    /// # Safety
    ///
    /// `self` stays allocated until the copy completes, and those bytes
    /// meanwhile unwritten (to the device) or neither read nor written
    /// otherwise (to the host).
    pub(crate) unsafe fn copy(
        &self,
        dir: Direction,
        offset: usize,
        len: usize,
        device: u64,
        stream: &StreamHandle,
    ) -> Result<(), Failure> {
        let call = match dir {
            Direction::HostToDevice => "cuMemcpyHtoDAsync",
            Direction::DeviceToHost => "cuMemcpyDtoHAsync",
        };
        inside(call, offset, len, self.len)?;
        let host = self.ptr.as_ptr().wrapping_add(offset).cast::<c_void>();
        // SAFETY: the library is loaded (a `HostMemory` was allocated) and
        // the stream is live (`stream`); the range lies in this page-locked
        // memory (checked above), which outlives the copy and is left to it
        // (the caller's contract).
        unsafe {
            match dir {
                Direction::HostToDevice => memcpy_htod_async(device, host, len, stream.get()),
                Direction::DeviceToHost => memcpy_dtoh_async(host, device, len, stream.get()),
            }
        }
    }

    /// The bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` points to `len` initialised bytes owned by `self`
        // (or is dangling with `len == 0`).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, to write.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the view
        // exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Frees the memory (`cuMemFreeHost`), leaving `self` empty.
    pub(crate) fn free(&mut self) -> Result<(), Failure> {
        let (ptr, len) = (self.ptr, self.len);
        self.ptr = std::ptr::NonNull::dangling();
        self.len = 0;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: `ptr` came from cuMemHostAlloc and `self` no longer holds
        // it; the copies that used it were promised to be done.
        unsafe { mem_free_host(ptr.as_ptr().cast()) }
    }
}

/// Device address space reserved by [`Reservation::reserve`], and how much
/// of it (from its base) is mapped; reserved until [`Reservation::free`]
/// consumes it (dropped without that, it is kept until the process exits).
#[derive(Debug)]
pub(crate) struct Reservation {
    base: u64,
    size: usize,
    /// Bytes mapped from the base (0: none).
    mapped: usize,
    /// The length of each mapping, in address order from the base: each is
    /// unmapped on its own (`cuMemUnmap` takes whole mappings).
    mappings: Vec<usize>,
}

impl Reservation {
    /// Reserves `size` bytes at `addr` (a hint; 0 for any) aligned to
    /// `align` (0 for the default) in the current context
    /// (`cuMemAddressReserve`; a failure without the
    /// [`VMM`](super::library::VMM) symbols).
    pub(crate) fn reserve(
        lib: &Library,
        size: usize,
        align: usize,
        addr: u64,
    ) -> Result<Self, Failure> {
        Ok(Reservation {
            base: mem_address_reserve(lib, size, align, addr)?,
            size,
            mapped: 0,
            mappings: Vec::new(),
        })
    }

    /// Where the driver put it.
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    /// Maps the first `len` bytes of `memory` at the base (`cuMemMap`); a
    /// failure where something is mapped already or `len` is more than
    /// was reserved (and the driver's where `memory` is smaller).
    pub(crate) fn map(&mut self, len: usize, memory: &Physical) -> Result<(), Failure> {
        if self.mapped > 0 {
            return Err(refused("cuMemMap", sys::CUresult::CUDA_ERROR_INVALID_VALUE));
        }
        self.map_more(len, memory)
    }

    /// Maps the first `len` bytes of `memory` right after what is mapped
    /// (`cuMemMap`), growing the mapped bytes; a failure where `len` is 0
    /// or runs past the reservation (and the driver's where `memory` is
    /// smaller).
    pub(crate) fn map_more(&mut self, len: usize, memory: &Physical) -> Result<(), Failure> {
        if len == 0 || len > self.size - self.mapped {
            return Err(refused("cuMemMap", sys::CUresult::CUDA_ERROR_INVALID_VALUE));
        }
        let at = self.base + self.mapped as u64;
        // SAFETY: the library has the VMM symbols (a reservation was made);
        // `[at, at + len)` lies in this reservation past what is mapped, so
        // nothing is mapped there; `memory` is live (borrowed), and the
        // driver checks its size.
        unsafe { mem_map(at, len, memory.0) }?;
        self.mapped += len;
        self.mappings.push(len);
        Ok(())
    }

    /// Gives `access` to the mapped bytes from offset `from` on
    /// (`cuMemSetAccess`): those the last [`Reservation::map_more`] mapped.
    pub(crate) fn set_access_from(
        &self,
        from: usize,
        access: &sys::CUmemAccessDesc,
    ) -> Result<(), Failure> {
        if from >= self.mapped {
            return Err(refused(
                "cuMemSetAccess",
                sys::CUresult::CUDA_ERROR_INVALID_VALUE,
            ));
        }
        // SAFETY: the library has the VMM symbols (a reservation was made);
        // `[base + from, base + mapped)` is mapped and not empty (above).
        unsafe { mem_set_access(self.base + from as u64, self.mapped - from, access) }
    }

    /// Unmaps the last mapping (`cuMemUnmap`), if any: undoes a
    /// [`Reservation::map_more`] whose memory cannot be used.
    pub(crate) fn unmap_last(&mut self) -> Result<(), Failure> {
        let Some(len) = self.mappings.pop() else {
            return Ok(());
        };
        self.mapped -= len;
        // SAFETY: the library has the VMM symbols (a reservation was made);
        // `[base + mapped, + len)` is the last mapping `map_more` made, no
        // longer counted as mapped.
        unsafe { mem_unmap(self.base + self.mapped as u64, len) }
    }

    /// Gives `access` to the mapped bytes (`cuMemSetAccess`).
    pub(crate) fn set_access(&self, access: &sys::CUmemAccessDesc) -> Result<(), Failure> {
        // SAFETY: the library has the VMM symbols (a reservation was made);
        // `[base, base + mapped)` is mapped (the driver refuses an empty
        // range).
        unsafe { mem_set_access(self.base, self.mapped, access) }
    }

    /// Unmaps what is mapped (`cuMemUnmap`), if anything; device work still
    /// using it faults, so its owner waits for that work first.
    pub(crate) fn unmap(&mut self) -> Result<(), Failure> {
        self.mapped = 0;
        let mut at = self.base;
        let mut out = Ok(());
        for len in std::mem::take(&mut self.mappings) {
            // SAFETY: the library has the VMM symbols (a reservation was
            // made); `[at, at + len)` is one mapping `map_more` made, in
            // address order, no longer counted as mapped.
            let r = unsafe { mem_unmap(at, len) };
            out = out.and(r);
            at += len as u64;
        }
        out
    }

    /// Frees the address space (`cuMemAddressFree`), unmapping what is
    /// still mapped first (that error kept, the range freed anyway).
    pub(crate) fn free(mut self) -> Result<(), Failure> {
        let unmapped = self.unmap();
        // SAFETY: reserved by `reserve`, nothing mapped in it (above), and
        // consumed here, so never used again.
        let freed = unsafe { mem_address_free(self.base, self.size) };
        unmapped.and(freed)
    }
}

/// Device memory made by [`Physical::create`], until [`Physical::release`]
/// consumes it (dropped without that, it is kept until the process exits).
#[derive(Debug)]
pub(crate) struct Physical(sys::CUmemGenericAllocationHandle);

impl Physical {
    /// `size` bytes (a multiple of `prop`'s granularity, else a failure)
    /// of physical memory described by `prop` (`cuMemCreate`; a failure
    /// without the [`VMM`](super::library::VMM) symbols).
    pub(crate) fn create(
        lib: &Library,
        size: usize,
        prop: &sys::CUmemAllocationProp,
    ) -> Result<Self, Failure> {
        Ok(Physical(mem_create(lib, size, prop)?))
    }

    /// Releases it (`cuMemRelease`); where it is still mapped, the driver
    /// frees it once unmapped.
    pub(crate) fn release(self) -> Result<(), Failure> {
        // SAFETY: made by `create` and consumed here, so never used again.
        unsafe { mem_release(self.0) }
    }
}

/// Device memory made by [`DeviceMemory::alloc`] (or none), until
/// [`DeviceMemory::free`] (dropped without that, it is kept until the
/// process exits). Enqueuing a copy to or from it is the caller's `unsafe`
/// promise to keep it until the copy is done.
#[derive(Debug, Default)]
pub(crate) struct DeviceMemory {
    ptr: u64,
    len: usize,
}

impl DeviceMemory {
    /// `len` bytes of device memory in the current context
    /// (`cuMemAlloc`; a failure without the
    /// [`STAGING`](super::library::STAGING) symbols).
    pub(crate) fn alloc(lib: &Library, len: usize) -> Result<Self, Failure> {
        Ok(DeviceMemory {
            ptr: mem_alloc(lib, len)?,
            len,
        })
    }

    /// Its device address.
    pub(crate) fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Its length (0: none).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Enqueues a copy of `len` bytes from `src`, a device address, to
    /// `offset` in this memory, on `stream` (`cuMemcpyDtoDAsync`); the
    /// [`Failure`] is `CUDA_ERROR_INVALID_VALUE` when they are not inside
    /// it. The source range may be anything (the driver fails the copy if
    /// it is not mapped). The context is to be bound.
    ///
    /// # Safety
    ///
    /// `self` stays allocated until the copy completes, as does the source
    /// range where the caller allocated it.
    pub(crate) unsafe fn copy_from_device(
        &self,
        offset: usize,
        len: usize,
        src: u64,
        stream: &StreamHandle,
    ) -> Result<(), Failure> {
        inside("cuMemcpyDtoDAsync", offset, len, self.len)?;
        // SAFETY: the destination is inside this allocation (checked
        // above), and the caller keeps both ranges until the copy completes
        // (its contract).
        unsafe { stream.copy_device(self.ptr + offset as u64, src, len) }
    }

    /// Frees it (`cuMemFree`), leaving none.
    pub(crate) fn free(&mut self) -> Result<(), Failure> {
        let DeviceMemory { ptr, len } = std::mem::take(self);
        if len == 0 {
            return Ok(());
        }
        // SAFETY: allocated by `alloc` (the library has the symbols) and no
        // longer held by `self`; the copies that used it were promised to
        // be done.
        unsafe { mem_free(ptr) }
    }
}
