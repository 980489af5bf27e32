//! Device regions (exact-address reservations through the virtual memory
//! API) and page-locked host buffers.

use std::ptr::NonNull;
use std::sync::Arc;

use cudarc::driver::sys;
use reprise_core::exec::DeviceRegion;

use crate::device::Device;
use crate::error::{CudaError, DriverError};
use crate::raw;

/// Where a fresh recording's region goes when the caller does not say (if
/// the driver honours it): the address LLVM's recorder suggests for CUDA.
pub const SUGGESTED_BASE: u64 = 0x1539_4000_0000;

/// Alignment of a fresh region's base when the suggested address is taken.
pub const FRESH_ALIGN: u64 = 1 << 31;

/// A reserved, mapped, read/write device address range.
///
/// The driver takes the requested base as a hint and places reservations
/// inside its own address pools; an address it will not give is reported as
/// [`CudaError::AddressMismatch`] (everything undone). On driver 580
/// (CUDA 13.0, H200) hints outside the pools, LLVM's suggested
/// [`SUGGESTED_BASE`] included, are never honoured, and an address is
/// re-offered only while its pool is still in use, so a fresh recording's
/// region usually lands at the bottom of the first pool (`0x380000000` there).
///
/// Dropping it synchronizes the context (so no kernel still touches it), then
/// unmaps, releases and frees the range; errors are kept for the next
/// synchronize of any queue of the executor.
#[derive(Debug)]
pub struct CudaRegion {
    dev: Arc<Device>,
    base: u64,
    /// Address space reserved.
    size: u64,
    /// Bytes from the base with device memory behind them.
    backed: u64,
    handle: sys::CUmemGenericAllocationHandle,
}

impl DeviceRegion for CudaRegion {
    fn base(&self) -> u64 {
        self.base
    }
    /// The usable bytes: those with device memory behind them.
    fn capacity(&self) -> u64 {
        self.backed
    }
}

impl CudaRegion {
    /// The address space reserved (at least [`DeviceRegion::capacity`]).
    pub fn reserved(&self) -> u64 {
        self.size
    }
}

/// Undoes the steps of a reservation that succeeded so far.
#[derive(Default)]
struct Undo {
    reserved: Option<(u64, u64)>,
    handle: Option<sys::CUmemGenericAllocationHandle>,
    /// Bytes mapped from the base (0: none).
    mapped: u64,
}

impl Undo {
    fn run(&mut self) {
        if let Some((base, size)) = self.reserved.take() {
            let mapped = std::mem::take(&mut self.mapped);
            if mapped > 0 {
                // SAFETY: `[base, base + mapped)` was mapped by this
                // reservation and nothing has used it.
                let _ = unsafe { raw::mem_unmap(base, mapped as usize) };
            }
            if let Some(h) = self.handle.take() {
                // SAFETY: `h` came from cuMemCreate and is no longer mapped.
                let _ = unsafe { raw::mem_release(h) };
            }
            // SAFETY: the range was reserved by this reservation and is
            // unmapped.
            let _ = unsafe { raw::mem_address_free(base, size as usize) };
        } else if let Some(h) = self.handle.take() {
            // SAFETY: as above.
            let _ = unsafe { raw::mem_release(h) };
        }
    }
}

impl Drop for Undo {
    fn drop(&mut self) {
        self.run();
    }
}

fn location(dev: &Device) -> sys::CUmemLocation {
    sys::CUmemLocation {
        type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        id: dev.device,
    }
}

/// Reserves `[addr, addr + size)`, or any range aligned to `align` when
/// `addr` is 0; returns where the driver put it.
fn address_reserve(size: u64, align: u64, addr: u64) -> Result<u64, DriverError> {
    // SAFETY: the VMM symbols are present and the context is bound (checked
    // and done by the caller).
    Ok(unsafe { raw::mem_address_reserve(size as usize, align as usize, addr) }?)
}

fn address_free(base: u64, size: u64) {
    // SAFETY: `[base, base + size)` was reserved by `address_reserve` and
    // nothing is mapped in it.
    let _ = unsafe { raw::mem_address_free(base, size as usize) };
}

/// Reserves `[want, want + size)` exactly. The driver takes the address as
/// a hint inside its own pools, so three tries: the plain hint; the hint
/// with the alignment the recording asked for (the largest power of two
/// dividing `want`, up to [`FRESH_ALIGN`]), also when the plain hint failed
/// outright; and, when the driver offers a lower address, a filler
/// reservation of the gap below `want` so the next free address is `want`
/// itself (the filler is freed afterwards).
///
/// Fails with [`CudaError::AddressMismatch`] (naming the address asked for
/// and the last one offered) when the driver offered another address, and
/// with [`CudaError::AddressUnavailable`] (the driver's last error) when
/// every try failed outright.
fn reserve_exact(size: u64, gran: u64, want: u64) -> Result<u64, CudaError> {
    let align = 1u64 << want.trailing_zeros().min(FRESH_ALIGN.trailing_zeros());
    // The last address the driver offered instead, and its last error.
    let mut offered = None;
    let mut failed = None;
    for align in [0, align] {
        match address_reserve(size, align, want) {
            Ok(got) if got == want => return Ok(got),
            Ok(got) => {
                address_free(got, size);
                offered = Some(got);
            }
            Err(e) => failed = Some(e),
        }
    }
    let Some(mut last) = offered else {
        let source = failed.expect("each try either offered an address or failed");
        return Err(CudaError::AddressUnavailable {
            requested: want,
            size,
            source,
        });
    };
    if last < want && (want - last).is_multiple_of(gran) {
        let gap = want - last;
        if let Ok(filler) = address_reserve(gap, 0, last) {
            let got = address_reserve(size, 0, want);
            address_free(filler, gap);
            match got {
                Ok(got) if got == want => return Ok(got),
                Ok(got) => {
                    address_free(got, size);
                    last = got;
                }
                Err(_) => {}
            }
        }
    }
    Err(CudaError::AddressMismatch {
        requested: want,
        got: last,
    })
}

impl CudaRegion {
    /// Reserves `capacity` bytes of address space (rounded up to the
    /// allocation granularity) at exactly `base`, or for `None` at
    /// [`SUGGESTED_BASE`] or else anywhere aligned to [`FRESH_ALIGN`], and
    /// maps device memory behind its first `backed` bytes (rounded up).
    pub(crate) fn reserve(
        dev: &Arc<Device>,
        base: Option<u64>,
        capacity: u64,
        backed: u64,
    ) -> Result<Self, CudaError> {
        if !dev.lib.vmm
            || dev.attribute(
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
            )? == 0
        {
            return Err(CudaError::NoVirtualMemory {
                ordinal: dev.ordinal,
            });
        }
        dev.bind()?;
        let prop = sys::CUmemAllocationProp {
            type_: sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
            requestedHandleTypes: sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE,
            location: location(dev),
            win32HandleMetaData: std::ptr::null_mut(),
            allocFlags: sys::CUmemAllocationProp_st__bindgen_ty_1 {
                compressionType: 0,
                gpuDirectRDMACapable: 0,
                usage: 0,
                reserved: [0; 4],
            },
        };
        // SAFETY: the VMM symbols are present (checked above); `prop`
        // describes pinned memory on this device.
        let gran = unsafe {
            raw::mem_get_allocation_granularity(
                &prop,
                sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
            )
        }?;
        let gran = (gran as u64).max(1);
        let too_large = || {
            CudaError::Driver(DriverError::from_code(
                "cuMemAddressReserve",
                sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY as u32,
            ))
        };
        let size = capacity
            .max(1)
            .checked_next_multiple_of(gran)
            .ok_or_else(too_large)?;
        let backed = backed
            .clamp(1, capacity.max(1))
            .checked_next_multiple_of(gran)
            .ok_or_else(too_large)?
            .min(size);

        let mut undo = Undo::default();
        let got = match base {
            Some(want) => reserve_exact(size, gran, want)?,
            None => match address_reserve(size, 0, SUGGESTED_BASE) {
                Ok(got) if got == SUGGESTED_BASE => got,
                other => {
                    if let Ok(got) = other {
                        address_free(got, size);
                    }
                    address_reserve(size, FRESH_ALIGN, 0)?
                }
            },
        };
        undo.reserved = Some((got, size));

        // SAFETY: `prop` describes pinned device memory; `backed` is a
        // multiple of its granularity; the context is bound.
        let handle = unsafe { raw::mem_create(backed as usize, &prop) }?;
        undo.handle = Some(handle);
        // SAFETY: maps the whole allocation at the start of the reserved
        // range (`backed <= size`), where nothing is mapped yet.
        unsafe { raw::mem_map(got, backed as usize, handle) }?;
        undo.mapped = backed;
        let access = sys::CUmemAccessDesc {
            location: location(dev),
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: the range is mapped.
        unsafe { raw::mem_set_access(got, backed as usize, &access) }?;
        // Success: the region owns every step now.
        std::mem::forget(undo);
        Ok(CudaRegion {
            dev: dev.clone(),
            base: got,
            size,
            backed,
            handle,
        })
    }
}

impl Drop for CudaRegion {
    fn drop(&mut self) {
        let (base, size, handle) = (self.base, self.size as usize, self.handle);
        let backed = self.backed as usize;
        // SAFETY: waits for every kernel and copy of the context (bound by
        // `cleanup`), so nothing touches the range any more.
        self.dev.cleanup(|| unsafe { raw::ctx_synchronize() });
        // SAFETY: the range was mapped by `reserve` and is idle.
        self.dev.cleanup(|| unsafe { raw::mem_unmap(base, backed) });
        // SAFETY: the handle came from cuMemCreate and is unmapped now.
        self.dev.cleanup(|| unsafe { raw::mem_release(handle) });
        // SAFETY: the range was reserved by `reserve` and is unmapped now.
        self.dev
            .cleanup(|| unsafe { raw::mem_address_free(base, size) });
    }
}

/// A page-locked host buffer of fixed length, zeroed when made.
///
/// It frees itself (`cuMemFreeHost`) when dropped; a zero-length buffer holds
/// no memory.
#[derive(Debug)]
pub struct CudaBuffer {
    dev: Arc<Device>,
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer owns its page-locked memory exclusively (like a
// `Box<[u8]>`); the driver lets any thread free it. `&CudaBuffer` only reads.
unsafe impl Send for CudaBuffer {}
// SAFETY: shared references give only `&[u8]`.
unsafe impl Sync for CudaBuffer {}

impl CudaBuffer {
    pub(crate) fn new(dev: &Arc<Device>, len: usize) -> Result<Self, CudaError> {
        let ptr = if len == 0 {
            NonNull::dangling()
        } else {
            dev.bind()?;
            // SAFETY: the context is bound; PORTABLE makes the memory pinned
            // for every context.
            let p = unsafe { raw::mem_host_alloc(len, sys::CU_MEMHOSTALLOC_PORTABLE) }?;
            let p =
                NonNull::new(p.cast::<u8>()).ok_or(CudaError::Driver(DriverError::from_code(
                    "cuMemHostAlloc",
                    sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY as u32,
                )))?;
            // SAFETY: `p` points to `len` writable bytes just allocated;
            // zeroing them makes the slice views below sound.
            unsafe { p.as_ptr().write_bytes(0, len) };
            p
        };
        Ok(CudaBuffer {
            dev: dev.clone(),
            ptr,
            len,
        })
    }

    /// The first byte, for copies.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl AsRef<[u8]> for CudaBuffer {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `ptr` points to `len` initialised bytes owned by `self` (or
        // is dangling with `len == 0`).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl AsMut<[u8]> for CudaBuffer {
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_ref`, and `&mut self` makes the view exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        if self.len > 0 {
            let p = self.ptr.as_ptr().cast();
            // SAFETY: `p` came from cuMemHostAlloc and no copy uses it: queues
            // hold buffers until a synchronize covered their copies.
            self.dev.cleanup(|| unsafe { raw::mem_free_host(p) });
        }
    }
}
