//! What recording costs the launching thread, per region size and way:
//! a plain launch, LLVM's way (sync schedule + inline writes), the async
//! schedule with inline writes, and reprise's way (async + background
//! writer). Each sample times launches only; the writer is drained and the
//! files removed between launches, outside the timing. `reprise bench`
//! prints the same comparison as a table with ratios.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use reprise::samples::bench_kernel;
use reprise::{BackendKind, HostExecutor};
use reprise_bench::{SIZES, Session, Way};

fn recording(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("reprise-bench-recording-{}", std::process::id()));
    let mut group = c.benchmark_group("recording");
    for size in SIZES {
        group.throughput(Throughput::Bytes(size));
        group.sample_size(10);
        group.warm_up_time(Duration::from_millis(if size >= 64 << 20 {
            1
        } else {
            500
        }));
        group.measurement_time(Duration::from_secs(if size >= 64 << 20 { 8 } else { 3 }));
        for way in Way::ALL {
            let mut s = Session::new(
                HostExecutor::new().unwrap(),
                &bench_kernel(BackendKind::Host).expect("a host kernel"),
                size,
                way,
                &dir,
            )
            .expect("a benchmark session");
            s.launch().unwrap(); // warm buffers and page cache
            group.bench_function(BenchmarkId::new(format!("{way:?}"), size), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| s.launch().unwrap()).sum())
            });
        }
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, recording);
criterion_main!(benches);
