//! std glue for executors: a parking `block_on`, executor errors with
//! their context, and locking that outlives a panic.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake};
use std::thread::Thread;

use reprise_core::exec::ExecError;

use crate::error::{Error, Result};

struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future to completion on this thread, parking between polls.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let waker = Arc::new(ThreadWaker(std::thread::current())).into();
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// Locks `m`, taking its data as it is when a holder panicked: the crate's
/// one answer to a poisoned lock.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// An executor's result, its error given what was being done
/// ([`Error::executor`]).
pub(crate) trait ErrorContext<T> {
    /// The value, or the executor's error while doing `what`.
    fn context(self, what: impl Into<String>) -> Result<T>;
}

impl<T, E: ExecError + Send + Sync + 'static> ErrorContext<T> for std::result::Result<T, E> {
    fn context(self, what: impl Into<String>) -> Result<T> {
        self.map_err(|e| Error::executor(what, e))
    }
}
