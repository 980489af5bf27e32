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
use std::time::Duration;

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::error::{CliError, Result};

/// Running the shards as a Slurm job array.
#[derive(Args, Debug, Clone, Default)]
pub struct SlurmArgs {
    /// Run the shards as the tasks of one Slurm job array, and merge them.
    ///
    /// `sbatch --array=0-(N-1)`: task K runs `--shard K/N` into its own
    /// results file, and their files are merged here once the job has
    /// ended. The job's directory (the sbatch script, the shards' files,
    /// the tasks' logs) lies beside the results file: NAME.slurm/ for
    /// NAME.jsonl. The tasks run this executable from this directory, so
    /// both must be where the cluster's nodes see them.
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
        match crate::side_files::read(&path, "job record")? {
            Some(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| CliError::file(&path, format!("not a job record: {e}"))),
            None => Ok(None),
        }
    }

    /// Writes the record into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).expect("a job record serializes");
        crate::side_files::write(&dir.join("job.json"), text.as_bytes())
    }

    /// The submission that last ran `task`.
    pub fn last_for(&self, task: u64) -> Option<&Submission> {
        self.submissions
            .iter()
            .rev()
            .find(|s| s.tasks.contains(&task))
    }
}

/// The results file of shard `k` of `n` in the job directory.
pub fn shard_file(dir: &Path, k: u64, n: u64) -> PathBuf {
    dir.join(format!("shard-{k}-of-{n}.jsonl"))
}

/// Where a job's files go: the results file `results` (else `default`
/// here), absolute, its job directory, and the working directory. A
/// working directory or results file that could not be written into the
/// job's script is refused here, named (`option` gives the results
/// file), before any work.
pub fn paths(
    results: Option<&Path>,
    default: &str,
    option: &str,
) -> Result<(PathBuf, PathBuf, PathBuf)> {
    let cwd = std::env::current_dir()
        .map_err(|e| reprise::Error::io("the current directory", "find", e))?;
    script::checked_path("the working directory", &cwd)?;
    // Absolute: the tasks run elsewhere.
    let given = results.unwrap_or(Path::new(default));
    let results =
        std::path::absolute(given).map_err(|e| reprise::Error::io(given, "resolve", e))?;
    script::checked_path(option, &results)?;
    // The job directory: `NAME.slurm` beside `NAME.jsonl`.
    let stem = results
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "reprise".into());
    let dir = results.with_file_name(format!("{stem}.slurm"));
    Ok((results, dir, cwd))
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
        return Err(CliError::file(
            dir,
            format!(
                "job {} from an earlier run is still in the queue: wait for it with --resume, \
             or cancel it (scancel {}) first",
                last.job_id, last.job_id
            ),
        ));
    }
    note!("waiting for job {} (submitted before) to end", last.job_id);
    queue::wait(&last.job_id, POLL, |_| {})
}

const POLL: Duration = Duration::from_millis(500);

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

/// Makes the job directory `dir` (and its `logs/`); with `fresh`, the
/// shards' results files of an earlier run in it go first. A job
/// directory (or `logs/`) that is a symbolic link is refused: the job's
/// files would be written, and earlier ones removed, in the link's
/// target. Only regular files named as a shard's results
/// (`shard-K-of-N.jsonl`) are removed, through the directory opened once
/// without following a link.
pub fn prepare(dir: &Path, fresh: bool) -> Result<()> {
    use std::io::ErrorKind::{AlreadyExists, NotFound};
    use std::os::fd::AsRawFd as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    refuse_link(dir)?;
    std::fs::create_dir_all(dir)
        .map_err(|e| reprise::Error::io(dir, "create the job directory", e))?;
    let d = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP | libc::ENOTDIR) => linked(dir),
            _ => reprise::Error::io(dir, "open the job directory", e).into(),
        })?;
    // Every name is reached through the descriptor: `/proc/self/fd/N` is
    // the directory opened, so a link put in its place since is never
    // followed, and the last component of a name never is.
    let within = PathBuf::from(format!("/proc/self/fd/{}", d.as_raw_fd()));
    if fresh {
        let rd =
            std::fs::read_dir(&within).map_err(|e| reprise::Error::io(dir, "list directory", e))?;
        for name in rd
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| is_shard_file(n))
        {
            let (p, at) = (dir.join(&name), within.join(&name));
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.is_file() => match std::fs::remove_file(&at) {
                    Err(e) if e.kind() != NotFound => {
                        return Err(reprise::Error::io(&p, "remove", e).into());
                    }
                    _ => {}
                },
                Err(e) if e.kind() != NotFound => {
                    return Err(reprise::Error::io(&p, "stat", e).into());
                }
                _ => {}
            }
        }
    }
    let logs = dir.join("logs");
    match std::fs::create_dir(within.join("logs")) {
        Err(e) if e.kind() != AlreadyExists => Err(reprise::Error::io(&logs, "create", e).into()),
        _ => match std::fs::symlink_metadata(within.join("logs")) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => Err(CliError::file(
                &logs,
                "not a directory (a symbolic link, or a file): the tasks' logs cannot go there",
            )),
            Err(e) => Err(reprise::Error::io(&logs, "stat", e).into()),
        },
    }
}

fn refuse_link(dir: &Path) -> Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => Err(linked(dir)),
        Ok(m) if !m.is_dir() => Err(CliError::file(dir, "the job directory is not a directory")),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(reprise::Error::io(dir, "stat", e).into()),
    }
}

fn linked(dir: &Path) -> CliError {
    CliError::file(
        dir,
        "the job directory is a symbolic link, which --slurm does not follow (it writes \
         the job's files there and removes an earlier run's): remove the link, or name another \
         results file",
    )
}

/// Whether `name` is that of a shard's results file: `shard-K-of-N.jsonl`.
fn is_shard_file(name: &std::ffi::OsStr) -> bool {
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    name.to_str()
        .and_then(|n| n.strip_prefix("shard-")?.strip_suffix(".jsonl"))
        .and_then(|n| n.split_once("-of-"))
        .is_some_and(|(k, n)| number(k) && number(n))
}

/// What an array task runs: this executable, `subcommand`, and this
/// command's arguments less the Slurm options and those in `values`
/// (which take a value) and `flags`, which only the submission acts on.
pub fn task_command(subcommand: &str, values: &[&str], flags: &[&str]) -> Result<Vec<String>> {
    let exe = crate::ui::exe()?;
    let values = [script::SLURM_VALUES, values].concat();
    let flags = [script::SLURM_FLAGS, flags].concat();
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(2).collect();
    let mut command = vec![exe.display().to_string(), subcommand.to_string()];
    command.extend(script::forwarded(&args, &values, &flags)?);
    Ok(command)
}

/// Writes `s` to `dir/name`, submits its `tasks` from `cwd` (with its
/// sbatch options, [`script::Script::sbatch_args`]) and records
/// the submission in `record`; then waits for the job, saying what runs,
/// or with `--no-wait` says how to merge later (`merge`, a command) and
/// returns `None`.
pub fn submit_and_wait(
    s: &script::Script<'_>,
    name: &str,
    tasks: &[u64],
    record: &mut JobRecord,
    merge: &str,
) -> Result<Option<String>> {
    let path = s.dir.join(name);
    let options = s.sbatch_args()?;
    s.write(&path)?;
    let job = queue::submit(&path, tasks, &options, s.cwd)?;
    record.submissions.push(Submission {
        job_id: job.clone(),
        tasks: tasks.to_vec(),
    });
    record.write(s.dir)?;
    let what = format!("{} array task(s) of {} shards", tasks.len(), record.shards);
    if s.slurm.no_wait {
        out!("submitted job {job}: {what} into {}", s.dir.display());
        out!("when it has ended: {merge}");
        return Ok(None);
    }
    note!("submitted job {job}: {what}; waiting for it");
    let mut last = String::new();
    queue::wait(&job, POLL, |q| {
        let running = q.iter().filter(|(_, s)| s == "RUNNING").count();
        let line = format!(
            "job {job}: {running} task(s) running, {} queued",
            q.len() - running
        );
        if line != last {
            note!("{line}");
            last = line;
        }
    })?;
    Ok(Some(job))
}

/// How each task of each of `record`'s submissions ended, by job id.
pub fn ends(record: &JobRecord) -> BTreeMap<String, BTreeMap<u64, queue::TaskEnd>> {
    record
        .submissions
        .iter()
        .map(|s| (s.job_id.clone(), queue::task_ends(&s.job_id)))
        .collect()
}

#[cfg(test)]
mod tests;
