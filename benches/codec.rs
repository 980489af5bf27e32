//! The globals codec: encode and decode throughput in both layouts, for many
//! small globals and for a few large ones.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use reprise::core::globals::{Layout, decode, encode_into, encoded_len};

fn codec(c: &mut Criterion) {
    let mut group = c.benchmark_group("globals");
    for (label, count, size) in [("1000x64B", 1000usize, 64usize), ("4x4MiB", 4, 4 << 20)] {
        let names: Vec<String> = (0..count).map(|i| format!("__omp_global_{i}")).collect();
        let data: Vec<Vec<u8>> = (0..count).map(|i| vec![i as u8; size]).collect();
        let items: Vec<(&str, &[u8])> = names
            .iter()
            .map(String::as_str)
            .zip(data.iter().map(Vec::as_slice))
            .collect();
        for layout in [Layout::Seed, Layout::Current] {
            let len = encoded_len(layout, items.iter().copied()).unwrap();
            let mut blob = vec![0u8; len];
            group.throughput(Throughput::Bytes(len as u64));
            group.bench_function(BenchmarkId::new(format!("encode/{layout:?}"), label), |b| {
                b.iter(|| encode_into(layout, items.iter().copied(), &mut blob).unwrap())
            });
            group.bench_function(BenchmarkId::new(format!("decode/{layout:?}"), label), |b| {
                b.iter(|| {
                    decode(layout, &blob)
                        .unwrap()
                        .map(|g| g.unwrap().bytes.len())
                        .sum::<usize>()
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
