//! `reprise tune --shard K/N`: a stable slice of a sweep's
//! configurations, its rows written to a file of their own, and the merge
//! of the shards' rows into the one ranking the whole sweep gives.
//!
//! The configurations are the sweep's list with the recorded one first
//! (the tuner always measures it); configuration C belongs to shard
//! `xxh3(key(C)) % N`, with the same hash as `check --shard`, so the
//! shards of N hold each configuration once whatever order the lists give
//! them in. Every shard measures the recorded configuration (its speed-ups
//! are over it) but only the shard it belongs to writes its row; the
//! merge computes the speed-ups over that row.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use reprise::LaunchConfig;
pub use reprise::tune::rows::{Header, Row, compiled_key, ranking};
pub use reprise::tune::space::full_list;

use super::TuneArgs;
use super::report::Sweep;
use crate::error::{CliError, Result};
use crate::jobs::shard::Shard;

/// What a directory of rows files holds.
#[derive(Debug, Default)]
pub struct Merged {
    /// Every row, by configuration key.
    pub rows: BTreeMap<String, Row>,
    /// The shards' headers, by shard.
    pub headers: BTreeMap<String, Header>,
    /// Rows per shard.
    pub per_shard: BTreeMap<String, usize>,
    /// Lines that were neither.
    pub bad_lines: usize,
}

/// Reads every `*.jsonl` file in `dir`.
pub fn read_dir(dir: &Path) -> Result<Merged> {
    let mut m = Merged::default();
    for f in &crate::jobs::jsonl_files(dir)? {
        let text = crate::side_files::read_text(f, "results file")?;
        let mut shard = None;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            if let Ok(h) = serde_json::from_str::<Header>(line) {
                shard = Some(h.tune_shard.clone());
                m.headers.insert(h.tune_shard.clone(), h);
            } else if let Ok(r) = serde_json::from_str::<Row>(line) {
                if let Some(s) = &shard {
                    *m.per_shard.entry(s.clone()).or_default() += 1;
                }
                m.rows.insert(r.key(), r);
            } else {
                m.bad_lines += 1;
            }
        }
    }
    Ok(m)
}

/// Prints (and writes) the merged ranking of `rows`; the exit status is
/// a sweep's ([`super::report::verdict_exit`]), 2 where rows are missing.
pub fn report(
    a: &TuneArgs,
    kernel: &str,
    rows: &[Row],
    order: &[LaunchConfig],
    device_times: bool,
    incomplete: &[String],
) -> Result<ExitCode> {
    let ranked = ranking(rows, order);
    let sweep = Sweep {
        kernel,
        capture: a.file.display().to_string(),
        runs: None,
        device_times,
        stopped: None,
    };
    super::report::show(a, &sweep, &ranked, &[], false)?;
    for l in incomplete {
        note!("INCOMPLETE {l}");
    }
    Ok(if !incomplete.is_empty() {
        ExitCode::from(2)
    } else {
        super::report::verdict_exit(&a.file, &ranked)
    })
}

/// `reprise tune FILE --merge DIR`: the rows files of DIR as one ranking.
pub fn merge(a: &TuneArgs, dir: &Path, kernel: &str, order: &[LaunchConfig]) -> Result<ExitCode> {
    let m = read_dir(dir)?;
    if m.headers.is_empty() {
        return Err(CliError::file(
            dir,
            "no tuning rows files (*.jsonl written by tune --shard) to merge",
        ));
    }
    if m.bad_lines > 0 {
        note!(
            "warning: {} line(s) in {} are no rows and were skipped",
            m.bad_lines,
            dir.display()
        );
    }
    let mut incomplete = Vec::new();
    let shards = m.headers.keys().filter_map(|k| k.parse::<Shard>().ok());
    let n = shards.map(|s| s.count).max().unwrap_or(0);
    for k in 0..n {
        let name = Shard { index: k, count: n }.to_string();
        match m.headers.get(&name) {
            None => incomplete.push(format!("shard {name}: no rows file")),
            Some(h) => {
                let got = m.per_shard.get(&name).copied().unwrap_or(0);
                if got < h.configs {
                    incomplete.push(format!(
                        "shard {name}: {got} of its {} configuration(s) have rows",
                        h.configs
                    ));
                }
            }
        }
    }
    let device_times = m.headers.values().all(|h| h.device_times);
    let rows: Vec<Row> = m.rows.into_values().collect();
    report(a, kernel, &rows, order, device_times, &incomplete)
}

#[cfg(test)]
mod tests;
