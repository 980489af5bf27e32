//! The chunk store (`reprise_capture::chunks`): what its chunk size and zstd
//! level cost and save, measured on data like a capture's.
//!
//! First a table (the numbers behind `docs/store.md`), timed on fresh
//! stores: what writing the region as a raw file costs; then, for each
//! chunk size and level, the bytes a saxpy recording stores (its snapshots
//! deduplicated across launches: launch k's output is launch k+1's input),
//! how many files that takes, what a put costs when every chunk is new and
//! when most are stored already, and what reading back costs; last, the
//! 40-launch program of issue 25 at the defaults.
//! Then criterion's throughputs, per core: memcpy, blake3, zstd at each
//! level, lz4_flex, for each kind of data.
//!
//! The data: `floats`, f32s of a repeated pattern (an initialised
//! array); `field`, a smooth f32 field with full mantissas (a simulation's
//! state, the hard case for compression); `random` bytes; `zeros`; and the
//! saxpy region: x and y, 16 MiB each, beside 32 MiB no kernel touches,
//! placed as the bump allocator places them (16-byte rounding after small
//! allocations, so no buffer starts on a chunk boundary), the kernel
//! changing y only.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use reprise_capture::chunks::{ChunkStore, StoreOptions, usage};

const MIB: usize = 1 << 20;
/// Each kind of data, for the throughputs.
const SIZE: usize = 16 * MIB;
const CHUNK_SIZES: [u32; 5] = [64 << 10, 256 << 10, 1 << 20, 2 << 20, 4 << 20];
/// zstd's levels: its fast ones (negative), its default (3), and more.
const LEVELS: [i32; 5] = [-5, -1, 1, 3, 9];

fn floats(n: usize) -> Vec<u8> {
    (0..n / 4)
        .flat_map(|i| ((i % 1000) as f32 * 0.5 + 1.0).to_le_bytes())
        .collect()
}

fn field(n: usize) -> Vec<u8> {
    (0..n / 4)
        .flat_map(|i| {
            let x = i as f32 * 1e-4;
            (x.sin() * 3.7 + (x * 0.37).cos() * 0.01).to_le_bytes()
        })
        .collect()
}

fn random(n: usize) -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut v = vec![0u8; n];
    rng.fill(&mut v);
    v
}

/// The saxpy region: three small allocations, x, y (16 MiB each), then
/// 32 MiB no kernel touches (a smooth field), each rounded to 16 bytes.
struct Saxpy {
    region: Vec<u8>,
    y: std::ops::Range<usize>,
    x: std::ops::Range<usize>,
}

impl Saxpy {
    fn new() -> Self {
        let n = 4 * MIB; // floats per vector
        let x_at = 3 * 16;
        let y_at = x_at + 4 * n;
        let rest_at = y_at + 4 * n;
        let mut region = vec![0u8; rest_at + 32 * MIB];
        region[..8].copy_from_slice(&2.0f64.to_le_bytes());
        region[x_at..y_at].copy_from_slice(&floats(4 * n));
        region[y_at..rest_at].copy_from_slice(&field(4 * n));
        let untouched = field(32 * MIB + 4 * MIB);
        region[rest_at..].copy_from_slice(&untouched[4 * MIB..]);
        Saxpy {
            region,
            x: x_at..y_at,
            y: y_at..rest_at,
        }
    }

    /// One launch: y = 2x + y.
    fn launch(&mut self) {
        let (head, y) = self.region.split_at_mut(self.y.start);
        let x = &head[self.x.clone()];
        for (yc, xc) in y[..self.y.len()].chunks_exact_mut(4).zip(x.chunks_exact(4)) {
            let v = 2.0 * f32::from_le_bytes(xc.try_into().unwrap())
                + f32::from_le_bytes(yc.try_into().unwrap());
            yc.copy_from_slice(&v.to_le_bytes());
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn mb_s(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / MIB as f64 / t.as_secs_f64()
}

/// Writes `bytes` to a fresh file in `dir` as a raw capture file is
/// written (a temporary name, optionally flushed, renamed), and returns
/// how long it took.
fn raw_write(dir: &std::path::Path, bytes: &[u8], fsync: bool) -> Duration {
    let path = dir.join(format!("raw-{}", fastrand::u64(..)));
    let t = Instant::now();
    reprise_std::store::write_atomically(&path, bytes, fsync).unwrap();
    let took = t.elapsed();
    std::fs::remove_file(path).unwrap();
    took
}

/// A fresh store in a fresh directory.
fn fresh(options: StoreOptions) -> (tempfile::TempDir, ChunkStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::create(dir.path(), options).unwrap();
    (dir, store)
}

/// The table: per chunk size and level, a 10-launch saxpy recording into a
/// fresh store, and the cost of a put; then a 40-launch recording at the
/// chosen parameters.
fn table() {
    let launches = 10;
    let region = Saxpy::new().region;
    let n = region.len();
    let scratch = tempfile::tempdir().unwrap();
    let raw = median(
        (0..3)
            .map(|_| raw_write(scratch.path(), &region, false))
            .collect(),
    );
    let raw_fsync = median(
        (0..3)
            .map(|_| raw_write(scratch.path(), &region, true))
            .collect(),
    );
    println!(
        "store: raw file of the 64 MiB region: {:.0} MB/s, {:.0} MB/s with fsync",
        mb_s(n, raw),
        mb_s(n, raw_fsync)
    );
    println!(
        "store: {launches}-launch saxpy recording, 64 MiB region, input and output per launch; \
         puts on 1 thread unless said (medians of 3 fresh stores; the 75%-stored put: of the \
         {launches} outputs)"
    );
    println!(
        "store: chunk   level  raw MiB  stored MiB  ratio  chunk files  manifest KiB  \
         put new MB/s  2 threads  +fsync  put 75%-stored MB/s  read MB/s  read 2 threads"
    );
    for cs in CHUNK_SIZES {
        for level in LEVELS {
            let options = StoreOptions {
                fsync: false,
                level,
                chunk_size: cs,
                threads: 1,
            };
            let (dir, store) = fresh(options);
            let mut saxpy = Saxpy::new();
            let mut manifest_bytes = 0;
            let mut put_dedup = Vec::new();
            for k in 0..launches {
                let m = store.put(&saxpy.region).unwrap();
                std::fs::write(dir.path().join(format!("k{k}.in.chunks")), m.encode()).unwrap();
                manifest_bytes += m.encoded_len();
                saxpy.launch();
                let t = Instant::now();
                let m = store.put(&saxpy.region).unwrap();
                // Only y changed: 3/4 of the region is stored already.
                put_dedup.push(t.elapsed());
                std::fs::write(dir.path().join(format!("k{k}.out.chunks")), m.encode()).unwrap();
                manifest_bytes += m.encoded_len();
            }
            let u = usage(dir.path()).unwrap();
            drop(dir);
            // Puts into fresh stores: every chunk new.
            let put_new = |options: StoreOptions| {
                median(
                    (0..3)
                        .map(|_| {
                            let (_dir, store) = fresh(options);
                            let t = Instant::now();
                            store.put(&region).unwrap();
                            t.elapsed()
                        })
                        .collect(),
                )
            };
            let new1 = put_new(options);
            let new2 = put_new(StoreOptions {
                threads: 2,
                ..options
            });
            let new_fsync = put_new(StoreOptions {
                fsync: true,
                ..options
            });
            let (dir, store) = fresh(options);
            let m = store.put(&region).unwrap();
            let mut back = vec![0u8; m.len() as usize];
            let mut read = |threads| {
                let reader = ChunkStore::open_with(dir.path(), StoreOptions { threads, ..options })
                    .unwrap()
                    .unwrap();
                median(
                    (0..3)
                        .map(|_| {
                            let t = Instant::now();
                            reader.read_into(&m, &mut back).unwrap();
                            t.elapsed()
                        })
                        .collect(),
                )
            };
            let (read1, read2) = (read(1), read(2));
            assert!(back == region);
            println!(
                "store: {:>4} KiB  {level:>5}  {:>7}  {:>10.1}  {:>5.1}  {:>11}  {:>12.1}  \
                 {:>12.0}  {:>9.0}  {:>6.0}  {:>19.0}  {:>9.0}  {:>14.0}",
                cs >> 10,
                u.raw_bytes / MIB as u64,
                u.stored_bytes as f64 / MIB as f64,
                u.ratio(),
                u.chunk_files,
                manifest_bytes as f64 / 1024.0,
                mb_s(n, new1),
                mb_s(n, new2),
                mb_s(n, new_fsync),
                mb_s(n, median(put_dedup)),
                mb_s(n, read1),
                mb_s(n, read2),
            );
        }
    }
    // The program: 40 launches, input and output each.
    let (dir, store) = fresh(StoreOptions {
        fsync: false,
        ..StoreOptions::default()
    });
    let mut saxpy = Saxpy::new();
    for k in 0..40 {
        let m = store.put(&saxpy.region).unwrap();
        std::fs::write(dir.path().join(format!("k{k}.in.chunks")), m.encode()).unwrap();
        saxpy.launch();
        let m = store.put(&saxpy.region).unwrap();
        std::fs::write(dir.path().join(format!("k{k}.out.chunks")), m.encode()).unwrap();
    }
    let u = usage(dir.path()).unwrap();
    println!(
        "store: 40 launches at the defaults ({} KiB, zstd {}): raw {} MiB, stored {:.1} MiB \
         ({:.1}x: dedup {:.1}x, compression {:.2}x), {} chunk files",
        store.chunk_size() >> 10,
        store.options().level,
        u.raw_bytes / MIB as u64,
        (u.stored_bytes + u.manifest_bytes) as f64 / MIB as f64,
        u.ratio(),
        u.dedup_ratio(),
        u.compression_ratio(),
        u.chunk_files
    );
    // Per kind of data: what each codec keeps of it, at 1 MiB chunks.
    println!("store: compressed size per kind of data (1 MiB chunks), % of raw");
    let head: String = LEVELS.iter().map(|l| format!("  zstd {l:>2}")).collect();
    println!("store: kind   {head}     lz4");
    for (kind, data) in kinds() {
        let mut row = format!("store: {kind:<7}");
        for level in LEVELS {
            let stored: usize = data
                .chunks(MIB)
                .map(|c| zstd::bulk::compress(c, level).unwrap().len())
                .sum();
            row += &format!("  {:>6.1}%", 100.0 * stored as f64 / data.len() as f64);
        }
        let stored: usize = data
            .chunks(MIB)
            .map(|c| lz4_flex::compress_prepend_size(c).len())
            .sum();
        row += &format!("  {:>5.1}%", 100.0 * stored as f64 / data.len() as f64);
        println!("{row}");
    }
}

fn kinds() -> Vec<(&'static str, Vec<u8>)> {
    let mut saxpy = Saxpy::new();
    saxpy.launch();
    let y = saxpy.region[saxpy.y.clone()].to_vec();
    vec![
        ("floats", floats(SIZE)),
        ("field", field(SIZE)),
        ("random", random(SIZE)),
        ("zeros", vec![0u8; SIZE]),
        ("saxpy-y", y[..SIZE].to_vec()),
    ]
}

fn throughput(c: &mut Criterion) {
    table();
    let kinds = kinds();
    let mut g = c.benchmark_group("store");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    g.throughput(Throughput::Bytes(SIZE as u64));
    let src = &kinds[2].1;
    let mut dst = vec![0u8; SIZE];
    g.bench_function("memcpy", |b| b.iter(|| dst.copy_from_slice(black_box(src))));
    for cs in CHUNK_SIZES {
        g.bench_function(
            BenchmarkId::new("blake3", format!("{} KiB", cs >> 10)),
            |b| {
                b.iter(|| {
                    for c in src.chunks(cs as usize) {
                        black_box(blake3::hash(c));
                    }
                })
            },
        );
    }
    for (kind, data) in &kinds {
        for level in LEVELS {
            let mut z = zstd::bulk::Compressor::new(level).unwrap();
            let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(MIB));
            g.bench_function(BenchmarkId::new(format!("zstd {level}"), kind), |b| {
                b.iter(|| {
                    for c in data.chunks(MIB) {
                        out.clear();
                        z.compress_to_buffer(c, &mut out).unwrap();
                    }
                })
            });
        }
        let compressed: Vec<Vec<u8>> = data
            .chunks(MIB)
            .map(|c| zstd::bulk::compress(c, 1).unwrap())
            .collect();
        let mut d = zstd::bulk::Decompressor::new().unwrap();
        g.bench_function(BenchmarkId::new("unzstd 1", kind), |b| {
            b.iter(|| {
                for (c, place) in compressed.iter().zip(dst.chunks_mut(MIB)) {
                    d.decompress_to_buffer(c, place).unwrap();
                }
            })
        });
        g.bench_function(BenchmarkId::new("lz4", kind), |b| {
            b.iter(|| {
                for c in data.chunks(MIB) {
                    black_box(lz4_flex::compress(c));
                }
            })
        });
    }
    for cs in CHUNK_SIZES {
        let data = &kinds[1].1;
        let mut z = zstd::bulk::Compressor::new(1).unwrap();
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(cs as usize));
        g.bench_function(
            BenchmarkId::new("zstd 1 field", format!("{} KiB", cs >> 10)),
            |b| {
                b.iter(|| {
                    for c in data.chunks(cs as usize) {
                        out.clear();
                        z.compress_to_buffer(c, &mut out).unwrap();
                    }
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, throughput);
criterion_main!(benches);
