//! The benchmark harness: the measurements behind `reprise bench` (the
//! command line parses its options and prints these results) and the
//! criterion benches beside this folder (`cargo bench`), on the built-in
//! kernels of [`reprise::samples`] ([`bench_kernel`]). It stands on the
//! facade alone, and the facade does not depend on it, so that a library
//! user compiles none of it.
//!
//! What recording costs, for each region size, on one executor, in one run:
//!
//! - **plain**: launch the backend's kernel (on the host one that touches a
//!   counter; on CUDA a saxpy over the whole region) and synchronize;
//! - **sync + inline** (LLVM's way): record with a synchronize after every
//!   step and write the files on the launching thread;
//! - **async + inline**: one synchronize, files still written inline;
//! - **async + background** (reprise's way): one synchronize, files handed to
//!   the background writer;
//! - the **copy bound**: the bytes the two snapshots copy divided by the
//!   memcpy bandwidth between warm buffers, measured here: a yardstick for
//!   what copying the snapshots costs, not a strict lower bound (a schedule
//!   that hands a copy to another thread can beat it);
//! - **replay**: open a capture of that size from a warm page cache and
//!   replay it once, against the time to read its files.
//!
//! "Recording time" is the time the launching thread spends in a recorded
//! launch minus the plain launch's time. The background writer is drained
//! between measured launches, outside the timing: each measured launch
//! finds the writer idle and its buffers warm, as a burst of launches in a
//! long run does; the writer's own throughput is the disk's. LLVM's way
//! writes without `fsync`, as LLVM does; reprise's background writer keeps
//! its default (`fsync` on), which the launching thread never waits for.
//!
//! Beside it: [`store`] (`reprise bench --store`: the capture store
//! against raw files), [`allocator()`] (the recording allocator against a
//! mutex) and [`interposer`] (what the CUDA interposer adds to an
//! unmodified program's launch). The criterion benches: sync against async
//! recording and replay through [`Session`], the globals codec, the
//! recording allocator, and the chunk store (`store.rs`: chunk size and
//! compression level, hashing and compression per core against `memcpy`,
//! the 40-launch saxpy on disk).

use std::path::{Path, PathBuf};
use std::time::Instant;

mod allocator;
pub mod interposer;
pub mod launch_loop;
pub mod report;
mod session;
pub mod store;

pub use allocator::{AllocResult, allocator};
pub use session::{Session, Way};

use reprise::executors::{AnyExecutor, ExecutorJob, Executors};
use reprise::samples::{BuiltinKernel, bench_kernel};
use reprise::{Capture, CaptureFormat, Error, OpenOptions, ReplayOptions, Result};

/// The sizes measured: 64 KiB, 1 MiB, 16 MiB, 256 MiB.
pub const SIZES: [u64; 4] = [64 << 10, 1 << 20, 16 << 20, 256 << 20];

/// How long and where to measure.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Region sizes in bytes.
    pub sizes: Vec<u64>,
    /// Measured launches per mode and size (the median is reported); large
    /// sizes get fewer.
    pub iterations: usize,
    /// Unmeasured launches first (buffers and page cache warm up).
    pub warmup: usize,
    /// Scratch directory for captures (emptied as it goes).
    pub dir: PathBuf,
}

impl BenchConfig {
    /// A full run: 7 measured launches per mode and size.
    pub fn full(dir: impl Into<PathBuf>) -> Self {
        BenchConfig {
            sizes: SIZES.to_vec(),
            iterations: 7,
            warmup: 2,
            dir: dir.into(),
        }
    }

    /// A quick run (under a minute on two cores): 3 measured launches.
    pub fn quick(dir: impl Into<PathBuf>) -> Self {
        BenchConfig {
            iterations: 3,
            warmup: 1,
            ..BenchConfig::full(dir)
        }
    }

    /// The largest of [`BenchConfig::sizes`] (0 without any).
    pub fn largest_size(&self) -> u64 {
        self.sizes.iter().copied().max().unwrap_or(0)
    }

    /// About the memory a run takes: the region, its two snapshots, the
    /// replay's copies and the memcpy benchmark's three buffers, six times
    /// the largest size.
    pub fn memory_needed(&self) -> u64 {
        self.largest_size().saturating_mul(6)
    }

    /// Small sizes are cheap and noisy (thread wake-ups dominate): more
    /// launches; the largest are slow: fewer.
    fn iterations_for(&self, size: u64) -> usize {
        match size {
            s if s >= 128 << 20 => self.iterations.max(5),
            s if s <= 4 << 20 => self.iterations * 5,
            _ => self.iterations,
        }
    }
}

/// Medians for one region size, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SizeResult {
    /// Region bytes recorded.
    pub size: u64,
    /// Plain launch + synchronize.
    pub plain: f64,
    /// Recording time, sync schedule + inline writes (LLVM's way).
    pub sync_inline: f64,
    /// Recording time, async schedule + inline writes.
    pub async_inline: f64,
    /// Recording time, async schedule + background writer (reprise's way).
    pub async_background: f64,
    /// The same with device-side staging of the snapshot before the kernel,
    /// where the executor has it (CUDA).
    pub staged: Option<f64>,
    /// Bytes the snapshots copy / memcpy bandwidth.
    pub copy_bound: f64,
    /// Measured memcpy bandwidth between warm buffers, bytes per second.
    pub memcpy_bandwidth: f64,
    /// Open + replay a capture of this size from a warm page cache (NaN when
    /// the replay failed).
    pub replay: f64,
    /// Read that capture's files into a warm buffer.
    pub read_files: f64,
    /// What one more repetition of a replay of that capture costs beyond
    /// its kernel (restoring region and globals, launching, waiting):
    /// median over repetitions after two warm ones (NaN when the replay
    /// failed).
    pub repetition_overhead: f64,
    /// The yardstick for it: one snapshot-sized copy on the device where
    /// the executor copies on the device (a GPU), else one memcpy on the
    /// host at the measured bandwidth.
    pub restore_bound: f64,
}

impl SizeResult {
    /// reprise's way against LLVM's way.
    pub fn background_vs_sync(&self) -> f64 {
        self.async_background / self.sync_inline
    }
    /// The async schedule alone against LLVM's way.
    pub fn async_inline_vs_sync(&self) -> f64 {
        self.async_inline / self.sync_inline
    }
    /// reprise's way against the copy bound.
    pub fn background_vs_bound(&self) -> f64 {
        self.async_background / self.copy_bound
    }
    /// A repetition's cost beyond its kernel against one copy of the
    /// snapshot.
    pub fn repetition_vs_copy(&self) -> f64 {
        self.repetition_overhead / self.restore_bound
    }
    /// Replay against reading the capture's files.
    pub fn replay_vs_read(&self) -> f64 {
        self.replay / self.read_files
    }
    /// Device-side staging against reprise's way without it.
    /// (`None` when not measured, or when reprise's way measured no cost to
    /// compare against.)
    pub fn staged_vs_background(&self) -> Option<f64> {
        self.staged
            .filter(|_| self.async_background > 0.0)
            .map(|t| t / self.async_background)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Measures the memcpy bandwidth of a snapshot's copies with nothing else
/// around them: one `size`-byte source copied into two `size`-byte
/// destinations (the input and output snapshots), in bytes per second. All
/// three are warm (faulted in); between repetitions a 64 MiB sweep evicts
/// them from the caches, as the kernel, the writer and the page cache do
/// between real launches.
pub fn memcpy_bandwidth(size: u64) -> Result<f64> {
    let n = usize::try_from(size).unwrap_or(usize::MAX);
    let src = Error::filled_buffer(size, 1, "the memcpy benchmark's source")?;
    let mut a = Error::filled_buffer(size, 2, "the memcpy benchmark's first copy")?;
    let mut b = Error::filled_buffer(size, 3, "the memcpy benchmark's second copy")?;
    let mut sweep = Error::filled_buffer(64 << 20, 0, "the memcpy benchmark's cache sweep")?;
    a.copy_from_slice(&src); // fault all three in
    b.copy_from_slice(&src);
    let reps = ((256 << 20) / n).clamp(3, 32);
    let times: Vec<f64> = (0..reps)
        .map(|i| {
            sweep.fill(i as u8);
            std::hint::black_box(&sweep);
            let t = Instant::now();
            a.copy_from_slice(std::hint::black_box(&src));
            b.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box((&a, &b));
            t.elapsed().as_secs_f64()
        })
        .collect();
    Ok(2.0 * size as f64 / median(times))
}

fn clear_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| Error::io(dir, "remove", e))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))
}

/// Median launching-thread time of the measured launches made `way`, after
/// the warm-up ones, on a region holding `size` bytes. Returns the median
/// and, for a recorded way, the last capture written.
fn measure_way<E: AnyExecutor>(
    make: &dyn Fn() -> Result<E>,
    kernel: &BuiltinKernel,
    size: u64,
    way: Way,
    cfg: &BenchConfig,
) -> Result<(f64, Option<PathBuf>)> {
    let mut session = Session::new(make()?, kernel, size, way, &cfg.dir.join("captures"))?;
    let mut times = Vec::new();
    for i in 0..cfg.warmup + cfg.iterations_for(size) {
        let elapsed = session.launch()?.as_secs_f64();
        log::debug!("{way:?} at {size} bytes, launch {i}: {elapsed:.6} s");
        if i >= cfg.warmup {
            times.push(elapsed);
        }
    }
    Ok((median(times), session.last.take()))
}

/// Removes a capture's files (raw files, or in the store format its
/// manifests; chunks stay for `gc`).
pub fn remove_capture(descriptor: &Path) {
    if let Ok(c) = Capture::open_with(
        descriptor,
        OpenOptions::new()
            .verify_checksums(false)
            .allow_missing_globals(true),
    ) {
        for p in [
            &c.paths.input,
            &c.paths.output,
            &c.paths.globals,
            &c.paths.image,
            &c.paths.descriptor,
        ] {
            let _ = std::fs::remove_file(p);
            let _ = std::fs::remove_file(reprise::capture::data_file(p));
        }
    }
}

/// Time to read every file of a capture into one warm buffer.
fn read_files(descriptor: &Path) -> Result<f64> {
    use std::os::unix::fs::FileExt;
    let c = Capture::open_with(descriptor, OpenOptions::new().verify_checksums(false))?;
    let files = [
        &c.paths.descriptor,
        &c.paths.input,
        &c.paths.output,
        &c.paths.globals,
        &c.paths.image,
    ];
    let mut buf = vec![0u8; 8 << 20];
    let mut times = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        for p in files {
            let f = std::fs::File::open(p).map_err(|e| Error::io(p, "open", e))?;
            let mut at = 0;
            loop {
                let n = f
                    .read_at(&mut buf, at)
                    .map_err(|e| Error::io(p, "read", e))?;
                if n == 0 {
                    break;
                }
                at += n as u64;
            }
        }
        times.push(t.elapsed().as_secs_f64());
    }
    Ok(median(times))
}

/// Time to open and replay a capture (checksums verified, as `reprise
/// replay` does by default): the median of three.
fn replay_time<E: AnyExecutor>(make: &dyn Fn() -> Result<E>, descriptor: &Path) -> Result<f64> {
    let exec = make()?;
    let mut times = Vec::new();
    for _ in 0..3 {
        times.push(replay_once(&exec, descriptor)?);
    }
    Ok(median(times))
}

/// Opens the capture at `descriptor` and replays it once on `exec`; the
/// time it took.
fn replay_once<E: AnyExecutor>(exec: &E, descriptor: &Path) -> Result<f64> {
    let t = Instant::now();
    let capture = Capture::open(descriptor)?;
    reprise::block_on(reprise::replayer::replay_on(
        exec,
        &capture,
        &ReplayOptions::default(),
        &mut |_| {},
    ))?;
    Ok(t.elapsed().as_secs_f64())
}

/// [`replay_time`] of each of `descriptors`, `rounds` times each and in
/// turn (one of each, then again), so that a machine whose speed drifts
/// weighs on each alike: the medians, NaN for one that failed.
fn replay_times_in_turn<E: AnyExecutor>(
    make: &dyn Fn() -> Result<E>,
    descriptors: &[&Path],
    rounds: usize,
) -> Vec<f64> {
    let Ok(exec) = make() else {
        return vec![f64::NAN; descriptors.len()];
    };
    let mut times: Vec<Option<Vec<f64>>> = vec![Some(Vec::new()); descriptors.len()];
    for _ in 0..rounds {
        for (d, t) in descriptors.iter().zip(times.iter_mut()) {
            if let Some(list) = t {
                match replay_once(&exec, d) {
                    Ok(took) => list.push(took),
                    Err(_) => *t = None,
                }
            }
        }
    }
    times
        .into_iter()
        .map(|t| t.filter(|t| !t.is_empty()).map_or(f64::NAN, median))
        .collect()
}

/// How many timed repetitions [`repetition_cost`] takes the median of.
const REPETITIONS: usize = 9;

/// What a repetition of a replay of `descriptor` costs beyond its kernel,
/// and the copy it is measured against ([`SizeResult::restore_bound`]).
fn repetition_cost<E: AnyExecutor>(
    make: &dyn Fn() -> Result<E>,
    descriptor: &Path,
    bandwidth: f64,
) -> Result<(f64, f64)> {
    use reprise::replayer::{Session, launch_config_for};
    let exec = make()?;
    let capture = Capture::open(descriptor)?;
    let config = launch_config_for(
        exec.launch_geometry(),
        &capture.record,
        &ReplayOptions::default(),
    )?;
    let overhead = reprise::block_on(async {
        let mut session = Session::new(&exec, &capture, REPETITIONS as u32 + 2).await?;
        // The first run finds the snapshot in place (mapped); the second
        // touches every page of the region for the first time.
        for _ in 0..2 {
            session.run(config, false).await?;
        }
        let mut times = Vec::new();
        for _ in 0..REPETITIONS {
            let run = session.run(config, false).await?;
            let kernel = run.kernel_time.unwrap_or_default();
            times.push(run.time.saturating_sub(kernel).as_secs_f64());
        }
        Ok::<f64, Error>(median(times))
    })?;
    let len = capture.snapshot_len() as usize;
    let bound = if exec.copies_on_device() {
        device_copy_time(&exec, len)?
    } else {
        len as f64 / bandwidth
    };
    Ok((overhead, bound))
}

/// One copy of `len` bytes between two regions on the device, enqueued and
/// waited for (median of five).
fn device_copy_time<E: AnyExecutor>(exec: &E, len: usize) -> Result<f64> {
    use reprise::core::exec::{DeviceRegion, Queue, RegionRequest};
    let fail = |e| Error::executor("timing a copy on the device", e);
    let a = exec
        .reserve(RegionRequest::new(None, len as u64))
        .map_err(fail)?;
    let b = exec
        .reserve(RegionRequest::new(None, len as u64))
        .map_err(fail)?;
    let mut q = exec.queue().map_err(fail)?;
    let mut times = Vec::new();
    for _ in 0..6 {
        let t = Instant::now();
        if !q.copy_on_device(b.base(), a.base(), len).map_err(fail)? {
            return Err(Error::Internal("the executor said it copies on the device"));
        }
        reprise::block_on(reprise::core::exec::synchronize(&mut q)).map_err(fail)?;
        times.push(t.elapsed().as_secs_f64());
    }
    // The first copy pays for mapping the fresh regions.
    times.remove(0);
    drop(q);
    Ok(median(times))
}

/// Runs every measurement for every size on executors from `executors`,
/// and reprise's way once more with device-side staging on (from 0 bytes,
/// so the snapshot before the kernel is staged at every size) where the
/// executor offers it (CUDA, with a driver that has what staging needs).
/// `progress` gets a line of text per step.
pub fn run<E: AnyExecutor>(
    executors: &Executors<E>,
    kernel: &BuiltinKernel,
    cfg: &BenchConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<SizeResult>> {
    if let Some(&size) = cfg.sizes.iter().find(|&&s| s < 16) {
        return Err(Error::Config {
            var: "BenchConfig::sizes",
            value: size.to_string(),
            problem: "too small: a region size must be at least 16 bytes (the kernel's counter)"
                .into(),
        });
    }
    let _backend = executors.spec().kind;
    let make = || executors.open();
    let staged_spec = executors.spec().device_staging(Some(0));
    let make_staged = || executors.open_with(staged_spec.clone());
    let staged: Option<&dyn Fn() -> Result<E>> = match make_staged() {
        Ok(_) => Some(&make_staged),
        Err(e) => {
            log::debug!("reprise's way is not measured staged: {e}");
            None
        }
    };
    let make: &dyn Fn() -> Result<E> = &make;
    let mut out = Vec::new();
    for &size in &cfg.sizes {
        let label = human(size);
        progress(&format!("{label}: plain launch"));
        let (plain, _) = measure_way(make, kernel, size, Way::Plain, cfg)?;
        progress(&format!("{label}: sync schedule + inline writes"));
        let (sync_inline, _) = measure_way(make, kernel, size, Way::SyncInline, cfg)?;
        progress(&format!("{label}: async schedule + inline writes"));
        let (async_inline, _) = measure_way(make, kernel, size, Way::AsyncInline, cfg)?;
        progress(&format!("{label}: async schedule + background writer"));
        let (async_background, last) = measure_way(make, kernel, size, Way::AsyncBackground, cfg)?;

        progress(&format!("{label}: replay and file reads"));
        let descriptor = last.ok_or(Error::Internal(
            "the benchmark's recorded launches wrote no capture",
        ))?;
        // A replay that fails (a driver that will not give the recorded
        // address back in the same process, say) is reported, not fatal.
        let replay = replay_time(make, &descriptor).unwrap_or_else(|e| {
            progress(&format!("{label}: replay failed: {e}"));
            f64::NAN
        });
        let read = read_files(&descriptor)?;
        let bandwidth = memcpy_bandwidth(size)?;
        progress(&format!("{label}: repetitions of a replay"));
        let (repetition_overhead, restore_bound) = repetition_cost(make, &descriptor, bandwidth)
            .unwrap_or_else(|e| {
                progress(&format!("{label}: repeated replay failed: {e}"));
                (f64::NAN, f64::NAN)
            });
        // Last: a new session clears the captures directory.
        let staged = match staged {
            Some(make_staged) => {
                progress(&format!(
                    "{label}: async + background, staged on the device"
                ));
                let (t, _) = measure_way(make_staged, kernel, size, Way::AsyncBackground, cfg)?;
                Some(t)
            }
            None => None,
        };
        let d = |t: f64| (t - plain).max(0.0);
        out.push(SizeResult {
            size,
            plain,
            sync_inline: d(sync_inline),
            async_inline: d(async_inline),
            async_background: d(async_background),
            staged: staged.map(d),
            copy_bound: 2.0 * size as f64 / bandwidth,
            memcpy_bandwidth: bandwidth,
            replay,
            read_files: read,
            repetition_overhead,
            restore_bound,
        });
        clear_dir(&cfg.dir.join("captures"))?;
    }
    Ok(out)
}

/// [`run`] on whatever executor [`reprise::executors::with_executor`] opens,
/// with that executor's [`bench_kernel`].
pub struct BenchJob<'a> {
    /// How long and where to measure.
    pub config: &'a BenchConfig,
    /// Gets a line of text per step.
    pub progress: &'a mut dyn FnMut(&str),
}

impl ExecutorJob for BenchJob<'_> {
    type Output = Vec<SizeResult>;

    fn run<E: AnyExecutor>(self, executors: Executors<E>) -> Result<Vec<SizeResult>> {
        let kind = executors.spec().kind;
        let kernel = bench_kernel(kind).ok_or(Error::Unsupported {
            backend: kind,
            feature: "a built-in benchmark kernel",
        })?;
        run(&executors, &kernel, self.config, self.progress)
    }
}

/// A byte count as `64 KiB`, `256 MiB`.
pub fn human(n: u64) -> String {
    match n {
        n if n >= 1 << 30 && n % (1 << 30) == 0 => format!("{} GiB", n >> 30),
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}
