//! Queues: a worker thread per queue running copies and launches in order.

use std::collections::VecDeque;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use reprise_core::completion::Completion;
use reprise_core::exec::{ErrorType, Launch, Queue, Segment, Ticket};

use crate::buffer::HostBuffer;
use crate::call::MAX_ARGS;
use crate::error::HostError;
use crate::fault::describe_fault;
use crate::guard;
use crate::image::HostKernel;
use crate::os::page_size;
use crate::registry::Registry;

enum Work {
    Upload(HostBuffer, Vec<Segment>, Ticket),
    Download(HostBuffer, Vec<Segment>, Ticket),
    Launch(HostKernel, Vec<u64>),
    Sync(u64),
}

struct Shared {
    completion: Completion,
    done: Mutex<VecDeque<(Ticket, HostBuffer)>>,
    error: Mutex<Option<HostError>>,
    kernel_time: Mutex<Option<Duration>>,
}

/// A queue: a worker thread running copies and launches in order.
pub struct HostQueue {
    tx: Option<Sender<Work>>,
    worker: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
    ready: VecDeque<(Ticket, HostBuffer)>,
    next_ticket: u64,
    next_mark: u64,
    waiting: Option<u64>,
    syncs: u64,
}

impl ErrorType for HostQueue {
    type Error = HostError;
}

fn check_segments(buf: &HostBuffer, segments: &[Segment]) -> Result<(), HostError> {
    let buffer = buf.as_ref().len();
    for s in segments {
        if s.host_offset
            .checked_add(s.len)
            .is_none_or(|end| end > buffer)
        {
            return Err(HostError::BufferOverrun {
                offset: s.host_offset,
                len: s.len,
                buffer,
            });
        }
    }
    Ok(())
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
                shared
                    .done
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_back((t, buf));
            }
            Work::Download(mut buf, segs, t) => {
                if healthy() {
                    copy(&registry, &mut buf, &segs, false).unwrap_or_else(failed);
                }
                shared
                    .done
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_back((t, buf));
            }
            Work::Launch(kernel, args) => {
                if !healthy() {
                    continue;
                }
                if let Err(errno) = guard::install() {
                    failed(HostError::Os {
                        call: "sigaction",
                        message: format!(
                            "{} (installing the handler that reports kernel faults)",
                            std::io::Error::from_raw_os_error(errno)
                        ),
                    });
                    continue;
                }
                let _pins = registry.lock().unwrap_or_else(|e| e.into_inner()).pin_all();
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
            done: Mutex::new(VecDeque::new()),
            error: Mutex::new(None),
            kernel_time: Mutex::new(None),
        });
        let s = shared.clone();
        let worker = std::thread::Builder::new()
            .name("reprise-host-queue".into())
            .spawn(move || worker(rx, s, registry))
            .map_err(|e| HostError::Os {
                call: "spawn",
                message: e.to_string(),
            })?;
        Ok(HostQueue {
            tx: Some(tx),
            worker: Some(worker),
            shared,
            ready: VecDeque::new(),
            next_ticket: 0,
            next_mark: 0,
            waiting: None,
            syncs: 0,
        })
    }

    fn send(&self, w: Work) -> Result<(), HostError> {
        self.tx
            .as_ref()
            .ok_or(HostError::WorkerGone)?
            .send(w)
            .map_err(|_| HostError::WorkerGone)
    }

    fn ticket(&mut self) -> Ticket {
        self.next_ticket += 1;
        Ticket(self.next_ticket)
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
        let t = self.ticket();
        self.send(Work::Upload(buffer, segments.to_vec(), t))?;
        Ok(t)
    }

    fn download(&mut self, buffer: HostBuffer, segments: &[Segment]) -> Result<Ticket, HostError> {
        check_segments(&buffer, segments)?;
        let t = self.ticket();
        self.send(Work::Download(buffer, segments.to_vec(), t))?;
        Ok(t)
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
        self.send(Work::Launch(kernel.clone(), launch.args.values.to_vec()))
    }

    fn poll_synchronize(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), HostError>> {
        let mark = match self.waiting {
            Some(m) => m,
            None => {
                self.next_mark += 1;
                let m = self.next_mark;
                self.send(Work::Sync(m))?;
                self.waiting = Some(m);
                m
            }
        };
        if self.shared.completion.poll_reached(mark, cx).is_pending() {
            return Poll::Pending;
        }
        self.waiting = None;
        self.syncs += 1;
        self.ready.extend(
            self.shared
                .done
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .drain(..),
        );
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
        self.ready.pop_front()
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
