//! `--baseline F --slower X`: each capture's time against an earlier
//! result's (a results file, or a `--json` summary), flagging those more
//! than X times slower, with the noise of both measurements where the
//! repetitions tell it.

use std::collections::HashMap;

use serde::Serialize;

use super::results::{CaptureResult, Read, median};

/// A capture slower than its baseline by more than the factor allowed.
#[derive(Debug, Clone, Serialize)]
pub struct Slower {
    /// The descriptor.
    pub path: String,
    /// Its kernel.
    pub kernel: Option<String>,
    /// What was timed: `kernel` (the executor's time) or `replay` (each
    /// repetition's wall time).
    pub measure: &'static str,
    /// The median now (ns).
    pub now_ns: u64,
    /// The baseline's median (ns).
    pub then_ns: u64,
    /// now / then.
    pub ratio: f64,
    /// The spread of the repetitions now, (max - min) / median, where
    /// there were at least two.
    pub noise_now: Option<f64>,
    /// The same of the baseline.
    pub noise_then: Option<f64>,
}

impl Slower {
    /// The noise, for people: how much the repetitions spread, and whether
    /// the slow-down is beyond it.
    pub fn noise_text(&self) -> String {
        match (self.noise_now, self.noise_then) {
            (Some(now), Some(then)) => {
                let beyond = if self.ratio - 1.0 > now + then {
                    "beyond the noise"
                } else {
                    "within the noise"
                };
                format!(
                    "repetitions spread {:.1}% now, {:.1}% then: {beyond}",
                    now * 100.0,
                    then * 100.0
                )
            }
            (Some(now), None) => format!(
                "repetitions spread {:.1}% now; the baseline's noise is not known (fewer than 2 \
                 repetitions)",
                now * 100.0
            ),
            (None, Some(then)) => format!(
                "repetitions spread {:.1}% then; the noise now is not known (fewer than 2 \
                 repetitions)",
                then * 100.0
            ),
            (None, None) => "noise not known (fewer than 2 repetitions each)".to_string(),
        }
    }
}

/// What comparing with a baseline found.
#[derive(Debug, Default, Serialize)]
pub struct Comparison {
    /// Captures timed both now and in the baseline.
    pub compared: usize,
    /// Captures timed now that the baseline has no time for.
    pub not_in_baseline: usize,
    /// Those slower than allowed, slowest first.
    pub slower: Vec<Slower>,
}

/// Compares `now` with `baseline`: a capture is matched by its path, else
/// by its name (its path in the corpus), so that a baseline taken where
/// the corpus lay elsewhere still applies; `factor` is what `--slower`
/// allows.
pub fn compare<'a>(
    now: impl IntoIterator<Item = &'a CaptureResult>,
    baseline: &Read,
    factor: f64,
) -> Comparison {
    let mut by_name: HashMap<&str, Option<&CaptureResult>> = HashMap::new();
    for r in baseline.results.values() {
        by_name
            .entry(r.name.as_str())
            .and_modify(|e| *e = None) // the same name twice: ambiguous
            .or_insert(Some(r));
    }
    let mut out = Comparison::default();
    for r in now {
        let Some((now_ns, measure, samples)) = r.time() else {
            continue;
        };
        let then = baseline
            .results
            .get(&r.path)
            .or_else(|| by_name.get(r.name.as_str()).copied().flatten());
        // Only like against like: kernel against kernel time.
        let then = then.and_then(|t| match measure {
            "kernel" => t.kernel_ns.map(|ns| (ns, &t.kernel_times_ns)),
            _ => t.replay_ns.map(|ns| (ns, &t.replay_times_ns)),
        });
        let Some((then_ns, then_samples)) = then else {
            out.not_in_baseline += 1;
            continue;
        };
        out.compared += 1;
        let ratio = now_ns as f64 / then_ns.max(1) as f64;
        if ratio > factor {
            out.slower.push(Slower {
                path: r.path.clone(),
                kernel: r.kernel.clone(),
                measure,
                now_ns,
                then_ns,
                ratio,
                noise_now: spread(samples),
                noise_then: spread(then_samples),
            });
        }
    }
    out.slower.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
    out
}

/// (max - min) / median of `samples`, when there are at least two.
pub fn spread(samples: &[u64]) -> Option<f64> {
    if samples.len() < 2 {
        return None;
    }
    let (lo, hi) = (samples.iter().min()?, samples.iter().max()?);
    let m = median(samples)?.max(1);
    Some((hi - lo) as f64 / m as f64)
}

#[cfg(test)]
mod tests;
