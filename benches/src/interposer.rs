//! `reprise bench --backend cuda`: what the interposer adds to one launch.
//! The hidden `__launch-loop` subcommand of the `reprise` executable (the
//! launcher [`measure`] is given) launches the benchmark's saxpy through `libcuda.so.1` in three child processes: plain,
//! with the interposer preloaded but recording nothing (a filter that
//! matches no kernel), and with it recording every timed launch. Each
//! reports its own per-launch times; the ratios between them are what the
//! table shows, measured in the same run.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A kernel-name filter that matches no kernel: the interposer passes
/// every launch through.
const NO_KERNEL: &str = "reprise-bench-matches-no-kernel";

/// Untimed launches before each way's timed ones (never recorded).
const WARMUP: u32 = 5;

/// The largest snapshot the rows use: the recorded way writes one capture
/// per timed launch.
const MAX_DATA: u64 = 1 << 20;

/// One way of launching: its timed launches' per-launch times.
#[derive(Debug, Clone, Copy)]
pub struct Way {
    /// Timed launches.
    pub launches: u32,
    /// Median seconds of one launch and synchronize (over several rounds,
    /// the median of the rounds' medians).
    pub median: f64,
    /// Fastest launch and synchronize, seconds.
    pub min: f64,
}

/// The three ways, measured in the same run.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Elements of the saxpy's x and y.
    pub elements: u32,
    /// Without the interposer.
    pub plain: Way,
    /// With the interposer preloaded and recording enabled, the launch not
    /// selected.
    pub pass_through: Way,
    /// With every timed launch recorded, into raw files (its row is
    /// "interposer, recorded").
    pub recorded: Way,
    /// The same into the store (the default format).
    pub recorded_store: Way,
    /// Captures the recorded way wrote (one per timed launch).
    pub captures: usize,
    /// Bytes of all its captures' files, over `captures`.
    pub capture_bytes: u64,
}

impl Measured {
    /// Pass-through median over the plain median.
    pub fn pass_through_vs_plain(&self) -> f64 {
        self.pass_through.median / self.plain.median
    }

    /// Recorded median over the plain median.
    pub fn recorded_vs_plain(&self) -> f64 {
        self.recorded.median / self.plain.median
    }

    /// Recorded into the store, median over the plain median.
    pub fn recorded_store_vs_plain(&self) -> f64 {
        self.recorded_store.median / self.plain.median
    }
}

/// What became of the rows.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// All three ways ran.
    Measured(Measured),
    /// Not measured, and why (no interposer to preload).
    Skipped(String),
    /// A way failed, or the recorded way recorded nothing: why.
    Failed(String),
}

/// Elements for a region of `size` bytes, as the CUDA benchmark's saxpy
/// takes them (x the first half, y the second), for at most `MAX_DATA`
/// (1 MiB).
pub fn elements_for(size: u64) -> u32 {
    (size.min(MAX_DATA) / 8).clamp(1, i32::MAX as u64) as u32
}

/// Measures the three ways with `elements` elements: `launcher`'s
/// `__launch-loop` run plain and with the interposer `lib` preloaded. The
/// recorded way's captures go under `scratch` (bench's scratch directory,
/// which bench removes). `progress` gets one line per way.
pub fn measure(
    launcher: &Path,
    lib: &Path,
    quick: bool,
    elements: u32,
    scratch: &Path,
    progress: &mut dyn FnMut(&str),
) -> Outcome {
    match measure_with(launcher, lib, quick, elements, scratch, progress) {
        Ok(m) => Outcome::Measured(m),
        Err(why) => Outcome::Failed(why),
    }
}

fn measure_with(
    exe: &Path,
    lib: &Path,
    quick: bool,
    elements: u32,
    scratch: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<Measured, String> {
    // Per round; the ways alternate round by round, so that a machine
    // that speeds up or slows down during the run favours none of them.
    let (rounds, launches, recorded_launches) = if quick { (1, 200, 20) } else { (3, 1000, 50) };
    let dirs = [
        scratch.join("interposer-pass"),
        scratch.join("interposer-record"),
        scratch.join("interposer-store"),
    ];
    for d in &dirs {
        std::fs::create_dir_all(d).map_err(|e| format!("creating {}: {e}", d.display()))?;
    }
    let (mut plain, mut pass_through, mut recorded) = (Vec::new(), Vec::new(), Vec::new());
    let mut recorded_store = Vec::new();
    for round in 1..=rounds {
        let of = if rounds > 1 {
            format!(" (round {round} of {rounds})")
        } else {
            String::new()
        };
        progress(&format!("interposer: {launches} plain launches{of}"));
        plain.push(run_loop(exe, None, launches, elements, &[])?);
        progress(&format!(
            "interposer: {launches} launches through the interposer, not recorded{of}"
        ));
        pass_through.push(run_loop(
            exe,
            Some(lib),
            launches,
            elements,
            &[
                ("REPRISE_RECORD_DIR", dirs[0].as_os_str().to_owned()),
                ("REPRISE_RECORD_FILTER", NO_KERNEL.into()),
            ],
        )?);
        let stray = descriptors(&dirs[0]).len();
        if stray != 0 {
            return Err(format!(
                "the interposer recorded {stray} launches with a filter ({NO_KERNEL}) that matches no kernel"
            ));
        }
        progress(&format!(
            "interposer: {recorded_launches} launches, every one recorded{of}"
        ));
        let before = descriptors(&dirs[1]).len();
        recorded.push(run_loop(
            exe,
            Some(lib),
            recorded_launches,
            elements,
            &[
                ("REPRISE_RECORD_DIR", dirs[1].as_os_str().to_owned()),
                // Only the timed launches, and every one of them.
                ("REPRISE_RECORD_SKIP", WARMUP.to_string().into()),
                ("REPRISE_RECORD_MAX", "1000000".into()),
                // Raw files, whose bytes a capture's size counts.
                ("REPRISE_RECORD_FORMAT", "raw".into()),
            ],
        )?);
        let captures = descriptors(&dirs[1]).len() - before;
        progress(&format!(
            "interposer: {recorded_launches} launches, every one recorded into the store{of}"
        ));
        recorded_store.push(run_loop(
            exe,
            Some(lib),
            recorded_launches,
            elements,
            &[
                ("REPRISE_RECORD_DIR", dirs[2].as_os_str().to_owned()),
                ("REPRISE_RECORD_SKIP", WARMUP.to_string().into()),
                ("REPRISE_RECORD_MAX", "1000000".into()),
                ("REPRISE_RECORD_FORMAT", "store".into()),
            ],
        )?);
        if captures != recorded_launches as usize {
            return Err(format!(
                "the recorded way wrote {captures} captures for {recorded_launches} timed launches into {}{}",
                dirs[1].display(),
                if captures == 0 {
                    " (none: the interposer recorded nothing)"
                } else {
                    ""
                }
            ));
        }
    }
    let captures = descriptors(&dirs[1]).len();
    let total: u64 = std::fs::read_dir(&dirs[1])
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    Ok(Measured {
        elements,
        plain: combine(&plain),
        pass_through: combine(&pass_through),
        recorded: combine(&recorded),
        recorded_store: combine(&recorded_store),
        captures,
        capture_bytes: total / captures.max(1) as u64,
    })
}

/// One way's rounds as one: all their launches, the median of the rounds'
/// medians, the fastest launch.
fn combine(rounds: &[Way]) -> Way {
    let mut medians: Vec<f64> = rounds.iter().map(|w| w.median).collect();
    medians.sort_by(f64::total_cmp);
    let n = medians.len();
    Way {
        launches: rounds.iter().map(|w| w.launches).sum(),
        median: if n % 2 == 1 {
            medians[n / 2]
        } else {
            (medians[n / 2 - 1] + medians[n / 2]) / 2.0
        },
        min: rounds.iter().map(|w| w.min).fold(f64::INFINITY, f64::min),
    }
}

/// Runs `__launch-loop` of `exe` with `lib` preloaded (or not) and `env`
/// set, no other `REPRISE_RECORD*` variable of this process reaching it.
fn run_loop(
    exe: &Path,
    lib: Option<&Path>,
    launches: u32,
    elements: u32,
    env: &[(&str, OsString)],
) -> Result<Way, String> {
    let way = if lib.is_none() {
        "the plain launch loop"
    } else if env.iter().any(|(k, _)| *k == "REPRISE_RECORD_FILTER") {
        "the launch loop under the interposer, not recorded"
    } else {
        "the launch loop under the interposer, recorded"
    };
    let mut cmd = Command::new(exe);
    cmd.args(["__launch-loop", "--json"])
        .args(["--launches", &launches.to_string()])
        .args(["--elements", &elements.to_string()])
        .args(["--warmup", &WARMUP.to_string()])
        .stdin(Stdio::null());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("REPRISE_RECORD") {
            cmd.env_remove(k);
        }
    }
    if let Some(lib) = lib {
        cmd.env("LD_PRELOAD", preload(lib))
            .env("REPRISE_RECORD", "1")
            .envs(env.iter().map(|(k, v)| (k, v)));
    }
    let out = cmd
        .output()
        .map_err(|e| format!("{way}: running {}: {e}", exe.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "{way} failed ({}): {}",
            out.status,
            last_lines(&stderr)
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "{way}: its output is not the JSON expected ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })?;
    let get = |key: &str| {
        v[key]
            .as_f64()
            .filter(|t| t.is_finite() && *t > 0.0)
            .ok_or_else(|| format!("{way}: no positive {key} in its output: {v}"))
    };
    Ok(Way {
        launches,
        median: get("median_s")?,
        min: get("min_s")?,
    })
}

/// `LD_PRELOAD` with `lib` first, before what this process has.
fn preload(lib: &Path) -> OsString {
    let mut v = lib.as_os_str().to_owned();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
        v.push(":");
        v.push(old);
    }
    v
}

/// The last few non-empty lines of a child's stderr, on one line.
fn last_lines(s: &str) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(6)..];
    if tail.is_empty() {
        "(nothing on stderr)".into()
    } else {
        tail.join(" / ")
    }
}

/// The capture descriptors in `dir`.
fn descriptors(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && !p.to_string_lossy().ends_with(".report.json")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_follow_the_smallest_size_up_to_a_cap() {
        assert_eq!(elements_for(64 << 10), 8192);
        assert_eq!(elements_for(256 << 20), elements_for(MAX_DATA));
        assert_eq!(elements_for(16), 2);
        assert_eq!(elements_for(0), 1);
    }

    #[test]
    fn rounds_combine_into_one_way() {
        let w = |median, min| Way {
            launches: 10,
            median,
            min,
        };
        let one = combine(&[w(2.0, 1.0)]);
        assert_eq!((one.launches, one.median, one.min), (10, 2.0, 1.0));
        let three = combine(&[w(5.0, 1.5), w(2.0, 1.0), w(3.0, 0.5)]);
        assert_eq!((three.launches, three.median, three.min), (30, 3.0, 0.5));
    }

    #[test]
    fn the_last_lines_of_stderr() {
        assert_eq!(last_lines(""), "(nothing on stderr)");
        let many: String = (0..10).map(|i| format!("line {i}\n\n")).collect();
        assert_eq!(
            last_lines(&many),
            "line 4 / line 5 / line 6 / line 7 / line 8 / line 9"
        );
    }
}
