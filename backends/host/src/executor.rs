//! The executor: regions (anonymous mappings at exact or fresh addresses),
//! staging buffers, and the [`Executor`] implementation.

use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use reprise_core::exec::{
    Capabilities, DeviceRegion, ErrorType, Executor, GlobalInfo, MapFile, MapPart, RegionRequest,
};
use reprise_core::record::BackendKind;
use reprise_core::region::RECORDING_BASE_ALIGN;

use crate::buffer::HostBuffer;
use crate::error::{HostError, OsContext, OsError, TooLarge, os_error};
use crate::image::{self, HostImage, HostKernel};
use crate::os::page_size;
use crate::queue::HostQueue;
use crate::registry::{Mapping, Owner, Registry};

/// Where a fresh recording's region goes when that address is free: 32 TiB,
/// between the executable and heap (low) and the shared libraries and
/// thread stacks (near 128 TiB), and 2 GiB-aligned.
pub const SUGGESTED_BASE: u64 = 0x2000_0000_0000;

/// The host executor. Cheap to clone; clones share the registry of live
/// regions and images.
///
/// # Kernel ABI
///
/// Host kernels follow LLVM's host plugin ABI:
///
/// - A kernel is an `extern "C"` function in an ELF x86-64 shared object
///   (a [`HostImage`]), found by its name among the image's exported
///   functions.
/// - It is called with one pointer-sized (8-byte) argument per recorded
///   argument, in the recorded order, up to [`MAX_ARGS`](crate::MAX_ARGS);
///   a launch with more is refused ([`HostError::TooManyArgs`]).
/// - Argument `i` is the recorded value `ArgPtrs[i] + ArgOffsets[i]` (a
///   64-bit sum, wrapping): for a pointer argument the recorded address
///   (normally in a region or global; it is not checked), for a scalar the
///   value itself.
/// - Scalars travel in pointer-sized slots, which the x86-64 System V ABI
///   passes as integers (the first six in general-purpose registers, the
///   rest on the stack): a kernel takes pointers or pointer-sized integers.
///   A `float` or `double` parameter would be read from an SSE register,
///   not from its slot.
/// - Every argument is 8 bytes: one recorded with another size (its
///   `ArgSizes` entry) is refused ([`HostError::ArgSize`]).
/// - Launch geometry is not passed to the kernel: a host kernel gets no grid,
///   block or shared-memory size. Each launch is one call, on the queue's
///   worker thread; the kernel's return value, if any, is ignored.
#[derive(Clone, Default)]
pub struct HostExecutor {
    registry: Arc<Mutex<Registry>>,
}

impl std::fmt::Debug for HostExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostExecutor").finish_non_exhaustive()
    }
}

/// A reserved region of host memory.
#[derive(Debug)]
pub struct HostRegion {
    map: Arc<Mapping>,
}

impl DeviceRegion for HostRegion {
    fn base(&self) -> u64 {
        self.map.base
    }
    fn capacity(&self) -> u64 {
        self.map.len
    }
}

impl HostExecutor {
    /// A host executor.
    pub fn new() -> Result<Self, HostError> {
        if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
            return Err(HostError::Unsupported);
        }
        Ok(HostExecutor::default())
    }

    fn register(&self, start: u64, len: u64, owner: Owner) {
        self.registry
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add(start, len, owner);
    }

    fn map_exact(&self, base: u64, len: u64) -> Result<u64, HostError> {
        if base == 0 {
            // Never attempted: where it succeeds (with CAP_SYS_RAWIO, or
            // vm.mmap_min_addr = 0) a null pointer would point into the
            // region.
            return Err(HostError::NullBase(base));
        }
        // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping; the
        // new anonymous mapping is owned by the `Mapping` built from it.
        let p = unsafe {
            libc::mmap(
                base as *mut c_void,
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE
                    | libc::MAP_ANONYMOUS
                    | libc::MAP_NORESERVE
                    | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let err = std::io::Error::last_os_error();
            return Err(if err.raw_os_error() == Some(libc::EEXIST) {
                HostError::AddressTaken {
                    addr: base,
                    size: len,
                }
            } else {
                HostError::os("mmap", OsError::from(&err), OsContext::At { base, len })
            });
        }
        if p as u64 != base {
            // A kernel without MAP_FIXED_NOREPLACE placed it elsewhere.
            // SAFETY: `p` is the mapping just made, unused by anyone.
            unsafe { libc::munmap(p, len as usize) };
            return Err(HostError::AddressTaken {
                addr: base,
                size: len,
            });
        }
        Ok(base)
    }

    /// A fresh recording's region: at [`SUGGESTED_BASE`] (or the next free
    /// 2 GiB-aligned slot above it), far from where libraries and heaps are
    /// mapped, so that a replay in another process finds the address free;
    /// anywhere 2 GiB-aligned if none of those is free.
    fn map_fresh(&self, len: u64) -> Result<u64, HostError> {
        let stride = len.div_ceil(RECORDING_BASE_ALIGN).max(1) * RECORDING_BASE_ALIGN;
        for k in 0..16u64 {
            let Some(base) = stride
                .checked_mul(k)
                .and_then(|o| SUGGESTED_BASE.checked_add(o))
            else {
                break;
            };
            match self.map_exact(base, len) {
                Ok(b) => return Ok(b),
                Err(HostError::AddressTaken { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        self.map_aligned(len)
    }

    fn map_aligned(&self, len: u64) -> Result<u64, HostError> {
        let span = len
            .checked_add(RECORDING_BASE_ALIGN)
            .ok_or(HostError::TooLarge {
                what: TooLarge::Region(len),
            })?;
        // SAFETY: a fresh PROT_NONE reservation at an address of the kernel's
        // choosing; it touches no existing mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span as usize,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(os_error("mmap"));
        }
        let start = p as u64;
        let base =
            reprise_core::region::align_recording_base(start).ok_or_else(|| os_error("mmap"))?;
        // SAFETY: the head, the tail and the middle all lie inside the
        // reservation just made, which nothing else uses.
        unsafe {
            if base > start {
                libc::munmap(p, (base - start) as usize);
            }
            let tail = base + len;
            let end = start + span;
            if end > tail {
                libc::munmap(tail as *mut c_void, (end - tail) as usize);
            }
            if libc::mprotect(
                base as *mut c_void,
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
            ) != 0
            {
                let e = os_error("mprotect");
                libc::munmap(base as *mut c_void, len as usize);
                return Err(e);
            }
        }
        Ok(base)
    }
}

impl ErrorType for HostExecutor {
    type Error = HostError;
}

impl Executor for HostExecutor {
    const KIND: BackendKind = BackendKind::Host;
    /// One device, kernels in this process's address space taking their
    /// arguments only (no geometry), the host's memory; native code needs
    /// no JIT.
    const CAPABILITIES: Capabilities = Capabilities {
        has_devices: false,
        in_process: true,
        launch_geometry: false,
        device_memory: false,
        jit_refusal: Some(
            "the host executor runs native code compiled already; no JIT compiles it",
        ),
        ..Capabilities::GPU
    };
    type Region = HostRegion;
    type Image = HostImage;
    type Kernel = HostKernel;
    type Buffer = HostBuffer;
    type Queue = HostQueue;

    /// The machine's physical memory: a recording reserves that much
    /// address space (`MAP_NORESERVE`, so pages are had as they are
    /// touched).
    fn memory_size(&self) -> Option<u64> {
        // SAFETY: sysconf has no preconditions.
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        u64::try_from(pages)
            .ok()
            .zip(u64::try_from(page).ok())
            .and_then(|(n, p)| n.checked_mul(p))
            .filter(|&bytes| bytes > 0)
    }

    fn reserve(&self, request: RegionRequest) -> Result<HostRegion, HostError> {
        let page = page_size();
        let len = request
            .capacity
            .max(1)
            .checked_next_multiple_of(page)
            .ok_or(HostError::TooLarge {
                what: TooLarge::Region(request.capacity),
            })?;
        let base = match request.base {
            Some(b) if b % page != 0 => return Err(HostError::Unaligned(b)),
            Some(b) => self.map_exact(b, len)?,
            None => self.map_fresh(len)?,
        };
        // Huge pages where the kernel allows them: a region is large and
        // 2 GiB-aligned (or at least page-aligned); advice failing is harmless.
        // SAFETY: `[base, base + len)` is the anonymous mapping just made;
        // MADV_HUGEPAGE changes no contents.
        unsafe { libc::madvise(base as *mut c_void, len as usize, libc::MADV_HUGEPAGE) };
        let map = Arc::new(Mapping { base, len });
        self.register(base, len, Owner::Map(Arc::downgrade(&map)));
        log::debug!("host region at {base:#x}, {len} bytes");
        Ok(HostRegion { map })
    }

    fn load_image(&self, bytes: &[u8]) -> Result<HostImage, HostError> {
        let image = image::load(bytes)?;
        for (_, addr, size) in &image.lib.globals {
            self.register(*addr, *size, Owner::Lib(Arc::downgrade(&image.lib)));
        }
        Ok(image)
    }

    fn kernel(&self, image: &HostImage, name: &str) -> Result<HostKernel, HostError> {
        image::kernel(image, name)
    }

    fn global<'n>(
        &self,
        image: &HostImage,
        name: &'n str,
    ) -> Result<Option<GlobalInfo<'n>>, HostError> {
        Ok(image::global(image, name))
    }

    fn for_each_global(
        &self,
        image: &HostImage,
        f: &mut dyn FnMut(GlobalInfo<'_>),
    ) -> Result<(), HostError> {
        image::for_each_global(image, f);
        Ok(())
    }

    fn buffer(&self, len: usize) -> Result<HostBuffer, HostError> {
        HostBuffer::new(len)
    }

    fn queue(&self) -> Result<HostQueue, HostError> {
        HostQueue::new(self.registry.clone())
    }

    fn reserve_mapped(
        &self,
        request: RegionRequest,
        file: MapFile,
    ) -> Result<Option<HostRegion>, HostError> {
        if request.base.is_none() || file.len == 0 {
            return Ok(None);
        }
        // A region that cannot be reserved is the caller's to report (it
        // retries with a plain reservation).
        let Ok(region) = self.reserve(request) else {
            return Ok(None);
        };
        let map_len = file.len.next_multiple_of(page_size());
        if map_len > region.capacity() {
            return Ok(None);
        }
        // SAFETY: `[base, base + map_len)` lies inside the region just
        // reserved for this replay alone (so MAP_FIXED replaces only our own
        // fresh mapping). The mapping is private: the kernel's writes never
        // reach the file. Pages past the end of the file within the last page
        // read as zeros; no page lies wholly past it (`file.len` is at most
        // the file's length, which the caller checked).
        let p = unsafe {
            libc::mmap(
                region.base() as *mut c_void,
                map_len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_FIXED,
                file.fd,
                0,
            )
        };
        if p == libc::MAP_FAILED || p as u64 != region.base() {
            log::debug!(
                "mapping file descriptor {} as the region failed ({}); copying instead",
                file.fd,
                std::io::Error::last_os_error()
            );
            return Ok(None);
        }
        crate::guard::note_file(region.base(), map_len, file.fd);
        Ok(Some(region))
    }

    fn buffer_mapped(&self, file: MapFile) -> Result<Option<HostBuffer>, HostError> {
        let len = usize::try_from(file.len).map_err(|_| HostError::TooLarge {
            what: TooLarge::Buffer(file.len),
        })?;
        if len == 0 {
            return Ok(Some(HostBuffer::Heap(Vec::new())));
        }
        // SAFETY: `file.fd` is an open descriptor the caller keeps open for
        // the call (the `MapFile` contract); memmap2 duplicates nothing and
        // the mapping outlives the descriptor. The mapping is private
        // (copy-on-write): writes through it never reach the file. Another
        // process truncating the file while it is mapped faults on access,
        // and the fault names the file (`guard::note_file`).
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(file.fd) };
        // SAFETY: as above.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map_copy(&fd) }.map_err(|e| {
            HostError::os("mmap", OsError::from(&e), OsContext::SnapshotFile { len })
        })?;
        crate::guard::note_file(map.as_ptr() as u64, len as u64, file.fd);
        Ok(Some(HostBuffer::Mapped(map)))
    }

    fn map_granularity(&self) -> Option<u64> {
        Some(page_size())
    }

    fn buffer_mapped_parts(
        &self,
        len: usize,
        parts: &[MapPart],
    ) -> Result<Option<HostBuffer>, HostError> {
        if len == 0 || !parts_fit(parts, len as u64) {
            return Ok(None);
        }
        // From a 2 MiB boundary: a fault then maps more of a part's pages
        // at once (half as many faults on 1 MiB chunk files).
        const ALIGN: usize = 2 << 20;
        let whole = len.checked_add(ALIGN).ok_or(HostError::TooLarge {
            what: TooLarge::Buffer(len as u64),
        })?;
        let mut map = memmap2::MmapMut::map_anon(whole)
            .map_err(|e| HostError::os("mmap", OsError::from(&e), OsContext::None))?;
        let start = map.as_mut_ptr() as usize;
        let offset = start.next_multiple_of(ALIGN) - start;
        let base = (start + offset) as u64;
        // SAFETY: every part lies inside the anonymous mapping just made
        // (`parts_fit`: page-aligned, within `len`, and `offset + len` is
        // within `whole`), which this function alone holds, so MAP_FIXED
        // replaces only its own pages; dropping `map` unmaps the whole
        // range, the parts' mappings included.
        if !unsafe { map_parts(base, parts) } {
            return Ok(None);
        }
        Ok(Some(HostBuffer::Parts { map, offset, len }))
    }

    fn reserve_mapped_parts(
        &self,
        request: RegionRequest,
        parts: &[MapPart],
    ) -> Result<Option<HostRegion>, HostError> {
        if request.base.is_none() || !parts_fit(parts, request.backed) {
            return Ok(None);
        }
        // A region that cannot be reserved is the caller's to report (it
        // retries with a plain reservation).
        let Ok(region) = self.reserve(request) else {
            return Ok(None);
        };
        if !parts_fit(parts, region.capacity()) {
            return Ok(None);
        }
        // SAFETY: every part lies inside the region just reserved for this
        // replay alone (`parts_fit`), so MAP_FIXED replaces only our own
        // fresh anonymous pages; the region's `Mapping` unmaps the whole
        // range when it goes.
        if !unsafe { map_parts(region.base(), parts) } {
            return Ok(None);
        }
        Ok(Some(region))
    }
}

/// Whether every part is page-aligned (offset and length), not empty, and
/// ends within `len` bytes.
fn parts_fit(parts: &[MapPart], len: u64) -> bool {
    let page = page_size();
    parts.iter().all(|p| {
        p.len > 0
            && p.offset % page == 0
            && p.len % page == 0
            && p.offset.checked_add(p.len).is_some_and(|end| end <= len)
    })
}

/// Maps each part's file privately (copy-on-write) at `base + offset`;
/// `false` when a mapping fails (the range then holds some parts and
/// anonymous pages: the caller drops it).
///
/// # Safety
///
/// `[base + offset, base + offset + len)` of every part must lie inside a
/// mapping the caller owns and nothing else uses, and each descriptor must
/// be open with at least `len` bytes (the [`MapPart`] contract).
unsafe fn map_parts(base: u64, parts: &[MapPart]) -> bool {
    for part in parts {
        let at = base + part.offset;
        // SAFETY: the caller's contract: the range is the caller's own
        // mapping, so MAP_FIXED replaces nothing anyone else uses. Private:
        // a kernel's writes never reach the file; no page lies past the
        // file's end (`len` is at most its length, checked by the caller
        // before the call).
        let p = unsafe {
            libc::mmap(
                at as *mut c_void,
                part.len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_FIXED,
                part.fd,
                0,
            )
        };
        if p == libc::MAP_FAILED || p as u64 != at {
            log::debug!(
                "mapping file descriptor {} at {at:#x} ({} bytes) failed ({}); reading instead",
                part.fd,
                part.len,
                std::io::Error::last_os_error()
            );
            return false;
        }
        crate::guard::note_file(at, part.len, part.fd);
    }
    true
}
