//! `reprise bench`: what recording costs, LLVM's way against reprise's,
//! and (`interposer`) what the interposer adds to an unmodified program's
//! launch.

mod interposer;
mod store;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Args;
use reprise::executors::{ExecutorSpec, with_executor};
use reprise_bench::{AllocResult, BenchConfig, BenchJob, SizeResult, human};
use serde_json::json;

use crate::backend::BackendArg;
use crate::error::{CliError, Result};
use crate::ui::human_bytes;

/// Measure what recording and replaying cost, against plain launches.
///
/// Per region size (64 KiB, 1 MiB, 16 MiB, 256 MiB): a plain launch; recording with the
/// sync schedule and inline writes (LLVM's way); the async schedule with
/// inline writes; the async schedule with the background writer (reprise's
/// way); the copy bound (snapshot bytes / memcpy bandwidth, measured in
/// the same run); and replaying a capture of each size against reading its
/// files. Also the recording allocator against a mutex, one and two threads.
/// On the CUDA executor the kernel is a saxpy over the whole region, and
/// reprise's way is measured once more with device-side staging of the
/// snapshot before the kernel.
///
/// With `--backend cuda`, also what the interposer (`reprise record`) adds
/// to one launch of an unmodified program, per launch and in the same run:
/// the saxpy (over the smallest size, at most 1 MiB) launched and
/// synchronized through `libcuda.so.1` in child processes, plain; with the
/// interposer preloaded and recording on but no kernel selected (what a
/// launch it does not record costs); and with every timed launch recorded,
/// into raw files (and the size of one capture) and into the store;
/// without `--quick` the three alternate over three rounds. The ratios are of the medians. The interposer is the
/// one built into this executable (as for `reprise record`; written to the
/// cache directory on first use), or `REPRISE_INTERPOSER=PATH`; the rows
/// are skipped, saying why, when it cannot be written out.
///
/// Recording times are the launching thread's time in a recorded launch
/// minus a plain launch's; the background writer is drained between
/// measured launches, outside the timing. Writes go to a fresh scratch
/// directory (inside `--dir`, or the system's temporary directory) that is
/// removed afterwards.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Fewer repetitions: finishes in under a minute on two cores.
    #[arg(long)]
    pub quick: bool,
    /// Print one JSON object (sizes in bytes, times in seconds).
    #[arg(long)]
    pub json: bool,
    /// The executor to measure.
    #[arg(long, default_value = "host", value_parser = BackendArg::builtin_kernels())]
    pub backend: BackendArg,
    /// Also draw recording time against region size for each schedule, as
    /// SVG, to this file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Where to write the captures made while measuring: a fresh
    /// `reprise-bench-PID` directory is made inside DIR and removed
    /// afterwards, also when the run is interrupted; nothing else in DIR is
    /// touched. [default: the system's
    /// temporary directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Measure the capture store against raw files instead (same run):
    /// the disk a recording takes (the 40-launch program of x and y,
    /// 16 MiB each, beside 32 MiB no kernel touches, and a few launches at
    /// each size), the launching thread's cost and the writer's time per
    /// capture with the store and with raw files (every chunk new, and
    /// about 90% stored), replay from the store and from raw files, and
    /// blake3's and zstd's throughput per core against memcpy.
    #[arg(long)]
    pub store: bool,
    /// Only these region sizes (bytes; K/M/G suffixes), comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_bench_size)]
    pub sizes: Vec<u64>,
}

/// The largest `--sizes` entry: the kernels count 4-byte elements in an
/// `int`.
const MAX_SIZE: u64 = 4 * i32::MAX as u64;

/// A region size for `--sizes`: at least 16 bytes (the kernel's counter),
/// at most [`MAX_SIZE`].
fn parse_bench_size(s: &str) -> std::result::Result<u64, String> {
    let n = reprise::config::parse_size("--sizes", s).map_err(|e| e.to_string())?;
    if n < 16 {
        return Err(format!(
            "{n} bytes is too small: a region size must be at least 16 bytes"
        ));
    }
    if n > MAX_SIZE {
        return Err(format!(
            "{} is too large: at most {}",
            human_bytes(n),
            human_bytes(MAX_SIZE)
        ));
    }
    Ok(n)
}

fn ms(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

/// Set by the interrupt handler, which then removes the scratch directory
/// and ends the process.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Removes `dir` until it stays gone: the measuring thread and its
/// recorder's writer run on after an interrupt, and may make the directory
/// again (a capture's directory) while it is being removed. At most ~3 s.
fn remove_until_gone(dir: &Path) {
    for _ in 0..60 {
        let _ = std::fs::remove_dir_all(dir);
        std::thread::sleep(Duration::from_millis(50));
        if !dir.exists() {
            return;
        }
    }
}

/// After an interrupt, on the measuring thread: its measurement failed
/// because the interrupt handler removed its files. The handler ends the
/// process (status 130); should it not within a few seconds, this does.
fn exit_if_interrupted(dir: &Path) {
    if INTERRUPTED.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_secs(5));
        remove_until_gone(dir);
        std::process::exit(130);
    }
}

/// Runs the benchmark and prints its tables (or JSON).
pub fn run(a: BenchArgs) -> Result<ExitCode> {
    // Before anything is measured: a plot that could not be written would
    // be found out only at the end.
    if let Some(p) = &a.plot {
        crate::ui::check_output_file(p, Some("svg"))?;
    }
    // bench empties and removes its scratch directory, so it is always one
    // it makes itself: never the user's directory, only a fresh one inside it.
    let parent = a.dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = parent.join(format!("reprise-bench-{}", std::process::id()));
    std::fs::create_dir_all(&parent).map_err(|e| reprise::Error::io(&parent, "create", e))?;
    std::fs::create_dir(&dir).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            CliError::file(
                &dir,
                "already exists; bench makes its own scratch directory and would not empty one it \
                 did not make",
            )
        } else {
            reprise::Error::io(&dir, "create the scratch directory", e).into()
        }
    })?;
    // Large sizes leave hundreds of MiB of captures there: an interrupted
    // run (Ctrl-C, SIGTERM) removes them too.
    let scratch = dir.clone();
    if let Err(e) = ctrlc::set_handler(move || {
        INTERRUPTED.store(true, Ordering::SeqCst);
        remove_until_gone(&scratch);
        // Not eprintln!: stderr may be a pipe that closed with the
        // terminal, and a panic here would leave the process running.
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "\ninterrupted: removed {}",
            scratch.display()
        );
        std::process::exit(130);
    }) {
        log::warn!(
            "an interrupted bench will leave {} behind: {e}",
            dir.display()
        );
    }
    let mut cfg = if a.quick {
        BenchConfig::quick(&dir)
    } else {
        BenchConfig::full(&dir)
    };
    if !a.sizes.is_empty() {
        cfg.sizes = a.sizes.clone();
    }
    let largest = cfg.largest_size();
    let need = cfg.memory_needed();
    if let Some(avail) = crate::ui::available_memory().filter(|&avail| need > avail) {
        return Err(CliError::Lacking(format!(
            "bench --sizes {} needs about {} of memory; {} is available",
            human_bytes(largest),
            human_bytes(need),
            human_bytes(avail)
        )));
    }
    let quiet = a.json;
    let mut progress = |line: &str| {
        if !quiet {
            // A closed stderr does not stop the measurement.
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "  measuring {line}");
        }
    };
    let backend = a.backend.kind().unwrap_or(reprise::BackendKind::Host);
    if a.store {
        let results = with_executor(
            ExecutorSpec::new(backend),
            reprise_bench::store::StoreBenchJob {
                config: &cfg,
                progress: &mut progress,
            },
        );
        exit_if_interrupted(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        let results = results?;
        if a.json {
            let v = json!({
                "backend": backend.as_str(),
                "quick": a.quick,
                "store": store::to_json(&results),
            });
            crate::ui::print_json(&v);
        } else {
            store::print(&results, backend);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let results = with_executor(
        ExecutorSpec::new(backend),
        BenchJob {
            config: &cfg,
            progress: &mut progress,
        },
    );
    exit_if_interrupted(&dir);
    // The interposer's rows after the tables', while the scratch
    // directory is there for the captures they write.
    let interposer = (reprise::executors::capabilities(backend).interposed && results.is_ok())
        .then(|| {
            let smallest = cfg.sizes.iter().copied().min().unwrap_or(64 << 10);
            interposer::measure(
                a.quick,
                interposer::elements_for(smallest),
                &dir,
                &mut progress,
            )
        });
    let _ = std::fs::remove_dir_all(&dir);
    let results = results?;
    let alloc = reprise_bench::allocator(if a.quick { 200_000 } else { 1_000_000 });

    if let Some(p) = &a.plot {
        plot(p, &results)?;
    }
    if a.json {
        let v = to_json(&results, &alloc, interposer.as_ref(), &a, backend);
        crate::ui::print_json(&v);
    } else {
        print_table(&results, &alloc, backend);
        if let Some(o) = &interposer {
            interposer::print(o);
        }
        if let Some(p) = &a.plot {
            out!("plot written to {}", p.display());
        }
    }
    if let Some(interposer::Outcome::Failed(why)) = &interposer {
        return Err(CliError::Program(format!(
            "measuring the interposer failed: {why}"
        )));
    }
    Ok(ExitCode::SUCCESS)
}

fn to_json(
    results: &[SizeResult],
    alloc: &AllocResult,
    interposer: Option<&interposer::Outcome>,
    a: &BenchArgs,
    backend: reprise::BackendKind,
) -> serde_json::Value {
    let mut v = json!({
        "backend": backend.as_str(),
        "quick": a.quick,
        "sizes": results.iter().map(|r| json!({
            "size_bytes": r.size,
            "plain_launch_s": r.plain,
            "sync_inline_s": r.sync_inline,
            "async_inline_s": r.async_inline,
            "async_background_s": r.async_background,
            "copy_lower_bound_s": r.copy_bound,
            "memcpy_bytes_per_s": r.memcpy_bandwidth,
            "background_vs_sync": r.background_vs_sync(),
            "async_inline_vs_sync": r.async_inline_vs_sync(),
            "background_vs_bound": r.background_vs_bound(),
            "sync_inline_vs_bound": r.sync_inline / r.copy_bound,
            "replay_s": r.replay,
            "read_files_s": r.read_files,
            "replay_vs_read": r.replay_vs_read(),
            "repetition_overhead_s": r.repetition_overhead,
            "restore_bound_s": r.restore_bound,
            "repetition_vs_copy": r.repetition_vs_copy(),
            "async_background_staged_s": r.staged,
            "staged_vs_background": r.staged_vs_background(),
        })).collect::<Vec<_>>(),
        "allocator": {
            "lock_free_1_thread_per_s": alloc.lock_free_1,
            "lock_free_2_threads_per_s": alloc.lock_free_2,
            "local_chunks_1_thread_per_s": alloc.local_1,
            "local_chunks_2_threads_per_s": alloc.local_2,
            "ratio_local_chunks_2_threads": alloc.local_2 / alloc.mutex_2,
            "mutex_1_thread_per_s": alloc.mutex_1,
            "mutex_2_threads_per_s": alloc.mutex_2,
            "ratio_1_thread": alloc.lock_free_1 / alloc.mutex_1,
            "ratio_2_threads": alloc.lock_free_2 / alloc.mutex_2,
        },
    });
    if let Some(o) = interposer {
        v["interposer"] = interposer::to_json(o);
    }
    v
}

fn print_table(results: &[SizeResult], alloc: &AllocResult, backend: reprise::BackendKind) {
    out!("recording cost on the {backend} executor (launching thread; medians)");
    out!("  plain launch: a whole launch and synchronize, unrecorded;");
    out!("  the three schedules: what recording adds to it (recorded minus plain);");
    out_text!(
        "  copy bound: both snapshots memcpy'd once on the host, a yardstick (a schedule that\n  \
         hands copies to other threads can beat it)\n"
    );
    out!(
        "| size | plain launch | sync + inline (LLVM) | async + inline | async + background (reprise) | copy bound | reprise / LLVM | async inline / LLVM | reprise / bound |"
    );
    out!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for r in results {
        out!(
            "| {} | {} | {} | {} | {} | {} | {:.3} | {:.3} | {:.2} |",
            human(r.size),
            ms(r.plain),
            ms(r.sync_inline),
            ms(r.async_inline),
            ms(r.async_background),
            ms(r.copy_bound),
            r.background_vs_sync(),
            r.async_inline_vs_sync(),
            r.background_vs_bound()
        );
    }
    if results.iter().any(|r| r.staged.is_some()) {
        out_text!("\ndevice-side staging of the snapshot before the kernel\n");
        out!("| size | async + background | same, staged on the device | staged / not |");
        out!("| ---: | ---: | ---: | ---: |");
        for r in results {
            if let Some(t) = r.staged {
                let ratio = r
                    .staged_vs_background()
                    .map_or_else(|| "-".into(), |x| format!("{x:.3}"));
                out!(
                    "| {} | {} | {} | {ratio} |",
                    human(r.size),
                    ms(r.async_background),
                    ms(t),
                );
            }
        }
    }
    out_text!("\nreplay from a warm page cache (open, verify checksums, map, launch)\n");
    out!("| size | replay | read its files | replay / read |");
    out!("| ---: | ---: | ---: | ---: |");
    for r in results {
        out!(
            "| {} | {} | {} | {:.2} |",
            human(r.size),
            ms(r.replay),
            ms(r.read_files),
            r.replay_vs_read()
        );
    }
    let yardstick = if !reprise::executors::capabilities(backend).device_memory {
        "one memcpy of the snapshot"
    } else {
        "one copy of the snapshot on the device"
    };
    out_text!(
        "\nrepeated replay: what one more repetition costs beyond its kernel (restore region \
         and globals, launch, wait) against {yardstick}\n"
    );
    out!("| size | per repetition | {yardstick} | ratio |");
    out!("| ---: | ---: | ---: | ---: |");
    for r in results {
        out!(
            "| {} | {} | {} | {:.2} |",
            human(r.size),
            ms(r.repetition_overhead),
            ms(r.restore_bound),
            r.repetition_vs_copy()
        );
    }
    out_text!(
        "\nmemcpy between warm buffers: {:.1} GB/s",
        results
            .last()
            .map(|r| r.memcpy_bandwidth / 1e9)
            .unwrap_or(0.0)
    );
    out!(
        "allocator (24-byte allocations, per second): shared lock-free pointer {:.1} M (1 thread), {:.1} M (2 threads); \
         per-thread chunks {:.1} M, {:.1} M; mutex {:.1} M, {:.1} M",
        alloc.lock_free_1 / 1e6,
        alloc.lock_free_2 / 1e6,
        alloc.local_1 / 1e6,
        alloc.local_2 / 1e6,
        alloc.mutex_1 / 1e6,
        alloc.mutex_2 / 1e6
    );
    out!(
        "allocator vs mutex, two threads: shared pointer {:.2}x, per-thread chunks {:.2}x (one thread: {:.2}x, {:.2}x)",
        alloc.lock_free_2 / alloc.mutex_2,
        alloc.local_2 / alloc.mutex_2,
        alloc.lock_free_1 / alloc.mutex_1,
        alloc.local_1 / alloc.mutex_1
    );
}

fn plot(path: &Path, results: &[SizeResult]) -> Result<()> {
    use plotters::prelude::*;
    let err = |e: String| CliError::file(path, format!("drawing the plot failed: {e}"));
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    type Series = (&'static str, RGBColor, fn(&SizeResult) -> f64);
    let series: [Series; 4] = [
        ("sync + inline (LLVM)", RED, |r| r.sync_inline),
        ("async + inline", BLUE, |r| r.async_inline),
        ("async + background (reprise)", GREEN, |r| {
            r.async_background
        }),
        ("copy bound", BLACK, |r| r.copy_bound),
    ];
    let xs = results.iter().map(|r| r.size as f64);
    let (xmin, xmax) = (xs.clone().fold(f64::MAX, f64::min), xs.fold(0.0, f64::max));
    let ys = results
        .iter()
        .flat_map(|r| series.iter().map(move |s| (s.2)(r)))
        .filter(|v| *v > 0.0);
    let (ymin, ymax) = (ys.clone().fold(f64::MAX, f64::min), ys.fold(0.0, f64::max));
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "recording time on the launching thread vs region size",
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (xmin * 0.8..xmax * 1.25).log_scale(),
            (ymin * 0.5..ymax * 2.0).log_scale(),
        )
        .map_err(|e| err(e.to_string()))?;
    chart
        .configure_mesh()
        .x_desc("region size (bytes)")
        .y_desc("seconds")
        .x_label_formatter(&|v| human(*v as u64))
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .draw()
        .map_err(|e| err(e.to_string()))?;
    for (name, color, f) in series {
        let pts: Vec<(f64, f64)> = results
            .iter()
            .map(|r| (r.size as f64, f(r).max(ymin * 0.5)))
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(|e| err(e.to_string()))?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))
            .map_err(|e| err(e.to_string()))?;
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| err(e.to_string()))?;
    root.present().map_err(|e| err(e.to_string()))?;
    Ok(())
}
