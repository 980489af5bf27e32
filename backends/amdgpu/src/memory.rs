//! Device regions (reserved at an exact address through the runtime's
//! virtual memory management, or allocated from the GPU's pool for a fresh
//! recording where the runtime has none) and host staging buffers
//! (fine-grained host memory the GPU may reach).

use std::ffi::c_void;
use std::sync::Arc;

use hsa_sys::*;
use reprise_core::exec::{DeviceRegion, RegionRequest};

use crate::error::{AmdError, check};
use crate::runtime::Runtime;

/// Where a fresh recording's region goes when the runtime can place it:
/// away from where the runtime's own allocations start, 2 MiB aligned.
pub const FRESH_BASE: u64 = 0x1534_f7e0_0000;

/// How a region holds its memory.
#[derive(Debug)]
enum Backing {
    /// Reserved address range with one physical handle mapped at its start.
    Vmem {
        reserved: u64,
        handle: hsa_amd_vmem_alloc_handle_t,
        mapped: u64,
    },
    /// One allocation from the GPU's coarse-grained pool.
    Pool,
}

/// A reserved device address range.
#[derive(Debug)]
pub struct AmdRegion {
    rt: Arc<Runtime>,
    base: u64,
    capacity: u64,
    backing: Backing,
}

impl DeviceRegion for AmdRegion {
    fn base(&self) -> u64 {
        self.base
    }
    fn capacity(&self) -> u64 {
        self.capacity
    }
}

fn round_up(v: u64, to: u64) -> Option<u64> {
    v.checked_add(to - 1).map(|x| x / to * to)
}

impl AmdRegion {
    /// Reserves `request` on `rt`'s GPU.
    pub(crate) fn reserve(
        rt: &Arc<Runtime>,
        request: RegionRequest,
    ) -> Result<AmdRegion, AmdError> {
        if request.capacity == 0 {
            return Err(AmdError::EmptyRegion);
        }
        let g = rt.granule;
        let too_big = || AmdError::RegionTooLarge {
            bytes: request.capacity,
        };
        let capacity = round_up(request.capacity, g).ok_or_else(too_big)?;
        let backed = round_up(request.backed.max(1), g)
            .ok_or_else(too_big)?
            .min(capacity);
        let Some(vmem) = rt.hsa.vmem.as_ref() else {
            if let Some(base) = request.base {
                return Err(AmdError::NoVirtualMemory {
                    base,
                    missing: rt.hsa.vmem_missing.clone(),
                });
            }
            // A fresh recording goes wherever the pool puts it.
            let len = usize::try_from(capacity).map_err(|_| too_big())?;
            let ptr = rt.allocate(rt.device_pool, len)?;
            return Ok(AmdRegion {
                rt: rt.clone(),
                base: ptr as u64,
                capacity,
                backing: Backing::Pool,
            });
        };
        if let Some(base) = request.base
            && base % g != 0
        {
            return Err(AmdError::UnalignedBase { base, granule: g });
        }
        let hint = request.base.unwrap_or(FRESH_BASE);
        let size = usize::try_from(capacity).map_err(|_| too_big())?;
        let mut va: *mut c_void = std::ptr::null_mut();
        // SAFETY: `va` is a valid out-pointer; the runtime only reserves
        // address space.
        let rc = unsafe { (vmem.hsa_amd_vmem_address_reserve)(&mut va, size, hint, 0) };
        // A hint the runtime cannot honour gives another address (checked
        // below); a failure is the runtime's own.
        check("hsa_amd_vmem_address_reserve", rc)?;
        let got = va as u64;
        let free_reservation = || {
            // SAFETY: `va` is the reservation just made, with nothing mapped.
            unsafe { (vmem.hsa_amd_vmem_address_free)(va, size) };
        };
        if let Some(wanted) = request.base
            && got != wanted
        {
            free_reservation();
            return Err(AmdError::AddressUnavailable {
                wanted,
                len: capacity,
                offered: got,
            });
        }
        let backed_len = backed as usize;
        let mut handle = hsa_amd_vmem_alloc_handle_t::default();
        // SAFETY: valid out-pointer; the pool belongs to the GPU agent.
        let rc = unsafe {
            (vmem.hsa_amd_vmem_handle_create)(
                rt.device_pool,
                backed_len,
                memory_type::NONE,
                0,
                &mut handle,
            )
        };
        if let Err(e) = check("hsa_amd_vmem_handle_create", rc) {
            free_reservation();
            return Err(e);
        }
        // SAFETY: maps the handle's whole size at the reservation's start,
        // inside the reservation.
        let rc = unsafe { (vmem.hsa_amd_vmem_map)(va, backed_len, 0, handle, 0) };
        if let Err(e) = check("hsa_amd_vmem_map", rc) {
            // SAFETY: the handle is unmapped and unused.
            unsafe { (vmem.hsa_amd_vmem_handle_release)(handle) };
            free_reservation();
            return Err(e);
        }
        let desc = hsa_amd_memory_access_desc_t {
            permissions: access::RW,
            agent_handle: rt.gpu,
        };
        // SAFETY: one descriptor, valid for the call, over the mapped range.
        let rc = unsafe { (vmem.hsa_amd_vmem_set_access)(va, backed_len, &desc, 1) };
        let region = AmdRegion {
            rt: rt.clone(),
            base: got,
            capacity: backed,
            backing: Backing::Vmem {
                reserved: capacity,
                handle,
                mapped: backed,
            },
        };
        // From here on `Drop` undoes all three steps.
        check("hsa_amd_vmem_set_access", rc)?;
        Ok(region)
    }
}

impl Drop for AmdRegion {
    fn drop(&mut self) {
        match &self.backing {
            Backing::Pool => self.rt.free(self.base as *mut c_void),
            Backing::Vmem {
                reserved,
                handle,
                mapped,
            } => {
                let vmem = self.rt.hsa.vmem.as_ref().expect("a vmem region has vmem");
                let va = self.base as *mut c_void;
                // SAFETY: undoes `reserve` in reverse order; no queued work
                // uses the region any more (queues wait in their `Drop`, and
                // the std adapter drops regions after their queues).
                let rcs = unsafe {
                    [
                        (vmem.hsa_amd_vmem_unmap)(va, *mapped as usize),
                        (vmem.hsa_amd_vmem_handle_release)(*handle),
                        (vmem.hsa_amd_vmem_address_free)(va, *reserved as usize),
                    ]
                };
                for rc in rcs {
                    if rc != status::SUCCESS {
                        eprintln!(
                            "warning: releasing an AMD region: {}",
                            crate::error::status_name(rc)
                        );
                    }
                }
            }
        }
    }
}

/// A host staging buffer of fine-grained host memory the GPU may reach.
#[derive(Debug)]
pub struct AmdBuffer {
    rt: Arc<Runtime>,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer owns its allocation exclusively; the runtime handle is
// `Send + Sync`.
unsafe impl Send for AmdBuffer {}
// SAFETY: shared access only reads the bytes.
unsafe impl Sync for AmdBuffer {}

impl AmdBuffer {
    /// `len` zeroed bytes.
    pub(crate) fn new(rt: &Arc<Runtime>, len: usize) -> Result<AmdBuffer, AmdError> {
        let ptr = rt.allocate(rt.host_pool, len)? as *mut u8;
        if let Err(e) = rt.allow_gpu(ptr as *const c_void) {
            rt.free(ptr as *mut c_void);
            return Err(e);
        }
        // SAFETY: the allocation holds at least `max(len, 1)` bytes.
        unsafe { std::ptr::write_bytes(ptr, 0, len) };
        Ok(AmdBuffer {
            rt: rt.clone(),
            ptr,
            len,
        })
    }

    pub(crate) fn addr(&self) -> u64 {
        self.ptr as u64
    }
}

impl AsRef<[u8]> for AmdBuffer {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `ptr` holds `len` initialised bytes owned by this buffer.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl AsMut<[u8]> for AmdBuffer {
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AmdBuffer {
    fn drop(&mut self) {
        self.rt.free(self.ptr as *mut c_void);
    }
}
