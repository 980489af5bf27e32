//! The program's device memory as the interposer sees it: the recording
//! region (reserved once, mapped as the allocations in it grow), the
//! allocations the program holds there, blocks freed in stream order that
//! the same stream may take again, and memory the driver placed elsewhere:
//! managed, page-locked and registered host memory, which a recorded
//! launch holds as extra ranges, and allocations once the region was full,
//! which a capture cannot hold.
//!
//! The region outlives recording: once the interposer has served an
//! allocation from it, the program may use that memory until it exits,
//! also after recording stopped, so nothing here ever unmaps it.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use crate::real::*;

/// Alignment of every allocation in the region (the driver's own
/// `cuMemAlloc` guarantees 256 bytes).
pub const ALIGN: u64 = 256;

/// Address space is reserved in multiples of this (the granularity NVIDIA
/// devices report for device memory); physical memory is mapped in
/// multiples of the device's granularity, which divides it.
const RESERVE_UNIT: u64 = 2 << 20;

/// Memory the driver placed outside the region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outside {
    /// `cuMemAllocManaged`.
    Managed,
    /// Page-locked host memory (`cuMemHostAlloc`, `cuMemAllocHost`), which
    /// kernels reach through unified addressing.
    Host,
    /// Host memory the program page-locked (`cuMemHostRegister`).
    Registered,
    /// A `cuMemAlloc` the region had no room for, or made while the
    /// interposer was not serving from the region.
    Driver,
}

/// A block a `cuMemFreeAsync` returned on `stream`: work queued on that
/// stream after the free runs after every earlier use, so a later
/// `cuMemAllocAsync` on the same stream may take it again at once.
#[derive(Debug, Clone, Copy)]
struct Freed {
    stream: usize,
    addr: u64,
    size: u64,
}

/// The region's reservation and what is mapped of it.
#[derive(Debug)]
struct Reservation {
    base: u64,
    size: u64,
    /// Bytes from `base` with physical memory behind them.
    mapped: u64,
    /// The physical allocations, in address order.
    handles: Vec<u64>,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct Heap {
    region: Option<Reservation>,
    live: BTreeMap<u64, u64>,
    freed: Vec<Freed>,
    outside: BTreeMap<u64, (u64, Outside)>,
    globals: BTreeMap<u64, u64>,
    /// The end of the highest block ever served from the region: the bump
    /// allocator serves the next one above it.
    top: u64,
    /// Whether the region still serves allocations (recording is on).
    serving: bool,
}

/// The process's heap. A forked child gets an empty one of its own: the
/// parent's may have been locked by a thread the child does not have (and
/// the driver does not work in a forked child anyway).
pub fn heap() -> MutexGuard<'static, Heap> {
    const EMPTY: Heap = Heap {
        region: None,
        live: BTreeMap::new(),
        freed: Vec::new(),
        outside: BTreeMap::new(),
        globals: BTreeMap::new(),
        top: 0,
        serving: true,
    };
    static HEAP: Mutex<Heap> = Mutex::new(EMPTY);
    static CHILD: Mutex<Heap> = Mutex::new(EMPTY);
    let cell = if crate::process::forked() {
        &CHILD
    } else {
        &HEAP
    };
    cell.lock().unwrap_or_else(|e| e.into_inner())
}

/// The most memory any device has, where the driver says: the region's
/// address space by default (memory is mapped as allocations reach it).
pub fn device_memory() -> Option<u64> {
    type DeviceGetCount = unsafe extern "C" fn(*mut std::ffi::c_int) -> CuResult;
    type DeviceTotalMem = unsafe extern "C" fn(*mut usize, std::ffi::c_int) -> CuResult;
    let count = crate::driver_fn!(DeviceGetCount, "cuDeviceGetCount")?;
    let get = crate::driver_fn!(DeviceGet, "cuDeviceGet")?;
    let total = crate::driver_fn!(DeviceTotalMem, "cuDeviceTotalMem_v2")?;
    let mut n = 0;
    // SAFETY: a valid out-pointer.
    if unsafe { count(&mut n) } != SUCCESS {
        return None;
    }
    (0..n)
        .filter_map(|ordinal| {
            let (mut device, mut bytes) = (0, 0usize);
            // SAFETY: valid out-pointers; an ordinal below the count.
            let ok = unsafe { get(&mut device, ordinal) } == SUCCESS
                && unsafe { total(&mut bytes, device) } == SUCCESS;
            ok.then_some(bytes as u64)
        })
        .max()
        .filter(|&bytes| bytes > 0)
}

/// The entry `map` holds for the range containing `addr`, as (start, size).
fn containing<V: Copy>(
    map: &BTreeMap<u64, V>,
    addr: u64,
    size: impl Fn(&V) -> u64,
) -> Option<(u64, V)> {
    let (&start, v) = map.range(..=addr).next_back()?;
    (addr - start < size(v)).then_some((start, *v))
}

/// Maps physical memory behind `res` from what is mapped up to `target`
/// bytes: the new physical allocation's handle, or why not (nothing left
/// half done).
fn map_chunk(
    r: &Real,
    res: &Reservation,
    target: u64,
    prop: &MemAllocationProp,
) -> Result<u64, String> {
    let (at, len) = (res.base + res.mapped, (target - res.mapped) as usize);
    let mut handle = 0u64;
    // SAFETY: valid out-pointer and properties.
    let rc = unsafe { (r.cuMemCreate)(&mut handle, len, prop, 0) };
    if rc != SUCCESS {
        return Err(format!(
            "cuMemCreate of {len} bytes failed: {}",
            error_name(rc)
        ));
    }
    // SAFETY: maps the new handle right after what is mapped, inside the
    // reservation.
    let rc = unsafe { (r.cuMemMap)(at, len, 0, handle, 0) };
    if rc != SUCCESS {
        // SAFETY: the handle just made, mapped nowhere.
        unsafe { (r.cuMemRelease)(handle) };
        return Err(format!("cuMemMap at {at:#x} failed: {}", error_name(rc)));
    }
    let access = MemAccessDesc {
        location: prop.location,
        flags: 3,
    };
    // SAFETY: one descriptor over the range just mapped.
    let rc = unsafe { (r.cuMemSetAccess)(at, len, &access, 1) };
    if rc != SUCCESS {
        // SAFETY: undoes the map and the handle above.
        unsafe {
            (r.cuMemUnmap)(at, len);
            (r.cuMemRelease)(handle);
        }
        return Err(format!(
            "cuMemSetAccess at {at:#x} failed: {}",
            error_name(rc)
        ));
    }
    Ok(handle)
}

impl Heap {
    /// Reserves `size` bytes of address space for the region, at `hint`
    /// where the driver gives it, unless reserved already: the region's
    /// `(base, size)`, or the driver's error.
    pub fn reserve(&mut self, size: u64, hint: u64) -> Result<(u64, u64), CuResult> {
        if let Some(r) = &self.region {
            return Ok((r.base, r.size));
        }
        let r = real().map_err(|_| ERROR_NOT_FOUND)?;
        let size = size.max(1).div_ceil(RESERVE_UNIT) * RESERVE_UNIT;
        let mut base = 0;
        // SAFETY: a valid out-pointer; reserves address space only.
        let rc = unsafe { (r.cuMemAddressReserve)(&mut base, size as usize, 0, hint, 0) };
        if rc != SUCCESS {
            return Err(rc);
        }
        self.region = Some(Reservation {
            base,
            size,
            mapped: 0,
            handles: Vec::new(),
        });
        Ok((base, size))
    }

    /// Whether `addr` lies in the region.
    pub fn in_region(&self, addr: u64) -> bool {
        self.region
            .as_ref()
            .is_some_and(|r| addr >= r.base && addr - r.base < r.size)
    }

    /// Maps physical memory of `device` behind the region up to `end` (an
    /// address in it): geometrically, so that a program making many small
    /// allocations maps a few times, never more than the reservation.
    pub fn map_to(&mut self, end: u64, device: i32) -> Result<(), String> {
        let Some(res) = self.region.as_mut() else {
            return Err("the region is not reserved".into());
        };
        let want = end.saturating_sub(res.base);
        if want <= res.mapped {
            return Ok(());
        }
        if want > res.size {
            return Err(format!("{end:#x} is past the region's end"));
        }
        let r = real().map_err(|name| format!("the driver lacks {name}"))?;
        let prop = MemAllocationProp {
            kind: 1,
            handle_types: 0,
            location: MemLocation {
                kind: 1,
                id: device,
            },
            win32: std::ptr::null_mut(),
            flags: [0; 8],
        };
        let mut gran = 0usize;
        // SAFETY: valid pointers; option 0 = minimum granularity.
        let rc = unsafe { (r.cuMemGetAllocationGranularity)(&mut gran, &prop, 0) };
        if rc != SUCCESS || gran == 0 {
            return Err(format!(
                "cuMemGetAllocationGranularity failed: {}",
                error_name(rc)
            ));
        }
        let gran = gran as u64;
        let minimal = want.div_ceil(gran).saturating_mul(gran).min(res.size);
        let grown = want
            .max(res.mapped.saturating_mul(2))
            .max(RESERVE_UNIT)
            .div_ceil(gran)
            .saturating_mul(gran)
            .min(res.size);
        // Geometrically, so that many small allocations map a few times;
        // what is needed only, when the device has no room for more.
        let (target, handle) = match map_chunk(r, res, grown, &prop) {
            Ok(h) => (grown, h),
            Err(_) if minimal < grown => (minimal, map_chunk(r, res, minimal, &prop)?),
            Err(e) => return Err(e),
        };
        res.mapped = target;
        res.handles.push(handle);
        Ok(())
    }

    /// The program now holds `[addr, addr + size)` of the region.
    pub fn hold(&mut self, addr: u64, size: u64) {
        self.live.insert(addr, size);
        self.top = self.top.max(addr.saturating_add(size));
    }

    /// A block freed on `stream` large enough for `size`, taken again
    /// (the smallest that fits).
    pub fn reuse(&mut self, size: u64, stream: usize) -> Option<u64> {
        let i = self
            .freed
            .iter()
            .enumerate()
            .filter(|(_, f)| f.stream == stream && f.size >= size)
            .min_by_key(|(_, f)| f.size)
            .map(|(i, _)| i)?;
        let f = self.freed.swap_remove(i);
        self.live.insert(f.addr, f.size);
        Some(f.addr)
    }

    /// `cuMemFree` of region memory: the block's size when the program
    /// held `addr` (the recorder's allocator may hand it out again), `None`
    /// when it is not an allocation of the region.
    pub fn free(&mut self, addr: u64) -> Option<u64> {
        self.live.remove(&addr)
    }

    /// `cuMemFreeAsync` of region memory on `stream`: the block may serve a
    /// later `cuMemAllocAsync` on the same stream.
    pub fn free_async(&mut self, addr: u64, stream: usize) -> bool {
        match self.live.remove(&addr) {
            Some(size) => {
                self.freed.push(Freed { stream, addr, size });
                true
            }
            None => false,
        }
    }

    /// The region allocation containing `addr`, as (base, size).
    pub fn allocation(&self, addr: u64) -> Option<(u64, u64)> {
        containing(&self.live, addr, |&s| s)
    }

    /// The allocations the program holds in the region, as (base, size),
    /// in address order (blocks it freed are not among them).
    pub fn live(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.live.iter().map(|(&a, &s)| (a, s))
    }

    /// The region serves no more allocations (recording stopped).
    pub fn stop_serving(&mut self) {
        self.serving = false;
        self.freed.clear();
    }

    /// A stream the program destroyed: the blocks freed on it are not
    /// handed out again (a new stream may get its handle while its work
    /// still drains).
    pub fn forget_stream(&mut self, key: usize) {
        self.freed.retain(|f| f.stream != key);
    }

    /// Bytes mapped behind the region that no allocation has taken yet:
    /// the next allocations take them before the region maps more (none
    /// once the region serves no more).
    pub fn mapped_unused(&self) -> u64 {
        if !self.serving {
            return 0;
        }
        self.region.as_ref().map_or(0, |r| {
            let used = self.top.saturating_sub(r.base).min(r.mapped);
            r.mapped - used
        })
    }

    /// The driver placed `[addr, addr + size)` outside the region.
    pub fn outside(&mut self, addr: u64, size: u64, kind: Outside) {
        if size > 0 && !self.in_region(addr) {
            self.outside.insert(addr, (size, kind));
        }
    }

    /// The program freed memory outside the region.
    pub fn forget_outside(&mut self, addr: u64) {
        self.outside.remove(&addr);
    }

    /// The range outside the region containing `addr`, as (start, size,
    /// kind), if the interposer saw the driver place it.
    pub fn outside_range(&self, addr: u64) -> Option<(u64, u64, Outside)> {
        containing(&self.outside, addr, |&(s, _)| s).map(|(a, (s, k))| (a, s, k))
    }

    /// Every range outside the region the program holds, as (start, size,
    /// kind), in address order.
    pub fn outside_ranges(&self) -> impl Iterator<Item = (u64, u64, Outside)> + '_ {
        self.outside.iter().map(|(&a, &(s, k))| (a, s, k))
    }

    /// A device global lives at `[addr, addr + size)`.
    pub fn global(&mut self, addr: u64, size: u64) {
        if size > 0 {
            self.globals.insert(addr, size);
        }
    }

    /// Whether `addr` points into a device global.
    pub fn in_global(&self, addr: u64) -> bool {
        containing(&self.globals, addr, |&s| s).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuse_is_per_stream_and_takes_the_smallest_block_that_fits() {
        let mut h = Heap::default();
        for (addr, size) in [(0x1000, 512), (0x2000, 256), (0x3000, 1024)] {
            h.hold(addr, size);
        }
        assert!(h.free_async(0x1000, 7));
        assert!(h.free_async(0x2000, 7));
        assert!(h.free_async(0x3000, 8));
        assert!(!h.free_async(0x3000, 8), "freed twice");
        assert_eq!(h.reuse(300, 9), None, "another stream");
        assert_eq!(h.reuse(300, 7), Some(0x1000));
        assert_eq!(h.reuse(300, 7), None, "0x2000 is too small");
        assert_eq!(h.reuse(200, 7), Some(0x2000));
        assert_eq!(h.allocation(0x1000 + 511), Some((0x1000, 512)));
        assert_eq!(h.allocation(0x1000 + 512), None);
        let live: Vec<_> = h.live().collect();
        assert_eq!(live, [(0x1000, 512), (0x2000, 256)], "0x3000 is freed");
    }

    #[test]
    fn a_freed_block_is_the_programs_no_more_and_says_its_size() {
        let mut h = Heap::default();
        h.hold(0x1000, 2 << 20);
        assert_eq!(h.allocation(0x1000 + 5), Some((0x1000, 2 << 20)));
        assert_eq!(h.free(0x1000), Some(2 << 20));
        assert_eq!(h.allocation(0x1000 + 5), None);
        assert_eq!(h.free(0x1000), None, "freed twice");
        assert_eq!(h.live().count(), 0);
    }

    #[test]
    fn outside_memory_and_globals_are_found_by_any_address_in_them() {
        let mut h = Heap::default();
        h.outside(0x10_0000, 4096, Outside::Managed);
        h.global(0x20_0000, 8);
        assert_eq!(
            h.outside_range(0x10_0fff),
            Some((0x10_0000, 4096, Outside::Managed))
        );
        assert_eq!(h.outside_range(0x10_1000), None);
        assert!(h.in_global(0x20_0007) && !h.in_global(0x20_0008));
        h.forget_outside(0x10_0000);
        assert_eq!(h.outside_range(0x10_0000), None);
    }
}
