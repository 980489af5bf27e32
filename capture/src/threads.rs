//! Scoped threads that degrade instead of panicking: where the system
//! refuses a thread (`EAGAIN` under an address-space or process limit),
//! the work runs on the calling thread, so a store read or write is slower
//! there, never a panic (`std::thread::Scope::spawn` panics on failure).

use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{Builder, Scope, ScopedJoinHandle};

/// The lock of `m`, whether or not a thread panicked holding it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Work given to [`spawn_or_run`]: on a thread of its own, or already done.
pub(crate) enum Task<'scope, T> {
    /// Running on a scoped thread.
    Thread(ScopedJoinHandle<'scope, Option<T>>),
    /// Run on the calling thread, because no thread could be made.
    Done(Option<T>),
}

impl<T> Task<'_, T> {
    /// The work's result, as [`ScopedJoinHandle::join`] gives it.
    pub(crate) fn join(self) -> std::thread::Result<T> {
        let done = match self {
            Task::Done(t) => t,
            Task::Thread(h) => h.join()?,
        };
        done.ok_or_else(|| Box::new("a scoped task lost its work") as _)
    }
}

/// `f` on a new thread of scope `s`, or on this thread when none can be
/// made.
pub(crate) fn spawn_or_run<'scope, T, F>(s: &'scope Scope<'scope, '_>, f: F) -> Task<'scope, T>
where
    T: Send + 'scope,
    F: FnOnce() -> T + Send + 'scope,
{
    let slot = Arc::new(Mutex::new(Some(f)));
    let theirs = Arc::clone(&slot);
    let take = |slot: &Mutex<Option<F>>| slot.lock().unwrap_or_else(PoisonError::into_inner).take();
    match Builder::new().spawn_scoped(s, move || take(&theirs).map(|f| f())) {
        Ok(h) => Task::Thread(h),
        Err(_) => Task::Done(take(&slot).map(|f| f())),
    }
}

/// `f` of each of `items`, each on a thread of its own (on the calling
/// thread for a lone item, or where no thread can be made), in order.
pub(crate) fn run_all<I: Send, T: Send>(
    items: Vec<I>,
    f: impl Fn(I) -> T + Sync,
) -> Vec<std::thread::Result<T>> {
    if items.len() <= 1 {
        return items.into_iter().map(|i| Ok(f(i))).collect();
    }
    std::thread::scope(|s| {
        let f = &f;
        let tasks: Vec<_> = items
            .into_iter()
            .map(|i| spawn_or_run(s, move || f(i)))
            .collect();
        tasks.into_iter().map(Task::join).collect()
    })
}

/// `f` on a new thread of scope `s`; `None` when none can be made (for
/// work that must not run on the calling thread: one that waits for what
/// the calling thread does next).
pub(crate) fn spawn<'scope, T, F>(
    s: &'scope Scope<'scope, '_>,
    f: F,
) -> Option<ScopedJoinHandle<'scope, T>>
where
    T: Send + 'scope,
    F: FnOnce() -> T + Send + 'scope,
{
    Builder::new().spawn_scoped(s, f).ok()
}

#[cfg(test)]
mod tests;
