//! The suite's summary: how many captures passed, differ, were refused,
//! failed or timed out, the slowest kernels, and what is slower than the
//! baseline; as a table for people or one JSON object, and the exit
//! status it gives.

use std::time::Duration;

use serde_json::json;

use super::baseline::Comparison;
use super::results::{CaptureResult, Status, Time};
use crate::ui::human_time;

/// How many of the slowest kernels the summary lists.
pub const SLOWEST: usize = 10;

/// What the suite found.
pub struct Summary<'a> {
    /// Every capture's result, by path.
    pub results: Vec<&'a CaptureResult>,
    /// The wall time of this run, when it ran anything (not for `--merge`).
    pub wall: Option<Duration>,
    /// How many captures this run replayed (not those `--resume` kept).
    pub ran: usize,
    /// What the baseline comparison found, when there was one.
    pub baseline: Option<Comparison>,
    /// Where the results are (a file, or the files merged).
    pub source: String,
}

impl Summary<'_> {
    /// How many results have `status`.
    pub fn count(&self, status: Status) -> usize {
        self.results.iter().filter(|r| r.status == status).count()
    }

    /// The slowest timed captures, slowest first, with their times
    /// ([`CaptureResult::time`]).
    pub fn slowest(&self) -> Vec<(&CaptureResult, Time<'_>)> {
        let mut timed: Vec<_> = self
            .results
            .iter()
            .filter_map(|r| Some((*r, r.time()?)))
            .collect();
        timed.sort_by_key(|(_, (ns, ..))| std::cmp::Reverse(*ns));
        timed.truncate(SLOWEST);
        timed
    }

    /// 0 when every capture passed (and none is slower than the baseline
    /// allows), 1 when some differ or are slower and every one ran, 2 when
    /// some could not run.
    pub fn exit_code(&self) -> u8 {
        let slower = self.baseline.as_ref().is_some_and(|b| !b.slower.is_empty());
        if self.results.iter().any(|r| r.status.did_not_run()) {
            2
        } else if slower || self.count(Status::Differs) > 0 {
            1
        } else {
            0
        }
    }

    /// The table, line by line.
    pub fn lines(&self) -> Vec<String> {
        let n = self.results.len();
        let mut out = Vec::new();
        let rate = match self.wall {
            Some(w) if w > Duration::ZERO && self.ran > 0 => format!(
                "; {} replayed in {} ({:.1} captures/s)",
                self.ran,
                human_time(w),
                self.ran as f64 / w.as_secs_f64()
            ),
            _ => String::new(),
        };
        out.push(format!("{n} capture(s) checked{rate}"));
        for s in Status::ALL {
            out.push(format!("  {:<8} {:>6}", s.as_str(), self.count(s)));
        }
        let slowest = self.slowest();
        if !slowest.is_empty() {
            out.push(String::new());
            out.push(format!(
                "slowest {} (median of the repetitions; kernel time where the executor measures it):",
                slowest.len()
            ));
            for (r, (ns, what, samples)) in slowest {
                out.push(format!(
                    "  {:>10} {:<6} x{:<3} {:<24} {}",
                    human_time(Duration::from_nanos(ns)),
                    what,
                    samples.len(),
                    r.kernel.as_deref().unwrap_or("?"),
                    r.path
                ));
            }
        }
        if let Some(b) = &self.baseline {
            out.push(String::new());
            out.push(format!(
                "against the baseline: {} compared, {} not in it, {} slower than allowed",
                b.compared,
                b.not_in_baseline,
                b.slower.len()
            ));
            for s in &b.slower {
                out.push(format!(
                    "  SLOWER   {:.2}x  {} -> {} ({} time)  {}: {}",
                    s.ratio,
                    human_time(Duration::from_nanos(s.then_ns)),
                    human_time(Duration::from_nanos(s.now_ns)),
                    s.measure,
                    s.path,
                    s.noise_text()
                ));
            }
        }
        let bad: Vec<&&CaptureResult> = self
            .results
            .iter()
            .filter(|r| r.status != Status::Passed)
            .collect();
        if !bad.is_empty() {
            out.push(String::new());
            out.push("not passed:".into());
            for r in bad {
                let first = r.message.lines().next().unwrap_or("");
                out.push(format!(
                    "  {:<8} {}: {first}",
                    r.status.as_str().to_uppercase(),
                    r.path
                ));
            }
        }
        out.push(String::new());
        out.push(format!("results: {}", self.source));
        out
    }

    /// The summary as one JSON object (times in nanoseconds), every result
    /// included, so that it can serve as a later run's `--baseline`.
    pub fn json(&self) -> serde_json::Value {
        let counts: serde_json::Map<_, _> = Status::ALL
            .iter()
            .map(|s| (s.as_str().into(), json!(self.count(*s))))
            .collect();
        let slowest: Vec<_> = self
            .slowest()
            .iter()
            .map(|(r, (ns, what, samples))| {
                json!({
                    "path": r.path,
                    "kernel": r.kernel,
                    "median_ns": ns,
                    "measure": what,
                    "repetitions": samples.len(),
                })
            })
            .collect();
        json!({
            "captures": self.results.len(),
            "counts": counts,
            "exit_code": self.exit_code(),
            "replayed": self.ran,
            "wall_ns": self.wall.map(|w| u64::try_from(w.as_nanos()).unwrap_or(u64::MAX)),
            "slowest": slowest,
            "baseline": self.baseline,
            "source": self.source,
            "results": self.results,
        })
    }
}
