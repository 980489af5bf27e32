//! The queue's bookkeeping, shared by every backend: the [`Ledger`].
//!
//! A queue numbers each piece of work it enqueues (a copy, a launch, a
//! device copy) with a [`Ticket`], keeps the host buffers of its copies
//! until a synchronize has covered them, and hands them back in submission
//! order through [`Queue::reclaim`](super::Queue::reclaim). A synchronize
//! raises a [`Completion`] mark from the device's callback (a CUDA host
//! function, an HSA signal handler, the host executor's worker thread);
//! the ledger numbers the marks, remembers the synchronize in flight and
//! which work it covers, so that a synchronize abandoned before more work
//! came is resumed, and one that covers only part of the work is waited
//! for before the next is enqueued.
//!
//! The buffers are kept in a [`Fifo`]: a `VecDeque` where there is an
//! allocator (`VecLedger`, feature `alloc`), or a fixed-capacity
//! `heapless::Deque` where there is none ([`FixedLedger`]).
//!
//! ```
//! use core::task::{Context, Poll, Waker};
//! use reprise_core::completion::Completion;
//! use reprise_core::exec::{FixedLedger, Ticket};
//!
//! let mut ledger: FixedLedger<[u8; 4], 2> = FixedLedger::new();
//! let done = Completion::new();
//! let mut cx = Context::from_waker(Waker::noop());
//! // An upload: a ticket, and its buffer held until a synchronize.
//! let t = ledger.issue();
//! ledger.hold(t, [1, 2, 3, 4]).unwrap();
//! assert_eq!(ledger.reclaim(), None, "not covered yet");
//! // The synchronize enqueues a callback that raises mark 1 ...
//! let mut enqueued = None;
//! let poll = ledger.poll_synchronize(&done, &mut cx, |mark| {
//!     enqueued = Some(mark);
//!     Ok::<(), ()>(())
//! });
//! assert_eq!((poll, enqueued), (Poll::Pending, Some(1)));
//! // ... which the device's callback raises; the synchronize covers `t`.
//! done.signal(1);
//! let covered = ledger.poll_synchronize(&done, &mut cx, |_| Ok::<(), ()>(()));
//! assert_eq!(covered, Poll::Ready(Ok(Some(t))));
//! ledger.complete(t);
//! assert_eq!(ledger.reclaim(), Some((t, [1, 2, 3, 4])));
//! // Nothing new: a synchronize has nothing to wait for.
//! let idle = ledger.poll_synchronize(&done, &mut cx, |_| Err(()));
//! assert_eq!(idle, Poll::Ready(Ok(None)));
//! ```

use core::marker::PhantomData;
use core::task::{Context, Poll};

use super::Ticket;
use crate::completion::Completion;

/// A first-in, first-out store of what a [`Ledger`] holds.
pub trait Fifo<T> {
    /// Appends `item`, or gives it back when the store is full.
    fn push_back(&mut self, item: T) -> Result<(), T>;
    /// Removes the oldest item.
    fn pop_front(&mut self) -> Option<T>;
    /// The oldest item.
    fn front(&self) -> Option<&T>;
    /// How many items are stored.
    fn len(&self) -> usize;
    /// Whether none are.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A [`Fifo`] whose `push_back` never fails (it grows): a ledger over one
/// offers [`Ledger::keep`].
pub trait Unbounded {}

impl<T, const N: usize> Fifo<T> for heapless::Deque<T, N> {
    fn push_back(&mut self, item: T) -> Result<(), T> {
        heapless::Deque::push_back(self, item)
    }
    fn pop_front(&mut self) -> Option<T> {
        heapless::Deque::pop_front(self)
    }
    fn front(&self) -> Option<&T> {
        heapless::Deque::front(self)
    }
    fn len(&self) -> usize {
        heapless::Deque::len(self)
    }
}

#[cfg(feature = "alloc")]
impl<T> Fifo<T> for alloc::collections::VecDeque<T> {
    fn push_back(&mut self, item: T) -> Result<(), T> {
        alloc::collections::VecDeque::push_back(self, item);
        Ok(())
    }
    fn pop_front(&mut self) -> Option<T> {
        alloc::collections::VecDeque::pop_front(self)
    }
    fn front(&self) -> Option<&T> {
        alloc::collections::VecDeque::front(self)
    }
    fn len(&self) -> usize {
        alloc::collections::VecDeque::len(self)
    }
}

#[cfg(feature = "alloc")]
impl<T> Unbounded for alloc::collections::VecDeque<T> {}

/// A ledger whose buffers are kept in a `VecDeque` (feature `alloc`).
#[cfg(feature = "alloc")]
pub type VecLedger<B> = Ledger<B, alloc::collections::VecDeque<(Ticket, B)>>;

/// A ledger that holds at most `N` buffers, without an allocator.
pub type FixedLedger<B, const N: usize> = Ledger<B, heapless::Deque<(Ticket, B), N>>;

/// The buffer a full [`Ledger`] could not hold, given back: the copy it was
/// for must not be enqueued (or must be waited for before the buffer goes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full<B>(pub B);

impl<B> core::fmt::Display for Full<B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("the queue holds as many buffers as it can; synchronize and reclaim first")
    }
}

impl<B: core::fmt::Debug> core::error::Error for Full<B> {}

/// A queue's tickets, the buffers of its work in flight, the buffers a
/// synchronize covered (until they are reclaimed), and its synchronize
/// marks. See the [module documentation](self).
///
/// Tickets rise by one per piece of work, from 1. A buffer is held under
/// its work's ticket and comes back from [`Ledger::reclaim`] once
/// [`Ledger::complete`] has been told its ticket is covered, oldest first.
#[derive(Debug)]
pub struct Ledger<B, F> {
    /// The last ticket issued (0: none yet).
    issued: u64,
    /// Every ticket up to here is complete.
    covered: u64,
    /// The last synchronize mark handed out.
    marks: u64,
    /// The synchronize in flight: its mark and the last ticket it covers.
    waiting: Option<(u64, u64)>,
    held: F,
    _buffers: PhantomData<B>,
}

impl<B, F: Fifo<(Ticket, B)> + Default> Default for Ledger<B, F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B, F: Fifo<(Ticket, B)> + Default> Ledger<B, F> {
    /// An empty ledger: no tickets, no buffers, no synchronize.
    pub fn new() -> Self {
        Ledger {
            issued: 0,
            covered: 0,
            marks: 0,
            waiting: None,
            held: F::default(),
            _buffers: PhantomData,
        }
    }
}

impl<B, F: Fifo<(Ticket, B)>> Ledger<B, F> {
    /// Numbers the next piece of work.
    pub fn issue(&mut self) -> Ticket {
        self.issued += 1;
        Ticket(self.issued)
    }

    /// The ticket the next [`Ledger::issue`] gives.
    pub fn next(&self) -> Ticket {
        Ticket(self.issued + 1)
    }

    /// The last ticket issued (`Ticket(0)` before any).
    pub fn last(&self) -> Ticket {
        Ticket(self.issued)
    }

    /// The last ticket known complete (`Ticket(0)` before any).
    pub fn covered(&self) -> Ticket {
        Ticket(self.covered)
    }

    /// Whether everything issued is known complete.
    pub fn is_idle(&self) -> bool {
        self.covered == self.issued
    }

    /// How many buffers the ledger holds (in flight or covered and not yet
    /// reclaimed).
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Holds `buffer` for the work of `ticket` (issued, and no older than
    /// the last ticket held) until a synchronize covers it; a full ledger
    /// gives it back.
    pub fn hold(&mut self, ticket: Ticket, buffer: B) -> Result<(), Full<B>> {
        debug_assert!(ticket.0 <= self.issued, "{ticket:?} was never issued");
        self.held
            .push_back((ticket, buffer))
            .map_err(|(_, buffer)| Full(buffer))
    }

    /// [`Ledger::hold`], for a ledger that never fills.
    pub fn keep(&mut self, ticket: Ticket, buffer: B)
    where
        F: Unbounded,
    {
        // An unbounded store takes everything.
        let _ = self.hold(ticket, buffer);
    }

    /// Everything up to `through` is complete: its buffers can be
    /// reclaimed. Marks never fall: an older `through` changes nothing.
    pub fn complete(&mut self, through: Ticket) {
        self.covered = self.covered.max(through.0.min(self.issued));
    }

    /// Hands back the oldest buffer whose work is complete.
    pub fn reclaim(&mut self) -> Option<(Ticket, B)> {
        if self.held.front()?.0.0 <= self.covered {
            self.held.pop_front()
        } else {
            None
        }
    }

    /// Empties the ledger for a queue that is going: buffers of complete
    /// work are dropped, those of work still in flight are given to
    /// `in_flight` (to be leaked where the device may still use them).
    pub fn release(&mut self, mut in_flight: impl FnMut(B)) {
        while let Some((t, b)) = self.held.pop_front() {
            if t.0 > self.covered {
                in_flight(b);
            }
        }
    }

    /// The mark of the synchronize in flight, if one is.
    pub fn synchronizing(&self) -> Option<u64> {
        self.waiting.map(|(mark, _)| mark)
    }

    /// Forgets the synchronize in flight (its callback will never come, or
    /// its error was reported): the next [`Ledger::poll_synchronize`]
    /// enqueues a new one.
    pub fn cancel_synchronize(&mut self) {
        self.waiting = None;
    }

    /// Drives a synchronize: `Ready(Ok(Some(t)))` once everything issued
    /// (through `t`) has completed, `Ready(Ok(None))` at once when nothing
    /// was issued since the last one completed. Calls `enqueue(mark)` to
    /// have the device raise `completion` to `mark` after the work issued
    /// so far, when no synchronize in flight covers it all; a synchronize
    /// in flight that covers only part of the work (abandoned before more
    /// came) is waited for first. An error from `enqueue` is returned and
    /// nothing is in flight.
    ///
    /// The caller decides what is complete: it calls [`Ledger::complete`]
    /// with `t` once it has checked what the device reported. Cancel-safe:
    /// dropping the poller loses nothing, and the next call resumes.
    pub fn poll_synchronize<E>(
        &mut self,
        completion: &Completion,
        cx: &mut Context<'_>,
        mut enqueue: impl FnMut(u64) -> Result<(), E>,
    ) -> Poll<Result<Option<Ticket>, E>> {
        loop {
            match self.waiting {
                Some((mark, covers)) => {
                    if completion.poll_reached(mark, cx).is_pending() {
                        return Poll::Pending;
                    }
                    self.waiting = None;
                    if covers == self.issued {
                        return Poll::Ready(Ok(Some(Ticket(covers))));
                    }
                }
                None if self.is_idle() => return Poll::Ready(Ok(None)),
                None => {
                    let mark = self.marks + 1;
                    if let Err(e) = enqueue(mark) {
                        return Poll::Ready(Err(e));
                    }
                    self.marks = mark;
                    self.waiting = Some((mark, self.issued));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::task::Waker;

    type L = FixedLedger<u8, 2>;

    fn cx() -> Context<'static> {
        Context::from_waker(Waker::noop())
    }

    #[test]
    fn buffers_come_back_in_order_once_covered() {
        let mut l = L::new();
        let (a, b) = (l.issue(), l.issue());
        l.hold(a, 1).unwrap();
        l.hold(b, 2).unwrap();
        assert_eq!(l.hold(l.last(), 3), Err(Full(3)), "two at most");
        l.complete(a);
        assert_eq!(l.reclaim(), Some((a, 1)));
        assert_eq!(l.reclaim(), None);
        l.complete(Ticket(99));
        assert_eq!(l.covered(), b, "never past what was issued");
        assert_eq!(l.reclaim(), Some((b, 2)));
        assert!(l.is_idle());
    }

    #[test]
    fn a_partial_synchronize_is_waited_for_before_the_next() {
        let (mut l, done) = (L::new(), Completion::new());
        let mut marks = [0u64; 4];
        let mut n = 0;
        let mut enqueue = |m| {
            marks[n] = m;
            n += 1;
            Ok::<(), ()>(())
        };
        l.issue();
        assert!(
            l.poll_synchronize(&done, &mut cx(), &mut enqueue)
                .is_pending()
        );
        // Abandoned; more work comes.
        let t = l.issue();
        assert_eq!(l.synchronizing(), Some(1));
        assert!(
            l.poll_synchronize(&done, &mut cx(), &mut enqueue)
                .is_pending()
        );
        done.signal(1);
        // Mark 1 covers only the first: mark 2 is enqueued for the second.
        assert!(
            l.poll_synchronize(&done, &mut cx(), &mut enqueue)
                .is_pending()
        );
        done.signal(2);
        let r = l.poll_synchronize(&done, &mut cx(), &mut enqueue);
        assert_eq!(r, Poll::Ready(Ok(Some(t))));
        assert_eq!((n, marks), (2, [1, 2, 0, 0]));
    }

    #[test]
    fn a_failed_enqueue_leaves_nothing_in_flight() {
        let (mut l, done) = (L::new(), Completion::new());
        l.issue();
        let r = l.poll_synchronize(&done, &mut cx(), |_| Err("no"));
        assert_eq!(r, Poll::Ready(Err("no")));
        assert_eq!(l.synchronizing(), None);
        // The next try enqueues mark 1 again.
        let mut got = 0;
        let _ = l.poll_synchronize(&done, &mut cx(), |m| {
            got = m;
            Ok::<(), ()>(())
        });
        assert_eq!(got, 1);
    }

    #[test]
    fn release_hands_over_only_what_is_in_flight() {
        let mut l = L::new();
        let a = l.issue();
        l.hold(a, 1).unwrap();
        l.complete(a);
        let b = l.issue();
        l.hold(b, 2).unwrap();
        let mut leaked = 0;
        l.release(|b| leaked += b);
        assert_eq!((leaked, l.held()), (2, 0));
    }
}
