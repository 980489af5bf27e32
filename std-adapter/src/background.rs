//! A background writer: capture files are written by one thread fed through a
//! bounded queue, off the launching thread.
//!
//! The queue is bounded, so a producer faster than the disk blocks in
//! [`BackgroundWriter::submit`] (back-pressure) instead of piling snapshots up
//! in memory. [`BackgroundWriter::flush`] waits for everything submitted and
//! reports what was written and the first error; dropping the writer also
//! waits, so no capture is lost when the process exits normally.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::error::{Error, Result};

/// One unit of work: writes a capture and returns its descriptor's path.
pub type Job = Box<dyn FnOnce() -> Result<PathBuf> + Send + 'static>;

enum Msg {
    Job(Job),
    Flush(SyncSender<()>),
}

#[derive(Default)]
struct Outcomes {
    written: Vec<PathBuf>,
    errors: Vec<Error>,
}

/// A thread that runs capture-writing jobs in submission order.
pub struct BackgroundWriter {
    tx: Option<SyncSender<Msg>>,
    thread: Option<JoinHandle<()>>,
    outcomes: Arc<Mutex<Outcomes>>,
}

impl std::fmt::Debug for BackgroundWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundWriter").finish_non_exhaustive()
    }
}

fn run(rx: Receiver<Msg>, outcomes: Arc<Mutex<Outcomes>>) {
    for msg in rx {
        match msg {
            Msg::Job(job) => {
                let r = job();
                let mut o = outcomes.lock().unwrap_or_else(|e| e.into_inner());
                match r {
                    Ok(p) => o.written.push(p),
                    Err(e) => {
                        // The next flush returns it (a writer dropped
                        // unflushed logs it as an error).
                        log::debug!("writing a capture failed: {e}");
                        o.errors.push(e);
                    }
                }
            }
            Msg::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

impl BackgroundWriter {
    /// A writer whose queue holds at most `depth` pending jobs.
    pub fn new(depth: usize) -> Self {
        let (tx, rx) = sync_channel(depth.max(1));
        let outcomes = Arc::new(Mutex::new(Outcomes::default()));
        let o = outcomes.clone();
        let thread = std::thread::Builder::new()
            .name("reprise-writer".into())
            .spawn(move || run(rx, o))
            .expect("spawning the capture writer thread");
        BackgroundWriter {
            tx: Some(tx),
            thread: Some(thread),
            outcomes,
        }
    }

    fn send(&self, msg: Msg) -> Result<()> {
        self.tx
            .as_ref()
            .and_then(|tx| tx.send(msg).ok())
            .ok_or(Error::WriterStopped)
    }

    /// Queues a job; blocks while the queue is full.
    pub fn submit(&self, job: Job) -> Result<()> {
        self.send(Msg::Job(job))
    }

    /// Waits for every job submitted so far. Returns the captures written
    /// since the last flush, or the first error since then.
    pub fn flush(&self) -> Result<Vec<PathBuf>> {
        let (done_tx, done_rx) = sync_channel(1);
        self.send(Msg::Flush(done_tx))?;
        done_rx.recv().map_err(|_| Error::WriterStopped)?;
        let mut o = self.outcomes.lock().unwrap_or_else(|e| e.into_inner());
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

    fn stop(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for BackgroundWriter {
    fn drop(&mut self) {
        self.stop();
        let o = self.outcomes.lock().unwrap_or_else(|e| e.into_inner());
        for e in &o.errors {
            log::error!("capture not written: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn runs_jobs_in_order_and_reports_errors() {
        let w = BackgroundWriter::new(1);
        let order = Arc::new(Mutex::new(Vec::new()));
        for i in 0..5 {
            let order = order.clone();
            w.submit(Box::new(move || {
                order.lock().unwrap().push(i);
                Ok(PathBuf::from(format!("c{i}.json")))
            }))
            .unwrap();
        }
        let written = w.flush().unwrap();
        assert_eq!(written.len(), 5);
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4]);
        w.submit(Box::new(|| {
            Err(Error::io(
                "capture.json",
                "write",
                std::io::Error::other("disk full"),
            ))
        }))
        .unwrap();
        assert_eq!(
            w.flush().unwrap_err().to_string(),
            "capture.json: write failed: disk full"
        );
        assert!(w.finish().unwrap().is_empty());
    }

    #[test]
    fn drop_waits_for_pending_jobs() {
        let count = Arc::new(AtomicUsize::new(0));
        {
            let w = BackgroundWriter::new(2);
            for _ in 0..4 {
                let c = count.clone();
                w.submit(Box::new(move || {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    c.fetch_add(1, Ordering::SeqCst);
                    Ok(PathBuf::new())
                }))
                .unwrap();
            }
        }
        assert_eq!(count.load(Ordering::SeqCst), 4);
    }
}
