//! `reprise check`: a corpus of captures as a regression suite (what it
//! does is [`CheckArgs`]' help), replayed in worker processes ([`serve`]).

mod baseline;
mod discover;
mod junit;
mod protocol;
mod results;
mod serve;
mod slurm;
mod summary;
mod verdict;
mod worker;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;

use crate::compare_args::CompareArgs;
use crate::error::{CliError, Result};
use crate::jobs::shard::Shard;
use crate::ui::check_output_file;
use results::{CaptureResult, Read, ResultsFile, Status};
use summary::Summary;

/// Replay and verify every capture of a corpus, as a regression suite.
///
/// Every capture descriptor under the DIRs (searched recursively, not
/// through symbolic links nor into hidden directories such as the chunk
/// store's) and every FILE given, raw or store, is found through the same
/// listing as `reprise list`, sorted by path; one that is incomplete or
/// unreadable is refused without running it. Each of the others is
/// replayed with verification (`reprise replay --verify`, with the
/// comparison options below) and timed over --repetitions, in a worker
/// process (each checks up to 64 captures one at a time, and ends after
/// any that failed): a kernel that faults, kills its process or hangs past
/// --timeout is that capture's result, and the suite goes on.
///
/// Host captures run --jobs at a time. GPU captures run one at a time per
/// visible device, on devices 0 to D-1 (not the recorded device), where D
/// is the longest list in CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES or
/// HIP_VISIBLE_DEVICES, and 1 when none is set; the host and GPU workers
/// run side by side.
///
/// Each capture's result is appended to the results file (--results) as
/// one JSON line as soon as it is known: path, name (the path relative to
/// the DIR it was found in), kernel, backend, status (passed, differs,
/// refused, failed, timeout), exit_code (the worker's: 0 passed, 1
/// differs, 2 could not run) and signal, kernel_ns (the median kernel time
/// where the executor measures it) and kernel_times_ns, replay_ns (the
/// median repetition, restore included) and replay_times_ns, wall_ns (the
/// worker's whole run) and message. Times are in nanoseconds.
///
/// At the end a table (or, with --json, one JSON object) gives the counts
/// of each status, the slowest kernels, and the captures that did not
/// pass.
///
/// Exit status: 0 when every capture passed, 1 when some differ (or are
/// slower than --baseline allows) and all of them ran, 2 when some could
/// not run (refused, failed or timed out), or on an error (bad options,
/// nothing found).
#[derive(Args, Debug)]
#[command(mut_args(crate::ui::short_help(&[
    "paths", "jobs", "shard", "timeout", "repetitions", "results", "resume", "junit", "json",
    "baseline", "slower", "merge", "slurm",
])))]
pub struct CheckArgs {
    /// Directories to search for captures (recursively), and capture
    /// descriptors (`NAME.json`).
    #[arg(value_name = "DIR|FILE", required_unless_present_any = ["merge", "worker_serve"])]
    pub paths: Vec<PathBuf>,
    /// How many host captures to replay at once [default: the number of
    /// cores].
    ///
    /// GPU captures run one per visible device whatever this says.
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub jobs: Option<u32>,
    /// Check only shard K of N (K from 0 to N-1, as SLURM_ARRAY_TASK_ID).
    ///
    /// Shard K holds the captures whose name (the descriptor's path
    /// relative to the DIR it was found in) hashes to K modulo N. The N
    /// shards of a corpus cover each capture exactly once, wherever and in
    /// whatever order they run.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<Shard>,
    /// Count a capture as timed out after S seconds; 0 for no limit.
    ///
    /// Its worker (the whole process group) is killed then.
    #[arg(long, value_name = "S", default_value = "600", value_parser = seconds)]
    pub timeout: Duration,
    /// Timed replays per capture.
    ///
    /// The median is the capture's time, and their spread the noise
    /// --baseline reports.
    #[arg(long, value_name = "R", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub repetitions: u32,
    /// The results file (JSON lines) [default: reprise-check.jsonl].
    ///
    /// The default is in the current directory, and with --shard
    /// `reprise-check-K-of-N.jsonl`. The file is emptied first, unless
    /// --resume.
    #[arg(long, value_name = "F.jsonl")]
    pub results: Option<PathBuf>,
    /// Check only the captures the results file has no result for.
    ///
    /// After a run was killed, say; the summary covers them all. Give the
    /// same DIRs and FILEs: captures are matched by path. With --slurm:
    /// waits for the job submitted before if it is still queued, then
    /// resubmits only the shards whose results are incomplete.
    #[arg(long)]
    pub resume: bool,
    /// Also write a JUnit XML report to F.xml.
    ///
    /// One testcase per capture (classname its directory, name its stem);
    /// a difference (or a slow-down past --slower) is a failure, a capture
    /// that failed or timed out an error, a refused one skipped.
    #[arg(long, value_name = "F.xml")]
    pub junit: Option<PathBuf>,
    /// Print the summary as one JSON object instead of the table.
    ///
    /// It holds the counts, the slowest, the baseline comparison and every
    /// result.
    #[arg(long)]
    pub json: bool,
    /// Compare each capture's median time with an earlier run's.
    ///
    /// F is a results file (.jsonl) or a --json summary. Captures are
    /// matched by path, else by name; kernel times with kernel times.
    #[arg(long, value_name = "F")]
    pub baseline: Option<PathBuf>,
    /// With --baseline: flag captures more than X times slower (1.2: 20%).
    ///
    /// Each is flagged with the noise (the spread of the repetitions, now
    /// and then) where it is known.
    #[arg(long, value_name = "X", default_value_t = 1.2, value_parser = factor)]
    pub slower: f64,
    /// Run nothing: summarize every results file (*.jsonl) in DIR.
    ///
    /// The shards' files give the one summary, JUnit report and JSON of
    /// them all.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["paths", "shard", "resume", "results"])]
    pub merge: Option<PathBuf>,
    /// Take each capture's device image from PATH (as `replay --image`).
    ///
    /// Give it once per binary (the application and each plugin it
    /// `dlopen`s): each capture's image is taken from the one that holds
    /// its kernel.
    #[arg(long, value_name = "PATH")]
    pub image: Vec<PathBuf>,
    /// Replay captures that have no globals file (as `replay
    /// --allow-missing-globals`).
    #[arg(long)]
    pub allow_missing_globals: bool,
    /// Skip checking the checksums reprise captures carry.
    #[arg(long)]
    pub no_checksums: bool,
    #[command(flatten)]
    pub compare: CompareArgs,
    #[command(flatten)]
    pub base_tries: crate::isolate::BaseTryArgs,
    #[command(flatten)]
    pub slurm: crate::jobs::slurm::SlurmArgs,
    /// A worker that replays the captures named on its stdin (one JSON
    /// string a line), answering each (run by the suite).
    #[arg(long, hide = true)]
    pub worker_serve: bool,
    /// A worker's GPU.
    #[arg(long, hide = true, value_name = "N")]
    pub worker_device: Option<i32>,
}

pub fn run(a: CheckArgs) -> Result<ExitCode> {
    if a.worker_serve {
        return worker::serve(
            open_options(&a).verify_checksums(!a.no_checksums),
            a.worker_device,
            a.repetitions,
        );
    }
    if let Some(p) = &a.junit {
        check_output_file(p, Some("xml"))?;
    }
    let baseline = match &a.baseline {
        Some(p) => {
            let mut read = Read::default();
            read.add_file(p)?;
            if read.results.is_empty() {
                return Err(CliError::file(
                    p,
                    "no results in it (a results file or a `reprise check --json` summary)",
                ));
            }
            Some(read)
        }
        None => None,
    };
    if let Some(dir) = &a.merge {
        let (read, files) = results::read_dir(dir)?;
        if files.is_empty() {
            return Err(CliError::file(dir, "no results files (*.jsonl) to merge"));
        }
        if read.bad_lines > 0 {
            note!(
                "warning: {} line(s) in {} are no results (cut short?) and were skipped",
                read.bad_lines,
                dir.display()
            );
        }
        let source = format!("{} file(s) merged from {}", files.len(), dir.display());
        let all = read.results.values().collect();
        return finish(&a, all, (None, 0), baseline, source);
    }
    if a.slurm.slurm {
        return slurm::run(&a, baseline);
    }
    suite(&a, baseline)
}

/// Finds the corpus, checks what is left of it, and summarizes.
fn suite(a: &CheckArgs, baseline: Option<Read>) -> Result<ExitCode> {
    let started = Instant::now();
    let shard = a.shard.unwrap_or(Shard::ALL);
    let results_path = a.results.clone().unwrap_or_else(|| match a.shard {
        Some(s) => PathBuf::from(format!("reprise-check-{}-of-{}.jsonl", s.index, s.count)),
        None => PathBuf::from("reprise-check.jsonl"),
    });
    check_output_file(&results_path, Some("jsonl"))?;
    let corpus = corpus(a)?;
    if corpus.orphans > 0 {
        note!(
            "note: {} file(s) belong to no whole capture (interrupted recordings; `reprise list` \
             names them)",
            corpus.orphans
        );
    }
    let total = corpus.captures.len();
    let mut selected = corpus.captures;
    selected.retain(|f| shard.holds(&f.name));
    let count = selected.len();
    if a.shard.is_some() {
        note!("shard {shard}: {count} of the {total} captures found");
    }
    let mut earlier = Read::default();
    if a.resume {
        earlier.add_file(&results_path)?;
    }
    let mut file = ResultsFile::open(&results_path, a.resume)?;
    let mut all: Vec<CaptureResult> = Vec::new();
    let (mut host, mut gpu) = (Vec::new(), Vec::new());
    for f in selected {
        if let Some(r) = earlier.results.remove(&f.path.display().to_string()) {
            all.push(r);
        } else if let Some(why) = &f.refused
            // One refused for its region base goes to a worker all the
            // same, for the bases possible to be tried.
            && crate::isolate::trials(&f.path, &open_options(a), a.base_tries).is_none()
        {
            let r = CaptureResult::of(&f, Status::Refused, why.to_string());
            note!("REFUSED {}: {why}", r.path);
            file.append(&r)?;
            all.push(r);
        } else if f
            .backend
            .is_some_and(|b| reprise::executors::capabilities(b).has_devices)
        {
            gpu.push(f);
        } else {
            host.push(f);
        }
    }
    if a.resume {
        note!(
            "resuming: {} of {count} capture(s) already have a result in {}",
            all.len(),
            results_path.display()
        );
    }
    let workers = serve::Workers {
        exe: crate::ui::exe()?,
        // This command's arguments after `check`: the workers read the
        // comparison and opening options from them as this process did.
        args: std::env::args_os().skip(2).collect(),
        timeout: (a.timeout > Duration::ZERO).then_some(a.timeout),
        jobs: a.jobs.map_or_else(
            || std::thread::available_parallelism().map_or(1, |n| n.get()),
            |j| j as usize,
        ),
        devices: visible_devices_in(|v| std::env::var(v).ok()),
        options: open_options(a).verify_checksums(false),
        compare: a.compare.clone(),
        base_tries: a.base_tries,
        scratch: tempfile::Builder::new()
            .prefix("reprise-check.")
            .tempdir()
            .map_err(|e| reprise::Error::io(std::env::temp_dir(), "create a directory in", e))?,
        outputs: Default::default(),
    };
    let to_run = host.len() + gpu.len();
    let mut done = 0;
    let mut write_error = None;
    serve::run(&workers, host, gpu, |r| {
        done += 1;
        if r.status != Status::Passed {
            note!(
                "[{done}/{to_run}] {} {}: {}",
                r.status.as_str().to_uppercase(),
                r.path,
                r.message.lines().next().unwrap_or("")
            );
        }
        if write_error.is_none()
            && let Err(e) = file.append(&r)
        {
            write_error = Some(e);
        }
        all.push(r);
    });
    if let Some(e) = write_error {
        return Err(e);
    }
    // The summary covers this run's selection, in path order.
    all.sort_by(|x, y| x.path.cmp(&y.path));
    finish(
        a,
        all.iter().collect(),
        (Some(started.elapsed()), to_run),
        baseline,
        results_path.display().to_string(),
    )
}

/// Prints the summary of `results` (and writes the JUnit report).
fn finish(
    a: &CheckArgs,
    results: Vec<&CaptureResult>,
    (wall, ran): (Option<Duration>, usize),
    baseline: Option<Read>,
    source: String,
) -> Result<ExitCode> {
    let comparison = baseline.map(|b| baseline::compare(results.iter().copied(), &b, a.slower));
    let s = Summary {
        results,
        wall,
        ran,
        baseline: comparison,
        source,
    };
    if let Some(p) = &a.junit {
        let xml = junit::document(&s).map_err(|e| reprise::Error::io(p, "write", e))?;
        crate::side_files::write(p, &xml)?;
    }
    if a.json {
        crate::ui::print_json(&s.json());
    } else {
        for line in s.lines() {
            out!("{line}");
        }
        if let Some(p) = &a.junit {
            out!("junit: {}", p.display());
        }
    }
    Ok(ExitCode::from(s.exit_code()))
}

/// The captures `a` names, found without hashing (the workers' replays
/// check the checksums); none is an error.
fn corpus(a: &CheckArgs) -> Result<discover::Corpus> {
    let corpus = discover::find(&a.paths, &open_options(a).verify_checksums(false))?;
    if corpus.captures.is_empty() {
        return Err(CliError::NoCaptures(a.paths.clone()));
    }
    Ok(corpus)
}

fn open_options(a: &CheckArgs) -> reprise::OpenOptions {
    reprise::OpenOptions {
        images: a.image.clone(),
        ..reprise::OpenOptions::new().allow_missing_globals(a.allow_missing_globals)
    }
}

/// How many GPUs are visible in an environment whose variables `var`
/// reads: the longest list of the variables that choose them (each
/// executor reads its own), 1 when none is set.
fn visible_devices_in(var: impl Fn(&str) -> Option<String>) -> usize {
    [
        "CUDA_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES",
    ]
    .iter()
    .filter_map(|v| var(v))
    .map(|list| list.split(',').filter(|d| !d.trim().is_empty()).count())
    .max()
    .unwrap_or(1)
    .max(1)
}

/// `--timeout`: seconds, 0 for none.
fn seconds(s: &str) -> std::result::Result<Duration, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds (600, say; 0 for no limit)"))?;
    Duration::try_from_secs_f64(v)
        .map_err(|_| format!("{s}: a timeout is a finite number of seconds, at least 0"))
}

/// `--slower`: a factor of at least 1.
fn factor(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a factor (1.2 flags what is 20% slower)"))?;
    if !v.is_finite() || v < 1.0 {
        return Err(format!(
            "{s}: the factor is at least 1 (1.2 flags what is 20% slower)"
        ));
    }
    Ok(v)
}

#[cfg(test)]
mod tests;
