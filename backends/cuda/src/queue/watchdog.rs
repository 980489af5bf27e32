//! The watchdog of a queue whose synchronizes complete through a
//! `cuLaunchHostFunc` host function (where the driver has no
//! `cuStreamAddCallback`).

use std::sync::{Arc, Condvar, Mutex};
use std::task::Waker;
use std::time::Duration;

use crate::error::CudaError;

/// How often a synchronize waiting on a `cuLaunchHostFunc` host function
/// is polled anyway.
const WATCH_EVERY: Duration = Duration::from_millis(20);

/// Wakes a waiting synchronize now and then, where completion comes from
/// `cuLaunchHostFunc`: its host function never runs once the context has
/// faulted, so without these wakes a fault would leave the synchronize
/// waiting forever. The woken task finds the error by asking the stream.
#[derive(Debug)]
pub(super) struct Watchdog {
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
    pub(super) fn start() -> Result<Watchdog, CudaError> {
        let shared = Arc::new((Mutex::new(Watch::default()), Condvar::new()));
        let s = shared.clone();
        const NAME: &str = "reprise-cuda-watch";
        let thread = std::thread::Builder::new()
            .name(NAME.into())
            .spawn(move || watch(&s))
            .map_err(|e| CudaError::Thread {
                name: NAME,
                errno: e.raw_os_error(),
                io_kind: e.kind(),
            })?;
        Ok(Watchdog {
            shared,
            thread: Some(thread),
        })
    }

    /// Wakes `waker` [`WATCH_EVERY`] after the first arming since the last
    /// wake; arming again before then only replaces the waker.
    pub(super) fn arm(&self, waker: &Waker) {
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
