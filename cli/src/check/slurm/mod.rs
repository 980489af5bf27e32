//! `--slurm`: the shards of a corpus (or of a tuning sweep) as the tasks
//! of one Slurm job array. An sbatch script is written into a job
//! directory beside the results, submitted with `sbatch --array`, waited
//! for (`squeue`, then `scontrol show job` for how each task ended), and
//! the shards' results files, which are the truth, are merged into one
//! summary. `--resume` resubmits only the shards whose results are
//! incomplete; each task resumes its own file, so that no capture is
//! checked twice.

pub mod queue;
pub mod script;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use serde::{Deserialize, Serialize};

use super::discover::{self, Found};
use super::results::{self, CaptureResult, Read, Status};
use super::shard::Shard;
use super::{CheckArgs, finish, open_options, write_new};
use crate::error::{CliError, Result};

/// Running the shards as a Slurm job array.
#[derive(Args, Debug, Clone, Default)]
pub struct SlurmArgs {
    /// Run the shards as the tasks of one Slurm job array (sbatch
    /// --array=0-(N-1)): task K runs `--shard K/N` into its own results
    /// file, and their files are merged here once the job has ended. The
    /// job's directory (the sbatch script, the shards' files, the tasks'
    /// logs) lies beside the results file: NAME.slurm/ for NAME.jsonl.
    /// The tasks run this executable from this directory, so both must be
    /// where the cluster's nodes see them.
    #[arg(long, help_heading = "Slurm", conflicts_with_all = ["merge", "shard"])]
    pub slurm: bool,
    /// The partition to run in [default: the cluster's].
    #[arg(long, value_name = "P", requires = "slurm", help_heading = "Slurm")]
    pub partition: Option<String>,
    /// GPUs for each array task (sbatch --gpus-per-task).
    #[arg(long, value_name = "G", requires = "slurm", help_heading = "Slurm",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub gpus_per_task: Option<u32>,
    /// How many array tasks (shards) [default: 16, or fewer for a smaller
    /// corpus].
    #[arg(long, value_name = "N", requires = "slurm", help_heading = "Slurm",
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub array_size: Option<u32>,
    /// One more argument for sbatch (repeat for more): `--sbatch-arg
    /// --time=30`, `--sbatch-arg=--account=A`.
    #[arg(
        long = "sbatch-arg",
        value_name = "ARG",
        requires = "slurm",
        allow_hyphen_values = true,
        help_heading = "Slurm"
    )]
    pub sbatch_args: Vec<String>,
    /// Submit and return: print the job id and how to merge its results
    /// later.
    #[arg(long, requires = "slurm", help_heading = "Slurm")]
    pub no_wait: bool,
}

/// What the job directory records of its submissions (`job.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobRecord {
    /// How many shards the work is cut into.
    pub shards: u64,
    /// Each submission: its job id and the tasks it ran.
    pub submissions: Vec<Submission>,
}

/// One `sbatch` of the job directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Submission {
    /// Slurm's job id.
    pub job_id: String,
    /// The array tasks (shards) submitted.
    pub tasks: Vec<u64>,
}

impl JobRecord {
    /// The record in `dir`, if there is one.
    pub fn read(dir: &Path) -> Result<Option<JobRecord>> {
        let path = dir.join("job.json");
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                CliError::Command(format!("{}: not a job record: {e}", path.display()))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(reprise::Error::io(&path, "read", e).into()),
        }
    }

    /// Writes the record into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).expect("a job record serializes");
        write_new(&dir.join("job.json"), text.as_bytes())
    }

    /// The submission that last ran `task`.
    pub fn last_for(&self, task: u64) -> Option<&Submission> {
        self.submissions
            .iter()
            .rev()
            .find(|s| s.tasks.contains(&task))
    }
}

/// The job directory for results file `results`: `NAME.slurm` beside it.
pub fn job_dir(results: &Path) -> PathBuf {
    let stem = results
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "reprise".into());
    results.with_file_name(format!("{stem}.slurm"))
}

/// The results file of shard `k` of `n` in the job directory.
pub fn shard_file(dir: &Path, k: u64, n: u64) -> PathBuf {
    dir.join(format!("shard-{k}-of-{n}.jsonl"))
}

/// An absolute path (the tasks run elsewhere).
pub fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| reprise::Error::io(p, "resolve", e).into())
}

/// Before a submission: waits for an earlier job of `record` still in the
/// queue with `--resume`, or refuses to start anew beside it.
pub fn earlier_job(record: Option<&JobRecord>, resume: bool, dir: &Path) -> Result<()> {
    let Some(last) = record.and_then(|r| r.submissions.last()) else {
        return Ok(());
    };
    if queue::queued(&last.job_id)?.is_empty() {
        return Ok(());
    }
    if !resume {
        return Err(CliError::Command(format!(
            "{}: job {} from an earlier run is still in the queue: wait for it with --resume, \
             or cancel it (scancel {}) first",
            dir.display(),
            last.job_id,
            last.job_id
        )));
    }
    note!("waiting for job {} (submitted before) to end", last.job_id);
    queue::wait(&last.job_id, poll(), |_| {})
}

/// How often the queue is asked.
pub fn poll() -> Duration {
    Duration::from_millis(500)
}

/// Names the tasks of `tasks` whose work is incomplete, with how each
/// ended (from `ends`, by the submission that last ran it); returns the
/// lines.
pub fn incomplete_lines(
    record: &JobRecord,
    missing: &BTreeMap<u64, usize>,
    ends: &BTreeMap<String, BTreeMap<u64, queue::TaskEnd>>,
    what: &str,
) -> Vec<String> {
    let mut lines = Vec::new();
    for (&k, &n) in missing.iter().filter(|(_, n)| **n > 0) {
        let how = match record.last_for(k) {
            Some(s) => match ends.get(&s.job_id).and_then(|e| e.get(&k)) {
                Some(e) => format!(
                    "array task {}_{k} ended {} (exit code {}{})",
                    s.job_id,
                    e.state,
                    e.exit_code,
                    if e.reason.is_empty() || e.reason == "None" {
                        String::new()
                    } else {
                        format!(", {}", e.reason)
                    }
                ),
                None => format!(
                    "array task {}_{k} is no longer known to Slurm (its logs say how it ended)",
                    s.job_id
                ),
            },
            None => "never submitted".into(),
        };
        lines.push(format!(
            "shard {k}/{}: {n} {what} without a result: {how}",
            record.shards
        ));
    }
    lines
}

/// `reprise check --slurm`: submits the shards (all, or with `--resume`
/// those incomplete), waits, and merges.
pub fn check(a: &CheckArgs, baseline: Option<Read>) -> Result<ExitCode> {
    let started = Instant::now();
    let results_path = absolute(
        &a.results
            .clone()
            .unwrap_or_else(|| PathBuf::from("reprise-check.jsonl")),
    )?;
    crate::ui::check_output_file(&results_path, Some("jsonl"))?;
    let dir = job_dir(&results_path);
    let cwd = std::env::current_dir()
        .map_err(|e| reprise::Error::io("the current directory", "find", e))?;
    let corpus = discover::find(&a.paths, &open_options(a).verify_checksums(false))?;
    if corpus.captures.is_empty() {
        return Err(CliError::Command("no captures found to check".into()));
    }
    let record = JobRecord::read(&dir)?;
    earlier_job(record.as_ref(), a.resume, &dir)?;
    let shards = match (&record, a.resume) {
        (Some(r), true) => {
            if let Some(n) = a.slurm.array_size
                && u64::from(n) != r.shards
            {
                return Err(CliError::Command(format!(
                    "{}: the job was cut into {} shards, and --resume keeps them (--array-size \
                     {n} would cut it anew: leave out --resume for that)",
                    dir.display(),
                    r.shards
                )));
            }
            r.shards
        }
        _ => u64::from(a.slurm.array_size.unwrap_or(16)).min(corpus.captures.len() as u64),
    };
    let mut record = match (record, a.resume) {
        (Some(r), true) => r,
        _ => JobRecord {
            shards,
            submissions: Vec::new(),
        },
    };
    // Each shard's captures, by path.
    let mut expected: BTreeMap<u64, Vec<&Found>> = (0..shards).map(|k| (k, vec![])).collect();
    for f in &corpus.captures {
        let k = super::shard::of(&f.name, shards);
        expected.entry(k).or_default().push(f);
    }
    if !a.resume {
        // A fresh run: the files of an earlier one go.
        if dir.exists() {
            for e in std::fs::read_dir(&dir)
                .map_err(|e| reprise::Error::io(&dir, "list directory", e))?
                .flatten()
            {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "jsonl") {
                    std::fs::remove_file(&p).map_err(|e| reprise::Error::io(&p, "remove", e))?;
                }
            }
        }
    }
    std::fs::create_dir_all(dir.join("logs"))
        .map_err(|e| reprise::Error::io(&dir, "create the job directory", e))?;
    let missing = |expected: &BTreeMap<u64, Vec<&Found>>| -> Result<BTreeMap<u64, usize>> {
        let mut out = BTreeMap::new();
        for (&k, captures) in expected {
            let mut read = Read::default();
            read.add_file(&shard_file(&dir, k, shards))?;
            let n = captures
                .iter()
                .filter(|f| !read.results.contains_key(&f.path.display().to_string()))
                .count();
            out.insert(k, n);
        }
        Ok(out)
    };
    let to_submit: Vec<u64> = missing(&expected)?
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, _)| k)
        .collect();
    if a.resume && !record.submissions.is_empty() {
        note!(
            "resuming: {} of the {shards} shards are incomplete",
            to_submit.len()
        );
    }
    if !to_submit.is_empty() {
        let script_path = dir.join("check.sbatch");
        write_script(a, &dir, &cwd, shards)?.write(&script_path)?;
        let job = queue::submit(&script_path, &to_submit, &a.slurm.sbatch_args, &cwd)?;
        record.submissions.push(Submission {
            job_id: job.clone(),
            tasks: to_submit.clone(),
        });
        record.write(&dir)?;
        if a.slurm.no_wait {
            out!(
                "submitted job {job}: {} array task(s) of {shards} shards into {}",
                to_submit.len(),
                dir.display()
            );
            out!(
                "when it has ended: reprise check --merge {} (or this command with --resume, \
                 which waits for it and resubmits what is incomplete)",
                dir.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        note!(
            "submitted job {job}: {} array task(s) of {shards} shards; waiting for it",
            to_submit.len()
        );
        let total: usize = to_submit.iter().map(|k| expected[k].len()).sum();
        let mut last = String::new();
        queue::wait(&job, poll(), |q| {
            let running = q.iter().filter(|(_, s)| s == "RUNNING").count();
            let line = format!(
                "job {job}: {running} task(s) running, {} queued; {total} capture(s) to check",
                q.len() - running
            );
            if line != last {
                note!("{line}");
                last = line;
            }
        })?;
    }
    // Merge: the shards' files are the truth.
    let mut ends = BTreeMap::new();
    for s in &record.submissions {
        ends.insert(s.job_id.clone(), queue::task_ends(&s.job_id));
    }
    let (read, _) = results::read_dir(&dir)?;
    let left = missing(&expected)?;
    let lines = incomplete_lines(&record, &left, &ends, "capture(s)");
    let mut all: Vec<CaptureResult> = Vec::new();
    let mut merged = String::new();
    for (&k, captures) in &expected {
        for f in captures {
            let path = f.path.display().to_string();
            match read.results.get(&path) {
                Some(r) => {
                    merged.push_str(&r.line());
                    all.push(r.clone());
                }
                None => all.push(no_result(f, k, shards)),
            }
        }
    }
    all.sort_by(|x, y| x.path.cmp(&y.path));
    write_new(&results_path, merged.as_bytes())?;
    for l in &lines {
        note!("INCOMPLETE {l}");
    }
    for (job, tasks) in &ends {
        for (k, e) in tasks {
            let expected_end = e.state == "COMPLETED"
                || (e.state == "FAILED" && matches!(e.exit_status(), Some(1 | 2)));
            if !expected_end && left.get(k) == Some(&0) {
                note!(
                    "warning: array task {job}_{k} ended {} (exit code {}), though shard {k} \
                     has every result",
                    e.state,
                    e.exit_code
                );
            }
        }
    }
    if !lines.is_empty() {
        note!(
            "the same command with --resume resubmits the incomplete shards ({})",
            dir.display()
        );
    }
    let jobs: Vec<&str> = record
        .submissions
        .iter()
        .map(|s| s.job_id.as_str())
        .collect();
    let source = format!(
        "{} (merged from {shards} shards of Slurm job {} in {})",
        results_path.display(),
        jobs.join(", "),
        dir.display()
    );
    let ran = all.iter().filter(|r| r.wall_ns > 0).count();
    finish(
        a,
        all.iter().collect(),
        (Some(started.elapsed()), ran),
        baseline,
        source,
    )
}

/// The sbatch script for `a`'s corpus in `shards` shards.
fn write_script<'a>(
    a: &'a CheckArgs,
    dir: &'a Path,
    cwd: &'a Path,
    shards: u64,
) -> Result<script::Script<'a>> {
    let exe = std::env::current_exe()
        .map_err(|e| reprise::Error::io("the reprise executable", "locate", e))?;
    let mut values = script::SLURM_VALUES.to_vec();
    values.extend(["--results", "--junit", "--baseline", "--slower", "--shard"]);
    let mut flags = script::SLURM_FLAGS.to_vec();
    flags.extend(["--resume", "--json"]);
    let mut command = vec![exe.display().to_string(), "check".into()];
    command.extend(script::forwarded(&super::worker_args(), &values, &flags)?);
    let file = script::quoted(&format!("{}/shard-", dir.display()));
    let task_args = format!(
        "--shard \"$SLURM_ARRAY_TASK_ID/{shards}\" --resume --json \
         --results {file}\"$SLURM_ARRAY_TASK_ID\"-of-{shards}.jsonl{}",
        if a.jobs.is_none() {
            " --jobs \"${SLURM_CPUS_ON_NODE:-1}\""
        } else {
            ""
        }
    );
    Ok(script::Script {
        job_name: "reprise-check",
        dir,
        cwd,
        command,
        task_args,
        cpus_per_task: a.jobs,
        slurm: &a.slurm,
    })
}

/// A capture of shard `k` that no task gave a result for: it counts as
/// failed in the summary (and is not written to the results file, so
/// that `--resume` checks it).
fn no_result(f: &Found, k: u64, n: u64) -> CaptureResult {
    let mut r = super::refused(f, "");
    r.status = Status::Failed;
    r.message = format!(
        "no result: shard {} (array task {k}) did not check it; --resume checks it",
        Shard { index: k, count: n }
    );
    r
}
