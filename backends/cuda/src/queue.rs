//! A queue: one non-blocking CUDA stream, completion by host function.

use std::collections::VecDeque;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use cudarc::driver::sys;
use reprise_core::completion::Completion;
use reprise_core::exec::{ErrorType, Launch, Queue, Segment, Ticket};

use crate::args::PackedArgs;
use crate::context::ContextState;
use crate::driver::{Device, check};
use crate::error::{CudaError, DriverError};
use crate::memory::CudaBuffer;
use crate::module::{CudaKernel, Module};

/// What the host function gets: the queue's completion, the mark to raise
/// and where to leave a failed status.
struct Signal {
    completion: Arc<Completion>,
    mark: u64,
    status: Arc<CallbackStatus>,
}

/// The first failed status stream callbacks were given since a synchronize
/// last took it.
type CallbackStatus = Mutex<Option<sys::CUresult>>;

/// Takes back the `Signal` a synchronize leaked, keeps a failed `status`
/// for the synchronize, and raises its mark. Only stores, raises the mark
/// and wakes the waiting task; never calls the driver.
///
/// # Safety
///
/// `data` must be a `Box<Signal>` leaked by `enqueue_signal`, and this must
/// be its only use.
unsafe fn raise(data: *mut c_void, status: sys::CUresult) {
    // SAFETY: the caller passes the leaked box, once.
    let s = unsafe { Box::from_raw(data.cast::<Signal>()) };
    // A panicking waker must not unwind into the driver.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if status != sys::CUresult::CUDA_SUCCESS {
            let mut kept = s.status.lock().unwrap_or_else(|p| p.into_inner());
            kept.get_or_insert(status);
        }
        s.completion.signal(s.mark)
    }));
}

/// The stream callback a synchronize enqueues (`cuStreamAddCallback`). It
/// runs even after a device error, with the stream's status, which the
/// woken synchronize reports (the stream is asked too).
unsafe extern "C" fn stream_callback(_: sys::CUstream, status: sys::CUresult, data: *mut c_void) {
    // SAFETY: `data` is the leaked `Box<Signal>`; the driver calls each
    // callback exactly once.
    unsafe { raise(data, status) }
}

/// The host function a synchronize enqueues where the driver has no
/// `cuStreamAddCallback` (`cuLaunchHostFunc`).
unsafe extern "C" fn host_function(data: *mut c_void) {
    // SAFETY: as in `stream_callback`.
    unsafe { raise(data, sys::CUresult::CUDA_SUCCESS) }
}

/// The "call" a failed status handed to a synchronize's stream callback is
/// reported as: the failure came from work queued before the callback, not
/// from `cuStreamAddCallback`, which succeeded.
const CALLBACK_STATUS: &str =
    "work queued on the stream (status handed to the synchronize's callback)";

/// How often a synchronize waiting on a `cuLaunchHostFunc` host function
/// is polled anyway.
const WATCH_EVERY: Duration = Duration::from_millis(20);

/// Wakes a waiting synchronize now and then, where completion comes from
/// `cuLaunchHostFunc`: its host function never runs once the context has
/// faulted, so without these wakes a fault would leave the synchronize
/// waiting forever. The woken task finds the error by asking the stream.
#[derive(Debug)]
struct Watchdog {
    shared: Arc<(Mutex<Watch>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Watch {
    waker: Option<Waker>,
    /// When to wake `waker`: set when first armed, kept by re-arming.
    due: Option<std::time::Instant>,
    stop: bool,
}

impl Watchdog {
    fn start() -> Result<Watchdog, CudaError> {
        let shared = Arc::new((Mutex::new(Watch::default()), Condvar::new()));
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("reprise-cuda-watch".into())
            .spawn(move || watch(&s))
            .map_err(|e| CudaError::Thread(e.to_string()))?;
        Ok(Watchdog {
            shared,
            thread: Some(thread),
        })
    }

    /// Wakes `waker` [`WATCH_EVERY`] after the first arming since the last
    /// wake; arming again before then only replaces the waker.
    fn arm(&self, waker: &Waker) {
        let (lock, cv) = &*self.shared;
        let mut w = lock.lock().unwrap_or_else(|p| p.into_inner());
        w.waker = Some(waker.clone());
        if w.due.is_none() {
            w.due = Some(std::time::Instant::now() + WATCH_EVERY);
            cv.notify_one();
        }
    }
}

fn watch(shared: &(Mutex<Watch>, Condvar)) {
    let (lock, cv) = shared;
    let mut w = lock.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if w.stop {
            return;
        }
        let Some(due) = w.due else {
            w = cv.wait(w).unwrap_or_else(|p| p.into_inner());
            continue;
        };
        let now = std::time::Instant::now();
        if now < due {
            w = cv
                .wait_timeout(w, due - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
            continue;
        }
        w.due = None;
        if let Some(waker) = w.waker.take() {
            drop(w);
            waker.wake();
            w = lock.lock().unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let (lock, cv) = &*self.shared;
        lock.lock().unwrap_or_else(|p| p.into_inner()).stop = true;
        cv.notify_one();
        if let Some(t) = self.thread.take() {
            // A wake on the watch thread may drop the last owner of the
            // queue, and so this; a thread cannot join itself (it ends on
            // its own after `stop`).
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

/// A new non-blocking stream in the current context.
fn create_stream() -> Result<sys::CUstream, DriverError> {
    let mut stream = std::ptr::null_mut();
    // SAFETY: `stream` is a live out-parameter; the flag is a valid stream
    // flag.
    check("cuStreamCreate", unsafe {
        sys::cuStreamCreate(
            &mut stream,
            sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32,
        )
    })?;
    Ok(stream)
}

/// A new stream with two events (made with `event_flags`); nothing is left
/// behind on failure.
fn stream_and_events(
    event_flags: sys::CUevent_flags,
) -> Result<(sys::CUstream, [sys::CUevent; 2]), DriverError> {
    let stream = create_stream()?;
    let mut events = [std::ptr::null_mut(); 2];
    for i in 0..2 {
        // SAFETY: `events[i]` is a live out-parameter.
        let r = unsafe { sys::cuEventCreate(&mut events[i], event_flags as u32) };
        if let Err(e) = check("cuEventCreate", r) {
            for ev in &events[..i] {
                // SAFETY: created above and never used.
                let _ = unsafe { sys::cuEventDestroy_v2(*ev) };
            }
            // SAFETY: created above and never used.
            let _ = unsafe { sys::cuStreamDestroy_v2(stream) };
            return Err(e);
        }
    }
    Ok((stream, events))
}

/// Device-side staging of a queue (see
/// [`crate::CudaExecutor::with_device_staging`]): a shadow allocation, the
/// copy stream that drains it, and the events ordering the two streams.
/// The queue's `Drop` frees them with [`Staging::release`].
#[derive(Debug)]
struct Staging {
    /// Smallest download staged.
    min_bytes: u64,
    /// Drains the shadow to the host.
    stream: sys::CUstream,
    /// Recorded on the queue's stream after the copies into the shadow.
    staged: sys::CUevent,
    /// Recorded on the copy stream after the drain.
    drained: sys::CUevent,
    /// The shadow: device address and length (0: none yet).
    shadow: (u64, usize),
    /// A staged download not yet drained: the host buffer's first byte and
    /// its segments (host offset, length); the shadow mirrors host offsets.
    pending: Option<(*mut u8, Vec<(usize, usize)>)>,
    /// A drain the queue's stream has not been made to wait for yet.
    draining: bool,
    /// A kernel was enqueued since the last synchronize: later downloads
    /// in this stretch are the kernel's output, which staging would only
    /// slow down. (With the sync schedule a synchronize separates kernel and
    /// output, so the output is staged too, and drained at once.)
    launched: bool,
    /// A drain that failed, for the next synchronize to report.
    failed: Option<CudaError>,
}

impl Staging {
    fn new(min_bytes: u64) -> Result<Staging, CudaError> {
        // Events without timing are the cheapest kind.
        let (stream, [staged, drained]) =
            stream_and_events(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)?;
        Ok(Staging {
            min_bytes,
            stream,
            staged,
            drained,
            shadow: (0, 0),
            pending: None,
            draining: false,
            launched: false,
            failed: None,
        })
    }

    /// Makes the shadow at least `len` bytes; `false` when it cannot be.
    /// `main` is the queue's stream.
    fn reserve_shadow(&mut self, main: sys::CUstream, len: usize) -> Result<bool, CudaError> {
        if self.shadow.1 >= len {
            return Ok(true);
        }
        if self.shadow.1 > 0 {
            // Either stream may still copy into or out of the old shadow (a
            // synchronize that was given up on leaves work queued): wait for
            // both. Growing is rare; this blocks only then.
            for stream in [main, self.stream] {
                // SAFETY: both streams are live.
                check("cuStreamSynchronize", unsafe {
                    sys::cuStreamSynchronize(stream)
                })?;
            }
            // SAFETY: allocated below by an earlier call; nothing uses it
            // now: both streams are idle and no staged download is pending.
            check("cuMemFree", unsafe { sys::cuMemFree_v2(self.shadow.0) })?;
            self.shadow = (0, 0);
        }
        let mut ptr = 0;
        // SAFETY: `ptr` is a live out-parameter.
        match unsafe { sys::cuMemAlloc_v2(&mut ptr, len) } {
            sys::CUresult::CUDA_SUCCESS => {
                self.shadow = (ptr, len);
                Ok(true)
            }
            // No room on the device: download straight to the host.
            sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => Ok(false),
            r => Err(crate::driver::driver_error("cuMemAlloc", r).into()),
        }
    }

    /// Frees the shadow, events and copy stream, keeping errors for the
    /// next synchronize of the executor. The queue has waited for both
    /// streams.
    fn release(self, dev: &Device) {
        let (shadow, stream) = (self.shadow, self.stream);
        let events = [self.staged, self.drained];
        if shadow.1 > 0 {
            // SAFETY: allocated by `reserve_shadow`; both streams are idle.
            dev.cleanup("cuMemFree", || unsafe { sys::cuMemFree_v2(shadow.0) });
        }
        for ev in events {
            // SAFETY: made by `new`; both streams are idle.
            dev.cleanup("cuEventDestroy", || unsafe { sys::cuEventDestroy_v2(ev) });
        }
        // SAFETY: made by `new`; idle and not used again.
        dev.cleanup("cuStreamDestroy", || unsafe {
            sys::cuStreamDestroy_v2(stream)
        });
    }
}

/// The direction of a copy.
#[derive(Clone, Copy)]
enum Direction {
    HostToDevice,
    DeviceToHost,
}

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
    stream: sys::CUstream,
    /// Timing events around each launch: (start, end).
    events: (sys::CUevent, sys::CUevent),
    completion: Arc<Completion>,
    /// A failed status a stream callback was given.
    callback_status: Arc<CallbackStatus>,
    /// Sequence number of the last operation enqueued.
    seq: u64,
    /// Every operation up to here is complete.
    done_seq: u64,
    /// The last mark handed to a host function.
    mark: u64,
    /// The synchronize in flight: its mark and the last operation it covers.
    waiting: Option<(u64, u64)>,
    /// Buffers of copies not yet known complete: (seq, ticket, buffer).
    in_flight: VecDeque<(u64, Ticket, CudaBuffer)>,
    /// Modules of launches (the kernel's own, and those of globals whose
    /// addresses are arguments), and of globals copies use, not yet known
    /// complete.
    modules: VecDeque<(u64, Arc<Module>)>,
    done: VecDeque<(Ticket, CudaBuffer)>,
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
// (the context is bound before every call); the queue is used through
// `&mut self` only, so it is never touched by two threads at once. The host
// function never touches the queue, only the `Arc<Completion>`.
unsafe impl Send for CudaQueue {}

impl ErrorType for CudaQueue {
    type Error = CudaError;
}

impl CudaQueue {
    pub(crate) fn new(dev: &Arc<Device>, staging: Option<u64>) -> Result<Self, CudaError> {
        dev.bind()?;
        let (stream, events) = stream_and_events(sys::CUevent_flags::CU_EVENT_DEFAULT)?;
        let mut queue = CudaQueue {
            dev: dev.clone(),
            id: ContextState::new_queue_id(),
            stream,
            events: (events[0], events[1]),
            completion: Arc::new(Completion::new()),
            callback_status: Arc::new(Mutex::new(None)),
            seq: 0,
            done_seq: 0,
            mark: 0,
            waiting: None,
            in_flight: VecDeque::new(),
            modules: VecDeque::new(),
            done: VecDeque::new(),
            timed: None,
            last_time: None,
            syncs: 0,
            watchdog: None,
            staging: None,
            staged: 0,
        };
        if let Some(min_bytes) = staging {
            queue.staging = Some(Staging::new(min_bytes)?);
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
    fn stage(&mut self, buffer: &CudaBuffer, segments: &[Segment]) -> Result<bool, CudaError> {
        let stream = self.stream;
        let Some(st) = self.staging.as_mut() else {
            return Ok(false);
        };
        let total: usize = segments.iter().map(|s| s.len).sum();
        if st.launched || st.pending.is_some() || (total as u64) < st.min_bytes || total == 0 {
            return Ok(false);
        }
        if !st.reserve_shadow(stream, buffer.as_ref().len())? {
            return Ok(false);
        }
        if st.draining {
            // The last drain must finish reading the shadow first.
            // SAFETY: the stream and event are live.
            check("cuStreamWaitEvent", unsafe {
                sys::cuStreamWaitEvent(stream, st.drained, 0)
            })?;
            st.draining = false;
        }
        let mut segs = Vec::with_capacity(segments.len());
        for s in segments.iter().filter(|s| s.len > 0) {
            // SAFETY: the shadow holds at least the buffer's length and the
            // segment lies inside the buffer (checked by `copy`); the device
            // range is the caller's (an error if unmapped).
            check("cuMemcpyDtoDAsync", unsafe {
                sys::cuMemcpyDtoDAsync_v2(
                    st.shadow.0 + s.host_offset as u64,
                    s.device,
                    s.len,
                    stream,
                )
            })?;
            segs.push((s.host_offset, s.len));
        }
        // SAFETY: the event and stream are live.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(st.staged, stream)
        })?;
        st.pending = Some((buffer.as_ptr(), segs));
        self.staged += 1;
        Ok(true)
    }

    /// Copies a staged download from the shadow to its host buffer: on the
    /// copy stream (after the kernel was queued), or on the queue's own
    /// stream when a synchronize comes first.
    ///
    /// On an error the copy stream is waited for (so no copy still writes
    /// into the buffer once a synchronize hands it back) and the error is
    /// kept for the next synchronize too, which fails with it: the staged
    /// download is incomplete.
    fn drain(&mut self, on_copy_stream: bool) -> Result<(), CudaError> {
        let result = self.try_drain(on_copy_stream);
        if let (Err(e), Some(st)) = (&result, self.staging.as_mut()) {
            // SAFETY: the stream is live; waiting is all this does.
            let _ = unsafe { sys::cuStreamSynchronize(st.stream) };
            st.draining = false;
            st.failed.get_or_insert(e.clone());
        }
        result
    }

    fn try_drain(&mut self, on_copy_stream: bool) -> Result<(), CudaError> {
        let main = self.stream;
        let Some(st) = self.staging.as_mut() else {
            return Ok(());
        };
        let Some((host, segs)) = st.pending.take() else {
            return Ok(());
        };
        let stream = if on_copy_stream { st.stream } else { main };
        if on_copy_stream {
            // SAFETY: the streams and event are live.
            check("cuStreamWaitEvent", unsafe {
                sys::cuStreamWaitEvent(st.stream, st.staged, 0)
            })?;
        }
        for (offset, len) in segs {
            // SAFETY: `host + offset .. + len` lies in the download's
            // page-locked buffer, which the queue holds until a synchronize
            // covered the download (and a synchronize waits for this drain);
            // the shadow holds the same range.
            check("cuMemcpyDtoHAsync", unsafe {
                sys::cuMemcpyDtoHAsync_v2(
                    host.add(offset).cast(),
                    st.shadow.0 + offset as u64,
                    len,
                    stream,
                )
            })?;
        }
        if on_copy_stream {
            // SAFETY: the event and stream are live.
            check("cuEventRecord", unsafe {
                sys::cuEventRecord(st.drained, st.stream)
            })?;
            st.draining = true;
        }
        Ok(())
    }

    /// Before a synchronize: drains what is still staged and makes the
    /// queue's stream wait for the copy stream, so the host callback covers
    /// both. A drain that failed earlier fails this synchronize (once).
    fn join_staging(&mut self) -> Result<(), CudaError> {
        if let Err(e) = self.drain(false) {
            // Reported now, by this synchronize: not kept for the next.
            if let Some(st) = self.staging.as_mut() {
                st.failed = None;
            }
            return Err(e);
        }
        let main = self.stream;
        if let Some(st) = self.staging.as_mut() {
            if let Some(e) = st.failed.take() {
                return Err(e);
            }
            if st.draining {
                // SAFETY: the stream and event are live.
                check("cuStreamWaitEvent", unsafe {
                    sys::cuStreamWaitEvent(main, st.drained, 0)
                })?;
                st.draining = false;
            }
            st.launched = false;
        }
        Ok(())
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn copy(
        &mut self,
        buffer: CudaBuffer,
        segments: &[Segment],
        dir: Direction,
    ) -> Result<Ticket, CudaError> {
        let len = buffer.as_ref().len();
        for s in segments {
            let end = s.host_offset.saturating_add(s.len);
            if end > len {
                return Err(CudaError::SegmentOutOfBounds { end, buffer: len });
            }
        }
        self.dev.bind()?;
        // A global the copy reads or writes keeps its module loaded until a
        // synchronize covers the copy (the module is kept even when the copy
        // fails partway: what was enqueued may still run).
        let touched = self
            .dev
            .state
            .modules_in(segments.iter().map(|s| (s.device, s.len)));
        for module in touched {
            self.modules.push_back((self.seq + 1, module));
        }
        if matches!(dir, Direction::DeviceToHost) && self.stage(&buffer, segments)? {
            let seq = self.next_seq();
            self.in_flight.push_back((seq, Ticket(seq), buffer));
            return Ok(Ticket(seq));
        }
        let seq = self.next_seq();
        let ticket = Ticket(seq);
        let mut enqueued = 0;
        let mut result = Ok(ticket);
        for s in segments.iter().filter(|s| s.len > 0) {
            // SAFETY: `host_offset + len` is inside the buffer (checked above).
            let host = unsafe { buffer.as_ptr().add(s.host_offset) };
            let r = match dir {
                // SAFETY: the host range is inside the page-locked buffer,
                // which the queue keeps until a synchronize covered this copy;
                // the device range is the caller's (an error if unmapped).
                Direction::HostToDevice => unsafe {
                    sys::cuMemcpyHtoDAsync_v2(s.device, host.cast(), s.len, self.stream)
                },
                // SAFETY: as above, and nothing reads the buffer until it is
                // reclaimed after the synchronize.
                Direction::DeviceToHost => unsafe {
                    sys::cuMemcpyDtoHAsync_v2(host.cast(), s.device, s.len, self.stream)
                },
            };
            let call = match dir {
                Direction::HostToDevice => "cuMemcpyHtoDAsync",
                Direction::DeviceToHost => "cuMemcpyDtoHAsync",
            };
            if let Err(e) = check(call, r) {
                result = Err(e.into());
                break;
            }
            enqueued += 1;
        }
        if enqueued > 0 || result.is_ok() {
            // Copies were enqueued (or there was nothing to copy): the buffer
            // comes back from `reclaim` once a synchronize covered them.
            self.in_flight.push_back((seq, ticket, buffer));
        }
        result
    }

    /// Enqueues the host function that raises the next mark.
    fn enqueue_signal(&mut self) -> Result<u64, CudaError> {
        let mark = self.mark + 1;
        let data = Box::into_raw(Box::new(Signal {
            completion: self.completion.clone(),
            mark,
            status: self.callback_status.clone(),
        }));
        self.dev.bind()?;
        if let Err(e) = self.join_staging() {
            // SAFETY: the driver did not take `data`; nothing else has it.
            drop(unsafe { Box::from_raw(data) });
            return Err(e);
        }
        let (call, r) = if self.dev.lib.stream_callback {
            // SAFETY: `stream_callback` matches `CUstreamCallback` and only
            // takes back `data`, a leaked `Box<Signal>`; flags must be 0.
            let r = unsafe {
                sys::cuStreamAddCallback(self.stream, Some(stream_callback), data.cast(), 0)
            };
            ("cuStreamAddCallback", r)
        } else {
            // SAFETY: `host_function` matches `CUhostFn` and only takes back
            // `data`, a leaked `Box<Signal>`.
            let r = unsafe { sys::cuLaunchHostFunc(self.stream, Some(host_function), data.cast()) };
            ("cuLaunchHostFunc", r)
        };
        if let Err(e) = check(call, r) {
            // SAFETY: the driver did not take `data`; nothing else has it.
            drop(unsafe { Box::from_raw(data) });
            return Err(e.into());
        }
        self.mark = mark;
        self.syncs += 1;
        Ok(mark)
    }

    /// Marks everything up to `covered` complete.
    fn complete(&mut self, covered: u64) {
        self.done_seq = covered;
        while self.in_flight.front().is_some_and(|b| b.0 <= covered) {
            let (_, ticket, buffer) = self.in_flight.pop_front().expect("checked");
            self.done.push_back((ticket, buffer));
        }
        while self.modules.front().is_some_and(|m| m.0 <= covered) {
            self.modules.pop_front();
        }
        if self.timed.is_some_and(|t| t <= covered) {
            self.timed = None;
            let mut ms = 0f32;
            // SAFETY: both events were recorded around the last launch, which
            // has completed; `ms` is a live out-parameter.
            let r = unsafe { sys::cuEventElapsedTime(&mut ms, self.events.0, self.events.1) };
            self.last_time = (r == sys::CUresult::CUDA_SUCCESS)
                .then(|| Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3));
        }
    }

    /// The stream's error, if it has one. `NOT_READY` is not one: the host
    /// function that woke us may still be returning.
    fn stream_error(&self) -> Result<(), DriverError> {
        // SAFETY: the stream is live.
        let r = unsafe { sys::cuStreamQuery(self.stream) };
        match r {
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(()),
            r => check("cuStreamQuery", r),
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

    /// Takes the failed status a stream callback was given, if any. The
    /// callback was enqueued fine: the status is that of the stream's
    /// earlier work (a launch or copy), so the error names the stream.
    fn callback_error(&self) -> Result<(), DriverError> {
        let status = self
            .callback_status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        status.map_or(Ok(()), |r| check(CALLBACK_STATUS, r))
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

    fn poll_synchronize(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), CudaError>> {
        // A synchronize that finds a fault names the kernels in flight.
        match self.poll_sync(cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(self.blame(e))),
            other => other,
        }
    }

    fn reclaim(&mut self) -> Option<(Ticket, CudaBuffer)> {
        self.done.pop_front()
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
        let mut params = args.pointers();
        let params_ptr = if params.is_empty() {
            std::ptr::null_mut()
        } else {
            params.as_mut_ptr()
        };
        self.dev.bind()?;
        if c.shared_mem > 0 {
            // Checked against the opt-in limit with the kernel's static
            // shared memory, and opted in where the kernel needs it.
            kernel.prepare_shared(c.shared_mem, limits)?;
        }
        // SAFETY: the events and stream are live.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(self.events.0, self.stream)
        })?;
        // In flight from before the driver call: a fault that another queue
        // meets while the call is under way (the kernel may already run)
        // names it.
        let seq = self.seq + 1;
        self.dev.state.launched(self.id, seq, kernel.shared_name());
        // SAFETY: `kernel` is a live function of a loaded module (kept loaded
        // by the queue until the launch completes); `params` holds one
        // pointer per argument into `args`, each to a slot at least as large
        // as the parameter, and both live until this call returns (the driver
        // copies the arguments); `extra` is null.
        let r = check("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(
                kernel.func(),
                c.grid[0],
                c.grid[1],
                c.grid[2],
                c.block[0],
                c.block[1],
                c.block[2],
                c.shared_mem,
                self.stream,
                params_ptr,
                std::ptr::null_mut(),
            )
        });
        if let Err(e) = r {
            // Never launched.
            self.dev.state.not_launched(self.id, seq);
            return Err(e.into());
        }
        let launched = self.next_seq();
        debug_assert_eq!(launched, seq);
        self.modules.push_back((seq, kernel.module().clone()));
        self.modules.extend(touched.into_iter().map(|m| (seq, m)));
        self.timed = None;
        // SAFETY: the events and stream are live.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(self.events.1, self.stream)
        })?;
        self.timed = Some(seq);
        // The snapshot staged before this kernel leaves for the host while
        // the kernel runs.
        self.drain(true)?;
        if let Some(st) = self.staging.as_mut() {
            st.launched = true;
        }
        // `args` (which `params` points into) lives until here.
        Ok(())
    }

    /// [`Queue::poll_synchronize`], but for naming a faulted kernel in its
    /// error.
    fn poll_sync(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), CudaError>> {
        let covers = self.waiting.map(|w| w.1);
        if covers != Some(self.seq) {
            if self.seq == self.done_seq {
                // Nothing enqueued since the last synchronize.
                return Poll::Ready(self.dev.take_deferred().map_or(Ok(()), Err));
            }
            match self.enqueue_signal() {
                Ok(mark) => self.waiting = Some((mark, self.seq)),
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        let (mark, covered) = self.waiting.expect("set above");
        if self.completion.poll_reached(mark, cx).is_pending() {
            // A failed context may never run the host function: report its
            // error now (the buffers stay with the queue until it drops).
            if let Err(e) = self.dev.bind().and_then(|()| self.stream_error()) {
                self.waiting = None;
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
            return Poll::Pending;
        }
        self.waiting = None;
        // The stream's error first (it names the call that found it), else
        // a failed status the callback was given; that status is taken
        // either way, so it is reported once.
        let callback = self.callback_error();
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
}

impl Drop for CudaQueue {
    fn drop(&mut self) {
        let stream = self.stream;
        // SAFETY: waits for every copy, launch and host function of the
        // stream, so the buffers and modules below are idle when they drop.
        let idle = self.dev.cleanup("cuStreamSynchronize", || unsafe {
            sys::cuStreamSynchronize(stream)
        });
        if idle {
            // Its kernels ran without a fault; after one, they stay in
            // flight for the other queues that meet it to name.
            self.dev.state.forget_queue(self.id);
        }
        if let Some(st) = self.staging.take() {
            let copy = st.stream;
            // SAFETY: waits for the drains reading into the buffers below.
            self.dev.cleanup("cuStreamSynchronize", || unsafe {
                sys::cuStreamSynchronize(copy)
            });
            st.release(&self.dev);
        }
        self.in_flight.clear();
        self.done.clear();
        self.modules.clear();
        let (start, end) = self.events;
        // SAFETY: the stream is idle; the events are not used again.
        self.dev.cleanup("cuEventDestroy", || unsafe {
            sys::cuEventDestroy_v2(start)
        });
        // SAFETY: as above.
        self.dev
            .cleanup("cuEventDestroy", || unsafe { sys::cuEventDestroy_v2(end) });
        // SAFETY: the stream is idle and not used again.
        self.dev.cleanup("cuStreamDestroy", || unsafe {
            sys::cuStreamDestroy_v2(stream)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn re_arming_the_watchdog_does_not_wake_early() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let w = Watchdog::start().unwrap();
        // Armed every millisecond for 200 ms (as two queues polled together
        // re-arm each other): about one wake per WATCH_EVERY, not one per
        // arming.
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(200) {
            w.arm(&waker);
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(w);
        let wakes = count.0.load(Ordering::Relaxed);
        let most = (200 / WATCH_EVERY.as_millis() + 2) as usize;
        assert!(wakes <= most, "{wakes} wakes, at most {most} expected");
    }

    #[test]
    fn an_armed_watchdog_wakes_once_and_stops_on_drop() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let w = Watchdog::start().unwrap();
        w.arm(&Waker::from(count.clone()));
        let start = std::time::Instant::now();
        while count.0.load(Ordering::Relaxed) == 0 && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(WATCH_EVERY * 3);
        assert_eq!(count.0.load(Ordering::Relaxed), 1, "one wake per arming");
        drop(w); // joins the thread: must not hang
    }
}
