//! What `reprise tune` prints and writes: the table, CSV rows, a JSON
//! object.

use std::path::Path;
use std::time::Duration;

use reprise::tune::{Measured, Status, TuneReport};
use reprise::{Capture, LaunchConfig};
use serde_json::json;

use super::TuneArgs;
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

/// What became of a configuration, in a word or a few.
fn status_text(s: &Status) -> String {
    match s {
        Status::Verified => "verified".into(),
        Status::Unverified => "not verified".into(),
        Status::Differs(v) => format!("OUTPUT DIFFERS: {v}"),
        Status::Refused(why) => format!("refused: {why}"),
        Status::Failed(why) => format!("FAILED: {why}"),
    }
}

fn status_word(s: &Status) -> &'static str {
    match s {
        Status::Verified => "verified",
        Status::Unverified => "unverified",
        Status::Differs(_) => "differs",
        Status::Refused(_) => "refused",
        Status::Failed(_) => "failed",
    }
}

fn time(d: Option<Duration>) -> String {
    d.map_or_else(|| "-".into(), human_time)
}

/// The table, the recorded and the fastest configurations, and why the
/// sweep stopped early if it did.
pub fn table(r: &TuneReport) -> Vec<String> {
    let mut lines = vec![format!(
        "{:>4}  {:<28} {:>8}  {:>10} {:>10} {:>10}  {:>8}  output",
        "rank", "configuration", "shared", "min", "median", "max", "speed-up"
    )];
    let ranked = r.ranked().len();
    for (i, m) in in_order(r).into_iter().enumerate() {
        let rank = if i < ranked {
            (i + 1).to_string()
        } else {
            "-".into()
        };
        let d = |v: [u32; 3]| format!("{}x{}x{}", v[0], v[1], v[2]);
        let cfg = format!(
            "{}{} x {}",
            if m.recorded { "*" } else { " " },
            d(m.config.grid),
            d(m.config.block)
        );
        let speedup = r
            .speedup(m)
            .map_or_else(|| "-".into(), |s| format!("{s:.2}x"));
        lines.push(format!(
            "{rank:>4}  {cfg:<28} {:>8}  {:>10} {:>10} {:>10}  {speedup:>8}  {}",
            m.config.shared_mem,
            time(m.min()),
            time(m.median()),
            time(m.max()),
            status_text(&m.status)
        ));
    }
    let timing = if r.device_times {
        "device time of each kernel"
    } else {
        "host clock around each run"
    };
    lines.push(format!(
        "(* the recorded configuration; grid x block; times: {timing})"
    ));
    match (r.best(), r.recorded()) {
        (Some(b), _) if b.recorded => lines.push(format!(
            "fastest: the recorded configuration, {}: {} median",
            config_text(&b.config),
            time(b.median())
        )),
        (Some(b), Some(rec)) => lines.push(format!(
            "fastest: {}: {} median, {:.2}x the recorded configuration ({}, {})",
            config_text(&b.config),
            time(b.median()),
            r.speedup(b).unwrap_or(1.0),
            config_text(&rec.config),
            time(rec.median())
        )),
        (Some(b), None) => lines.push(format!(
            "fastest: {}: {} median",
            config_text(&b.config),
            time(b.median())
        )),
        (None, _) => lines.push("no configuration ran with a usable output".into()),
    }
    if let Some(why) = &r.stopped {
        lines.push(format!(
            "the sweep stopped early ({why}): the table holds what was measured"
        ));
    }
    lines
}

/// The CSV: a header, then one row per configuration in table order.
pub fn csv(r: &TuneReport) -> String {
    let mut out = String::from(
        "rank,grid_x,grid_y,grid_z,block_x,block_y,block_z,shared_mem,recorded,status,\
         min_us,median_us,max_us,speedup,detail\n",
    );
    let ranked = r.ranked().len();
    let us = |d: Option<Duration>| {
        d.map_or_else(String::new, |d| format!("{:.3}", d.as_secs_f64() * 1e6))
    };
    for (i, m) in in_order(r).into_iter().enumerate() {
        let c = m.config;
        let detail = match &m.status {
            Status::Differs(v) => v.to_string(),
            Status::Refused(w) => w.to_string(),
            Status::Failed(w) => w.to_string(),
            _ => String::new(),
        };
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},\"{}\"\n",
            if i < ranked {
                (i + 1).to_string()
            } else {
                String::new()
            },
            c.grid[0],
            c.grid[1],
            c.grid[2],
            c.block[0],
            c.block[1],
            c.block[2],
            c.shared_mem,
            m.recorded,
            status_word(&m.status),
            us(m.min()),
            us(m.median()),
            us(m.max()),
            r.speedup(m).map_or_else(String::new, |s| format!("{s:.4}")),
            detail.replace('"', "\"\"")
        ));
    }
    out
}

/// Writes the CSV to `path` (whole or not at all).
pub fn write_csv(path: &Path, r: &TuneReport) -> Result<()> {
    reprise::store::write_atomically(path, csv(r).as_bytes(), false)?;
    Ok(())
}

/// One JSON object: the capture, the settings, every configuration.
pub fn json(capture: &Capture, r: &TuneReport, a: &TuneArgs) -> String {
    let secs = |d: Option<Duration>| d.map(|d| d.as_secs_f64());
    let entry = |m: &Measured| {
        json!({
            "grid": m.config.grid,
            "block": m.config.block,
            "shared_mem": m.config.shared_mem,
            "recorded": m.recorded,
            "status": status_word(&m.status),
            "detail": match &m.status {
                Status::Differs(v) => Some(v.to_string()),
                Status::Refused(w) => Some(w.to_string()),
                Status::Failed(w) => Some(w.to_string()),
                _ => None,
            },
            "times_s": m.times.iter().map(Duration::as_secs_f64).collect::<Vec<_>>(),
            "min_s": secs(m.min()),
            "median_s": secs(m.median()),
            "max_s": secs(m.max()),
            "speedup": r.speedup(m),
        })
    };
    json!({
        "kernel": capture.record.name.as_str(),
        "capture": capture.paths.descriptor.display().to_string(),
        "repetitions": a.repetitions,
        "warmup": a.warmup,
        "device_times": r.device_times,
        "stopped": r.stopped.as_ref().map(ToString::to_string),
        "best": r.best().map(entry),
        "recorded": r.recorded().map(entry),
        "results": in_order(r).into_iter().map(entry).collect::<Vec<_>>(),
    })
    .to_string()
}
