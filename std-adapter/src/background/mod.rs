//! A background writer: capture files are written by one thread fed through a
//! bounded queue, off the launching thread.
//!
//! The queue is bounded by the bytes its captures hold (their snapshot
//! buffers), and by a count of captures, so a producer faster than the disk
//! blocks in [`BackgroundWriter::submit`] (back-pressure) instead of piling
//! snapshots up in memory without end. Small captures (a few KiB each) never
//! come near the bytes bound: the launching thread does not wait for the
//! writer's work, its `fsync`s included. Dropping the writer waits for what
//! is queued, so no capture is lost when the process exits normally.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::exec::lock;

/// One unit of work: writes a capture and returns its descriptor's path.
pub type Job = Box<dyn FnOnce() -> Result<PathBuf> + Send + 'static>;

/// How much may wait in a [`BackgroundWriter`]'s queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueLimit {
    /// Captures that may wait (at least one).
    pub jobs: usize,
    /// Bytes the waiting captures may hold. A capture larger than this on
    /// its own is still taken when the queue is empty.
    pub bytes: u64,
}

enum Msg {
    Job(Job, u64),
    Flush(SyncSender<()>),
}

#[derive(Default)]
struct Queue {
    msgs: VecDeque<Msg>,
    /// Jobs waiting or being written, and their bytes.
    jobs: usize,
    bytes: u64,
    /// The writer is gone (no more messages are taken).
    closed: bool,
}

#[derive(Default)]
struct Outcomes {
    written: Vec<PathBuf>,
    errors: Vec<Error>,
}

struct Shared {
    queue: Mutex<Queue>,
    /// Signalled when a message arrives or the queue closes.
    work: Condvar,
    /// Signalled when a job is done (room in the queue).
    room: Condvar,
    outcomes: Mutex<Outcomes>,
}

/// A thread that runs capture-writing jobs in submission order.
pub struct BackgroundWriter {
    shared: Arc<Shared>,
    limit: QueueLimit,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for BackgroundWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundWriter")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

/// Closes the queue when the writer thread ends, also by a panicking job:
/// waiting submitters and flushes are then answered
/// ([`Error::WriterStopped`]) instead of waiting for ever.
struct CloseOnExit(Arc<Shared>);

impl Drop for CloseOnExit {
    fn drop(&mut self) {
        let mut q = lock(&self.0.queue);
        q.closed = true;
        // Drops the flushes' senders: their waiters wake.
        q.msgs.clear();
        self.0.room.notify_all();
    }
}

/// How much lower than the launching threads' the writer's scheduling
/// priority is (its nice value, raised by this much).
const WRITER_NICENESS: i32 = 10;

fn run(shared: Arc<Shared>) {
    let _close = CloseOnExit(shared.clone());
    // Writing is background work: on a machine with few cores, the
    // program's threads (the launching thread, the driver's) go first.
    // On Linux the nice value is a thread's own (setpriority(2), "BUGS":
    // under NPTL it is a per-thread attribute), so this lowers the
    // writer's alone; elsewhere, or where it is refused, nothing changes.
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::process::nice(WRITER_NICENESS) {
        log::debug!("the capture writer keeps its priority: {e}");
    }
    loop {
        let msg = {
            let mut q = lock(&shared.queue);
            loop {
                if let Some(m) = q.msgs.pop_front() {
                    break m;
                }
                if q.closed {
                    return;
                }
                q = shared.work.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        };
        match msg {
            Msg::Job(job, bytes) => {
                match job() {
                    Ok(p) => lock(&shared.outcomes).written.push(p),
                    Err(e) => {
                        // The next flush returns it (a writer dropped
                        // unflushed logs it as an error).
                        log::debug!("writing a capture failed: {e}");
                        lock(&shared.outcomes).errors.push(e);
                    }
                }
                let mut q = lock(&shared.queue);
                q.jobs -= 1;
                q.bytes -= bytes;
                shared.room.notify_all();
            }
            Msg::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

impl BackgroundWriter {
    /// A writer whose queue holds at most `limit`; an error when the system
    /// refuses its thread (`EAGAIN` under an address-space or process
    /// limit).
    pub fn new(limit: QueueLimit) -> std::io::Result<Self> {
        let limit = QueueLimit {
            jobs: limit.jobs.max(1),
            ..limit
        };
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            work: Condvar::new(),
            room: Condvar::new(),
            outcomes: Mutex::new(Outcomes::default()),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("reprise-writer".into())
            .spawn(move || run(s))?;
        Ok(BackgroundWriter {
            shared,
            limit,
            thread: Some(thread),
        })
    }

    fn push(&self, mut q: MutexGuard<'_, Queue>, msg: Msg) -> Result<()> {
        if q.closed {
            return Err(Error::WriterStopped);
        }
        q.msgs.push_back(msg);
        self.shared.work.notify_one();
        Ok(())
    }

    /// Queues a job whose captures hold `bytes`; blocks while the queue is
    /// full (a job that would take it past [`QueueLimit::bytes`] waits
    /// until the jobs ahead of it are written, or the queue is empty).
    pub fn submit(&self, job: Job, bytes: u64) -> Result<()> {
        let mut q = lock(&self.shared.queue);
        while !q.closed
            && q.jobs > 0
            && (q.jobs >= self.limit.jobs || q.bytes.saturating_add(bytes) > self.limit.bytes)
        {
            q = self.shared.room.wait(q).unwrap_or_else(|e| e.into_inner());
        }
        if !q.closed {
            q.jobs += 1;
            q.bytes += bytes;
        }
        self.push(q, Msg::Job(job, bytes))
    }

    /// Captures waiting or being written, and the bytes they hold.
    pub fn pending(&self) -> (usize, u64) {
        let q = lock(&self.shared.queue);
        (q.jobs, q.bytes)
    }

    /// Waits until every job submitted so far is written, leaving their
    /// outcomes for the next [`BackgroundWriter::flush`].
    pub fn wait_idle(&self) {
        let mut q = lock(&self.shared.queue);
        while !q.closed && q.jobs > 0 {
            q = self.shared.room.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Waits for every job submitted so far. Returns the captures written
    /// since the last flush, or the first error since then.
    pub fn flush(&self) -> Result<Vec<PathBuf>> {
        let (done_tx, done_rx) = sync_channel(1);
        self.push(lock(&self.shared.queue), Msg::Flush(done_tx))?;
        done_rx.recv().map_err(|_| Error::WriterStopped)?;
        let mut o = lock(&self.shared.outcomes);
        if !o.errors.is_empty() {
            let first = o.errors.remove(0);
            o.errors.clear();
            return Err(first);
        }
        Ok(std::mem::take(&mut o.written))
    }

    /// Flushes and stops the thread.
    pub fn finish(mut self) -> Result<Vec<PathBuf>> {
        let r = self.flush();
        self.stop();
        r
    }

    /// Lets the thread write what is queued, then stops it.
    fn stop(&mut self) {
        {
            let mut q = lock(&self.shared.queue);
            q.closed = true;
            self.shared.work.notify_all();
            self.shared.room.notify_all();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for BackgroundWriter {
    fn drop(&mut self) {
        self.stop();
        for e in &lock(&self.shared.outcomes).errors {
            log::error!("capture not written: {e}");
        }
    }
}

#[cfg(test)]
mod tests;
