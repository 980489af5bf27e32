//! The recording allocator against a `Mutex`-guarded bump pointer.

use std::time::Instant;

use reprise::core::region::BumpRegion;

use crate::median;

/// Allocation rates of the recording allocator against a `Mutex`-guarded
/// bump pointer, in allocations per second. The shared pointer is one
/// compare-and-swap per allocation; per-thread chunks touch it once per
/// 64 KiB.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AllocResult {
    /// Lock-free, one thread.
    pub lock_free_1: f64,
    /// Lock-free, two threads (total).
    pub lock_free_2: f64,
    /// Per-thread chunks ([`reprise::core::region::LocalBump`]), one thread.
    pub local_1: f64,
    /// Per-thread chunks, two threads (total).
    pub local_2: f64,
    /// Mutex, one thread.
    pub mutex_1: f64,
    /// Mutex, two threads (total).
    pub mutex_2: f64,
}

/// Allocations per second of `threads` threads sharing one allocator; each
/// thread makes its allocating closure with `make`.
fn alloc_rate<'a>(
    threads: usize,
    per_thread: u64,
    make: &(dyn Fn() -> Box<dyn FnMut() + 'a> + Sync),
) -> f64 {
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut alloc = make();
                for _ in 0..per_thread {
                    alloc();
                }
            });
        }
    });
    (threads as u64 * per_thread) as f64 / t.elapsed().as_secs_f64()
}

/// Which allocator [`allocator`] measures.
#[derive(Clone, Copy)]
enum AllocKind {
    Shared,
    Local,
    Mutex,
}

/// The recording allocator (the shared lock-free bump pointer, and
/// per-thread chunks) against a `Mutex`-guarded bump pointer, one and two
/// threads, 24-byte allocations, medians of five runs.
pub fn allocator(per_thread: u64) -> AllocResult {
    let rate = |threads: usize, kind: AllocKind| {
        median(
            (0..5)
                .map(|_| {
                    let cap = per_thread * threads as u64 * 64;
                    let region = BumpRegion::new(0x1000, cap);
                    let next = std::sync::Mutex::new(0u64);
                    let (region, next) = (&region, &next);
                    alloc_rate(threads, per_thread, &move || -> Box<dyn FnMut() + '_> {
                        match kind {
                            AllocKind::Shared => Box::new(move || {
                                std::hint::black_box(region.alloc(24, 8).ok());
                            }),
                            AllocKind::Local => {
                                let mut local = region.local(64 << 10);
                                Box::new(move || {
                                    std::hint::black_box(local.alloc(24, 8).ok());
                                })
                            }
                            AllocKind::Mutex => Box::new(move || {
                                let mut n = next.lock().unwrap_or_else(|e| e.into_inner());
                                let at = *n;
                                if at + 32 <= cap {
                                    *n = at + 32;
                                }
                                std::hint::black_box(at);
                            }),
                        }
                    })
                })
                .collect(),
        )
    };
    AllocResult {
        lock_free_1: rate(1, AllocKind::Shared),
        lock_free_2: rate(2, AllocKind::Shared),
        local_1: rate(1, AllocKind::Local),
        local_2: rate(2, AllocKind::Local),
        mutex_1: rate(1, AllocKind::Mutex),
        mutex_2: rate(2, AllocKind::Mutex),
    }
}
