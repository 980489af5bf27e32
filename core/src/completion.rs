//! Completion signalling between an executor's callback thread and a future.
//!
//! A [`Completion`] holds a monotonically rising *mark* and one waker slot. A
//! queue numbers its synchronize points 1, 2, 3, ...; the callback that runs
//! when the device reaches point `n` (a CUDA host function, an HSA signal
//! handler, the host executor's worker thread) calls [`Completion::signal`]
//! with `n`, which only raises the mark and wakes: it never calls back into
//! the driver. The future awaiting point `n` polls
//! [`Completion::poll_reached`].
//!
//! On a microcontroller the callback is an interrupt handler. Where the
//! target has no 64-bit atomics (Cortex-M, 32-bit RISC-V) the mark is
//! `portable-atomic`'s fallback, a spin lock that leaves interrupts
//! enabled: a handler that signals while thread mode holds it would spin
//! forever. The final binary of a single-core device turns on
//! `portable-atomic`'s `unsafe-assume-single-core` feature (its
//! `critical-section` feature does not apply to targets that have 32-bit
//! compare-and-swap), so that the mark's updates mask interrupts instead:
//! `core/embedded` does, and tests an interrupt landing mid-update.
//!
//! ```
//! use reprise_core::completion::Completion;
//! use reprise_core::block_on;
//! let done = Completion::new();
//! std::thread::scope(|s| {
//!     s.spawn(|| done.signal(1));
//!     block_on(done.wait_for(1));
//! });
//! assert!(done.reached() >= 1);
//! ```

use core::future::{Future, poll_fn};
use core::sync::atomic::Ordering;

// 64-bit atomics: native where the target has them (the lock-free fast
// path), emulated on 32-bit microcontrollers that lack them.
use core::task::{Context, Poll};
use portable_atomic::AtomicU64;

use atomic_waker::AtomicWaker;

/// A rising completion mark plus a single-slot waker.
///
/// One task waits at a time (the slot holds one waker); any number of
/// threads may signal.
#[derive(Debug, Default)]
pub struct Completion {
    reached: AtomicU64,
    waker: AtomicWaker,
}

impl Completion {
    /// A completion at mark 0.
    pub const fn new() -> Self {
        Completion {
            reached: AtomicU64::new(0),
            waker: AtomicWaker::new(),
        }
    }

    /// Raises the mark to at least `mark` and wakes the waiting task. Safe to
    /// call from any thread, including driver callback threads; does nothing
    /// else.
    pub fn signal(&self, mark: u64) {
        self.reached.fetch_max(mark, Ordering::AcqRel);
        self.waker.wake();
    }

    /// The highest mark signalled so far.
    pub fn reached(&self) -> u64 {
        self.reached.load(Ordering::Acquire)
    }

    /// Ready once the mark is at least `mark`.
    pub fn poll_reached(&self, mark: u64, cx: &mut Context<'_>) -> Poll<()> {
        if self.reached() >= mark {
            return Poll::Ready(());
        }
        self.waker.register(cx.waker());
        // Re-check: a signal between the first check and `register` would
        // otherwise be missed.
        if self.reached() >= mark {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// Waits until the mark is at least `mark`.
    pub fn wait_for(&self, mark: u64) -> impl Future<Output = ()> + '_ {
        poll_fn(move |cx| self.poll_reached(mark, cx))
    }
}

/// Runs a future to completion on the current thread without an executor or
/// an allocator, spinning between polls until a waker fires.
///
/// Every waker made here bumps one global counter, so a wake is never lost
/// even when several threads block at once (they may re-poll spuriously).
/// Where `std` is available, prefer a parking `block_on` (reprise-std has
/// one): this one keeps a core busy while it waits.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = core::pin::pin!(fut);
    let waker = spin_waker::waker();
    let mut cx = Context::from_waker(&waker);
    loop {
        let seen = spin_waker::wakes();
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        while spin_waker::wakes() == seen {
            core::hint::spin_loop();
        }
    }
}

// A waker over static data only, so no waker can outlive what it points to.
#[allow(unsafe_code)]
mod spin_waker {
    //! Reason for `unsafe`: building a `Waker` without `alloc` needs
    //! `RawWaker`, whose constructor is unsafe. The vtable below ignores its
    //! data pointer (always null) and touches only a `static` counter, which
    //! satisfies the `RawWaker` contract for any number of clones on any
    //! thread for any lifetime.
    use core::sync::atomic::Ordering;
    use core::task::{RawWaker, RawWakerVTable, Waker};

    use portable_atomic::AtomicU64;

    static WAKES: AtomicU64 = AtomicU64::new(0);

    fn clone(_: *const ()) -> RawWaker {
        RawWaker::new(core::ptr::null(), &VTABLE)
    }
    fn wake(_: *const ()) {
        WAKES.fetch_add(1, Ordering::Release);
    }
    fn drop(_: *const ()) {}

    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake, drop);

    pub(super) fn waker() -> Waker {
        // SAFETY: the vtable's functions are thread-safe, never dereference the
        // (null) data pointer and only touch a `static`, so the RawWaker
        // contract holds for every clone, on every thread, for any lifetime.
        unsafe { Waker::from_raw(RawWaker::new(core::ptr::null(), &VTABLE)) }
    }

    pub(super) fn wakes() -> u64 {
        WAKES.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::sync::Arc;

    #[test]
    fn wakes_from_another_thread() {
        let c = Arc::new(Completion::new());
        let c2 = c.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            c2.signal(1);
            std::thread::sleep(std::time::Duration::from_millis(20));
            c2.signal(2);
        });
        block_on(c.wait_for(2));
        assert_eq!(c.reached(), 2);
        t.join().unwrap();
    }

    #[test]
    fn marks_only_rise() {
        let c = Completion::new();
        c.signal(5);
        c.signal(3);
        assert_eq!(c.reached(), 5);
        let waker = core::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert_eq!(c.poll_reached(5, &mut cx), Poll::Ready(()));
        assert_eq!(c.poll_reached(6, &mut cx), Poll::Pending);
    }

    #[test]
    fn block_on_plain_value() {
        assert_eq!(block_on(async { 7 }), 7);
    }
}
