//! A queue: one AQL queue for kernels, the runtime's asynchronous copies
//! for transfers, every operation chained to the one before by its
//! completion signal, and one asynchronous signal handler per synchronize.
//!
//! A copy waits for the previous operation's signal (a dependency signal of
//! `hsa_amd_memory_async_copy`); a kernel after a copy waits behind a
//! barrier-AND packet on the copy's signal, and every packet has the
//! barrier bit, so the whole schedule runs in submission order and is
//! waited on once: [`Queue::poll_synchronize`] registers
//! `hsa_amd_signal_async_handler` on the last operation's signal, whose
//! callback only raises the queue's [`Completion`] mark. A kernel fault is
//! reported by the runtime to the queue's error callback, which records the
//! status and wakes the waiting synchronize.

use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use hsa_sys::*;
use reprise_core::exec::{ErrorType, Launch, Queue, Segment, Ticket, VecLedger};

use crate::args;
use crate::error::{AmdError, check};
use crate::fault::Shared;
use crate::image::AmdKernel;
use crate::memory::AmdBuffer;
use crate::runtime::{Runtime, agent_info_of};

/// The queue's error callback: records the status and wakes the waiter.
unsafe extern "C" fn on_queue_error(
    status: hsa_status_t,
    _queue: *mut hsa_queue_t,
    data: *mut c_void,
) {
    // SAFETY: `data` is the `Shared` the queue registered, kept alive until
    // after `hsa_queue_destroy`.
    let shared = unsafe { &*(data as *const Shared) };
    let _ = shared
        .fault
        .compare_exchange(0, status.max(1), Ordering::AcqRel, Ordering::Acquire);
    shared.completion.signal(u64::MAX);
}

/// What one synchronize's handler needs.
struct Wake {
    shared: Arc<Shared>,
    mark: u64,
}

/// The signal handler: raises the mark and unregisters itself.
unsafe extern "C" fn on_signal(_value: hsa_signal_value_t, arg: *mut c_void) -> bool {
    // SAFETY: `arg` is the boxed `Wake` `poll_synchronize` leaked for this
    // handler, which runs once (it returns false).
    let wake = unsafe { Box::from_raw(arg as *mut Wake) };
    wake.shared.completion.signal(wake.mark);
    false
}

/// What a synchronize frees once it has seen everything complete.
#[derive(Debug, Default)]
struct Pending {
    signals: Vec<hsa_signal_t>,
    kernargs: Vec<*mut c_void>,
    kernels: Vec<AmdKernel>,
}

/// A queue of copies and launches on one AMD GPU.
#[derive(Debug)]
pub struct AmdQueue {
    rt: Arc<Runtime>,
    queue: *mut hsa_queue_t,
    shared: Arc<Shared>,
    /// The last operation's completion signal, and whether it is a packet
    /// of the AQL queue (else a copy).
    last: Option<(hsa_signal_t, bool)>,
    pending: Pending,
    /// Tickets, the host buffers of copies until a synchronize covered
    /// them, and the synchronize marks (a synchronize abandoned before
    /// more work came is resumed; one that covers only part of the work is
    /// waited for, so its handler has run before its signal goes).
    ledger: VecLedger<AmdBuffer>,
    /// Whether the fault was reported once (naming the kernels).
    fault_reported: bool,
}

// SAFETY: the AQL queue is written only through `&mut self`; the runtime's
// handles may be used from any thread; the kernarg pointers are owned.
unsafe impl Send for AmdQueue {}

impl ErrorType for AmdQueue {
    type Error = AmdError;
}

impl AmdQueue {
    pub(crate) fn new(rt: &Arc<Runtime>) -> Result<AmdQueue, AmdError> {
        let max: u32 = agent_info_of(rt.hsa, rt.gpu, agent_info::QUEUE_MAX_SIZE)?;
        let size = max.clamp(16, 1024).next_power_of_two().min(max.max(16));
        let shared = Shared::new(rt.gpu);
        let mut queue = std::ptr::null_mut();
        // SAFETY: the callback data is `shared`, which the queue keeps until
        // after `hsa_queue_destroy`; no private or group segment limits.
        let rc = unsafe {
            (rt.hsa.fns.hsa_queue_create)(
                rt.gpu,
                size,
                queue_type::MULTI,
                Some(on_queue_error),
                Arc::as_ptr(&shared) as *mut c_void,
                u32::MAX,
                u32::MAX,
                &mut queue,
            )
        };
        check("hsa_queue_create", rc)?;
        Ok(AmdQueue {
            rt: rt.clone(),
            queue,
            shared,
            last: None,
            pending: Pending::default(),
            ledger: VecLedger::new(),
            fault_reported: false,
        })
    }

    fn fault(&self) -> Option<u32> {
        match self.shared.fault.load(Ordering::Acquire) {
            0 => None,
            s => Some(s),
        }
    }

    /// The error a faulted queue gives: the kernels named once, then lost.
    fn fault_error(&mut self, status: u32) -> AmdError {
        if self.fault_reported {
            return AmdError::QueueLost(status);
        }
        self.fault_reported = true;
        let mut kernels: Vec<String> = self
            .pending
            .kernels
            .iter()
            .map(|k| k.name().to_string())
            .collect();
        kernels.dedup();
        let address = match self.shared.address.load(Ordering::Acquire) {
            0 => None,
            a => Some(a),
        };
        AmdError::KernelFault {
            kernels,
            status,
            address,
        }
    }

    fn check_usable(&mut self) -> Result<(), AmdError> {
        match self.fault() {
            Some(s) => Err(self.fault_error(s)),
            None => Ok(()),
        }
    }

    fn signal(&mut self) -> Result<hsa_signal_t, AmdError> {
        let mut s = hsa_signal_t::default();
        // SAFETY: valid out-pointer; no consumer list.
        let rc = unsafe { (self.rt.hsa.fns.hsa_signal_create)(1, 0, std::ptr::null(), &mut s) };
        check("hsa_signal_create", rc)?;
        self.pending.signals.push(s);
        Ok(s)
    }

    /// One asynchronous copy after everything before it.
    fn copy(
        &mut self,
        dst: u64,
        dst_agent: hsa_agent_t,
        src: u64,
        src_agent: hsa_agent_t,
        len: usize,
    ) -> Result<(), AmdError> {
        let done = self.signal()?;
        let deps: Vec<hsa_signal_t> = self.last.map(|(s, _)| s).into_iter().collect();
        // SAFETY: both ranges are device or host pool memory the caller
        // checked; the dependency and completion signals live until a
        // synchronize covered the copy.
        let rc = unsafe {
            (self.rt.hsa.fns.hsa_amd_memory_async_copy)(
                dst as *mut c_void,
                dst_agent,
                src as *const c_void,
                src_agent,
                len,
                deps.len() as u32,
                // ROCr refuses a non-null list of no signals.
                if deps.is_empty() {
                    std::ptr::null()
                } else {
                    deps.as_ptr()
                },
                done,
            )
        };
        check("hsa_amd_memory_async_copy", rc)?;
        self.last = Some((done, false));
        Ok(())
    }

    fn transfer(
        &mut self,
        buffer: AmdBuffer,
        segments: &[Segment],
        upload: bool,
    ) -> Result<Ticket, AmdError> {
        self.check_usable()?;
        Segment::check_all(segments, buffer.as_ref().len()).map_err(AmdError::Segment)?;
        // The buffer is the queue's from here on, even when a later
        // segment fails to enqueue: earlier ones may already use it.
        let t = self.ledger.issue();
        let host_base = buffer.addr();
        self.ledger.keep(t, buffer);
        let (gpu, cpu) = (self.rt.gpu, self.rt.cpu);
        for s in segments.iter().filter(|s| s.len > 0) {
            let host = host_base + s.host_offset as u64;
            if upload {
                self.copy(s.device, gpu, host, cpu, s.len)?;
            } else {
                self.copy(host, cpu, s.device, gpu, s.len)?;
            }
        }
        Ok(t)
    }

    /// Writes one 64-byte packet whose first 32 bits (`header | rest << 16`)
    /// are published last, with a release store, then rings the doorbell.
    fn submit(&mut self, packet: &[u8; 64]) {
        let f = &self.rt.hsa.fns;
        // SAFETY: `queue` is this queue's live AQL queue.
        let q = unsafe { &*self.queue };
        // SAFETY: as above; reserves one slot.
        let index = unsafe { (f.hsa_queue_add_write_index_screlease)(self.queue, 1) };
        // Wait for the slot to be free (the ring holds `size` packets).
        // SAFETY: as above.
        while index - unsafe { (f.hsa_queue_load_read_index_scacquire)(self.queue) }
            >= u64::from(q.size)
        {
            std::thread::yield_now();
        }
        let slot = (index % u64::from(q.size)) as usize;
        // SAFETY: slot `slot` of the ring is ours until the packet processor
        // consumes it; its header is still INVALID, so the processor does not
        // read the body while it is written.
        unsafe {
            let at = (q.base_address as *mut u8).add(slot * 64);
            std::ptr::copy_nonoverlapping(packet.as_ptr().add(4), at.add(4), 60);
            let first = u32::from_le_bytes(packet[..4].try_into().expect("4 bytes"));
            (*(at as *const std::sync::atomic::AtomicU32)).store(first, Ordering::Release);
            (f.hsa_signal_store_screlease)(q.doorbell_signal, index as i64);
        }
    }

    fn barrier_on(&mut self, dep: hsa_signal_t) {
        let p = hsa_barrier_and_packet_t {
            header: packet::header(packet::TYPE_BARRIER_AND),
            dep_signal: [
                dep,
                Default::default(),
                Default::default(),
                Default::default(),
                Default::default(),
            ],
            ..Default::default()
        };
        self.submit(&as_bytes(&p));
    }

    fn dispatch(&mut self, kernel: &AmdKernel, launch: &Launch<'_>) -> Result<(), AmdError> {
        self.check_usable()?;
        let c = &launch.config;
        // HSA would only fail the dispatch, or run it wrong: say what is
        // wrong. The group segment bounds the kernel's static LDS and the
        // launch's dynamic LDS together.
        let limits = &self.rt.limits;
        limits
            .check(c.grid, c.block)
            .and_then(|()| limits.check_shared(kernel.group_size, c.shared_mem))
            .map_err(AmdError::Geometry)?;
        let bytes = args::pack(kernel, launch)?;
        let kernarg = self
            .rt
            .allocate(self.rt.kernarg_pool, bytes.len().max(16))?;
        self.pending.kernargs.push(kernarg);
        if !(kernarg as u64).is_multiple_of(u64::from(kernel.kernarg_align)) {
            return Err(AmdError::KernargMisaligned {
                kernel: kernel.name().to_string(),
                address: kernarg as u64,
                align: kernel.kernarg_align,
            });
        }
        self.rt.allow_gpu(kernarg)?;
        // SAFETY: the kernarg allocation holds at least `bytes.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), kernarg as *mut u8, bytes.len()) };
        let done = self.signal()?;
        if let Some((dep, false)) = self.last {
            self.barrier_on(dep);
        }
        let dims: u16 = if c.grid[2] > 1 || c.block[2] > 1 {
            3
        } else if c.grid[1] > 1 || c.block[1] > 1 {
            2
        } else {
            1
        };
        let p = hsa_kernel_dispatch_packet_t {
            header: packet::header(packet::TYPE_KERNEL_DISPATCH),
            setup: dims << packet::SETUP_DIMENSIONS,
            workgroup_size_x: c.block[0] as u16,
            workgroup_size_y: c.block[1] as u16,
            workgroup_size_z: c.block[2] as u16,
            grid_size_x: c.grid[0] * c.block[0],
            grid_size_y: c.grid[1] * c.block[1],
            grid_size_z: c.grid[2] * c.block[2],
            private_segment_size: kernel.private_size,
            group_segment_size: kernel.group_size + c.shared_mem,
            kernel_object: kernel.object,
            kernarg_address: kernarg as u64,
            completion_signal: done,
            ..Default::default()
        };
        self.submit(&as_bytes(&p));
        self.ledger.issue();
        self.pending.kernels.push(kernel.clone());
        self.last = Some((done, true));
        Ok(())
    }

    /// Frees what the completed operations used.
    fn retire(&mut self) {
        let p = std::mem::take(&mut self.pending);
        for s in p.signals {
            // SAFETY: every operation using the signal has completed and
            // its handler (if any) has run.
            unsafe { (self.rt.hsa.fns.hsa_signal_destroy)(s) };
        }
        for k in p.kernargs {
            self.rt.free(k);
        }
        self.ledger.complete(self.ledger.last());
        self.last = None;
    }
}

/// Has the runtime raise `shared`'s completion to `mark` once `last` (the
/// last operation's signal) completes, by a handler that only raises it;
/// at once where no operation enqueued a signal (copies of no bytes).
fn signal_when_done(
    rt: &Runtime,
    shared: &Arc<Shared>,
    last: Option<(hsa_signal_t, bool)>,
    mark: u64,
) -> Result<(), AmdError> {
    let Some((last, _)) = last else {
        shared.completion.signal(mark);
        return Ok(());
    };
    let wake = Box::into_raw(Box::new(Wake {
        shared: shared.clone(),
        mark,
    }));
    // SAFETY: the handler gets the boxed `Wake` and frees it when it runs;
    // the signal lives until `retire`, after it ran.
    let rc = unsafe {
        (rt.hsa.fns.hsa_amd_signal_async_handler)(
            last,
            condition::LT,
            1,
            on_signal,
            wake as *mut c_void,
        )
    };
    if rc != status::SUCCESS {
        // SAFETY: not registered: still ours.
        drop(unsafe { Box::from_raw(wake) });
        return Err(AmdError::call("hsa_amd_signal_async_handler", rc));
    }
    Ok(())
}

fn as_bytes<T: Copy>(p: &T) -> [u8; 64] {
    assert_eq!(std::mem::size_of::<T>(), 64, "AQL packets are 64 bytes");
    let mut out = [0u8; 64];
    // SAFETY: `T` is a 64-byte `#[repr(C)]` packet without padding (its
    // layout is checked against the header's by hsa-sys's tests).
    unsafe { std::ptr::copy_nonoverlapping(p as *const T as *const u8, out.as_mut_ptr(), 64) };
    out
}

impl Queue for AmdQueue {
    type Buffer = AmdBuffer;
    type Kernel = AmdKernel;

    fn upload(&mut self, buffer: AmdBuffer, segments: &[Segment]) -> Result<Ticket, AmdError> {
        self.transfer(buffer, segments, true)
    }

    fn download(&mut self, buffer: AmdBuffer, segments: &[Segment]) -> Result<Ticket, AmdError> {
        self.transfer(buffer, segments, false)
    }

    fn launch(&mut self, kernel: &AmdKernel, launch: &Launch<'_>) -> Result<(), AmdError> {
        self.dispatch(kernel, launch)
    }

    fn copy_on_device(&mut self, dst: u64, src: u64, len: usize) -> Result<bool, AmdError> {
        self.check_usable()?;
        if len > 0 {
            let gpu = self.rt.gpu;
            self.ledger.issue();
            self.copy(dst, gpu, src, gpu, len)?;
        }
        Ok(true)
    }

    fn poll_synchronize(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), AmdError>> {
        if let Some(s) = self.fault() {
            return Poll::Ready(Err(self.fault_error(s)));
        }
        let (rt, shared, last) = (&self.rt, &self.shared, self.last);
        let synchronized = self
            .ledger
            .poll_synchronize(&self.shared.completion, cx, |mark| {
                signal_when_done(rt, shared, last, mark)
            });
        match synchronized {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Ready(Ok(_)) => {}
        }
        if let Some(s) = self.fault() {
            return Poll::Ready(Err(self.fault_error(s)));
        }
        self.retire();
        Poll::Ready(Ok(()))
    }

    fn reclaim(&mut self) -> Option<(Ticket, AmdBuffer)> {
        self.ledger.reclaim()
    }
}

impl Drop for AmdQueue {
    fn drop(&mut self) {
        let f = &self.rt.hsa.fns;
        if self.fault().is_none()
            && let Some((last, _)) = self.last
        {
            // Waits for the work before freeing what it uses, in rounds (a
            // wait may return early, and a fault meanwhile means the signal
            // never completes).
            loop {
                // SAFETY: a live signal of this queue.
                let v = unsafe {
                    (f.hsa_signal_wait_scacquire)(
                        last,
                        condition::LT,
                        1,
                        10_000_000,
                        wait_state::BLOCKED,
                    )
                };
                if v < 1 || self.fault().is_some() {
                    break;
                }
            }
            // A handler registered by an abandoned synchronize runs on the
            // runtime's thread now; let it finish before its signal goes.
            if let Some(m) = self.ledger.synchronizing() {
                while self.shared.completion.reached() < m && self.fault().is_none() {
                    std::thread::yield_now();
                }
            }
        }
        if self.fault().is_none() {
            self.retire();
        } else {
            // After a fault the queue's work never completes: its signals
            // (a handler may still be registered on one) and kernel
            // arguments are left to the process; host buffers go, as no
            // copy after the fault will run.
            let p = std::mem::take(&mut self.pending);
            std::mem::forget(p.signals);
            std::mem::forget(p.kernargs);
            self.ledger.release(drop);
            std::mem::forget(p.kernels);
        }
        // SAFETY: nothing is submitted to the queue any more.
        let rc = unsafe { (f.hsa_queue_destroy)(self.queue) };
        if rc != status::SUCCESS {
            eprintln!(
                "warning: hsa_queue_destroy: {}",
                crate::error::status_name(rc)
            );
        }
    }
}
