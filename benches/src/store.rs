//! `reprise bench --store`: what the content-addressed capture store
//! ([`reprise::store`]) costs and saves against raw files, measured in the
//! same run on one executor.
//!
//! - **Disk**: the bytes a recording's directory holds (every file: the
//!   descriptors, manifests and the store's chunk files) against what raw
//!   files would hold, for a 40-launch program (the demo
//!   kernel, a saxpy on CUDA and a stencil on the host, reading a 16 MiB x
//!   and rewriting a 16 MiB y beside 32 MiB no kernel touches) and for a
//!   few launches of the recording bench's kernel at each size.
//! - **Recording**: the launching thread's cost (a recorded launch minus a
//!   plain one, the writer drained between launches) with the store and
//!   with raw files, and LLVM's way (sync schedule, raw files written
//!   inline); the writer's time per capture (what the background writer
//!   spends on one, `fsync` on) with the store and with raw files, when
//!   every chunk is new and when about 90% are stored already.
//! - **Replay**: opening and replaying (checksums verified) a capture from
//!   the store against one in raw files, and reading those raw files.
//! - **Throughput** per core: blake3 (naming chunks) and zstd level 1
//!   (compressing them, and decompressing) on a float field, against
//!   memcpy.
//!
//! The region's contents are a smooth float field with full mantissas (a
//! simulation's state, what compresses least), never a constant.

use std::path::Path;
use std::time::Instant;

use reprise::core::record::KernelRecord;
use reprise::executors::{AnyExecutor, ExecutorJob, Executors};
use reprise::samples::{BuiltinKernel, bench_kernel, demo_kernel};
use reprise::store::{CaptureData, CaptureStore, CaptureWriter};
use reprise::{Args, CaptureFormat, Error, RecordConfig, Recorder, Result};

use crate::{BenchConfig, Session, Way, clear_dir, human, median, replay_times_in_turn};

/// The store's chunk size, which the writer's rows cut snapshots at and
/// the throughput rows hash and compress.
pub const CHUNK: usize = reprise::store::DEFAULT_CHUNK_SIZE as usize;

/// Captures of each kind the writer's rows take at least below 128 MiB
/// (raw, every chunk new, most stored, in turn): a mostly-stored capture
/// is milliseconds at 16 MiB, where a median of a few moves with the
/// disk's flush latency.
const WRITER_ROUNDS: usize = 9;

/// Replays of each capture, raw and stored, taken in turn for the replay
/// row.
const REPLAY_ROUNDS: usize = 9;

/// Launches recorded at each size for its disk row.
const DISK_LAUNCHES: usize = 8;

/// The 40-launch program's launches, and its buffers' sizes.
pub const PROGRAM_LAUNCHES: usize = 40;
const PROGRAM_X: u64 = 16 << 20;
const PROGRAM_Y: u64 = 16 << 20;
const PROGRAM_UNTOUCHED: u64 = 32 << 20;

/// `n` bytes of a smooth f32 field (full mantissas), different for each
/// `seed`.
pub fn field(n: usize, seed: u64) -> Vec<u8> {
    let offset = seed as f64 * 7.31;
    let mut v = Vec::with_capacity(n + 4);
    for i in 0..n.div_ceil(4) {
        let x = i as f64 * 1e-4 + offset;
        let f = (x.sin() * 3.7 + (x * 0.37).cos() * 0.01) as f32;
        v.extend_from_slice(&f.to_le_bytes());
    }
    v.truncate(n);
    v
}

/// The disk a recording takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Disk {
    /// Captures recorded.
    pub captures: usize,
    /// What raw files would hold: the snapshots, globals and images, and
    /// the descriptors.
    pub raw: u64,
    /// What the directory holds: every file (descriptors, manifests, the
    /// store's chunk files and its own).
    pub stored: u64,
}

impl Disk {
    /// Raw over stored.
    pub fn ratio(&self) -> f64 {
        self.raw as f64 / self.stored as f64
    }
}

/// Medians for one region size, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StoreSizeResult {
    /// Region bytes recorded.
    pub size: u64,
    /// `DISK_LAUNCHES` launches of the bench kernel recorded into the
    /// store.
    pub disk: Disk,
    /// A plain launch and synchronize.
    pub plain: f64,
    /// The launching thread's recording cost, LLVM's way (raw files).
    pub llvm: f64,
    /// The same, reprise's way into raw files.
    pub raw_launch: f64,
    /// The same, reprise's way into the store.
    pub store_launch: f64,
    /// The writer's time for one capture in raw files (`fsync` on).
    pub raw_write: f64,
    /// The same into the store, every chunk new.
    pub store_write_new: f64,
    /// The same into the store with [`StoreSizeResult::stored_share`] of
    /// the capture's chunks already there.
    pub store_write_stored: f64,
    /// Share of the capture's chunks already stored in that row.
    pub stored_share: f64,
    /// Open and replay once, a raw capture (NaN when it failed).
    pub replay_raw: f64,
    /// The same from the store.
    pub replay_store: f64,
    /// Read the raw capture's files.
    pub read_raw: f64,
}

impl StoreSizeResult {
    /// The launching thread's cost, store over raw files.
    pub fn launch_store_vs_raw(&self) -> f64 {
        self.store_launch / self.raw_launch
    }
    /// reprise's way into the store against LLVM's way.
    pub fn store_vs_llvm(&self) -> f64 {
        self.store_launch / self.llvm
    }
    /// The writer's time per capture, store (every chunk new) over raw.
    pub fn write_new_vs_raw(&self) -> f64 {
        self.store_write_new / self.raw_write
    }
    /// The writer's time per capture, store (most chunks stored) over raw.
    pub fn write_stored_vs_raw(&self) -> f64 {
        self.store_write_stored / self.raw_write
    }
    /// Replay from the store over replay from raw files.
    pub fn replay_store_vs_raw(&self) -> f64 {
        self.replay_store / self.replay_raw
    }
    /// Replay from the store over reading the raw files.
    pub fn replay_store_vs_read(&self) -> f64 {
        self.replay_store / self.read_raw
    }
}

/// Per-core throughputs on 16 MiB of a float field, bytes per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throughput {
    /// memcpy between warm buffers.
    pub memcpy: f64,
    /// The capture files' checksum (xxh3-64) over the whole 16 MiB, one
    /// thread: what a replay checks every byte of a snapshot with.
    pub checksum: f64,
    /// blake3 over the store's chunks, one thread.
    pub blake3: f64,
    /// zstd level 1 over the store's chunks, one thread.
    pub zstd: f64,
    /// Its decompression.
    pub unzstd: f64,
    /// Compressed size over raw.
    pub zstd_ratio: f64,
}

/// Everything `reprise bench --store` measures.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreResults {
    /// The 40-launch program.
    pub program: Disk,
    /// The same recorded reachable-only ([`RecordConfig::reachable`]): the
    /// untouched buffer is not held.
    pub program_reachable: Disk,
    /// Per size.
    pub sizes: Vec<StoreSizeResult>,
    /// Per core.
    pub throughput: Throughput,
}

/// The bytes of every regular file under `dir`, and of the descriptors
/// (`*.json`) in `dir` itself.
fn file_bytes(dir: &Path) -> Result<(u64, u64)> {
    let (mut all, mut descriptors) = (0, 0);
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, "list", e))?;
    for e in entries.flatten() {
        let path = e.path();
        let m = std::fs::symlink_metadata(&path).map_err(|e| Error::io(&path, "stat", e))?;
        if m.is_dir() {
            all += file_bytes(&path)?.0;
        } else if m.is_file() {
            all += m.len();
            if path.extension().is_some_and(|x| x == "json") {
                descriptors += m.len();
            }
        }
    }
    Ok((all, descriptors))
}

/// What the store-format recording in `dir` takes, against raw files.
fn disk_of(dir: &Path, captures: usize) -> Result<Disk> {
    let usage = reprise::transfer::usage(dir)?;
    let (stored, descriptors) = file_bytes(dir)?;
    Ok(Disk {
        captures,
        raw: usage.raw_bytes + descriptors,
        stored,
    })
}

/// Records the 40-launch program into a fresh `dir` on `exec` with
/// `kernel` (the demo kernel: input x, output y), reachable-only when
/// `reachable` says so: what it takes on disk.
pub fn program<E: AnyExecutor>(
    exec: E,
    kernel: &BuiltinKernel,
    dir: &Path,
    reachable: bool,
) -> Result<Disk> {
    clear_dir(dir)?;
    let size = PROGRAM_X + PROGRAM_Y + PROGRAM_UNTOUCHED;
    let config = RecordConfig::default()
        .enabled(true)
        .format(CaptureFormat::Store)
        .dir(dir)
        .region_size(size + (1 << 20))
        .reachable(reachable);
    let mut rec = Recorder::new(exec, 0, config)?;
    let x = rec.alloc(PROGRAM_X, 16)?;
    let y = rec.alloc(PROGRAM_Y, 16)?;
    let untouched = rec.alloc(PROGRAM_UNTOUCHED, 16)?;
    rec.upload(x, &field(PROGRAM_X as usize, 1))?;
    rec.upload(y, &field(PROGRAM_Y as usize, 2))?;
    rec.upload(untouched, &field(PROGRAM_UNTOUCHED as usize, 3))?;
    let image = rec.load_image(kernel.image)?;
    let k = rec.kernel(image, kernel.name)?;
    let n = PROGRAM_Y / 4;
    let args: Args = (kernel.args)(x, y, n);
    let geometry = (kernel.geometry)(n);
    let written = reprise::block_on(async {
        for _ in 0..PROGRAM_LAUNCHES {
            rec.launch(&k, geometry, &args).await?;
        }
        rec.finish().await
    })?;
    disk_of(dir, written.len())
}

/// The launching thread's median time over `launches` launches (after one
/// warm-up), and the last capture written.
fn launching<E: AnyExecutor>(
    make: &dyn Fn() -> Result<E>,
    kernel: &BuiltinKernel,
    size: u64,
    way: Way,
    config: RecordConfig,
    launches: usize,
) -> Result<(f64, Option<std::path::PathBuf>)> {
    let contents = field(CHUNK.min(size as usize), 5);
    let mut session = Session::with(make()?, kernel, size, way, config, Some(&contents))?;
    let mut times = Vec::new();
    for i in 0..=launches {
        let t = session.launch()?.as_secs_f64();
        if i > 0 {
            times.push(t);
        }
    }
    Ok((median(times), session.last.take()))
}

/// A record to write captures of.
fn record(seq: u64) -> Result<KernelRecord> {
    let mut r = KernelRecord::new("bench_store")?;
    r.push_arg(0x2000_0000_0000)?;
    r.region_base = Some(0x2000_0000_0000);
    r.region_size = Some(1 << 40);
    r.backend = Some(reprise::BackendKind::Host);
    r.launch_seq = Some(seq);
    Ok(r)
}

/// Flushes the file system that holds `dir`, so that a capture timed next
/// starts from a quiet disk: the writeback and journal work the previous
/// capture left behind (the removal of a raw capture's files, whose freed
/// blocks a file system mounted with online discard trims at its next
/// journal commit) would otherwise land in the next capture's time,
/// whatever its kind. Untimed, and the same before every kind.
fn quiesce(dir: &Path) -> Result<()> {
    let d = std::fs::File::open(dir).map_err(|e| Error::io(dir, "open", e))?;
    rustix::fs::syncfs(&d).map_err(|e| Error::io(dir, "sync the file system (syncfs)", e.into()))
}

/// The writer's median time per capture of `size`-byte snapshots:
/// raw files, the store with every chunk new, the store with most chunks
/// stored; and that share.
fn writer_times(size: u64, iterations: usize, dir: &Path) -> Result<(f64, f64, f64, f64)> {
    let n = usize::try_from(size).map_err(|_| Error::TooLarge {
        what: "a snapshot",
        bytes: size,
    })?;
    let raw_dir = dir.join("writer-raw");
    let store_dir = dir.join("writer-store");
    clear_dir(&raw_dir)?;
    clear_dir(&store_dir)?;
    let raw = CaptureStore::with_format(&raw_dir, true, CaptureFormat::Raw)?;
    let store = CaptureStore::with_format(&store_dir, true, CaptureFormat::Store)?;
    let globals = [0u8; 4];
    let image = reprise::DEMO_IMAGE;
    let (mut t_raw, mut t_new, mut t_stored) = (Vec::new(), Vec::new(), Vec::new());
    let mut seq = 0;
    let mut time = |s: &CaptureStore, input: &[u8], output: &[u8]| -> Result<f64> {
        seq += 1;
        let mut r = record(seq)?;
        let data = CaptureData {
            input,
            output: Some(output),
            globals: &globals,
            image,
        };
        quiesce(s.dir())?;
        let t = Instant::now();
        let p = s.write(&mut r, data)?;
        let took = t.elapsed().as_secs_f64();
        if s.format() == CaptureFormat::Raw {
            crate::remove_capture(&p);
        }
        Ok(took)
    };
    // Chunks of a snapshot rewritten for the mostly-stored row: a fifth of
    // the output's, so about 90% of the capture's chunks are stored.
    let chunks = n.div_ceil(CHUNK);
    let rewritten = ((chunks as f64 * 0.2).round() as usize).clamp(1, chunks);
    let stored_share = 1.0 - rewritten as f64 / (2 * chunks) as f64;
    // The image once, so that it is stored before any timed capture.
    let warm = field(n, 999);
    time(&raw, &warm, &warm)?;
    time(&store, &warm, &warm)?;
    let mut previous = warm;
    for i in 0..iterations as u64 {
        let input = field(n, 2 * i + 10);
        let output = field(n, 2 * i + 11);
        t_raw.push(time(&raw, &input, &output)?);
        t_new.push(time(&store, &input, &output)?);
        // The mostly-stored capture: the last output as its input, and an
        // output that rewrites a word in some of its chunks.
        let mut next = previous.clone();
        for c in 0..rewritten {
            let at = (c * chunks / rewritten) * CHUNK;
            let end = (at + 8).min(n);
            next[at..end].copy_from_slice(&(i + 1).to_le_bytes()[..end - at]);
        }
        t_stored.push(time(&store, &previous, &next)?);
        previous = next;
    }
    let _ = std::fs::remove_dir_all(&raw_dir);
    let _ = std::fs::remove_dir_all(&store_dir);
    Ok((median(t_raw), median(t_new), median(t_stored), stored_share))
}

/// One timing of `f` over `bytes` bytes, as bytes per second (the median of
/// five).
fn rate(bytes: usize, mut f: impl FnMut()) -> f64 {
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        f();
        times.push(t.elapsed().as_secs_f64());
    }
    bytes as f64 / median(times)
}

/// The per-core throughputs, on 16 MiB of a float field.
pub fn throughput() -> Result<Throughput> {
    let n = 16 << 20;
    let data = field(n, 42);
    let mut copy = vec![0u8; n];
    copy.copy_from_slice(&data);
    let memcpy = rate(n, || {
        copy.copy_from_slice(std::hint::black_box(&data));
        std::hint::black_box(&copy);
    });
    let checksum = rate(n, || {
        std::hint::black_box(reprise::core::record::checksum(std::hint::black_box(&data)));
    });
    let blake3 = rate(n, || {
        for c in data.chunks(CHUNK) {
            std::hint::black_box(blake3::hash(c));
        }
    });
    let level = reprise::store::DEFAULT_LEVEL;
    let fail = |e: std::io::Error| Error::io("zstd", "compress", e);
    let mut compressor = zstd::bulk::Compressor::new(level).map_err(fail)?;
    let compressed: Vec<Vec<u8>> = data
        .chunks(CHUNK)
        .map(|c| compressor.compress(c))
        .collect::<std::io::Result<_>>()
        .map_err(fail)?;
    let zstd = rate(n, || {
        for c in data.chunks(CHUNK) {
            std::hint::black_box(compressor.compress(c).ok());
        }
    });
    let mut decompressor = zstd::bulk::Decompressor::new().map_err(fail)?;
    let mut out = vec![0u8; CHUNK];
    let unzstd = rate(n, || {
        for c in &compressed {
            std::hint::black_box(decompressor.decompress_to_buffer(c, &mut out).ok());
        }
    });
    let packed: usize = compressed.iter().map(Vec::len).sum();
    Ok(Throughput {
        memcpy,
        checksum,
        blake3,
        zstd,
        unzstd,
        zstd_ratio: packed as f64 / n as f64,
    })
}

/// Runs every store measurement on executors from `executors`: the bench
/// kernel at each of `cfg`'s sizes, the demo kernel for the 40-launch
/// program. `progress` gets a line of text per step.
pub fn run<E: AnyExecutor>(
    executors: &Executors<E>,
    cfg: &BenchConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<StoreResults> {
    let kind = executors.spec().kind;
    let unsupported = |feature| Error::Unsupported {
        backend: kind,
        feature,
    };
    let kernel = bench_kernel(kind).ok_or(unsupported("a built-in benchmark kernel"))?;
    let demo = demo_kernel(kind).ok_or(unsupported("a built-in demo kernel"))?;
    let make = || executors.open();
    let make: &dyn Fn() -> Result<E> = &make;
    let scratch = cfg.dir.join("store");
    progress(&format!(
        "store: the {PROGRAM_LAUNCHES}-launch program (x, y 16 MiB, 32 MiB untouched)"
    ));
    let program_whole = program(make()?, &demo, &scratch.join("program"), false)?;
    progress(&format!(
        "store: the {PROGRAM_LAUNCHES}-launch program, reachable-only"
    ));
    let program_reachable = program(make()?, &demo, &scratch.join("program"), true)?;
    clear_dir(&scratch)?;
    let mut sizes = Vec::new();
    for &size in &cfg.sizes {
        let label = human(size);
        let launches = cfg.iterations_for(size);
        let dir = scratch.join("captures");
        let base = |way: Way| way.config(&dir, size);
        progress(&format!(
            "store {label}: plain, LLVM's way, raw files, store"
        ));
        let (plain, _) = launching(make, &kernel, size, Way::Plain, base(Way::Plain), launches)?;
        let (llvm, _) = launching(
            make,
            &kernel,
            size,
            Way::SyncInline,
            base(Way::SyncInline),
            launches,
        )?;
        let (raw_launch, raw_capture) = launching(
            make,
            &kernel,
            size,
            Way::AsyncBackground,
            base(Way::AsyncBackground).dir(scratch.join("raw")),
            launches,
        )?;
        let (store_launch, store_capture) = launching(
            make,
            &kernel,
            size,
            Way::AsyncBackground,
            base(Way::AsyncBackground)
                .format(CaptureFormat::Store)
                .dir(scratch.join("stored")),
            launches,
        )?;
        progress(&format!(
            "store {label}: replay from raw files and the store"
        ));
        // Taken in turn, nine of each: a replay is a millisecond at 16 MiB,
        // where a median of a few moves with the machine's load.
        let present: Vec<&Path> = [&raw_capture, &store_capture]
            .into_iter()
            .flatten()
            .map(|p| p.as_path())
            .collect();
        let mut times = replay_times_in_turn(make, &present, REPLAY_ROUNDS).into_iter();
        let mut time_of = |c: &Option<std::path::PathBuf>| {
            c.as_ref().and_then(|_| times.next()).unwrap_or(f64::NAN)
        };
        let replay_raw = time_of(&raw_capture);
        let replay_store = time_of(&store_capture);
        let read_raw = match &raw_capture {
            Some(d) => crate::read_files(d)?,
            None => f64::NAN,
        };
        progress(&format!(
            "store {label}: the writer, raw files and the store"
        ));
        let iterations = if size >= 128 << 20 {
            3
        } else {
            cfg.iterations.max(WRITER_ROUNDS)
        };
        let (raw_write, store_write_new, store_write_stored, stored_share) =
            writer_times(size, iterations, &scratch)?;
        progress(&format!(
            "store {label}: disk, {DISK_LAUNCHES} recorded launches"
        ));
        let disk_dir = scratch.join("disk");
        let config = RecordConfig::default()
            .enabled(true)
            .format(CaptureFormat::Store)
            .dir(&disk_dir)
            .region_size(size.saturating_add(1 << 20));
        let contents = field(size as usize, 6);
        let mut session = Session::with(
            make()?,
            &kernel,
            size,
            Way::AsyncBackground,
            config,
            Some(&contents),
        )?;
        let mut captures = 0;
        for _ in 0..DISK_LAUNCHES {
            session.launch_keeping()?;
            captures += 1;
        }
        drop(session);
        let disk = disk_of(&disk_dir, captures)?;
        let d = |t: f64| (t - plain).max(0.0);
        sizes.push(StoreSizeResult {
            size,
            disk,
            plain,
            llvm: d(llvm),
            raw_launch: d(raw_launch),
            store_launch: d(store_launch),
            raw_write,
            store_write_new,
            store_write_stored,
            stored_share,
            replay_raw,
            replay_store,
            read_raw,
        });
        clear_dir(&scratch)?;
    }
    progress("store: hash and compression throughput");
    let throughput = throughput()?;
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(StoreResults {
        program: program_whole,
        program_reachable,
        sizes,
        throughput,
    })
}

/// [`run`] on whatever executor [`reprise::executors::with_executor`] opens.
pub struct StoreBenchJob<'a> {
    /// How long and where to measure.
    pub config: &'a BenchConfig,
    /// Gets a line of text per step.
    pub progress: &'a mut dyn FnMut(&str),
}

impl ExecutorJob for StoreBenchJob<'_> {
    type Output = StoreResults;

    fn run<E: AnyExecutor>(self, executors: Executors<E>) -> Result<StoreResults> {
        run(&executors, self.config, self.progress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replays_are_timed_in_turn_and_one_that_fails_is_nan_alone() {
        let dir = tempfile::tempdir().unwrap();
        let kernel = bench_kernel(reprise::BackendKind::Host).unwrap();
        let make = || reprise::HostExecutor::new().map_err(|e| Error::executor("host executor", e));
        let size = 64 << 10;
        let capture = |format: CaptureFormat, sub: &str| {
            let config = Way::AsyncBackground
                .config(&dir.path().join(sub), size)
                .format(format);
            launching(&make, &kernel, size, Way::AsyncBackground, config, 1)
                .unwrap()
                .1
                .expect("the recorded launches wrote no capture (the disk's free space?)")
        };
        let raw = capture(CaptureFormat::Raw, "raw");
        let stored = capture(CaptureFormat::Store, "stored");
        let missing = dir.path().join("missing.json");
        let t = replay_times_in_turn(&make, &[&raw, &missing, &stored], 3);
        assert_eq!(t.len(), 3);
        assert!(t[0].is_finite() && t[0] > 0.0, "{t:?}");
        assert!(t[1].is_nan(), "{t:?}");
        assert!(t[2].is_finite() && t[2] > 0.0, "{t:?}");
    }
}
