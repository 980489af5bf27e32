//! `reprise bench`: what recording costs, LLVM's way against reprise's,
//! and what the interposer adds to an unmodified program's launch. The
//! harness (`reprise_bench`) measures and writes the report; this parses
//! the command line, guards the scratch directory and prints.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Args;
use reprise::executors::{ExecutorSpec, with_executor};
use reprise_bench::interposer::Outcome;
use reprise_bench::{BenchConfig, BenchJob, report};
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
                "store": report::store::to_json(&results),
            });
            crate::ui::print_json(&v);
        } else {
            print_report(&report::store::table(&results, backend));
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
            measure_interposer(
                a.quick,
                reprise_bench::interposer::elements_for(smallest),
                &dir,
                &mut progress,
            )
        });
    let _ = std::fs::remove_dir_all(&dir);
    let results = results?;
    let alloc = reprise_bench::allocator(if a.quick { 200_000 } else { 1_000_000 });

    if let Some(p) = &a.plot {
        report::plot(p, &results).map_err(|e| CliError::file(p, e))?;
    }
    if a.json {
        let v = report::to_json(&results, &alloc, interposer.as_ref(), a.quick, backend);
        crate::ui::print_json(&v);
    } else {
        print_report(&report::table(&results, &alloc, backend));
        if let Some(o) = &interposer {
            print_report(&report::interposer::table(o));
        }
        if let Some(p) = &a.plot {
            out!("plot written to {}", p.display());
        }
    }
    if let Some(Outcome::Failed(why)) = &interposer {
        return Err(CliError::Program(format!(
            "measuring the interposer failed: {why}"
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// Measures the rows with the interposer built into this executable (or
/// `REPRISE_INTERPOSER`); skipped, saying why, without one.
fn measure_interposer(
    quick: bool,
    elements: u32,
    scratch: &Path,
    progress: &mut dyn FnMut(&str),
) -> Outcome {
    let lib = match crate::record::interposer() {
        Ok(p) => p,
        Err(e) => return Outcome::Skipped(e.to_string()),
    };
    match std::env::current_exe() {
        Ok(exe) => {
            reprise_bench::interposer::measure(&exe, &lib, quick, elements, scratch, progress)
        }
        Err(e) => Outcome::Failed(format!("locating this executable: {e}")),
    }
}

/// Prints a report's lines.
fn print_report(text: &str) {
    out_text!("{}", text.trim_end_matches('\n'));
}
