//! Slurm as it is, through its client commands: `sbatch --parsable
//! --array=...` submits, `squeue` says whether a job array is still in the
//! queue, `scontrol show job` how each of its tasks ended. No `sacct`: a
//! cluster without accounting storage (`slurmdbd`) has nothing for it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::error::{CliError, Result};

/// Runs one of Slurm's commands, or says clearly why it could not.
fn slurm(tool: &str, args: &[String], cwd: Option<&Path>) -> Result<Output> {
    let mut cmd = Command::new(tool);
    cmd.args(args);
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    cmd.output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            CliError::Program(format!(
                "{tool} is not on PATH: --slurm needs Slurm's client commands (sbatch, squeue, \
                 scontrol) on this machine"
            ))
        } else {
            CliError::Program(format!("could not run {tool}: {e}"))
        }
    })
}

/// What a command printed on stderr, trimmed, for an error message.
fn said(o: &Output) -> String {
    let text = String::from_utf8_lossy(&o.stderr).trim().to_string();
    let text = crate::ui::shown_text(&text).into_owned();
    if text.is_empty() {
        "(nothing on stderr)".into()
    } else {
        text
    }
}

/// `0-3`, `1,3`, `0-2,5`: the `--array` list of `tasks` (sorted, each
/// once).
pub fn array_spec(tasks: &[u64]) -> String {
    let runs = tasks.chunk_by(|a, b| *b == a + 1).map(|run| match run {
        [first, .., last] => format!("{first}-{last}"),
        [one] => one.to_string(),
        [] => String::new(),
    });
    runs.collect::<Vec<_>>().join(",")
}

/// Submits `script` as a job array of `tasks`, with `options` for
/// sbatch (which override the script's `#SBATCH` lines), from the
/// directory `cwd`; returns the job id. Each argument is
/// [`checked`](super::script::checked) as the script's values are.
pub fn submit(script: &Path, tasks: &[u64], options: &[String], cwd: &Path) -> Result<String> {
    let mut args = vec![
        "--parsable".to_string(),
        format!("--array={}", array_spec(tasks)),
    ];
    args.extend(options.iter().cloned());
    args.push(super::script::checked_path("the batch script", script)?.to_string());
    for a in &args {
        super::script::checked("an sbatch argument", a)?;
    }
    let o = slurm("sbatch", &args, Some(cwd))?;
    if !o.status.success() {
        return Err(CliError::Program(format!(
            "sbatch {} failed ({}): {}",
            args.join(" "),
            o.status,
            said(&o)
        )));
    }
    // `--parsable`: `JOBID` or `JOBID;CLUSTER`.
    let out = String::from_utf8_lossy(&o.stdout);
    let id = out.trim().split(';').next().unwrap_or("").trim();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(CliError::Program(format!(
            "sbatch printed no job id (expected a number from --parsable): {:?}",
            out.trim()
        )));
    }
    Ok(id.to_string())
}

/// The tasks of job `job` still in the queue: (task, state) for each,
/// none when the job has left it.
pub fn queued(job: &str) -> Result<Vec<(Option<u64>, String)>> {
    let args = ["-h", "-r", "-j", job, "-o", "%K %T"].map(String::from);
    let o = slurm("squeue", &args, None)?;
    if !o.status.success() {
        let err = said(&o);
        // A job the controller has forgotten is no longer queued.
        if err.contains("Invalid job id") {
            return Ok(Vec::new());
        }
        return Err(CliError::Program(format!(
            "squeue -j {job} failed ({}): {err}",
            o.status
        )));
    }
    Ok(String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let task = it.next()?;
            let state = it.next().unwrap_or("").to_string();
            Some((task.parse().ok(), state))
        })
        .collect())
}

/// Waits until job `job` has left the queue, calling `progress` with what
/// is still queued every `poll`.
pub fn wait(
    job: &str,
    poll: Duration,
    mut progress: impl FnMut(&[(Option<u64>, String)]),
) -> Result<()> {
    let mut failures = 0;
    loop {
        match queued(job) {
            Ok(q) if q.is_empty() => return Ok(()),
            Ok(q) => {
                failures = 0;
                progress(&q);
            }
            // The controller busy for a moment: try again a few times.
            Err(e) => {
                failures += 1;
                if failures > 10 {
                    return Err(e);
                }
            }
        }
        std::thread::sleep(poll);
    }
}

/// How an array task ended, as `scontrol show job` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskEnd {
    /// `COMPLETED`, `FAILED`, `CANCELLED`, `TIMEOUT`, `NODE_FAIL`, ...
    pub state: String,
    /// The batch script's exit status and the signal (`ExitCode=1:0`).
    pub exit_code: String,
    /// Why, where Slurm says (`Reason=`).
    pub reason: String,
}

impl TaskEnd {
    /// The batch script's exit status, where it exited.
    pub fn exit_status(&self) -> Option<i32> {
        let (code, signal) = self.exit_code.split_once(':')?;
        (signal == "0").then(|| code.parse().ok()).flatten()
    }
}

/// How each task of job array `job` ended, by task; empty when Slurm no
/// longer knows the job (past `MinJobAge`), which the caller says.
pub fn task_ends(job: &str) -> BTreeMap<u64, TaskEnd> {
    let args = ["-o", "show", "job", job].map(String::from);
    match slurm("scontrol", &args, None) {
        Ok(o) if o.status.success() => parse_show_job(&String::from_utf8_lossy(&o.stdout)),
        _ => BTreeMap::new(),
    }
}

/// `scontrol -o show job` lines: one job record a line, `Key=Value`
/// fields between spaces.
pub fn parse_show_job(text: &str) -> BTreeMap<u64, TaskEnd> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let field = |key: &str| {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
                .unwrap_or("")
                .to_string()
        };
        let end = TaskEnd {
            state: field("JobState"),
            exit_code: field("ExitCode"),
            reason: field("Reason"),
        };
        for task in task_list(&field("ArrayTaskId")) {
            out.insert(task, end.clone());
        }
    }
    out
}

/// `2`, `2-3`, `1,3`, `0-7%2`: the tasks an `ArrayTaskId` names.
fn task_list(s: &str) -> Vec<u64> {
    let s = s.split('%').next().unwrap_or("");
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u64>(), b.parse::<u64>()) {
                    // Bounded: an array is at most MaxArraySize tasks.
                    out.extend((a..=b).take(1 << 20));
                }
            }
            None => out.extend(part.parse::<u64>().ok()),
        }
    }
    out
}

#[cfg(test)]
mod tests;
