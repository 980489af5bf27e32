//! Entering the state from a hook: one thread at a time, waiting a bounded
//! time for another thread's recording, never from inside the interposer
//! itself or in a forked child.

use super::*;

thread_local! {
    /// Set while this thread is inside the interposer's recording code: a
    /// hook the driver (or a tool's callback) calls from in there passes
    /// straight through instead of waiting for the lock it holds.
    static INSIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

pub(super) use crate::process::OWNER;
use crate::process::forked;

/// How long a hook waits for another thread's recording before passing
/// its call through.
const WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The phase, held by this thread: lock order the phase, then the heap.
pub(super) struct Entered(MutexGuard<'static, Phase>);

impl std::ops::Deref for Entered {
    type Target = Phase;
    fn deref(&self) -> &Phase {
        &self.0
    }
}

impl std::ops::DerefMut for Entered {
    fn deref_mut(&mut self) -> &mut Phase {
        &mut self.0
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        INSIDE.with(|i| i.set(false));
    }
}

/// Why a hook got no phase.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Busy {
    /// Called from inside the interposer, or in a forked child.
    Passing,
    /// Another thread held it longer than [`WAIT`].
    Timeout,
}

/// The phase for a hook: waits at most [`WAIT`] for another thread's
/// recording (a recorded launch holds it through its synchronize, which
/// may wait for work that needs this thread to go on).
pub(super) fn enter() -> Result<Entered, Busy> {
    if INSIDE.with(|i| i.get()) || forked() {
        return Err(Busy::Passing);
    }
    let start = std::time::Instant::now();
    let mut pause = std::time::Duration::from_micros(20);
    loop {
        match cell().try_lock() {
            Ok(g) => {
                INSIDE.with(|i| i.set(true));
                return Ok(Entered(g));
            }
            Err(std::sync::TryLockError::Poisoned(e)) => {
                INSIDE.with(|i| i.set(true));
                return Ok(Entered(e.into_inner()));
            }
            Err(std::sync::TryLockError::WouldBlock) if start.elapsed() < WAIT => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(2));
            }
            Err(std::sync::TryLockError::WouldBlock) => return Err(Busy::Timeout),
        }
    }
}
