//! Replaying a capture from a warm page cache (open, check the snapshot's
//! checksum, map it as the region, launch), per region size, and reading the
//! same capture's files for comparison.

use std::os::unix::fs::FileExt;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use reprise::samples::bench_kernel;
use reprise::{BackendKind, Capture, HostExecutor};
use reprise_bench::{SIZES, Session, Way};

fn replay(c: &mut Criterion) {
    let root = std::env::temp_dir().join(format!("reprise-bench-replay-{}", std::process::id()));
    let mut group = c.benchmark_group("replay");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(3));
    for size in SIZES {
        let dir = root.join(size.to_string());
        let descriptor = {
            let mut s = Session::new(
                HostExecutor::new().unwrap(),
                &bench_kernel(BackendKind::Host).expect("a host kernel"),
                size,
                Way::AsyncBackground,
                &dir,
            )
            .expect("a benchmark session");
            s.launch().unwrap();
            s.last.take().expect("a capture")
        };
        let capture = Capture::open(&descriptor).unwrap();
        let files = [
            &capture.paths.descriptor,
            &capture.paths.input,
            &capture.paths.output,
            &capture.paths.globals,
            &capture.paths.image,
        ];
        let bytes: u64 = files
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum();
        group.throughput(Throughput::Bytes(bytes));
        group.bench_function(BenchmarkId::new("open_and_replay", size), |b| {
            b.iter(|| {
                let capture = Capture::open(&descriptor).unwrap();
                reprise::block_on(std::future::IntoFuture::into_future(reprise::replay(
                    &capture,
                )))
                .unwrap()
            })
        });
        let mut buf = vec![0u8; 8 << 20];
        group.bench_function(BenchmarkId::new("read_files", size), |b| {
            b.iter(|| {
                for p in files {
                    let f = std::fs::File::open(p).unwrap();
                    let mut at = 0;
                    loop {
                        let n = f.read_at(&mut buf, at).unwrap();
                        if n == 0 {
                            break;
                        }
                        at += n as u64;
                    }
                }
            })
        });
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&root);
}

criterion_group!(benches, replay);
criterion_main!(benches);
