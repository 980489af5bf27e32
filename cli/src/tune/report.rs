//! What `reprise tune` prints and writes: the table, CSV rows, a JSON
//! object, all from the configurations' [`Row`]s in table order, whether
//! measured here or merged from the shards of a sweep.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use reprise::LaunchConfig;
use reprise::tune::{Measured, Status, TuneReport};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::Result;
use crate::ui::human_time;

/// `grid 128x1x1, block 256x1x1` (and the shared memory when there is any).
pub fn config_text(c: &LaunchConfig) -> String {
    let d = |v: [u32; 3]| format!("{}x{}x{}", v[0], v[1], v[2]);
    let mut t = format!("grid {}, block {}", d(c.grid), d(c.block));
    if c.shared_mem > 0 {
        t.push_str(&format!(", {} B shared", c.shared_mem));
    }
    t
}

/// A short label: `128x256` (grid x by block x), with the other
/// dimensions and the shared memory where they are not trivial.
pub fn label(c: &LaunchConfig) -> String {
    let d = |v: [u32; 3]| match v {
        [x, 1, 1] => x.to_string(),
        [x, y, 1] => format!("{x}.{y}"),
        [x, y, z] => format!("{x}.{y}.{z}"),
    };
    let mut t = format!("{}x{}", d(c.grid), d(c.block));
    if c.shared_mem > 0 {
        t.push_str(&format!("+{}B", c.shared_mem));
    }
    t
}

/// The configurations in the order the table shows them: usable ones by
/// median time, then those whose output differs (by median time), then
/// refused and failed ones.
pub fn in_order(r: &TuneReport) -> Vec<&Measured> {
    let mut good = r.ranked();
    let mut differs: Vec<&Measured> = r
        .measured
        .iter()
        .filter(|m| matches!(m.status, Status::Differs(_)))
        .collect();
    differs.sort_by_key(|m| m.median());
    let rest = r
        .measured
        .iter()
        .filter(|m| matches!(m.status, Status::Refused(_) | Status::Failed(_)));
    good.extend(differs);
    good.extend(rest);
    good
}

/// One configuration as the table, the CSV and the JSON show it (and as
/// a shard's rows file holds it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The grid.
    pub grid: [u32; 3],
    /// The block.
    pub block: [u32; 3],
    /// Dynamic shared memory (bytes).
    pub shared_mem: u32,
    /// Whether it is the recorded configuration.
    pub recorded: bool,
    /// `verified`, `unverified`, `differs`, `refused`, `failed`.
    pub status: String,
    /// Why it differs, was refused or failed.
    pub detail: Option<String>,
    /// Each timed run (nanoseconds).
    pub times_ns: Vec<u64>,
    /// The PTX JIT options it was loaded with (`MAX_REGISTERS=32,...`),
    /// in a sweep of JIT options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jit: Option<String>,
    /// Registers a thread uses (`CU_FUNC_ATTRIBUTE_NUM_REGS`), where the
    /// JIT compiled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registers: Option<u32>,
    /// Spill stores and loads in bytes, from the JIT's verbose info log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spills: Option<(u64, u64)>,
    /// The optimisation level its image was compiled at from IR (`2` for
    /// O2), in a search over `--opt-level`; absent in rows written before
    /// it was a dimension of the search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opt_level: Option<u8>,
}

impl Row {
    /// The failed row of the recorded configuration `config`, `detail`
    /// saying why.
    pub fn failed(config: LaunchConfig, detail: Option<String>) -> Row {
        Row {
            grid: config.grid,
            block: config.block,
            shared_mem: config.shared_mem,
            recorded: true,
            status: "failed".into(),
            detail,
            times_ns: Vec::new(),
            jit: None,
            registers: None,
            spills: None,
            opt_level: None,
        }
    }

    /// The row of what the sweep measured.
    pub fn of(m: &Measured) -> Row {
        let (status, detail) = match &m.status {
            Status::Verified => ("verified", None),
            Status::Unverified => ("unverified", None),
            Status::Differs(v) => ("differs", Some(v.to_string())),
            Status::Refused(w) => ("refused", Some(w.to_string())),
            Status::Failed(w) => ("failed", Some(w.to_string())),
        };
        Row {
            grid: m.config.grid,
            block: m.config.block,
            shared_mem: m.config.shared_mem,
            recorded: m.recorded,
            status: status.into(),
            detail,
            times_ns: m
                .times
                .iter()
                .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
                .collect(),
            jit: None,
            registers: None,
            spills: None,
            opt_level: None,
        }
    }

    /// Its compile setting (`MAX_REGISTERS=32`, `O2`), where it has one:
    /// rows that differ only in it are different configurations.
    pub fn compile(&self) -> Option<String> {
        compile_label(self.opt_level, self.jit.as_deref())
    }

    /// Its geometry.
    pub fn config(&self) -> LaunchConfig {
        LaunchConfig {
            grid: self.grid,
            block: self.block,
            shared_mem: self.shared_mem,
        }
    }

    /// Whether its output is usable.
    pub fn good(&self) -> bool {
        self.status == "verified" || self.status == "unverified"
    }

    /// The median (the lower middle one for an even count, as the tuner's).
    pub fn median(&self) -> Option<Duration> {
        let mut t = self.times_ns.clone();
        t.sort_unstable();
        t.get(t.len().saturating_sub(1) / 2)
            .map(|&ns| Duration::from_nanos(ns))
    }

    pub fn min(&self) -> Option<Duration> {
        self.times_ns
            .iter()
            .min()
            .map(|&ns| Duration::from_nanos(ns))
    }

    pub fn max(&self) -> Option<Duration> {
        self.times_ns
            .iter()
            .max()
            .map(|&ns| Duration::from_nanos(ns))
    }

    /// Whether it is ranked: usable and timed.
    pub fn ranked(&self) -> bool {
        self.good() && self.median().is_some()
    }

    /// What became of it, in a word or a few.
    fn status_text(&self) -> String {
        // The first line: a JIT failure's log follows the table.
        let d = self.detail.as_deref().unwrap_or("");
        let d = d.lines().next().unwrap_or("");
        match self.status.as_str() {
            "verified" => "verified".into(),
            "unverified" => "not verified".into(),
            "differs" => format!("OUTPUT DIFFERS: {d}"),
            "refused" => format!("refused: {d}"),
            _ => format!("FAILED: {d}"),
        }
    }
}

/// The rows of a sweep measured here, in table order.
pub fn rows(r: &TuneReport) -> Vec<Row> {
    in_order(r).into_iter().map(Row::of).collect()
}

/// How many times faster than the recorded configuration `r` is (median
/// against median); none for a configuration whose output is not usable.
fn speedup(r: &Row, rows: &[Row]) -> Option<f64> {
    if !r.good() {
        return None;
    }
    let base = rows.iter().find(|r| r.recorded)?.median()?.as_secs_f64();
    let t = r.median()?.as_secs_f64();
    (t > 0.0).then(|| base / t)
}

/// Each row with its rank (ranked rows come first, in table order).
fn ranks(rows: &[Row]) -> impl Iterator<Item = (Option<usize>, &Row)> {
    rows.iter()
        .enumerate()
        .map(|(i, r)| (r.ranked().then_some(i + 1), r))
}

fn time(d: Option<Duration>) -> String {
    d.map_or_else(|| "-".into(), human_time)
}

/// The table of `rows` (in table order), the recorded and the fastest
/// configurations, and why the sweep stopped early if it did.
pub fn table(rows: &[Row], device_times: bool, stopped: Option<&str>) -> Vec<String> {
    // A sweep of JIT options has three more columns: the options, the
    // registers and the spill bytes (stores/loads) of each; a search over
    // --opt-level the same, its level in the first.
    let jit_width = rows
        .iter()
        .filter_map(|r| r.compile().map(|c| c.len()))
        .max()
        .map(|w| w.max(3));
    let compile_head = if rows.iter().any(|r| r.jit.is_some()) {
        "jit"
    } else {
        "opt"
    };
    let jit_cols = |jit: &str, regs: &str, spill: &str| {
        jit_width.map_or_else(String::new, |w| format!("{jit:<w$} {regs:>4} {spill:>9}  "))
    };
    let mut lines = vec![format!(
        "{:>4}  {:<28} {:>8}  {}{:>10} {:>10} {:>10}  {:>8}  output",
        "rank",
        "configuration",
        "shared",
        jit_cols(compile_head, "regs", "spill"),
        "min",
        "median",
        "max",
        "speed-up"
    )];
    for (rank, r) in ranks(rows) {
        let rank = rank.map_or_else(|| "-".into(), |i| i.to_string());
        let d = |v: [u32; 3]| format!("{}x{}x{}", v[0], v[1], v[2]);
        let cfg = format!(
            "{}{} x {}",
            if r.recorded { "*" } else { " " },
            d(r.grid),
            d(r.block)
        );
        let speedup = speedup(r, rows).map_or_else(|| "-".into(), |s| format!("{s:.2}x"));
        let regs = r.registers.map_or_else(|| "-".into(), |n| n.to_string());
        let spill = r
            .spills
            .map_or_else(|| "-".into(), |(s, l)| format!("{s}/{l}"));
        lines.push(format!(
            "{rank:>4}  {cfg:<28} {:>8}  {}{:>10} {:>10} {:>10}  {speedup:>8}  {}",
            r.shared_mem,
            jit_cols(r.compile().as_deref().unwrap_or("-"), &regs, &spill),
            time(r.min()),
            time(r.median()),
            time(r.max()),
            r.status_text()
        ));
    }
    let timing = if device_times {
        "device time of each kernel"
    } else {
        "host clock around each run"
    };
    lines.push(format!(
        "(* the recorded configuration; grid x block; times: {timing}{})",
        if rows.iter().any(|r| r.jit.is_some()) {
            "; regs: registers a thread; spill: bytes stored/loaded, from the JIT's log"
        } else {
            ""
        }
    ));
    let best = rows.first().filter(|r| r.ranked());
    match (best, rows.iter().find(|r| r.recorded)) {
        (Some(b), _) if b.recorded => lines.push(format!(
            "fastest: the recorded configuration, {}: {} median",
            config_text(&b.config()),
            time(b.median())
        )),
        (Some(b), Some(rec)) => lines.push(format!(
            "fastest: {}: {} median, {:.2}x the recorded configuration ({}, {})",
            config_text(&b.config()),
            time(b.median()),
            speedup(b, rows).unwrap_or(1.0),
            config_text(&rec.config()),
            time(rec.median())
        )),
        (Some(b), None) => lines.push(format!(
            "fastest: {}: {} median",
            config_text(&b.config()),
            time(b.median())
        )),
        (None, _) => lines.push("no configuration ran with a usable output".into()),
    }
    if let Some(why) = stopped {
        lines.push(format!(
            "the sweep stopped early ({why}): the table holds what was measured"
        ));
    }
    lines
}

/// The CSV: a header, then one row per configuration in table order.
pub fn csv(rows: &[Row]) -> String {
    let mut out = String::from(
        "rank,grid_x,grid_y,grid_z,block_x,block_y,block_z,shared_mem,recorded,status,\
         min_us,median_us,max_us,speedup,jit,registers,spill_stores,spill_loads,detail,\
         opt_level\n",
    );
    let us = |d: Option<Duration>| {
        d.map_or_else(String::new, |d| format!("{:.3}", d.as_secs_f64() * 1e6))
    };
    for (rank, r) in ranks(rows) {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},\"{}\",{},{},{},\"{}\",{}\n",
            rank.map_or_else(String::new, |i| i.to_string()),
            r.grid[0],
            r.grid[1],
            r.grid[2],
            r.block[0],
            r.block[1],
            r.block[2],
            r.shared_mem,
            r.recorded,
            r.status,
            us(r.min()),
            us(r.median()),
            us(r.max()),
            speedup(r, rows).map_or_else(String::new, |s| format!("{s:.4}")),
            r.jit.as_deref().unwrap_or(""),
            r.registers.map_or_else(String::new, |n| n.to_string()),
            r.spills.map_or_else(String::new, |s| s.0.to_string()),
            r.spills.map_or_else(String::new, |s| s.1.to_string()),
            r.detail.as_deref().unwrap_or("").replace('"', "\"\""),
            r.opt_level.map_or_else(String::new, |l| format!("O{l}"))
        ));
    }
    out
}

/// Writes the CSV to `path` (whole or not at all).
pub fn write_csv(path: &Path, rows: &[Row]) -> Result<()> {
    reprise::store::write_atomically(path, csv(rows).as_bytes(), false)?;
    Ok(())
}

/// What the JSON says of the sweep besides its rows.
pub struct Sweep<'a> {
    /// The kernel.
    pub kernel: &'a str,
    /// The capture's descriptor.
    pub capture: String,
    /// Timed runs and warm-ups per configuration, where known.
    pub runs: Option<(u32, u32)>,
    /// Whether the times are the device's own.
    pub device_times: bool,
    /// Why the sweep stopped early.
    pub stopped: Option<String>,
}

/// One JSON object: the capture, the settings, every configuration.
pub fn json(s: &Sweep<'_>, rows: &[Row]) -> String {
    let secs = |d: Option<Duration>| d.map(|d| d.as_secs_f64());
    let entry = |r: &Row| {
        json!({
            "grid": r.grid,
            "block": r.block,
            "shared_mem": r.shared_mem,
            "recorded": r.recorded,
            "status": r.status,
            "detail": r.detail,
            "times_s": r.times_ns.iter().map(|&t| Duration::from_nanos(t).as_secs_f64()).collect::<Vec<_>>(),
            "min_s": secs(r.min()),
            "median_s": secs(r.median()),
            "max_s": secs(r.max()),
            "speedup": speedup(r, rows),
            "jit": r.jit,
            "registers": r.registers,
            "spill_stores": r.spills.map(|s| s.0),
            "spill_loads": r.spills.map(|s| s.1),
            "opt_level": r.opt_level.map(|l| format!("O{l}")),
        })
    };
    json!({
        "kernel": s.kernel,
        "capture": s.capture,
        "repetitions": s.runs.map(|r| r.0),
        "warmup": s.runs.map(|r| r.1),
        "device_times": s.device_times,
        "stopped": s.stopped,
        "best": rows.first().filter(|r| r.ranked()).map(entry),
        "recorded": rows.iter().find(|r| r.recorded).map(entry),
        "results": rows.iter().map(entry).collect::<Vec<_>>(),
    })
    .to_string()
}

/// The name of a compile setting in rows and keys: `O2`,
/// `MAX_REGISTERS=32`, both as `O2,MAX_REGISTERS=32`; none for the
/// recorded image.
pub fn compile_label(opt_level: Option<u8>, jit: Option<&str>) -> Option<String> {
    match (opt_level, jit) {
        (None, None) => None,
        (Some(l), None) => Some(format!("O{l}")),
        (None, Some(j)) => Some(j.to_string()),
        (Some(l), Some(j)) => Some(format!("O{l},{j}")),
    }
}

/// The exit status of a sweep that ran to its end: 0 when a configuration
/// is `usable`, else 1 when outputs differ (`differs`), else 2 (none
/// ran), each failure said on stderr.
pub fn verdict_exit(file: &std::path::Path, usable: bool, differs: bool) -> ExitCode {
    if usable {
        ExitCode::SUCCESS
    } else if differs {
        note!(
            "error: {}: no configuration verified: every output differs from the recorded one",
            file.display()
        );
        ExitCode::from(1)
    } else {
        note!(
            "error: {}: no configuration ran (each was refused or failed, the recorded one \
             included)",
            file.display()
        );
        ExitCode::from(2)
    }
}
