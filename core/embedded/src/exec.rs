//! The core's executor contract over [`crate::device`]: one device, one
//! region, one image (the firmware's kernel table), host buffers from a
//! static arena or, with `alloc`, a heap.
//!
//! A queue appends commands; [`Queue::poll_synchronize`] closes them with a
//! synchronize point, registers the task's waker with the device's
//! [`Completion`](reprise_core::Completion), and only then rings the
//! doorbell: the device runs the batch from its interrupt handler and
//! wakes the task once. Dropping a queue with work outstanding rings the
//! doorbell and waits for it (the buffers are the queue's until then).

use core::fmt;
use core::sync::atomic::{AtomicBool, Ordering};
use core::task::{Context, Poll};

use heapless::Vec;
use reprise_core::exec::{
    Capabilities, DeviceRegion, ErrorKind, ErrorType, ExecError, Executor, GlobalInfo, Launch,
    Queue, RegionRequest, Segment, Ticket,
};
use reprise_core::record::BackendKind;

pub use crate::device::McuBuffer;
use crate::device::{self, COMPLETION, Command, DEPTH, DEVICE, KernelFn};

/// What the device or its queue refused.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McuError {
    /// A copy outside the device's memory or its buffer, too many
    /// segments or arguments, or an image or name the device lacks.
    Invalid(&'static str),
    /// More commands or buffers in flight than the device holds, or a host
    /// buffer larger than the arena has left.
    Full(&'static str),
    /// A copy the device could not make.
    Fault,
}

impl fmt::Display for McuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McuError::Invalid(what) => write!(f, "invalid {what}"),
            McuError::Full(what) => write!(f, "no room for {what}"),
            McuError::Fault => f.write_str("a copy fell outside the device's memory"),
        }
    }
}

impl core::error::Error for McuError {}

impl ExecError for McuError {
    fn kind(&self) -> ErrorKind {
        match self {
            McuError::Invalid(_) => ErrorKind::InvalidInput,
            McuError::Full(_) => ErrorKind::OutOfMemory,
            McuError::Fault => ErrorKind::KernelFault,
        }
    }
}

/// The first bytes of a 32-bit little-endian Arm ELF file: enough for
/// [`McuExecutor`]'s `load_image` (`reprise_core::image::sniff`).
pub const IMAGE_HEADER: &[u8] = &[
    0x7f, b'E', b'L', b'F', 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 40, 0,
];

/// The region: the first [`device::REGION`] bytes of the device's memory.
#[derive(Debug)]
pub struct McuRegion;

impl DeviceRegion for McuRegion {
    fn base(&self) -> u64 {
        device::BASE
    }
    fn capacity(&self) -> u64 {
        device::REGION as u64
    }
}

/// A kernel of the firmware's table.
#[derive(Debug, Clone, Copy)]
pub struct McuKernel {
    /// Its name.
    pub name: &'static str,
    /// Its code.
    pub run: KernelFn,
}

/// The loaded image: the firmware's kernels and the device's globals.
#[derive(Debug, Clone, Copy)]
pub struct McuImage {
    kernels: &'static [McuKernel],
    globals: &'static [GlobalInfo<'static>],
}

/// The device, seen as the core's [`Executor`].
pub struct McuExecutor {
    #[cfg(not(feature = "alloc"))]
    arena: core::cell::Cell<&'static mut [u8]>,
    kernels: &'static [McuKernel],
    globals: &'static [GlobalInfo<'static>],
    doorbell: fn(),
}

impl McuExecutor {
    /// The device, with `kernels` and `globals` as its image holds them,
    /// host buffers carved from `arena` (with `alloc`, from the heap
    /// instead: `arena` is not used), and `doorbell` to start it (pend its
    /// interrupt).
    pub fn new(
        arena: &'static mut [u8],
        kernels: &'static [McuKernel],
        globals: &'static [GlobalInfo<'static>],
        doorbell: fn(),
    ) -> Self {
        #[cfg(feature = "alloc")]
        let _ = arena;
        McuExecutor {
            #[cfg(not(feature = "alloc"))]
            arena: core::cell::Cell::new(arena),
            kernels,
            globals,
            doorbell,
        }
    }
}

impl ErrorType for McuExecutor {
    type Error = McuError;
}

impl Executor for McuExecutor {
    const KIND: BackendKind = BackendKind::Mcu;
    const CAPABILITIES: Capabilities = Capabilities {
        has_devices: false,
        in_process: false,
        launch_geometry: false,
        device_memory: true,
        interposed: false,
        judges_unknown_images: false,
        library_var: None,
        jit_refusal: None,
    };
    type Region = McuRegion;
    type Image = McuImage;
    type Kernel = McuKernel;
    type Buffer = McuBuffer;
    type Queue = McuQueue;

    fn reserve(&self, request: RegionRequest) -> Result<McuRegion, McuError> {
        let fits = request.base.is_none_or(|b| b == device::BASE)
            && request.backed <= device::REGION as u64;
        fits.then_some(McuRegion)
            .ok_or(McuError::Invalid("region request"))
    }

    /// Accepts a 32-bit Arm or RISC-V ELF file (such as
    /// [`IMAGE_HEADER`] starts): the images captures made here hold.
    fn load_image(&self, image: &[u8]) -> Result<McuImage, McuError> {
        match reprise_core::image::sniff(image).backend() {
            Ok(BackendKind::Mcu) => Ok(McuImage {
                kernels: self.kernels,
                globals: self.globals,
            }),
            _ => Err(McuError::Invalid("image")),
        }
    }

    fn kernel(&self, image: &McuImage, name: &str) -> Result<McuKernel, McuError> {
        image
            .kernels
            .iter()
            .find(|k| k.name == name)
            .copied()
            .ok_or(McuError::Invalid("kernel name"))
    }

    fn global<'n>(
        &self,
        image: &McuImage,
        name: &'n str,
    ) -> Result<Option<GlobalInfo<'n>>, McuError> {
        Ok(image
            .globals
            .iter()
            .find(|g| g.name == name)
            .map(|g| GlobalInfo {
                name,
                addr: g.addr,
                size: g.size,
            }))
    }

    fn for_each_global(
        &self,
        image: &McuImage,
        f: &mut dyn FnMut(GlobalInfo<'_>),
    ) -> Result<(), McuError> {
        image.globals.iter().for_each(|g| f(*g));
        Ok(())
    }

    #[cfg(not(feature = "alloc"))]
    fn buffer(&self, len: usize) -> Result<McuBuffer, McuError> {
        let rest = self.arena.take();
        if len > rest.len() {
            self.arena.set(rest);
            return Err(McuError::Full("a host buffer"));
        }
        let (buf, rest) = rest.split_at_mut(len);
        self.arena.set(rest);
        Ok(McuBuffer::Static(buf))
    }

    #[cfg(feature = "alloc")]
    fn buffer(&self, len: usize) -> Result<McuBuffer, McuError> {
        Ok(McuBuffer::Heap(alloc::vec![0; len]))
    }

    /// The device's queue; one at a time (the device has one command list
    /// and one completion mark): a second while the first lives is
    /// [`McuError::Full`].
    fn queue(&self) -> Result<McuQueue, McuError> {
        if QUEUE_TAKEN.swap(true, Ordering::AcqRel) {
            return Err(McuError::Full("a second queue"));
        }
        Ok(McuQueue {
            next_ticket: 0,
            in_flight: 0,
            enqueued: 0,
            // The device's marks rise across queues: start from where the
            // last one (which waited for its work when dropped) left them.
            submitted: COMPLETION.reached(),
            doorbell: self.doorbell,
        })
    }
}

/// Whether a queue of the device lives.
static QUEUE_TAKEN: AtomicBool = AtomicBool::new(false);

/// The device's queue (one at a time: the device has one command list).
pub struct McuQueue {
    next_ticket: u64,
    /// Buffers enqueued and not yet reclaimed.
    in_flight: usize,
    /// Commands appended since the last synchronize point.
    enqueued: usize,
    /// The last synchronize point appended.
    submitted: u64,
    doorbell: fn(),
}

impl McuQueue {
    fn push(&mut self, cmd: Command) -> Result<(), McuError> {
        critical_section::with(|cs| DEVICE.borrow_ref_mut(cs).commands.push_back(cmd))
            .map_err(|_| McuError::Full("a command"))?;
        self.enqueued += 1;
        Ok(())
    }

    fn copy(
        &mut self,
        buffer: McuBuffer,
        segments: &[Segment],
        up: bool,
    ) -> Result<Ticket, McuError> {
        Segment::check_all(segments, buffer.as_ref().len())
            .map_err(|_| McuError::Invalid("copy (outside its buffer)"))?;
        if segments.iter().any(|s| device::range(s).is_none()) {
            return Err(McuError::Invalid("copy (outside the device's memory)"));
        }
        let segs = Vec::from_slice(segments).map_err(|_| McuError::Invalid("segment count"))?;
        // Leave room for the synchronize point among the commands.
        if self.in_flight + 1 >= DEPTH {
            return Err(McuError::Full("a buffer"));
        }
        let ticket = Ticket(self.next_ticket);
        self.push(if up {
            Command::Upload(ticket, buffer, segs)
        } else {
            Command::Download(ticket, buffer, segs)
        })?;
        self.next_ticket += 1;
        self.in_flight += 1;
        Ok(ticket)
    }
}

impl ErrorType for McuQueue {
    type Error = McuError;
}

impl Queue for McuQueue {
    type Buffer = McuBuffer;
    type Kernel = McuKernel;

    fn upload(&mut self, buffer: McuBuffer, segments: &[Segment]) -> Result<Ticket, McuError> {
        self.copy(buffer, segments, true)
    }

    fn download(&mut self, buffer: McuBuffer, segments: &[Segment]) -> Result<Ticket, McuError> {
        self.copy(buffer, segments, false)
    }

    fn launch(&mut self, kernel: &McuKernel, launch: &Launch<'_>) -> Result<(), McuError> {
        let args =
            Vec::from_slice(launch.args.values).map_err(|_| McuError::Invalid("argument count"))?;
        self.push(Command::Launch(kernel.run, args))
    }

    fn poll_synchronize(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), McuError>> {
        let ring = self.enqueued > 0;
        if ring {
            self.push(Command::Sync(self.submitted + 1))?;
            self.submitted += 1;
            self.enqueued = 0;
        }
        // Waker first, doorbell second: the device's interrupt may run as
        // soon as it is rung.
        let ready = COMPLETION.poll_reached(self.submitted, cx);
        if ring {
            (self.doorbell)();
        }
        match ready {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => {
                let faults = critical_section::with(|cs| {
                    core::mem::take(&mut DEVICE.borrow_ref_mut(cs).faults)
                });
                Poll::Ready(if faults == 0 {
                    Ok(())
                } else {
                    Err(McuError::Fault)
                })
            }
        }
    }

    fn reclaim(&mut self) -> Option<(Ticket, McuBuffer)> {
        let got = critical_section::with(|cs| DEVICE.borrow_ref_mut(cs).done.pop_front());
        if got.is_some() {
            self.in_flight -= 1;
        }
        got
    }
}

impl Drop for McuQueue {
    /// Waits for outstanding work, so no copy lands in a buffer that is
    /// gone (the cancellation rule of `reprise_core::exec`): the device
    /// runs its whole command list when rung, from its interrupt handler,
    /// which must be able to preempt the caller (never drop a queue with
    /// interrupts masked).
    fn drop(&mut self) {
        if self.enqueued > 0 {
            (self.doorbell)();
        }
        while critical_section::with(|cs| !DEVICE.borrow_ref(cs).commands.is_empty()) {
            core::hint::spin_loop();
        }
        while critical_section::with(|cs| DEVICE.borrow_ref_mut(cs).done.pop_front()).is_some() {}
        QUEUE_TAKEN.store(false, Ordering::Release);
    }
}
