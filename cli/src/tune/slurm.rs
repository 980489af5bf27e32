//! `reprise tune --slurm` and `--merge`: a sweep's shards as the tasks of
//! one Slurm job array (each `tune --shard K/N` into its own rows file in
//! the job directory), merged into one ranking once the job has ended.

use std::collections::BTreeMap;
use std::process::ExitCode;

use reprise::{BackendKind, Capture, LaunchConfig};

use super::TuneArgs;
use super::sampler::{candidates, compiles, key, study};
use super::shard::{self, Row};
use crate::error::{CliError, Result};
use crate::jobs::shard::of as shard_of;
use crate::jobs::slurm::{self as cs, JobRecord, prepare, script};

/// `--merge` and `--slurm`, for `capture` (recorded with `recorded`) on
/// `backend`.
pub fn run(
    a: &TuneArgs,
    capture: &Capture,
    recorded: LaunchConfig,
    backend: BackendKind,
) -> Result<ExitCode> {
    let geometry = reprise::executors::capabilities(backend).launch_geometry;
    let (_, candidates, order) = candidates(a, recorded, geometry)?;
    let kernel = capture.record.name.to_string();
    if let Some(dir) = &a.merge {
        return shard::merge(a, dir, &kernel, &order);
    }
    let compiles = compiles(a);
    let keys: Vec<String> = study(&candidates, recorded, geometry)
        .iter()
        .map(|c| key(&compiles, c))
        .collect();
    submit(a, &kernel, &order, &keys)
}

/// Submits the sweep's shards, waits, merges; `keys` are the rows the
/// whole sweep has ([`shard::compiled_key`]), `order` its geometries.
fn submit(a: &TuneArgs, kernel: &str, order: &[LaunchConfig], keys: &[String]) -> Result<ExitCode> {
    let (_, dir, cwd) = cs::paths(a.rows.as_deref(), "reprise-tune.jsonl", "--rows")?;
    let record = JobRecord::read(&dir)?;
    cs::earlier_job(record.as_ref(), false, &dir)?;
    let n = u64::from(a.slurm.array_size.unwrap_or(16))
        .min(keys.len() as u64)
        .max(1);
    let mut expected: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    for k in keys {
        expected.entry(shard_of(k, n)).or_default().push(k);
    }
    let command = cs::task_command(
        "tune",
        &["--rows", "--csv", "--plot", "--shard"],
        &["--json"],
    )?;
    let s = script::Script {
        job_name: "reprise-tune",
        dir: &dir,
        cwd: &cwd,
        command,
        results_option: "--rows",
        shards: n,
        task_flags: "--json",
        cpus_per_task: None,
        slurm: &a.slurm,
    };
    // Its values checked before anything is written.
    s.check()?;
    prepare(&dir, true)?;
    let tasks: Vec<u64> = expected.keys().copied().collect();
    let mut record = JobRecord {
        shards: n,
        submissions: Vec::new(),
    };
    let merge = format!(
        "reprise tune {} --merge {} (with the same lists)",
        a.file.display(),
        dir.display()
    );
    if cs::submit_and_wait(&s, "tune.sbatch", &tasks, &mut record, &merge)?.is_none() {
        return Ok(ExitCode::SUCCESS);
    }
    let ends = cs::ends(&record);
    let m = shard::read_dir(&dir)?;
    let mut missing = BTreeMap::new();
    let mut rows: Vec<Row> = Vec::new();
    for (&k, wanted) in &expected {
        let mut absent = 0;
        for key in wanted {
            match m.rows.get(*key) {
                Some(r) => rows.push(r.clone()),
                None => absent += 1,
            }
        }
        missing.insert(k, absent);
    }
    let incomplete = cs::incomplete_lines(&record, &missing, &ends, "configuration(s)");
    if rows.is_empty() && incomplete.is_empty() {
        return Err(CliError::file(&dir, "the job wrote no rows"));
    }
    let device_times = m.headers.values().all(|h| h.device_times);
    shard::report(a, kernel, &rows, order, device_times, &incomplete)
}
