//! A queue: one non-blocking CUDA stream, completion by host function.
//!
//! - `mod.rs` (here): [`CudaQueue`], its [`Queue`] implementation and its
//!   `Drop`;
//! - [`callback`]: what a synchronize enqueues on the stream, and the status
//!   it hands back;
//! - [`watchdog`]: wakes a waiting synchronize where completion comes from
//!   a `cuLaunchHostFunc` host function;
//! - [`staging`]: device-side staging of downloads.

mod callback;
mod staging;
mod watchdog;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use cudarc::driver::sys;
use reprise_core::completion::Completion;
use reprise_core::exec::{ErrorType, Launch, Queue, Segment, Ticket, VecLedger};

use crate::args::PackedArgs;
use crate::context::{ContextState, KeepAlive};
use crate::device::Device;
use crate::error::{CudaError, DriverError};
use crate::memory::CudaBuffer;
use crate::module::CudaKernel;
use crate::raw::Direction;
use crate::stream::{Event, Stream, stream_and_events};

use callback::{CallbackStatus, Signal};
use staging::Staging;
use watchdog::Watchdog;

/// A queue of copies and launches on one CUDA stream.
///
/// Work runs in submission order. [`Queue::poll_synchronize`] enqueues a
/// host callback (`cuStreamAddCallback`, else `cuLaunchHostFunc`) that
/// signals a [`Completion`] and waits for it, then asks the stream for
/// errors. Host buffers, the modules of launched kernels, the modules of
/// the globals copies read or write and the modules of the globals whose
/// addresses are kernel arguments stay owned by the queue until a
/// synchronize covered their work; dropping the queue waits for the stream
/// before freeing them.
///
/// An error that means a kernel faulted ([`DriverError::is_kernel_fault`]),
/// found by a synchronize, copy or launch, is a [`CudaError::KernelFault`]
/// naming the kernels in flight in the device's context: launched on any
/// queue of the device (of this executor or another) and not yet covered by
/// a successful synchronize of their queue, as a fault is sticky for the
/// whole context and any queue may be the one to find it. A queue names
/// them once; its later errors only say the context was lost, as does an
/// error with a fault code while no kernel is in flight.
#[derive(Debug)]
pub struct CudaQueue {
    dev: Arc<Device>,
    /// The queue's number among those sharing the context's kernels in
    /// flight (`ContextState`).
    id: u64,
    /// Timing events around each launch: (start, end). Declared before the
    /// stream: destroyed before it, after `Drop` waited for the stream and
    /// freed what it used.
    events: (Event, Event),
    stream: Stream,
    completion: Arc<Completion>,
    /// A failed status a stream callback was given.
    callback_status: Arc<CallbackStatus>,
    /// Every operation's ticket (a copy's is its buffer's), the buffers of
    /// copies until a synchronize covered them, and the synchronize marks
    /// handed to host functions.
    ledger: VecLedger<CudaBuffer>,
    /// Modules of launches (the kernel's own, and those of globals whose
    /// addresses are arguments), and of globals copies use, not yet known
    /// complete.
    modules: VecDeque<(u64, KeepAlive)>,
    /// The sequence number of the last launch, whose time the events hold.
    timed: Option<u64>,
    last_time: Option<Duration>,
    syncs: u64,
    /// Polls a waiting synchronize where completion is a `cuLaunchHostFunc`
    /// host function (started on first need).
    watchdog: Option<Watchdog>,
    /// Device-side staging, when on.
    staging: Option<Staging>,
    /// Downloads staged on the device so far.
    staged: u64,
}

// SAFETY: the stream and events are driver handles usable from any thread
// (the context is bound before every call), as is the staging's pointer into
// a page-locked buffer the queue holds; the queue is used through
// `&mut self` only, so it is never touched by two threads at once. The host
// function never touches the queue, only the `Arc<Completion>`.
unsafe impl Send for CudaQueue {}

impl ErrorType for CudaQueue {
    type Error = CudaError;
}

impl CudaQueue {
    pub(crate) fn new(dev: &Arc<Device>, staging: Option<u64>) -> Result<Self, CudaError> {
        dev.bind()?;
        let (stream, [start, end]) = stream_and_events(dev, sys::CUevent_flags::CU_EVENT_DEFAULT)?;
        let mut queue = CudaQueue {
            dev: dev.clone(),
            id: ContextState::new_queue_id(),
            events: (start, end),
            stream,
            completion: Arc::new(Completion::new()),
            callback_status: Arc::new(Mutex::new(None)),
            ledger: VecLedger::new(),
            modules: VecDeque::new(),
            timed: None,
            last_time: None,
            syncs: 0,
            watchdog: None,
            staging: None,
            staged: 0,
        };
        if let Some(min_bytes) = staging {
            // The executor asks for staging only where the driver has what
            // it needs (`CudaExecutor::device_staging`).
            queue.staging = Some(Staging::new(dev, min_bytes)?);
        }
        Ok(queue)
    }

    /// How many synchronizes enqueued a host callback so far (a synchronize
    /// with nothing new to wait for enqueues none).
    pub fn syncs_enqueued(&self) -> u64 {
        self.syncs
    }

    /// How many downloads went through the device-side shadow so far.
    pub fn downloads_staged(&self) -> u64 {
        self.staged
    }

    /// Stages a download into the shadow when staging is on and it
    /// qualifies; `true` when it did (the copies are enqueued).
    ///
    /// # Safety
    ///
    /// The context is bound; every segment lies inside `buffer`, which the
    /// queue keeps until a synchronize covered the download.
    unsafe fn stage(
        &mut self,
        buffer: &CudaBuffer,
        segments: &[Segment],
    ) -> Result<bool, CudaError> {
        let Some(st) = self.staging.as_mut() else {
            return Ok(false);
        };
        // SAFETY: the caller's contract; a synchronize joins the staging
        // before it covers anything, and `Drop` drops the staging before
        // the buffers.
        if !unsafe { st.stage(&self.stream, buffer, segments) }? {
            return Ok(false);
        }
        self.staged += 1;
        Ok(true)
    }

    fn copy(
        &mut self,
        buffer: CudaBuffer,
        segments: &[Segment],
        dir: Direction,
    ) -> Result<Ticket, CudaError> {
        Segment::check_all(segments, buffer.as_ref().len()).map_err(|e| {
            CudaError::SegmentOutOfBounds {
                end: e.end(),
                buffer: e.buffer,
            }
        })?;
        self.dev.bind()?;
        // A global the copy reads or writes keeps its module loaded until a
        // synchronize covers the copy (the module is kept even when the copy
        // fails partway: what was enqueued may still run).
        let touched = self
            .dev
            .state
            .modules_in(segments.iter().map(|s| (s.device, s.len)));
        let next = self.ledger.next().0;
        self.modules.extend(touched.into_iter().map(|m| (next, m)));
        // SAFETY: the staging keeps the buffer's address for a later copy,
        // which no type here can show to stay valid: the segments lie inside
        // the buffer (checked above), which the ledger keeps below.
        if matches!(dir, Direction::DeviceToHost) && unsafe { self.stage(&buffer, segments) }? {
            let ticket = self.ledger.issue();
            self.ledger.keep(ticket, buffer);
            return Ok(ticket);
        }
        let ticket = self.ledger.issue();
        let mut enqueued = 0;
        let mut result = Ok(ticket);
        let (host, stream) = (buffer.host(), self.stream.raw());
        for s in segments.iter().filter(|s| s.len > 0) {
            // SAFETY: the copy outlives this call, which no type here can
            // show: the queue keeps the buffer (the ledger, below), and
            // nothing reads or writes it, until it is reclaimed after a
            // synchronize covered the copy.
            let r = unsafe { host.copy(dir, s.host_offset, s.len, s.device, stream) };
            if let Err(f) = r {
                result = Err(f.into());
                break;
            }
            enqueued += 1;
        }
        if enqueued > 0 || result.is_ok() {
            // Copies were enqueued (or there was nothing to copy): the buffer
            // comes back from `reclaim` once a synchronize covered them.
            self.ledger.keep(ticket, buffer);
        }
        result
    }

    /// Enqueues `cuMemcpyDtoDAsync` of `len` bytes from `src` to `dst`.
    fn enqueue_device_copy(&mut self, dst: u64, src: u64, len: usize) -> Result<(), CudaError> {
        if len == 0 {
            return Ok(());
        }
        self.dev.bind()?;
        // A global either side keeps its module loaded until a synchronize
        // covers the copy.
        let touched = self.dev.state.modules_in([(dst, len), (src, len)]);
        let next = self.ledger.next().0;
        self.modules.extend(touched.into_iter().map(|m| (next, m)));
        // The copy is ordered with everything on this queue's stream, so it
        // counts as work a synchronize covers.
        self.ledger.issue();
        // SAFETY: the ranges are the caller's device addresses, which no
        // type here can show to outlive the copy: a global among them keeps
        // its module loaded until a synchronize covers the copy (above), a
        // region is the caller's to keep; the driver fails the copy if one
        // is not mapped.
        unsafe { self.stream.raw().copy_device(dst, src, len) }?;
        Ok(())
    }

    /// Marks everything up to `covered` complete.
    fn complete(&mut self, covered: u64) {
        self.ledger.complete(Ticket(covered));
        while self.modules.front().is_some_and(|m| m.0 <= covered) {
            self.modules.pop_front();
        }
        if self.timed.is_some_and(|t| t <= covered) {
            self.timed = None;
            // Both events were recorded around the last launch, which has
            // completed.
            self.last_time = Event::elapsed(&self.events.0, &self.events.1)
                .ok()
                .map(|ms| Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3));
        }
    }

    /// The stream's error, if it has one. `NOT_READY` is not one: the host
    /// function that woke us may still be returning.
    fn stream_error(&self) -> Result<(), DriverError> {
        match self.stream.query() {
            Err(f) if f.code() == sys::CUresult::CUDA_ERROR_NOT_READY => Ok(()),
            r => Ok(r?),
        }
    }

    /// `e`, unless it is a driver error that means a kernel faulted
    /// ([`DriverError::is_kernel_fault`]) while kernels were in flight in
    /// the context (on any queue): then it is the fault of one of them,
    /// named ([`CudaError::KernelFault`]). This queue names them once;
    /// later errors, and a fault code met with no kernel in flight, say
    /// only that the context was lost.
    fn blame(&self, e: CudaError) -> CudaError {
        match e {
            CudaError::Driver(d) if d.is_kernel_fault() => match self.dev.state.suspects(self.id) {
                Some(kernels) => CudaError::kernel_fault(kernels, d),
                None => CudaError::Driver(d),
            },
            e => e,
        }
    }
}

impl Queue for CudaQueue {
    type Buffer = CudaBuffer;
    type Kernel = CudaKernel;

    fn upload(&mut self, buffer: CudaBuffer, segments: &[Segment]) -> Result<Ticket, CudaError> {
        let r = self.copy(buffer, segments, Direction::HostToDevice);
        r.map_err(|e| self.blame(e))
    }

    fn download(&mut self, buffer: CudaBuffer, segments: &[Segment]) -> Result<Ticket, CudaError> {
        let r = self.copy(buffer, segments, Direction::DeviceToHost);
        r.map_err(|e| self.blame(e))
    }

    fn launch(&mut self, kernel: &CudaKernel, launch: &Launch<'_>) -> Result<(), CudaError> {
        let r = self.enqueue_launch(kernel, launch);
        r.map_err(|e| self.blame(e))
    }

    fn copy_on_device(&mut self, dst: u64, src: u64, len: usize) -> Result<bool, CudaError> {
        if !self.dev.lib.staging {
            return Ok(false);
        }
        let r = self.enqueue_device_copy(dst, src, len);
        r.map(|()| true).map_err(|e| self.blame(e))
    }

    fn poll_synchronize(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), CudaError>> {
        // A synchronize that finds a fault names the kernels in flight.
        match self.poll_sync(cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(self.blame(e))),
            other => other,
        }
    }

    fn reclaim(&mut self) -> Option<(Ticket, CudaBuffer)> {
        self.ledger.reclaim()
    }

    fn last_kernel_time(&self) -> Option<Duration> {
        self.last_time
    }
}

impl CudaQueue {
    /// [`Queue::launch`], but for naming a faulted kernel in its error.
    fn enqueue_launch(
        &mut self,
        kernel: &CudaKernel,
        launch: &Launch<'_>,
    ) -> Result<(), CudaError> {
        let c = &launch.config;
        // The driver only says CUDA_ERROR_INVALID_VALUE: say what is wrong.
        let limits = &self.dev.limits;
        limits.check(c.grid, c.block)?;
        let mut args = PackedArgs::pack(&launch.args, kernel.param_sizes())?;
        // A global whose address is an argument (a pointer the kernel may
        // read or write through) keeps its module loaded until a
        // synchronize covers the launch, as the kernel's own module does.
        // Any 8-byte word of an argument may be such a pointer (one inside a
        // struct passed by value too): a word that only looks like one keeps
        // a module loaded a little longer, no more.
        let touched = self.dev.state.modules_in(
            args.layout()
                .iter()
                .flat_map(|&(at, len)| (at..at + len / 8 * 8).step_by(8))
                .map(|at| {
                    let word = args.bytes()[at..at + 8].try_into().expect("8 bytes");
                    (u64::from_ne_bytes(word), 1)
                }),
        );
        self.dev.bind()?;
        // The block against the kernel's own thread limit; dynamic shared
        // memory against the opt-in limit with the kernel's static shared
        // memory, and opted in where the kernel needs it.
        kernel.prepare(c.block, c.shared_mem, limits)?;
        self.events.0.record(&self.stream)?;
        // In flight from before the driver call: a fault that another queue
        // meets while the call is under way (the kernel may already run)
        // names it.
        let seq = self.ledger.next().0;
        self.dev.state.launched(self.id, seq, kernel.shared_name());
        // SAFETY: what outlives the call, which no type here can show: the
        // queue keeps the kernel's module loaded until a synchronize covers
        // the launch (`self.modules`, below); the parameter pointers point
        // into `args`, which outlives the call. Where the driver did not
        // tell the parameter sizes, the recorded argument sizes stand for
        // them (the recorded launch passed them).
        let r = unsafe {
            self.stream.raw().launch(
                kernel.function(),
                c.grid,
                c.block,
                c.shared_mem,
                &mut args.pointers(),
            )
        };
        if let Err(f) = r {
            let e = DriverError::from(f);
            // Never launched.
            self.dev.state.not_launched(self.id, seq);
            return Err(e.into());
        }
        let launched = self.ledger.issue();
        debug_assert_eq!(launched, Ticket(seq));
        self.modules
            .push_back((seq, kernel.module().clone() as KeepAlive));
        self.modules.extend(touched.into_iter().map(|m| (seq, m)));
        self.timed = None;
        self.events.1.record(&self.stream)?;
        self.timed = Some(seq);
        // The snapshot staged before this kernel leaves for the host while
        // the kernel runs.
        if let Some(st) = self.staging.as_mut() {
            st.kernel_queued(&self.stream)?;
        }
        // `args` (which `params` points into) lives until here.
        Ok(())
    }

    /// [`Queue::poll_synchronize`], but for naming a faulted kernel in its
    /// error.
    fn poll_sync(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), CudaError>> {
        // The host function that raises the next mark.
        let enqueue_signal = |mark| {
            self.dev.bind()?;
            // Before a synchronize: what is still staged drains, and the
            // stream waits for the copy stream, so the callback covers both.
            if let Some(st) = self.staging.as_mut() {
                st.join(&self.stream)?;
            }
            let signal = Signal {
                completion: self.completion.clone(),
                mark,
                status: self.callback_status.clone(),
            };
            callback::enqueue(&self.stream, signal)?;
            self.syncs += 1;
            Ok::<(), CudaError>(())
        };
        let covered = match self
            .ledger
            .poll_synchronize(&self.completion, cx, enqueue_signal)
        {
            Poll::Ready(Ok(Some(covered))) => covered.0,
            // Nothing enqueued since the last synchronize.
            Poll::Ready(Ok(None)) => {
                return Poll::Ready(self.dev.take_deferred().map_or(Ok(()), Err));
            }
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return self.poll_waiting(cx),
        };
        // The stream's error first (it names the call that found it), else
        // a failed status the callback was given; that status is taken
        // either way, so it is reported once.
        let callback = callback::take_error(&self.callback_status);
        let status = self
            .dev
            .bind()
            .and_then(|()| self.stream_error())
            .and(callback);
        if !matches!(&status, Err(e) if e.is_kernel_fault()) {
            // The callback ran, so its kernels up to here finished, and no
            // fault code says one of them faulted (an error that is not a
            // fault blames none of them). After a fault, they stay in
            // flight for every queue that meets it to name.
            self.dev.state.covered(self.id, covered);
        }
        self.complete(covered);
        match (status, self.dev.take_deferred()) {
            (Err(e), _) => Poll::Ready(Err(e.into())),
            (Ok(()), Some(e)) => Poll::Ready(Err(e)),
            (Ok(()), None) => Poll::Ready(Ok(())),
        }
    }

    /// A synchronize whose host function has not run yet.
    fn poll_waiting(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), CudaError>> {
        // A failed context may never run the host function: report its
        // error now (the buffers stay with the queue until it drops).
        if let Err(e) = self.dev.bind().and_then(|()| self.stream_error()) {
            self.ledger.cancel_synchronize();
            return Poll::Ready(Err(e.into()));
        }
        if !self.dev.lib.stream_callback {
            if self.watchdog.is_none() {
                match Watchdog::start() {
                    Ok(w) => self.watchdog = Some(w),
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
            if let Some(w) = &self.watchdog {
                w.arm(cx.waker());
            }
        }
        Poll::Pending
    }
}

impl Drop for CudaQueue {
    fn drop(&mut self) {
        // Waits for every copy, launch and host function of the stream, so
        // the buffers and modules below are idle when they drop.
        let idle = self.dev.cleanup(|| self.stream.synchronize());
        if idle {
            // Its kernels ran without a fault; after one, they stay in
            // flight for the other queues that meet it to name.
            self.dev.state.forget_queue(self.id);
        }
        // Waits for the drains reading into the buffers below, then frees
        // the staging's shadow, events and copy stream.
        drop(self.staging.take());
        self.ledger.release(drop);
        self.modules.clear();
        // Then the events and the stream (the fields, in order): the stream
        // is idle and not used again.
    }
}
