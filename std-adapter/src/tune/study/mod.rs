//! A study's bookkeeping: its results file (a [`Header`] line, then one
//! [`Row`] a line, appended as each configuration is measured, so a kill
//! loses at most the one under way) read back to resume it; what measuring
//! came to ([`Outcome`]); and a worker's share of it ([`Plan`]).

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use reprise_core::exec::LaunchConfig;
use serde::{Deserialize, Serialize};

use super::rows::{Header, Row};
use super::space::Candidate;

/// What a results file holds.
#[derive(Debug, Default)]
pub struct Previous {
    /// Its header, if it has one.
    pub header: Option<Header>,
    /// Its rows, in the order written.
    pub rows: Vec<Row>,
    /// Where a last line cut short (a kill while it was written) begins:
    /// the file is to be cut there.
    pub cut_short: Option<usize>,
    /// Whether its last line is whole but lacks its newline (to add before
    /// appending).
    pub unterminated: bool,
}

/// Why a file is no results file of this study.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotResults {
    /// It holds the results of another kernel (its name).
    OtherKernel(String, String),
    /// Its line (1-based) is neither a header nor a row.
    BadLine(usize),
}

impl fmt::Display for NotResults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotResults::OtherKernel(theirs, ours) => write!(
                f,
                "the results of kernel {theirs:?}, not of this capture's {ours:?}"
            ),
            NotResults::BadLine(n) => {
                write!(f, "line {n} is neither a header nor a row of tune results")
            }
        }
    }
}

/// One line of a results file, as a JSON reader parsed it.
#[derive(Debug)]
pub enum Line {
    /// The header.
    Header(Header),
    /// A row.
    Row(Row),
}

/// Reads `text`, a results file of the kernel `kernel`, `parse` reading
/// each line (the caller's JSON reader: this library has none; `None` for
/// a line that is neither a header nor a row).
pub fn read(
    text: &str,
    kernel: &str,
    parse: impl Fn(&str) -> Option<Line>,
) -> Result<Previous, NotResults> {
    let mut prev = Previous::default();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut kept = 0usize;
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim();
        if body.is_empty() {
            kept += line.len();
            continue;
        }
        match parse(body) {
            Some(Line::Header(h)) if h.kernel != kernel => {
                return Err(NotResults::OtherKernel(h.kernel, kernel.to_string()));
            }
            Some(Line::Header(h)) => prev.header = Some(h),
            Some(Line::Row(r)) => prev.rows.push(r),
            None if i + 1 == lines.len() && !line.ends_with('\n') => {
                prev.cut_short = Some(kept);
                return Ok(prev);
            }
            None => return Err(NotResults::BadLine(i + 1)),
        }
        kept += line.len();
    }
    prev.unterminated = !text.is_empty() && !text.ends_with('\n');
    Ok(prev)
}

/// What measuring came to; a worker's last line on stdout, less its rows
/// (which are in the results file).
#[derive(Debug, Serialize, Deserialize)]
pub struct Outcome {
    /// The rows measured (and written), in the order measured.
    #[serde(skip)]
    pub rows: Vec<Row>,
    /// Whether every time is the device's own.
    pub device_times: bool,
    /// Why measuring stopped on a failure, if it did.
    pub lost: Option<String>,
    /// Whether an interrupt stopped it.
    pub interrupted: bool,
    /// Whether the time budget stopped it.
    pub budget_spent: bool,
}

impl Default for Outcome {
    fn default() -> Self {
        Outcome {
            rows: Vec::new(),
            device_times: true,
            lost: None,
            interrupted: false,
            budget_spent: false,
        }
    }
}

impl Outcome {
    /// Adds what measuring more came to: its rows after these, the first
    /// failure that stopped it.
    pub fn join(&mut self, o: Outcome) {
        self.rows.extend(o.rows);
        self.device_times &= o.device_times;
        self.lost = self.lost.take().or(o.lost);
        self.interrupted |= o.interrupted;
        self.budget_spent |= o.budget_spent;
    }

    /// Whether it stopped before the end.
    pub fn stopped(&self) -> bool {
        self.lost.is_some() || self.interrupted || self.budget_spent
    }
}

/// A worker's share of a study.
#[derive(Debug, Serialize, Deserialize)]
pub struct Plan {
    /// Its configurations: grid, block, shared memory, and the compile
    /// setting (an index into the study's compile settings).
    pub configs: Vec<([u32; 3], [u32; 3], u32, usize)>,
    /// The results file its rows are appended to.
    pub results: PathBuf,
    /// The compile settings whose recorded configuration's row it writes.
    pub write_recorded: Vec<usize>,
    /// What is left of the time budget, in milliseconds.
    pub budget_ms: Option<u64>,
}

impl Plan {
    /// The plans of `workers` workers measuring `todo` into `results`, the
    /// candidates dealt out in turn, grouped by compile setting (so a
    /// worker's candidates of one setting are measured on one load of its
    /// image); the first writes the recorded rows of `write_recorded`.
    pub fn deal(
        mut todo: Vec<Candidate>,
        workers: usize,
        results: PathBuf,
        write_recorded: Vec<usize>,
        deadline: Option<Instant>,
    ) -> Vec<Plan> {
        todo.sort_by_key(|c| c.compile);
        let budget_ms = deadline.map(|d| {
            u64::try_from(d.saturating_duration_since(Instant::now()).as_millis())
                .unwrap_or(u64::MAX)
                .max(1)
        });
        let mut plans: Vec<Plan> = (0..workers)
            .map(|_| Plan {
                configs: Vec::new(),
                results: results.clone(),
                write_recorded: Vec::new(),
                budget_ms,
            })
            .collect();
        if let Some(first) = plans.first_mut() {
            first.write_recorded = write_recorded;
        }
        for (i, c) in todo.into_iter().enumerate() {
            let g = c.config;
            let config = (g.grid, g.block, g.shared_mem, c.compile);
            plans[i % workers].configs.push(config);
        }
        plans
    }

    /// Its candidates.
    pub fn candidates(&self) -> Vec<Candidate> {
        self.configs
            .iter()
            .map(|&(grid, block, shared_mem, compile)| Candidate {
                compile,
                config: LaunchConfig {
                    grid,
                    block,
                    shared_mem,
                },
            })
            .collect()
    }

    /// When its time budget runs out, counted from `start`.
    pub fn deadline(&self, start: Instant) -> Option<Instant> {
        self.budget_ms.map(|ms| start + Duration::from_millis(ms))
    }
}

#[cfg(test)]
mod tests;
