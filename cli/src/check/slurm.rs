//! `reprise check --slurm`: the corpus's shards as one job array, merged
//! from the shards' results files once it has ended.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Instant;

use super::discover::Found;
use super::results::{CaptureResult, Read, Status};
use super::{CheckArgs, finish};
use crate::error::{CliError, Result};
use crate::jobs::shard;
use crate::jobs::slurm::{JobRecord, earlier_job, ends, incomplete_lines, paths, prepare};
use crate::jobs::slurm::{script, shard_file, submit_and_wait, task_command};

/// `reprise check --slurm`: submits the shards (all, or with `--resume`
/// those incomplete), waits, and merges.
pub fn run(a: &CheckArgs, baseline: Option<Read>) -> Result<ExitCode> {
    let started = Instant::now();
    let (results_path, dir, cwd) = paths(a.results.as_deref(), "reprise-check.jsonl", "--results")?;
    crate::ui::check_output_file(&results_path, Some("jsonl"))?;
    let corpus = super::corpus(a)?;
    let record = JobRecord::read(&dir)?;
    earlier_job(record.as_ref(), a.resume, &dir)?;
    let mut record = match record {
        Some(r) if a.resume => {
            if let Some(n) = a.slurm.array_size
                && u64::from(n) != r.shards
            {
                return Err(CliError::file(
                    &dir,
                    format!(
                        "the job was cut into {} shards, and --resume keeps them (--array-size \
                     {n} would cut it anew: leave out --resume for that)",
                        r.shards
                    ),
                ));
            }
            r
        }
        _ => JobRecord {
            shards: u64::from(a.slurm.array_size.unwrap_or(16)).min(corpus.captures.len() as u64),
            submissions: Vec::new(),
        },
    };
    let shards = record.shards;
    // Each shard's captures, by path.
    let mut expected: BTreeMap<u64, Vec<&Found>> = (0..shards).map(|k| (k, vec![])).collect();
    for f in &corpus.captures {
        let k = shard::of(&f.name, shards);
        expected.entry(k).or_default().push(f);
    }
    // The script, its values checked before anything is written.
    let command = task_command(
        "check",
        &["--results", "--junit", "--baseline", "--slower", "--shard"],
        &["--resume", "--json"],
    )?;
    let s = script::Script {
        job_name: "reprise-check",
        dir: &dir,
        cwd: &cwd,
        command,
        results_option: "--results",
        shards,
        task_flags: if a.jobs.is_none() {
            "--resume --json --jobs \"${SLURM_CPUS_ON_NODE:-1}\""
        } else {
            "--resume --json"
        },
        cpus_per_task: a.jobs,
        slurm: &a.slurm,
    };
    s.check()?;
    // A fresh run: the files of an earlier one go.
    prepare(&dir, !a.resume)?;
    // What the shards' files hold (those of this job's N only).
    let read_shards = || -> Result<Read> {
        let mut read = Read::default();
        for k in 0..shards {
            read.add_file(&shard_file(&dir, k, shards))?;
        }
        Ok(read)
    };
    let missing = |read: &Read| -> BTreeMap<u64, usize> {
        expected
            .iter()
            .map(|(&k, captures)| {
                let absent = captures
                    .iter()
                    .filter(|f| !read.results.contains_key(&f.path.display().to_string()))
                    .count();
                (k, absent)
            })
            .collect()
    };
    let to_submit: Vec<u64> = missing(&read_shards()?)
        .into_iter()
        .filter_map(|(k, n)| (n > 0).then_some(k))
        .collect();
    if a.resume && !record.submissions.is_empty() {
        note!(
            "resuming: {} of the {shards} shards are incomplete",
            to_submit.len()
        );
    }
    if !to_submit.is_empty() {
        let merge = format!(
            "reprise check --merge {} (or this command with --resume, which waits for it and \
             resubmits what is incomplete)",
            dir.display()
        );
        if submit_and_wait(&s, "check.sbatch", &to_submit, &mut record, &merge)?.is_none() {
            return Ok(ExitCode::SUCCESS);
        }
    }
    // Merge: the shards' files are the truth.
    let ends = ends(&record);
    let read = read_shards()?;
    let left = missing(&read);
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
                // Counted as failed in the summary, and not written to
                // the results file, so that `--resume` checks it.
                None => {
                    let why = format!(
                        "no result: shard {k}/{shards} (array task {k}) did not check it; \
                         --resume checks it"
                    );
                    all.push(CaptureResult::of(f, Status::Failed, why));
                }
            }
        }
    }
    all.sort_by(|x, y| x.path.cmp(&y.path));
    crate::side_files::write(&results_path, merged.as_bytes())?;
    for l in &lines {
        note!("INCOMPLETE {l}");
    }
    for (job, tasks) in &ends {
        for (k, e) in tasks {
            let last = record.last_for(*k).is_some_and(|s| s.job_id == *job);
            let expected_end = e.state == "COMPLETED"
                || (e.state == "FAILED" && matches!(e.exit_status(), Some(1 | 2)));
            if last && !expected_end && left.get(k) == Some(&0) {
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
