//! Queues: a worker thread per queue running copies and launches in order.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use reprise_core::completion::Completion;
use reprise_core::exec::{ErrorType, Launch, Queue, Segment, Ticket, VecLedger};

use crate::buffer::HostBuffer;
use crate::call::MAX_ARGS;
use crate::error::{HostError, OsContext, OsError};
use crate::fault::describe_fault;
use crate::guard;
use crate::image::HostKernel;
use crate::os::page_size;
use crate::registry::Registry;

/// Whether this process has started a kernel ([`guard::report`]ed once).
static KERNEL_STARTED: AtomicBool = AtomicBool::new(false);

enum Work {
    Upload(HostBuffer, Vec<Segment>, Ticket),
    Download(HostBuffer, Vec<Segment>, Ticket),
    Launch(HostKernel, Vec<u64>),
    Sync(u64),
}

struct Shared {
    completion: Completion,
    /// Tickets, and the buffers the worker is done with until a
    /// synchronize covers them.
    ledger: Mutex<VecLedger<HostBuffer>>,
    error: Mutex<Option<HostError>>,
    kernel_time: Mutex<Option<Duration>>,
}

/// A queue: a worker thread running copies and launches in order.
pub struct HostQueue {
    tx: Option<Sender<Work>>,
    worker: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
    syncs: u64,
}

impl ErrorType for HostQueue {
    type Error = HostError;
}

fn check_segments(buf: &HostBuffer, segments: &[Segment]) -> Result<(), HostError> {
    Segment::check_all(segments, buf.as_ref().len()).map_err(|e| HostError::BufferOverrun {
        offset: e.offset,
        len: e.len,
        buffer: e.buffer,
    })
}

/// `shared`'s ledger, whoever panicked holding it.
fn ledger(shared: &Shared) -> std::sync::MutexGuard<'_, VecLedger<HostBuffer>> {
    shared.ledger.lock().unwrap_or_else(|e| e.into_inner())
}

/// Hands `w` to the worker.
fn send(tx: &Option<Sender<Work>>, w: Work) -> Result<(), HostError> {
    tx.as_ref()
        .ok_or(HostError::WorkerGone)?
        .send(w)
        .map_err(|_| HostError::WorkerGone)
}

fn copy(
    registry: &Mutex<Registry>,
    buf: &mut HostBuffer,
    segs: &[Segment],
    to_device: bool,
) -> Result<(), HostError> {
    for s in segs {
        let _pin = registry
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pin(s.device, s.len)?;
        let host = &mut buf.as_mut()[s.host_offset..s.host_offset + s.len];
        let t = Instant::now();
        // SAFETY: `[s.device, s.device + s.len)` lies inside a live region or
        // global, kept mapped by `_pin` for the copy; the host range was
        // checked against the buffer when enqueued. The two never overlap: a
        // buffer is never inside a region.
        unsafe {
            if to_device {
                std::ptr::copy_nonoverlapping(host.as_ptr(), s.device as *mut u8, s.len);
            } else {
                std::ptr::copy_nonoverlapping(s.device as *const u8, host.as_mut_ptr(), s.len);
            }
        }
        log::trace!("copied {} bytes in {:?}", s.len, t.elapsed());
    }
    Ok(())
}

fn worker(
    rx: std::sync::mpsc::Receiver<Work>,
    shared: Arc<Shared>,
    registry: Arc<Mutex<Registry>>,
) {
    // An alternate signal stack where the thread has none, so that a kernel
    // overflowing this thread's stack is reported, not fatal; and the stack's
    // bounds, to tell such an overflow from other faults.
    let _alt_stack = guard::AltStack::ensure();
    let stack = guard::thread_stack();
    let failed = |e: HostError| {
        let mut slot = shared.error.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert(e);
    };
    let healthy = || {
        shared
            .error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    };
    for work in rx {
        match work {
            Work::Upload(mut buf, segs, t) => {
                if healthy() {
                    copy(&registry, &mut buf, &segs, true).unwrap_or_else(failed);
                }
                ledger(&shared).keep(t, buf);
            }
            Work::Download(mut buf, segs, t) => {
                if healthy() {
                    copy(&registry, &mut buf, &segs, false).unwrap_or_else(failed);
                }
                ledger(&shared).keep(t, buf);
            }
            Work::Launch(kernel, args) => {
                if !healthy() {
                    continue;
                }
                if let Err(errno) = guard::install() {
                    failed(HostError::os(
                        "sigaction",
                        OsError::from_errno(errno),
                        OsContext::FaultHandler,
                    ));
                    continue;
                }
                let _pins = registry.lock().unwrap_or_else(|e| e.into_inner()).pin_all();
                // Said once per process to a parent reading the reports (a
                // replay's child): a death after it is the kernel's or its
                // runtime's, never a loader's, even where a second faulting
                // thread cut the guard's own report short.
                if !KERNEL_STARTED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    guard::report(&format!("started {}", kernel.name));
                }
                let start = Instant::now();
                // SAFETY: `entry` is a function symbol of a loaded image (kept
                // loaded by `kernel.lib`), called with the host plugin's ABI:
                // one pointer-sized argument per recorded argument. What the
                // kernel does is the capture's code; its regions stay mapped
                // (`_pins`) while it runs. A fault in its image's code
                // (`kernel.lib.text`) returns here (the guard's handler is
                // installed, above) and skips only the guard's plain old
                // frames (see guard.rs); a kernel that overwrote the frames
                // above those ends the process instead of returning into
                // them. `stack` is this thread's, read on it by
                // `thread_stack` above.
                let ran = unsafe {
                    guard::call_guarded(kernel.entry, &args, &kernel.lib.text, &kernel.name, stack)
                };
                let elapsed = start.elapsed();
                match ran {
                    Ok(()) => {
                        *shared.kernel_time.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some(elapsed);
                    }
                    Err(caught) => {
                        let fault =
                            describe_fault(&kernel.name, stack, caught, page_size(), |addr| {
                                registry
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .place(addr)
                            });
                        log::debug!("{fault}");
                        guard::report(&format!("fault {fault}"));
                        *shared.kernel_time.lock().unwrap_or_else(|e| e.into_inner()) = None;
                        failed(HostError::KernelFault(Box::new(fault)));
                    }
                }
                drop(kernel);
            }
            Work::Sync(mark) => shared.completion.signal(mark),
        }
    }
}

impl HostQueue {
    pub(crate) fn new(registry: Arc<Mutex<Registry>>) -> Result<Self, HostError> {
        let (tx, rx) = channel();
        let shared = Arc::new(Shared {
            completion: Completion::new(),
            ledger: Mutex::new(VecLedger::new()),
            error: Mutex::new(None),
            kernel_time: Mutex::new(None),
        });
        let s = shared.clone();
        let worker = std::thread::Builder::new()
            .name("reprise-host-queue".into())
            .spawn(move || worker(rx, s, registry))
            .map_err(|e| HostError::os("spawn", OsError::from(&e), OsContext::Worker))?;
        Ok(HostQueue {
            tx: Some(tx),
            worker: Some(worker),
            shared,
            syncs: 0,
        })
    }

    /// Numbers a piece of work and hands it to the worker.
    fn enqueue(&mut self, work: impl FnOnce(Ticket) -> Work) -> Result<Ticket, HostError> {
        let t = ledger(&self.shared).issue();
        send(&self.tx, work(t))?;
        Ok(t)
    }

    /// Synchronizes completed so far (for tests and benchmarks).
    pub fn synchronizations(&self) -> u64 {
        self.syncs
    }
}

impl Queue for HostQueue {
    type Buffer = HostBuffer;
    type Kernel = HostKernel;

    fn upload(&mut self, buffer: HostBuffer, segments: &[Segment]) -> Result<Ticket, HostError> {
        check_segments(&buffer, segments)?;
        self.enqueue(|t| Work::Upload(buffer, segments.to_vec(), t))
    }

    fn download(&mut self, buffer: HostBuffer, segments: &[Segment]) -> Result<Ticket, HostError> {
        check_segments(&buffer, segments)?;
        self.enqueue(|t| Work::Download(buffer, segments.to_vec(), t))
    }

    fn launch(&mut self, kernel: &HostKernel, launch: &Launch<'_>) -> Result<(), HostError> {
        let n = launch.args.len();
        if n > MAX_ARGS {
            return Err(HostError::TooManyArgs {
                count: n,
                max: MAX_ARGS,
            });
        }
        if let Some(index) = (0..n).find(|&i| launch.args.size(i) != 8) {
            return Err(HostError::ArgSize {
                index,
                size: launch.args.size(index),
            });
        }
        let args = launch.args.values.to_vec();
        self.enqueue(|_| Work::Launch(kernel.clone(), args))
            .map(drop)
    }

    fn poll_synchronize(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), HostError>> {
        {
            let mut ledger = ledger(&self.shared);
            let tx = &self.tx;
            let covered = ledger.poll_synchronize(&self.shared.completion, cx, |mark| {
                send(tx, Work::Sync(mark))
            });
            match covered {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                // The worker signals after everything before the mark, so
                // every buffer up to here is back in the ledger.
                Poll::Ready(Ok(Some(t))) => ledger.complete(t),
                Poll::Ready(Ok(None)) => {}
            }
        }
        self.syncs += 1;
        match self
            .shared
            .error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            Some(e) => Poll::Ready(Err(e)),
            None => Poll::Ready(Ok(())),
        }
    }

    fn reclaim(&mut self) -> Option<(Ticket, HostBuffer)> {
        ledger(&self.shared).reclaim()
    }

    fn last_kernel_time(&self) -> Option<Duration> {
        *self
            .shared
            .kernel_time
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for HostQueue {
    fn drop(&mut self) {
        // Closing the channel lets the worker finish what was queued; joining
        // waits for it, so no buffer is freed while a copy still uses it.
        self.tx.take();
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}
