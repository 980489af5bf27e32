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
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use reprise::LaunchConfig;
pub use reprise::tune::rows::{Header, Row, compiled_key, ranking};
pub use reprise::tune::space::full_list;

use super::TuneArgs;
use super::report::Sweep;
use crate::error::{CliError, Result};
use crate::jobs::shard::Shard;

/// The rows file of a shard: `--rows`, else `reprise-tune-K-of-N.jsonl`.
pub fn rows_path(a: &TuneArgs, s: Shard) -> PathBuf {
    a.rows
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("reprise-tune-{}-of-{}.jsonl", s.index, s.count)))
}

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
    let count = m
        .headers
        .keys()
        .filter_map(|k| k.parse::<Shard>().ok())
        .map(|s| s.count)
        .max();
    if let Some(n) = count {
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
    }
    let device_times = m.headers.values().all(|h| h.device_times);
    let rows: Vec<Row> = m.rows.into_values().collect();
    report(a, kernel, &rows, order, device_times, &incomplete)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::report::csv;
    use reprise::tune::rows::key;

    /// The configurations of `shard`, in the sweep's order.
    fn slice(all: &[LaunchConfig], s: Shard) -> Vec<LaunchConfig> {
        all.iter().copied().filter(|c| s.holds(&key(c))).collect()
    }

    fn c(g: u32, b: u32) -> LaunchConfig {
        LaunchConfig {
            grid: [g, 1, 1],
            block: [b, 1, 1],
            shared_mem: 0,
        }
    }

    #[test]
    fn the_slices_hold_every_configuration_once() {
        let recorded = c(128, 256);
        let mut lists = Vec::new();
        for g in [64, 128, 256, 512] {
            for b in [128, 256, 512, 1024] {
                lists.push(c(g, b));
            }
        }
        let all = full_list(&lists, recorded);
        assert_eq!(all.len(), 16);
        assert_eq!(all[0], recorded);
        for n in 1..=7 {
            let mut seen = Vec::new();
            for k in 0..n {
                seen.extend(slice(&all, Shard { index: k, count: n }));
            }
            seen.sort_by_key(key);
            let mut want = all.clone();
            want.sort_by_key(key);
            assert_eq!(seen, want, "{n} shards");
        }
        // Reordered lists: the same slices.
        let mut reversed = lists.clone();
        reversed.reverse();
        let again = full_list(&reversed, recorded);
        let s = Shard { index: 1, count: 3 };
        let mut x = slice(&all, s);
        let mut y = slice(&again, s);
        x.sort_by_key(key);
        y.sort_by_key(key);
        assert_eq!(x, y);
    }

    #[test]
    fn rows_that_differ_in_compile_setting_key_apart_and_old_rows_read_as_before() {
        let old = r#"{"grid":[4,1,1],"block":[256,1,1],"shared_mem":0,"recorded":true,"status":"verified","detail":null,"times_ns":[5]}"#;
        let r: Row = serde_json::from_str(old).unwrap();
        assert_eq!(r.compile(), None);
        assert_eq!(r.key(), key(&r.config()));
        let mut jit = r.clone();
        jit.jit = Some("MAX_REGISTERS=32".into());
        let mut level = r.clone();
        level.opt_level = Some(2);
        assert_eq!(level.compile().as_deref(), Some("O2"));
        let keys: std::collections::HashSet<String> =
            [&r, &jit, &level].map(Row::key).into_iter().collect();
        assert_eq!(keys.len(), 3);
        let back: Row = serde_json::from_str(&serde_json::to_string(&level).unwrap()).unwrap();
        assert_eq!(back, level);
    }

    #[test]
    fn the_ranking_is_by_median_then_differs_then_the_rest() {
        let row = |g, status: &str, t: &[u64]| Row {
            grid: [g, 1, 1],
            block: [1, 1, 1],
            shared_mem: 0,
            recorded: g == 2,
            status: status.into(),
            detail: None,
            times_ns: t.to_vec(),
            jit: None,
            registers: None,
            spills: None,
            opt_level: None,
        };
        let rows = vec![
            row(1, "refused", &[]),
            row(2, "verified", &[30, 10, 20]),
            row(3, "differs", &[1]),
            row(4, "verified", &[5, 5]),
        ];
        let order: Vec<LaunchConfig> = (1..=4).map(|g| c(g, 1)).collect();
        let r = ranking(&rows, &order);
        let grids: Vec<u32> = r.iter().map(|r| r.grid[0]).collect();
        assert_eq!(grids, [4, 2, 3, 1]);
        let text = csv(&r);
        assert!(text.lines().nth(1).unwrap().starts_with("1,4,"), "{text}");
        assert!(text.contains(",4.0000,"), "speed-up 20/5: {text}");
    }
}
