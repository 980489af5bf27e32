//! Device regions (exact-address reservations through the virtual memory
//! API, or, where the driver will not reserve the address, host memory
//! mapped for the device there) and page-locked host buffers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::sys;
use reprise_core::exec::DeviceRegion;

use crate::device::Device;
use crate::error::{CudaError, DriverError};
use crate::raw::{self, HostMapping, HostMemory, Library, Physical, Reservation};

/// Where a fresh recording's region goes when the caller does not say (if
/// the driver honours it): the address LLVM's recorder suggests for CUDA.
pub const SUGGESTED_BASE: u64 = 0x1539_4000_0000;

/// Alignment of a fresh region's base when the suggested address is taken.
pub const FRESH_ALIGN: u64 = 1 << 31;

/// A reserved, read/write device address range, with device memory behind
/// its first [`DeviceRegion::capacity`] bytes, which [`CudaRegion::grow`]
/// extends up to everything reserved.
///
/// The driver takes the requested base as a hint and places reservations
/// inside its own address pools; an address it will not give is reported as
/// [`CudaError::AddressMismatch`] (everything undone). On driver 580
/// (CUDA 13.0, H200) hints outside the pools, LLVM's suggested
/// [`SUGGESTED_BASE`] included, are never honoured, and an address is
/// re-offered only while its pool is still in use, so a fresh recording's
/// region usually lands at the bottom of the first pool (`0x380000000` there).
///
/// Where the driver will not reserve an exact address, the region is
/// page-locked host memory mapped there for the device instead
/// ([`CudaRegion::on_host`]): kernels read and write it over the bus.
///
/// Dropping it synchronizes the context (so no kernel still touches it), then
/// unmaps, releases and frees the range; errors are kept for the next
/// synchronize of any queue of the executor.
#[derive(Debug)]
pub struct CudaRegion {
    dev: Arc<Device>,
    /// Host memory standing for the region (it does not grow).
    host: Option<HostMapping>,
    base: u64,
    /// Address space reserved.
    size: u64,
    /// The allocation granularity of its device memory.
    gran: u64,
    /// Bytes from the base with device memory behind them (written with
    /// `mapped` held, read without it).
    backed: AtomicU64,
    mapped: Mutex<Mapped>,
}

/// The address space and the device memory mapped into it, in address
/// order; `range` is `None` once dropped.
#[derive(Debug)]
struct Mapped {
    range: Option<Reservation>,
    memory: Vec<Physical>,
}

impl DeviceRegion for CudaRegion {
    fn base(&self) -> u64 {
        self.base
    }
    /// The usable bytes: those with device memory behind them.
    fn capacity(&self) -> u64 {
        self.backed.load(Ordering::Acquire)
    }
    fn reserved(&self) -> u64 {
        self.size
    }
    fn on_host(&self) -> bool {
        self.host.is_some()
    }
}

impl CudaRegion {
    /// The address space reserved (at least [`DeviceRegion::capacity`]).
    pub fn reserved(&self) -> u64 {
        self.size
    }

    /// Whether it is page-locked host memory mapped for the device rather
    /// than device memory.
    pub fn on_host(&self) -> bool {
        self.host.is_some()
    }

    /// Puts device memory behind the first `want` bytes (rounded up to the
    /// granularity), mapping one more allocation after what is backed;
    /// nothing where they are backed already. More than is reserved is
    /// the driver's `CUDA_ERROR_INVALID_VALUE`; a device without room for
    /// it, `CUDA_ERROR_OUT_OF_MEMORY`; either way nothing changes. Several
    /// threads may grow one region at once (one maps, the others find it
    /// done).
    pub fn grow(&self, want: u64) -> Result<(), CudaError> {
        let mut mapped = self.mapped.lock().unwrap_or_else(|e| e.into_inner());
        let backed = self.backed.load(Ordering::Acquire);
        if want <= backed {
            return Ok(());
        }
        let refused = |code| CudaError::Driver(DriverError::from_code("cuMemMap", code as u32));
        let Some(range) = mapped.range.as_mut() else {
            return Err(refused(sys::CUresult::CUDA_ERROR_INVALID_VALUE));
        };
        if want > self.size {
            return Err(refused(sys::CUresult::CUDA_ERROR_INVALID_VALUE));
        }
        // Cannot overflow: at most `size`, itself a multiple of `gran`.
        let target = want.next_multiple_of(self.gran).min(self.size);
        let len = (target - backed) as usize;
        let dev = &self.dev;
        dev.bind()?;
        let memory = Physical::create(&dev.lib, len, &pinned(dev))?;
        let access = read_write(dev);
        if let Err(f) = range.map_more(len, &memory) {
            let _ = memory.release();
            return Err(f.into());
        }
        if let Err(f) = range.set_access_from(backed as usize, &access) {
            let _ = range.unmap_last();
            let _ = memory.release();
            return Err(f.into());
        }
        mapped.memory.push(memory);
        self.backed.store(target, Ordering::Release);
        Ok(())
    }
}

/// Pinned device memory of `dev`, as a region maps it.
fn pinned(dev: &Device) -> sys::CUmemAllocationProp {
    sys::CUmemAllocationProp {
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
    }
}

/// Read and write access for `dev`.
fn read_write(dev: &Device) -> sys::CUmemAccessDesc {
    sys::CUmemAccessDesc {
        location: location(dev),
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    }
}

/// Bytes of memory `dev` has (`cuDeviceTotalMem`), where the driver says.
pub(crate) fn total_memory(dev: &Device) -> Option<u64> {
    raw::device_total_mem(&dev.lib, dev.device)
}

fn location(dev: &Device) -> sys::CUmemLocation {
    sys::CUmemLocation {
        type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        id: dev.device,
    }
}

/// Reserves `[addr, addr + size)`, or any range aligned to `align` when
/// `addr` is 0, wherever the driver puts it.
fn address_reserve(
    lib: &Library,
    size: u64,
    align: u64,
    addr: u64,
) -> Result<Reservation, DriverError> {
    Ok(Reservation::reserve(
        lib,
        size as usize,
        align as usize,
        addr,
    )?)
}

/// Gives a reservation back, with nothing to report an error to.
fn address_free(range: Reservation) {
    let _ = range.free();
}

/// Reserves `[want, want + size)` exactly. The driver takes the address as
/// a hint (CUDA Driver API, Virtual Memory Management, cuMemAddressReserve:
/// "when it is non-zero then the driver treats it as a hint about where to
/// place the reservation"), in practice inside its own pools, so three
/// tries: the plain hint; the hint
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
fn reserve_exact(lib: &Library, size: u64, gran: u64, want: u64) -> Result<Reservation, CudaError> {
    let align = 1u64 << want.trailing_zeros().min(FRESH_ALIGN.trailing_zeros());
    // The last address the driver offered instead, and its last error.
    let mut offered = None;
    let mut failed = None;
    for align in [0, align] {
        match address_reserve(lib, size, align, want) {
            Ok(got) if got.base() == want => return Ok(got),
            Ok(got) => {
                offered = Some(got.base());
                address_free(got);
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
        if let Ok(filler) = address_reserve(lib, gap, 0, last) {
            let got = address_reserve(lib, size, 0, want);
            address_free(filler);
            match got {
                Ok(got) if got.base() == want => return Ok(got),
                Ok(got) => {
                    last = got.base();
                    address_free(got);
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
    ///
    /// An exact request that asks for nothing backed (`backed` 0: memory
    /// beyond a recording's region, which a replay puts back at its
    /// address and fills itself) takes a second route where the driver
    /// will not reserve the address: page-locked host memory mapped for
    /// the device there ([`CudaRegion::on_host`]). A region asked for
    /// memory stays device memory or fails, as a recording's region must.
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
        let bare = backed == 0;
        dev.bind()?;
        let lib = &dev.lib;
        let prop = pinned(dev);
        let gran = raw::mem_get_allocation_granularity(
            lib,
            &prop,
            sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
        )?;
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

        let mut range = match base {
            Some(want) => match reserve_exact(lib, size, gran, want) {
                Ok(range) => range,
                Err(vmm) if bare => return Self::place_on_host(dev, want, capacity, vmm),
                Err(vmm) => return Err(vmm),
            },
            None => match address_reserve(lib, size, 0, SUGGESTED_BASE) {
                Ok(got) if got.base() == SUGGESTED_BASE => got,
                other => {
                    if let Ok(got) = other {
                        address_free(got);
                    }
                    address_reserve(lib, size, FRESH_ALIGN, 0)?
                }
            },
        };
        // `prop` describes pinned device memory; `backed` is a multiple of
        // its granularity.
        let memory = match Physical::create(lib, backed as usize, &prop) {
            Ok(memory) => memory,
            Err(f) => {
                undo(range, None);
                return Err(f.into());
            }
        };
        let access = read_write(dev);
        // The whole allocation at the start of the range (`backed <= size`).
        if let Err(f) = range
            .map(backed as usize, &memory)
            .and_then(|()| range.set_access(&access))
        {
            undo(range, Some(memory));
            return Err(f.into());
        }
        if let Some(want) = base {
            log::info!(
                "{want:#x}: {size} bytes of device memory at the address (cuMemAddressReserve, \
                 cuMemCreate, cuMemMap)"
            );
        }
        Ok(CudaRegion {
            dev: dev.clone(),
            host: None,
            base: range.base(),
            size,
            gran,
            backed: AtomicU64::new(backed),
            mapped: Mutex::new(Mapped {
                range: Some(range),
                memory: vec![memory],
            }),
        })
    }
}

impl CudaRegion {
    /// The second route to an exact address, after the driver's virtual
    /// memory management would not reserve it (`vmm`, its error): host
    /// memory at `want`, page-locked and mapped for the device, where the
    /// device uses the host pointer of registered memory
    /// (`CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM`; CUDA
    /// Driver API, Device Management, cuDeviceGetAttribute). Fails with
    /// [`CudaError::NoPlacement`], saying what each route found.
    fn place_on_host(
        dev: &Arc<Device>,
        want: u64,
        capacity: u64,
        vmm: CudaError,
    ) -> Result<Self, CudaError> {
        const PAGE: u64 = 4096;
        let len = capacity.max(1).next_multiple_of(PAGE);
        let refuse = |host: String| CudaError::NoPlacement {
            requested: want,
            size: len,
            routes: format!(
                "device memory (cuMemAddressReserve at the address): {vmm}; page-locked host \
                 memory mapped for the device (mmap, cuMemHostRegister): {host}"
            ),
        };
        let same_pointer = dev.attribute(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
        )?;
        if same_pointer != 1 {
            return Err(refuse(
                "the device does not use the host pointer of registered memory".into(),
            ));
        }
        if !want.is_multiple_of(PAGE) {
            return Err(refuse(format!("{want:#x} is not page-aligned")));
        }
        dev.bind()?;
        let host =
            HostMapping::place(&dev.lib, want, len as usize).map_err(|e| refuse(e.to_string()))?;
        log::warn!(
            "{want:#x}: {len} bytes placed as page-locked host memory mapped for the device \
             (the driver would not reserve device memory there: {vmm}); the kernel reads it \
             over the bus, so its timings differ from the recording's"
        );
        Ok(CudaRegion {
            dev: dev.clone(),
            host: Some(host),
            base: want,
            size: len,
            gran: PAGE,
            backed: AtomicU64::new(len),
            mapped: Mutex::new(Mapped {
                range: None,
                memory: Vec::new(),
            }),
        })
    }
}

/// Undoes the steps of a reservation that succeeded so far, in reverse,
/// with nothing to report an error to.
fn undo(mut range: Reservation, memory: Option<Physical>) {
    let _ = range.unmap();
    if let Some(memory) = memory {
        let _ = memory.release();
    }
    let _ = range.free();
}

impl Drop for CudaRegion {
    fn drop(&mut self) {
        // Waits for every kernel and copy of the context (bound by
        // `cleanup`), so nothing touches the range any more.
        let lib = self.dev.lib;
        self.dev.cleanup(|| raw::ctx_synchronize(&lib));
        if let Some(host) = self.host.take() {
            self.dev.cleanup(|| host.release());
        }
        let mapped = self.mapped.get_mut().unwrap_or_else(|e| e.into_inner());
        let Some(mut range) = mapped.range.take() else {
            return;
        };
        self.dev.cleanup(|| range.unmap());
        for memory in mapped.memory.drain(..) {
            self.dev.cleanup(|| memory.release());
        }
        self.dev.cleanup(|| range.free());
    }
}

/// A page-locked host buffer of fixed length, zeroed when made.
///
/// It frees itself (`cuMemFreeHost`) when dropped; a zero-length buffer holds
/// no memory.
#[derive(Debug)]
pub struct CudaBuffer {
    dev: Arc<Device>,
    mem: HostMemory,
}

impl CudaBuffer {
    pub(crate) fn new(dev: &Arc<Device>, len: usize) -> Result<Self, CudaError> {
        if len > 0 {
            dev.bind()?;
        }
        // PORTABLE makes the memory pinned for every context.
        let mem = HostMemory::alloc(&dev.lib, len, sys::CU_MEMHOSTALLOC_PORTABLE)?;
        Ok(CudaBuffer {
            dev: dev.clone(),
            mem,
        })
    }

    /// The first byte, for copies.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.mem.as_ptr()
    }

    /// The page-locked memory, for copies.
    pub(crate) fn host(&self) -> &HostMemory {
        &self.mem
    }
}

impl AsRef<[u8]> for CudaBuffer {
    fn as_ref(&self) -> &[u8] {
        self.mem.as_slice()
    }
}

impl AsMut<[u8]> for CudaBuffer {
    fn as_mut(&mut self) -> &mut [u8] {
        self.mem.as_mut_slice()
    }
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        if !self.mem.as_slice().is_empty() {
            // No copy uses the memory: queues hold buffers until a
            // synchronize covered their copies.
            let mem = &mut self.mem;
            self.dev.cleanup(|| mem.free());
        }
    }
}
