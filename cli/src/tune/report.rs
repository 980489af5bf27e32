//! What `reprise tune` prints and writes: the table, CSV rows, a JSON
//! object, all from the configurations' [`Row`]s in table order, whether
//! measured here or merged from the shards of a sweep.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use reprise::LaunchConfig;
pub use reprise::tune::rows::Row;
use serde_json::json;

use super::TuneArgs;
use crate::error::Result;
use crate::ui::human_time;

/// `grid 128x1x1, block 256x1x1` (and the shared memory when there is any).
pub fn config_text(c: &LaunchConfig) -> String {
    let mut t = format!("grid {}, block {}", dims(c.grid), dims(c.block));
    if c.shared_mem > 0 {
        t.push_str(&format!(", {} B shared", c.shared_mem));
    }
    t
}

/// What became of `r`, in a word or a few.
fn status_text(r: &Row) -> String {
    // The first line: a JIT failure's log follows the table.
    let d = r.detail.as_deref().unwrap_or("");
    let d = d.lines().next().unwrap_or("");
    match r.status.as_str() {
        "verified" => "verified".into(),
        "unverified" => "not verified".into(),
        "differs" => format!("OUTPUT DIFFERS: {d}"),
        "refused" => format!("refused: {d}"),
        _ => format!("FAILED: {d}"),
    }
}

/// Each row with its rank (ranked rows come first, in table order).
fn ranks(rows: &[Row]) -> impl Iterator<Item = (Option<usize>, &Row)> {
    rows.iter()
        .enumerate()
        .map(|(i, r)| (r.ranked().then_some(i + 1), r))
}

/// `128x1x1`.
pub(crate) fn dims(v: [u32; 3]) -> String {
    format!("{}x{}x{}", v[0], v[1], v[2])
}

/// `v` as `shown` shows it, `-` for none.
fn dash<T>(v: Option<T>, shown: impl FnOnce(T) -> String) -> String {
    v.map_or_else(|| "-".into(), shown)
}

fn time(d: Option<Duration>) -> String {
    dash(d, human_time)
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
        let rank = dash(rank, |i| i.to_string());
        let mark = if r.recorded { "*" } else { " " };
        let cfg = format!("{mark}{} x {}", dims(r.grid), dims(r.block));
        let speedup = dash(r.speedup(rows), |s| format!("{s:.2}x"));
        let regs = dash(r.registers, |n| n.to_string());
        let spill = dash(r.spills, |(s, l)| format!("{s}/{l}"));
        lines.push(format!(
            "{rank:>4}  {cfg:<28} {:>8}  {}{:>10} {:>10} {:>10}  {speedup:>8}  {}",
            r.shared_mem,
            jit_cols(r.compile().as_deref().unwrap_or("-"), &regs, &spill),
            time(r.min()),
            time(r.median()),
            time(r.max()),
            status_text(r)
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
            b.speedup(rows).unwrap_or(1.0),
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
        let geometry: Vec<String> = r.grid.iter().chain(&r.block).map(u32::to_string).collect();
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},\"{}\",{},{},{},\"{}\",{}\n",
            rank.map_or_else(String::new, |i| i.to_string()),
            geometry.join(","),
            r.shared_mem,
            r.recorded,
            r.status,
            us(r.min()),
            us(r.median()),
            us(r.max()),
            r.speedup(rows)
                .map_or_else(String::new, |s| format!("{s:.4}")),
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
            "speedup": r.speedup(rows),
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

/// Prints `rows` (in table order) as the table, `after` it the lines
/// given, or with --json as one JSON object; then writes the CSV and the
/// plot asked for, saying so where `say` and not --json.
pub fn show(
    a: &TuneArgs,
    sweep: &Sweep<'_>,
    rows: &[Row],
    after: &[String],
    say: bool,
) -> Result<()> {
    if a.json {
        out_text!("{}", json(sweep, rows));
    } else {
        for line in table(rows, sweep.device_times, sweep.stopped.as_deref())
            .iter()
            .chain(after)
        {
            out!("{line}");
        }
    }
    let say = say && !a.json;
    if let Some(path) = &a.csv {
        // Whole or not at all.
        reprise::store::write_atomically(path, csv(rows).as_bytes(), false)?;
        if say {
            out!("wrote {}", path.display());
        }
    }
    if let Some(path) = &a.plot {
        super::plot::draw(path, sweep.kernel, rows)?;
        if say {
            out!("plotted {}", path.display());
        }
    }
    Ok(())
}

/// The exit status of a sweep of `rows` that ran to its end: 0 when a
/// configuration's output is usable, else 1 when outputs differ, else 2
/// (none ran), each failure said on stderr.
pub fn verdict_exit(file: &Path, rows: &[Row]) -> ExitCode {
    if rows.iter().any(Row::good) {
        ExitCode::SUCCESS
    } else if rows.iter().any(|r| r.status == "differs") {
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
