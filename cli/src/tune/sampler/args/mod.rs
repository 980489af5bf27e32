//! The search's options: `--sampler`, `--trials`, `--seed`,
//! `--time-budget`, `--resume`, `--workers`, and their parsers.

use super::*;

/// How the candidates are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Sampler {
    /// Every point of the product, in order.
    #[default]
    Grid,
    /// `--trials` distinct points drawn at random (seeded).
    Random,
}

/// How many configurations are measured at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workers {
    /// One per visible device.
    Auto,
    /// This many (at most the device count).
    Count(usize),
}

/// The search options of `reprise tune`.
#[derive(Args, Debug, Default)]
pub struct SearchArgs {
    /// How candidates are drawn from the product of the lists.
    ///
    /// `grid`: every one, in order; `random`: --trials of them, drawn
    /// without replacement with --seed.
    #[arg(long, value_enum, default_value_t = Sampler::Grid)]
    pub sampler: Sampler,
    /// How many candidates to measure [default: the whole product].
    ///
    /// More than the product holds is capped, with a note. The recorded
    /// configuration is measured besides.
    #[arg(long, value_name = "N", value_parser = trials)]
    pub trials: Option<u64>,
    /// The random sampler's seed: one seed, the same candidates in the same
    /// order.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Stop drawing candidates after this long (`30s`, `5m`, `1h`).
    ///
    /// Also `500ms`, or a bare number of seconds; what was measured by
    /// then is reported.
    #[arg(long, value_name = "D", value_parser = budget)]
    pub time_budget: Option<Duration>,
    /// Continue the study whose results file is RESULTS.
    ///
    /// RESULTS is JSON lines, as --rows writes: configurations it holds
    /// are not measured again, new rows are appended to it, and the table
    /// ranks them all.
    #[arg(long, value_name = "RESULTS", conflicts_with = "merge")]
    pub resume: Option<PathBuf>,
    /// Measure this many configurations at once, one per device.
    ///
    /// `auto`: one per visible device; capped at the device count.
    #[arg(long, value_name = "N|auto", value_parser = workers)]
    pub workers: Option<Workers>,
    /// (Internal) measure the share of a worker this plan gives.
    #[arg(long, value_name = "FILE", hide = true)]
    pub worker_plan: Option<PathBuf>,
}

impl SearchArgs {
    /// Whether the sweep is a search this module runs (any of its options,
    /// or a results file written as the sweep goes).
    pub fn active(&self, a: &TuneArgs) -> bool {
        self.sampler != Sampler::Grid
            || self.trials.is_some()
            || self.time_budget.is_some()
            || self.resume.is_some()
            || self.workers.is_some()
            || self.worker_plan.is_some()
            || (a.rows.is_some() && a.shard.is_none())
    }

    /// How the library's sampler draws the candidates these options ask for.
    pub fn drawn(&self) -> reprise::tune::space::Sampler {
        match self.sampler {
            Sampler::Grid => reprise::tune::space::Sampler::Grid,
            Sampler::Random => reprise::tune::space::Sampler::Random(self.seed),
        }
    }
}

fn trials(s: &str) -> std::result::Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("the number of trials is at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "{s:?} is not a number of trials (a count, 1 or more)"
        )),
    }
}

fn workers(s: &str) -> std::result::Result<Workers, String> {
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(Workers::Auto);
    }
    match s.trim().parse::<usize>() {
        Ok(0) => Err("the number of workers is at least 1 (or auto)".into()),
        Ok(n) => Ok(Workers::Count(n)),
        Err(_) => Err(format!(
            "{s:?} is not a number of workers (1 or more, or auto)"
        )),
    }
}

/// `30s`, `5m`, `1h`, `500ms`, `2.5s`; a bare number is seconds.
pub fn budget(s: &str) -> std::result::Result<Duration, String> {
    let t = s.trim();
    let bad = || format!("{s:?} is not a duration (30s, 5m, 1h, 500ms)");
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().map_err(|_| bad())?;
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad()),
    };
    let d = Duration::try_from_secs_f64(v * scale).map_err(|_| bad())?;
    if d.is_zero() {
        return Err(format!("{s}: a time budget is more than 0"));
    }
    Ok(d)
}

#[cfg(test)]
mod tests;
