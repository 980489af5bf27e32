//! What the queues of one CUDA context share, whichever executor made them:
//! the kernels in flight on any of them (a kernel fault is sticky for the
//! whole context, so any queue may be the one to find it), and the globals
//! the executor handed out (so a queue keeps loaded the module of a global
//! its copies read or write, or whose address it passes to a kernel).
//!
//! Every executor of one device retains the same primary context, so two
//! executors opened on device 0 (two recorders, say) share one
//! [`ContextState`].
//!
//! The state names no module type: a module holds its device, whose state
//! this is, so the state keeps modules as [`KeepAlive`]s (a queue holds
//! them only to keep them loaded), each known by its address
//! ([`module_key`]).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Locks `m`, whatever a panic elsewhere left in it (every update here is
/// one push or removal, never left half done).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The shared state of one context (see the module's documentation).
#[derive(Debug, Default)]
pub(crate) struct ContextState {
    /// Kernels launched on a queue of the context whose queue has not yet
    /// synchronized successfully since, in launch order.
    in_flight: Mutex<Vec<InFlight>>,
    /// Globals handed out by [`crate::CudaImage`]s of the context, by
    /// address.
    globals: Mutex<BTreeMap<u64, Global>>,
}

/// A kernel launched and not yet known complete.
#[derive(Debug)]
struct InFlight {
    /// The queue that launched it ([`ContextState::new_queue_id`]).
    queue: u64,
    /// The launch's sequence number in that queue.
    seq: u64,
    name: Arc<str>,
    /// The queues that have named it in a [`crate::CudaError::KernelFault`]:
    /// each names a fault once.
    named_by: Vec<u64>,
}

/// A loaded module, as the state knows it: of any type (`Debug`, for the
/// queues that keep one to derive it).
pub(crate) trait Loaded: fmt::Debug + Send + Sync {}

impl<T: fmt::Debug + Send + Sync + ?Sized> Loaded for T {}

/// A share of a loaded module that keeps it loaded.
pub(crate) type KeepAlive = Arc<dyn Loaded>;

/// A global of a loaded module.
#[derive(Debug)]
struct Global {
    /// One past its last byte.
    end: u64,
    /// The module (its address: [`module_key`]), for removing its globals
    /// when it unloads.
    module: usize,
    /// The module, for a queue to keep.
    weak: Weak<dyn Loaded>,
}

/// What identifies a module in [`ContextState`]: its address, unique while
/// it is loaded (its globals are removed before it is freed). The same for
/// the module (`&Module`, as its `Drop` has it) as for an `Arc` of it, of
/// its own type or a [`KeepAlive`]: pass the module (`&**arc`), not the
/// `Arc`.
pub(crate) fn module_key<T: ?Sized>(module: &T) -> usize {
    std::ptr::from_ref(module).cast::<()>() as usize
}

impl ContextState {
    /// The state of the context `ctx` (its handle, as an address): the one
    /// every live `Device` of that context holds, else a new one.
    pub(crate) fn of(ctx: usize) -> Arc<ContextState> {
        static ALL: Mutex<Vec<(usize, Weak<ContextState>)>> = Mutex::new(Vec::new());
        let mut all = lock(&ALL);
        // A context whose devices are all gone was released: a later one at
        // the same handle starts afresh.
        all.retain(|(_, w)| w.strong_count() > 0);
        if let Some(state) = all
            .iter()
            .find(|(c, _)| *c == ctx)
            .and_then(|(_, w)| w.upgrade())
        {
            return state;
        }
        let state = Arc::new(ContextState::default());
        all.push((ctx, Arc::downgrade(&state)));
        state
    }

    /// Lets go of `state`, the holder's share of the state of its context,
    /// and then calls `release`, which releases the holder's retain of the
    /// context. In that order: once the context is released, another
    /// thread may retain a fresh one at the same handle, which must not be
    /// given this state (and its kernels in flight) by [`ContextState::of`].
    pub(crate) fn release(state: Arc<ContextState>, release: impl FnOnce()) {
        drop(state);
        release();
    }

    /// A number no other queue of the process has.
    pub(crate) fn new_queue_id() -> u64 {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }

    /// Queue `queue` launched kernel `name` as its operation `seq`.
    pub(crate) fn launched(&self, queue: u64, seq: u64, name: &Arc<str>) {
        lock(&self.in_flight).push(InFlight {
            queue,
            seq,
            name: name.clone(),
            named_by: Vec::new(),
        });
    }

    /// Queue `queue`'s launch `seq` failed: the kernel never ran. (A launch
    /// counts as in flight from just before its driver call, so that a
    /// fault met meanwhile on another thread names it.)
    pub(crate) fn not_launched(&self, queue: u64, seq: u64) {
        lock(&self.in_flight).retain(|k| k.queue != queue || k.seq != seq);
    }

    /// A synchronize of `queue` found its operations up to `seq` complete
    /// without a kernel fault: its kernels among them faulted nowhere.
    pub(crate) fn covered(&self, queue: u64, seq: u64) {
        lock(&self.in_flight).retain(|k| k.queue != queue || k.seq > seq);
    }

    /// `queue` is gone after its stream was found idle without an error.
    pub(crate) fn forget_queue(&self, queue: u64) {
        lock(&self.in_flight).retain(|k| k.queue != queue);
    }

    /// The kernels to name when `queue` meets a kernel fault: every kernel
    /// in flight in the context (on any queue) that `queue` has not named
    /// yet, each name once, in launch order; `None` when there is none (no
    /// kernel in flight, or `queue` named them all before). They count as
    /// named by `queue` from now on.
    pub(crate) fn suspects(&self, queue: u64) -> Option<Vec<String>> {
        let mut in_flight = lock(&self.in_flight);
        let mut names: Vec<String> = Vec::new();
        for k in in_flight
            .iter_mut()
            .filter(|k| !k.named_by.contains(&queue))
        {
            k.named_by.push(queue);
            if !names.iter().any(|n| **n == *k.name) {
                names.push(k.name.to_string());
            }
        }
        (!names.is_empty()).then_some(names)
    }

    /// `module`'s global at `addr` (`size` bytes) was handed out: a copy of
    /// it, or a launch given its address, keeps `module` loaded.
    pub(crate) fn add_global<M: Loaded + 'static>(&self, addr: u64, size: u64, module: &Arc<M>) {
        if size == 0 {
            return;
        }
        lock(&self.globals).insert(
            addr,
            Global {
                end: addr.saturating_add(size),
                module: module_key(&**module),
                weak: Arc::downgrade(module) as Weak<dyn Loaded>,
            },
        );
    }

    /// The module with key `module` ([`module_key`]) is about to unload.
    pub(crate) fn remove_globals(&self, module: usize) {
        lock(&self.globals).retain(|_, g| g.module != module);
    }

    /// The loaded modules with a global in one of `ranges` (device address,
    /// length), each once.
    pub(crate) fn modules_in(
        &self,
        ranges: impl IntoIterator<Item = (u64, usize)>,
    ) -> Vec<KeepAlive> {
        let globals = lock(&self.globals);
        let mut found: Vec<KeepAlive> = Vec::new();
        if globals.is_empty() {
            return found;
        }
        for (start, len) in ranges.into_iter().filter(|r| r.1 > 0) {
            let end = start.saturating_add(len as u64);
            // Globals do not overlap: those starting before `end`, latest
            // first, until one ends at or before `start`.
            for g in globals.range(..end).rev().map(|(_, g)| g) {
                if g.end <= start {
                    break;
                }
                if !found.iter().any(|m| module_key(&**m) == g.module) {
                    // A module being dropped (on another thread) cannot be
                    // kept; nothing of it may be in use by then.
                    found.extend(g.weak.upgrade());
                }
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_names_the_kernels_in_flight_on_every_queue_once_per_queue() {
        let s = ContextState::default();
        let (a, b) = (ContextState::new_queue_id(), ContextState::new_queue_id());
        assert_ne!(a, b);
        let (foo, bar): (Arc<str>, Arc<str>) = ("foo".into(), "bar".into());
        assert_eq!(s.suspects(a), None, "nothing in flight");
        // b's foo completes before a's bar runs.
        s.launched(b, 1, &foo);
        s.covered(b, 1);
        s.launched(a, 1, &bar);
        s.launched(a, 2, &bar);
        assert_eq!(s.suspects(a), Some(vec!["bar".to_owned()]));
        assert_eq!(s.suspects(b), Some(vec!["bar".to_owned()]), "not foo");
        // Each queue names them once.
        assert_eq!(s.suspects(a), None);
        assert_eq!(s.suspects(b), None);
        // Launched since: named, with the others in flight already named.
        s.launched(b, 2, &foo);
        assert_eq!(s.suspects(b), Some(vec!["foo".to_owned()]));
        assert_eq!(s.suspects(a), Some(vec!["foo".to_owned()]));
        // A queue's successful synchronize covers only its own kernels up
        // to the sequence number it waited for.
        s.launched(a, 3, &foo);
        s.covered(a, 2);
        let fresh = ContextState::new_queue_id();
        assert_eq!(
            s.suspects(fresh),
            Some(vec!["foo".to_owned()]),
            "b's foo 2 and a's foo 3"
        );
        s.launched(a, 4, &bar);
        assert_eq!(
            s.suspects(b),
            Some(vec!["foo".to_owned(), "bar".to_owned()]),
            "launch order"
        );
        s.forget_queue(a);
        s.covered(b, 2);
        assert_eq!(s.suspects(ContextState::new_queue_id()), None);
    }

    #[test]
    fn one_state_per_context_while_a_device_holds_it() {
        let one = ContextState::of(0x1000);
        assert!(Arc::ptr_eq(&one, &ContextState::of(0x1000)));
        assert!(!Arc::ptr_eq(&one, &ContextState::of(0x2000)));
        one.launched(ContextState::new_queue_id(), 1, &"foo".into());
        let weak = Arc::downgrade(&one);
        drop(one);
        assert!(weak.upgrade().is_none(), "released with its last holder");
        let again = ContextState::of(0x1000);
        assert!(again.in_flight.lock().unwrap().is_empty());
    }

    #[test]
    fn a_context_released_by_its_last_holder_gets_a_fresh_state() {
        let ctx = 0x3000;
        let state = ContextState::of(ctx);
        let queue = ContextState::new_queue_id();
        state.launched(queue, 1, &"foo".into());
        let old = Arc::downgrade(&state);
        let mut fresh = None;
        // Another thread retaining the context right after the release
        // (the same handle) gets a state without the old kernels.
        ContextState::release(state, || fresh = Some(ContextState::of(ctx)));
        let fresh = fresh.expect("released");
        assert!(old.upgrade().is_none(), "the old state is gone");
        assert_eq!(fresh.suspects(queue), None, "no stale kernel in flight");
    }

    #[test]
    fn a_failed_launch_is_no_longer_in_flight() {
        let s = ContextState::default();
        let q = ContextState::new_queue_id();
        let (foo, bar): (Arc<str>, Arc<str>) = ("foo".into(), "bar".into());
        s.launched(q, 1, &foo);
        s.launched(q, 2, &bar);
        s.not_launched(q, 2);
        assert_eq!(
            s.suspects(ContextState::new_queue_id()),
            Some(vec!["foo".to_owned()])
        );
    }
}
