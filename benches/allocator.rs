//! The recording allocator against a `Mutex`-guarded bump pointer, with one
//! and two threads: the shared lock-free pointer (one compare-and-swap per
//! allocation) and per-thread chunks (`LocalBump`). Each sample is a batch
//! of 24-byte allocations per thread; throughput is allocations.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use reprise::core::region::BumpRegion;

const BATCH: u64 = 100_000;

fn run(threads: u64, iters: u64, body: &(dyn Fn(u64) + Sync)) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| body(iters * BATCH));
        }
    });
    start.elapsed()
}

fn allocator(c: &mut Criterion) {
    let mut group = c.benchmark_group("allocator");
    for threads in [1u64, 2] {
        group.throughput(Throughput::Elements(threads * BATCH));
        group.bench_function(BenchmarkId::new("lock_free_shared", threads), |b| {
            b.iter_custom(|iters| {
                let r = BumpRegion::new(0x1000, u64::MAX / 4);
                run(threads, iters, &|n| {
                    for _ in 0..n {
                        std::hint::black_box(r.alloc(24, 8).ok());
                    }
                })
            })
        });
        group.bench_function(BenchmarkId::new("per_thread_chunks", threads), |b| {
            b.iter_custom(|iters| {
                let r = BumpRegion::new(0x1000, u64::MAX / 4);
                run(threads, iters, &|n| {
                    let mut local = r.local(64 << 10);
                    for _ in 0..n {
                        std::hint::black_box(local.alloc(24, 8).ok());
                    }
                })
            })
        });
        group.bench_function(BenchmarkId::new("mutex", threads), |b| {
            b.iter_custom(|iters| {
                let next = Mutex::new(0u64);
                run(threads, iters, &|n| {
                    for _ in 0..n {
                        let mut p = next.lock().unwrap();
                        let at = *p;
                        *p = at + 32;
                        std::hint::black_box(at);
                    }
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, allocator);
criterion_main!(benches);
