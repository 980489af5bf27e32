//! An executor over the program's own driver objects: its context (current
//! on the calling thread), its modules and functions, and the stream of the
//! launch being recorded. The recorder runs its record schedule on it, so a
//! recorded launch is the program's own kernel on the program's own stream.

use std::ffi::{CString, c_void};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use reprise_core::exec::{
    Capabilities, DeviceRegion, ErrorType, Executor, GlobalInfo, KernelArgs, Launch, Queue,
    RegionRequest, Segment, Ticket, VecLedger,
};
use reprise_core::image::{ImageKind, sniff};
use reprise_core::record::BackendKind;

use crate::real::*;

mod error;
mod extra;
mod own;

pub use error::{CallOn, DriverError};
use error::{check, driver};
pub use extra::ExtraJob;

/// Handles are the driver's; the interposer only passes them back to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Raw(pub usize);

impl Raw {
    pub(crate) fn ptr(self) -> Handle {
        self.0 as Handle
    }
}

/// The executor. `adopt` is the module the next `load_image` stands for
/// (the program loaded it; the recorder only learns of it), `stream` the
/// stream of the launch being recorded.
#[derive(Debug, Default)]
pub struct Interposed {
    pub(crate) adopt: Mutex<Option<Raw>>,
    pub(crate) stream: Arc<Mutex<Raw>>,
    /// Set at exit: the driver may be gone, and every recorded launch was
    /// synchronized already, so queues make no more driver calls.
    pub(crate) exiting: Arc<std::sync::atomic::AtomicBool>,
    /// Set when a queue of it has launched a kernel: a recording that fails
    /// after that must not launch the program's kernel again.
    pub(crate) launched: Arc<std::sync::atomic::AtomicBool>,
    /// The driver's answer when a queue's `cuLaunchKernel` itself refused
    /// the kernel (0 when none did): the program's own launch, made as it
    /// made it, is refused the same way.
    pub(crate) refused: Arc<std::sync::atomic::AtomicI32>,
    /// Set once the recording region was reserved: the recorder reserves
    /// it first, and every later reservation is a device copy for device
    /// hashing ([`own::DeviceCopy`]).
    region_reserved: std::sync::atomic::AtomicBool,
    /// Memory beyond the region the launch being recorded may reach.
    pub(crate) extra: Arc<Mutex<ExtraJob>>,
}

impl Interposed {
    pub(crate) fn new() -> Interposed {
        Interposed {
            adopt: Mutex::new(None),
            stream: Arc::new(Mutex::new(Raw(0))),
            exiting: Arc::default(),
            launched: Arc::default(),
            refused: Arc::default(),
            region_reserved: std::sync::atomic::AtomicBool::new(false),
            extra: Arc::default(),
        }
    }
}

/// The recording region: address space reserved through the driver's
/// virtual memory management, mapped as the program's allocations grow
/// into it ([`crate::heap`]). It is never unmapped: the program may use
/// its memory until it exits, also after recording stopped. Or, with
/// device hashing, a device copy of it, freed when dropped.
#[derive(Debug)]
pub struct Region {
    base: u64,
    reserved: u64,
    _copy: Option<own::DeviceCopy>,
}

impl DeviceRegion for Region {
    fn base(&self) -> u64 {
        self.base
    }
    fn capacity(&self) -> u64 {
        self.reserved
    }
}

/// The program's module, as the recorder holds it (or the interposer's
/// own, reprise's chunk-hashing kernel).
#[derive(Debug)]
pub struct Image {
    module: Raw,
    /// The interposer loaded it (device hashing), not the program.
    ours: bool,
    /// Which globals it has (the driver cannot list them).
    names: Vec<String>,
    /// Its PTX text, when it is PTX: parameter sizes for drivers without
    /// `cuFuncGetParamInfo` (before CUDA 12.4).
    ptx: Option<String>,
}

/// The program's function, with its parameter sizes from the PTX it was
/// loaded from, when that is known, and whether it is the interposer's own
/// (reprise's hashing kernel, whose launches are not the program's).
#[derive(Debug, Clone)]
pub struct Function(pub(crate) Raw, Option<Vec<u32>>, bool);

impl ErrorType for Interposed {
    type Error = DriverError;
}

/// Where a fresh region goes: the address the CUDA executor suggests, so
/// that a replay finds it free in a new process.
pub const SUGGESTED_BASE: u64 = reprise_cuda::SUGGESTED_BASE;

impl Executor for Interposed {
    const KIND: BackendKind = BackendKind::Cuda;
    const CAPABILITIES: Capabilities = reprise_cuda::CudaExecutor::CAPABILITIES;
    type Region = Region;
    type Image = Image;
    type Kernel = Function;
    type Buffer = Vec<u8>;
    type Queue = InterposedQueue;

    fn memory_size(&self) -> Option<u64> {
        crate::heap::device_memory()
    }

    fn reserve(&self, request: RegionRequest) -> Result<Region, DriverError> {
        if self
            .region_reserved
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            // Device hashing's copy of the region: memory of its own.
            let copy = own::DeviceCopy::alloc(request.capacity, self.exiting.clone())?;
            return Ok(Region {
                base: copy.base,
                reserved: request.capacity,
                _copy: Some(copy),
            });
        }
        let hint = request.base.unwrap_or(SUGGESTED_BASE);
        let (base, reserved) = crate::heap::heap()
            .reserve(request.capacity, hint)
            .map_err(|code| DriverError::Call {
                call: "cuMemAddressReserve",
                on: CallOn::Bytes(request.capacity),
                code,
            })?;
        self.region_reserved
            .store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(Region {
            base,
            reserved,
            _copy: None,
        })
    }

    fn load_image(&self, image: &[u8]) -> Result<Image, DriverError> {
        let adopted = self.adopt.lock().unwrap_or_else(|e| e.into_inner()).take();
        let (module, ours) = match adopted {
            Some(m) => (m, false),
            // Device hashing's kernel: nothing of the program's stands for
            // it, so the interposer loads it itself.
            None if own::is_hashing_kernel(image) => (own::load_hashing_kernel(image)?, true),
            None => return Err(DriverError::NoModule),
        };
        Ok(Image {
            module,
            ours,
            names: global_names(image),
            ptx: matches!(sniff(image), ImageKind::Ptx)
                .then(|| String::from_utf8_lossy(image).into_owned()),
        })
    }

    fn kernel(&self, image: &Image, name: &str) -> Result<Function, DriverError> {
        let r = driver()?;
        let c = CString::new(name).map_err(|_| DriverError::KernelName(name.to_string()))?;
        let mut f: Handle = std::ptr::null_mut();
        // SAFETY: the program's module and a NUL-terminated name.
        let code = unsafe { (r.cuModuleGetFunction)(&mut f, image.module.ptr(), c.as_ptr()) };
        if code != SUCCESS {
            return Err(DriverError::Call {
                call: "cuModuleGetFunction",
                on: CallOn::Kernel(name.to_string()),
                code,
            });
        }
        let from_ptx = image
            .ptx
            .as_deref()
            .and_then(|p| reprise_cuda::ptx::param_sizes(p, name));
        Ok(Function(Raw(f as usize), from_ptx, image.ours))
    }

    fn global<'n>(
        &self,
        image: &Image,
        name: &'n str,
    ) -> Result<Option<GlobalInfo<'n>>, DriverError> {
        let r = driver()?;
        let Ok(c) = CString::new(name) else {
            return Ok(None);
        };
        let (mut addr, mut size) = (0u64, 0usize);
        // SAFETY: valid out-pointers, the program's module.
        let rc = unsafe {
            (r.cuModuleGetGlobal_v2)(&mut addr, &mut size, image.module.ptr(), c.as_ptr())
        };
        if rc != SUCCESS {
            return Ok(None);
        }
        crate::heap::heap().global(addr, size as u64);
        Ok(Some(GlobalInfo {
            name,
            addr,
            size: size as u64,
        }))
    }

    fn for_each_global(
        &self,
        image: &Image,
        f: &mut dyn FnMut(GlobalInfo<'_>),
    ) -> Result<(), DriverError> {
        for name in &image.names {
            if let Some(g) = self.global(image, name)? {
                f(g);
            }
        }
        Ok(())
    }

    fn param_sizes(
        &self,
        kernel: &Function,
        out: &mut [u32],
    ) -> Result<Option<usize>, DriverError> {
        type FuncGetParamInfo =
            unsafe extern "C" fn(Handle, usize, *mut usize, *mut usize) -> CuResult;
        // Before CUDA 12.4 the driver cannot tell: the PTX's declaration,
        // if the image was PTX.
        let from_ptx = |out: &mut [u32]| {
            kernel.1.as_ref().map(|sizes| {
                for (slot, &s) in out.iter_mut().zip(sizes) {
                    *slot = s;
                }
                sizes.len()
            })
        };
        let Some(info) = crate::driver_fn!(FuncGetParamInfo, "cuFuncGetParamInfo") else {
            return Ok(from_ptx(out));
        };
        let mut n = 0;
        loop {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: valid out-pointers; an index past the last parameter
            // is an error, which ends the loop.
            let rc = unsafe { info(kernel.0.ptr(), n, &mut offset, &mut size) };
            if rc != SUCCESS && n == 0 && rc != ERROR_INVALID_VALUE {
                // Not an index past the last: the driver does not answer.
                return Ok(from_ptx(out));
            }
            if rc != SUCCESS {
                break;
            }
            if let Some(slot) = out.get_mut(n) {
                *slot = size as u32;
            }
            n += 1;
            if n > 4096 {
                break;
            }
        }
        Ok(Some(n))
    }

    fn buffer(&self, len: usize) -> Result<Vec<u8>, DriverError> {
        Ok(vec![0; len])
    }

    fn queue(&self) -> Result<InterposedQueue, DriverError> {
        Ok(InterposedQueue {
            stream: self.stream.clone(),
            exiting: self.exiting.clone(),
            launched: self.launched.clone(),
            refused: self.refused.clone(),
            ledger: VecLedger::new(),
            extra: self.extra.clone(),
        })
    }
}

/// The globals an image defines, by name.
fn global_names(image: &[u8]) -> Vec<String> {
    reprise_cuda::global_names(sniff(image), image)
}

/// Copies and launches on the stream of the launch being recorded; a
/// synchronize waits for that stream.
#[derive(Debug)]
pub struct InterposedQueue {
    stream: Arc<Mutex<Raw>>,
    exiting: Arc<std::sync::atomic::AtomicBool>,
    launched: Arc<std::sync::atomic::AtomicBool>,
    refused: Arc<std::sync::atomic::AtomicI32>,
    /// Tickets, and the buffers of copies until a synchronize covered them.
    ledger: VecLedger<Vec<u8>>,
    extra: Arc<Mutex<ExtraJob>>,
}

impl Drop for InterposedQueue {
    /// Copies may still be queued into (or from) the pending buffers, and
    /// this queue does not wait for them (the driver may be going, or the
    /// stream may wait on the program's other threads): the buffers are
    /// left to the process rather than freed under the copies.
    fn drop(&mut self) {
        self.ledger.release(std::mem::forget);
    }
}

impl ErrorType for InterposedQueue {
    type Error = DriverError;
}

impl InterposedQueue {
    fn stream(&self) -> Handle {
        self.stream.lock().unwrap_or_else(|e| e.into_inner()).ptr()
    }

    /// The extra ranges of the launch being recorded.
    fn extra(&self) -> std::sync::MutexGuard<'_, ExtraJob> {
        self.extra.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `buffer` until a synchronize covers the copies just queued.
    fn ticket(&mut self, buffer: Vec<u8>) -> Ticket {
        let t = self.ledger.issue();
        self.ledger.keep(t, buffer);
        t
    }
}

/// The one bounds check (the core's), before any copy is queued: a
/// segment out of range is the driver's `CUDA_ERROR_INVALID_VALUE`, as
/// for an out-of-range copy.
fn check_segments(segments: &[Segment], buffer: &[u8]) -> Result<(), DriverError> {
    Segment::check_all(segments, buffer.len()).map_err(DriverError::Segment)
}

/// Parameter storage and the pointer array `cuLaunchKernel` takes.
fn pack(args: &KernelArgs<'_>) -> Result<Vec<Vec<u8>>, DriverError> {
    let mut scratch = [0u8; 8];
    (0..args.len())
        .map(|i| {
            args.bytes(i, &mut scratch)
                .map(<[u8]>::to_vec)
                .ok_or(DriverError::BadArgument { index: i })
        })
        .collect()
}

impl Queue for InterposedQueue {
    type Buffer = Vec<u8>;
    type Kernel = Function;

    fn upload(&mut self, buffer: Vec<u8>, segments: &[Segment]) -> Result<Ticket, DriverError> {
        let r = driver()?;
        check_segments(segments, &buffer)?;
        let stream = self.stream();
        let result = segments.iter().filter(|s| s.len > 0).try_for_each(|s| {
            let src = &buffer[s.host_offset..s.host_offset + s.len];
            // SAFETY: the buffer is kept in `pending` until a synchronize,
            // also when a later segment fails (see below).
            check("cuMemcpyHtoDAsync", unsafe {
                (r.cuMemcpyHtoDAsync_v2)(s.device, src.as_ptr() as *const c_void, s.len, stream)
            })
        });
        // Copies already queued read the buffer: it stays until a
        // synchronize covers them, whatever became of the later segments.
        let ticket = self.ticket(buffer);
        result.map(|()| ticket)
    }

    fn download(
        &mut self,
        mut buffer: Vec<u8>,
        segments: &[Segment],
    ) -> Result<Ticket, DriverError> {
        let r = driver()?;
        check_segments(segments, &buffer)?;
        // The recorder reads the region: the launch is recorded.
        self.extra().recording();
        let stream = self.stream();
        let base = buffer.as_mut_ptr();
        let result = segments.iter().filter(|s| s.len > 0).try_for_each(|s| {
            // SAFETY: inside the buffer (checked above), whose heap
            // allocation does not move and which is kept in `pending` until
            // a synchronize, also when a later segment fails (see below).
            check("cuMemcpyDtoHAsync", unsafe {
                (r.cuMemcpyDtoHAsync_v2)(
                    base.add(s.host_offset) as *mut c_void,
                    s.device,
                    s.len,
                    stream,
                )
            })
        });
        // Copies already queued write into the buffer: it stays until a
        // synchronize covers them, whatever became of the later segments.
        let ticket = self.ticket(buffer);
        result.map(|()| ticket)
    }

    fn launch(&mut self, kernel: &Function, launch: &Launch<'_>) -> Result<(), DriverError> {
        let r = driver()?;
        let mut storage = pack(&launch.args)?;
        let mut params: Vec<*mut c_void> = storage
            .iter_mut()
            .map(|v| v.as_mut_ptr() as *mut c_void)
            .collect();
        let c = &launch.config;
        if !kernel.2 {
            self.extra().before(self.stream())?;
        }
        // SAFETY: the program's function; `params` points at one value per
        // parameter, alive for the call (the driver copies them at launch).
        let rc = unsafe {
            (r.cuLaunchKernel)(
                kernel.0.ptr(),
                c.grid[0],
                c.grid[1],
                c.grid[2],
                c.block[0],
                c.block[1],
                c.block[2],
                c.shared_mem,
                self.stream(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        // The hashing kernel's launch is not the program's: it says nothing
        // of whether the program's kernel ran or would be refused.
        match (kernel.2, rc) {
            (true, _) => {}
            (false, SUCCESS) => {
                self.launched
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                self.extra().after(self.stream())?;
            }
            (false, _) => self.refused.store(rc, std::sync::atomic::Ordering::Relaxed),
        }
        check("cuLaunchKernel", rc)
    }

    fn poll_synchronize(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), DriverError>> {
        if self.exiting.load(std::sync::atomic::Ordering::Acquire) {
            self.ledger.complete(self.ledger.last());
            return Poll::Ready(Ok(()));
        }
        let r = match driver() {
            Ok(r) => r,
            Err(e) => return Poll::Ready(Err(e)),
        };
        // The program's thread is inside the driver call being recorded:
        // waiting here is what the program would see of a synchronous call.
        // SAFETY: the program's stream.
        let rc = unsafe { (r.cuStreamSynchronize)(self.stream()) };
        if let Err(e) = check("cuStreamSynchronize", rc) {
            return Poll::Ready(Err(e));
        }
        self.extra().synchronized();
        self.ledger.complete(self.ledger.last());
        Poll::Ready(Ok(()))
    }

    fn reclaim(&mut self) -> Option<(Ticket, Vec<u8>)> {
        self.ledger.reclaim()
    }

    fn copy_on_device(&mut self, dst: u64, src: u64, len: usize) -> Result<bool, DriverError> {
        let r = driver()?;
        // Device hashing copies the region: the launch is recorded.
        self.extra().recording();
        // SAFETY: both ranges are device memory of the region.
        check("cuMemcpyDtoDAsync", unsafe {
            (r.cuMemcpyDtoDAsync_v2)(dst, src, len, self.stream())
        })?;
        Ok(true)
    }
}
