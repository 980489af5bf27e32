//! What the suite and a worker say to each other: a [`Request`] a line on
//! the worker's stdin, and a [`Report`] a line on its stdout, marked with
//! [`MARK`] (the capture's code may print too). A report is never a
//! verdict: it says whether the kernel ran (and its output is where the
//! request said) or why not; the suite compares the output itself.
//!
//! [`Lines`] reads what a worker printed for one capture: its one result,
//! or why none is taken (none, several, a malformed one, or one followed by
//! an unclean end). This module stands alone (serde and the standard
//! library), so that the fuzz targets read it as the suite does.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// What starts the worker's line on stdout.
pub const MARK: &str = "reprise-check-result ";

/// What the suite asks a worker: one capture, and where its output goes.
/// Paths travel as their bytes (they need not be UTF-8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The capture's descriptor.
    pub capture: Vec<u8>,
    /// Where the replay's output is written, in the suite's private
    /// directory.
    pub output: Vec<u8>,
}

impl Request {
    /// A request for `capture`, its output into `output`.
    pub fn new(capture: &Path, output: &Path) -> Request {
        use std::os::unix::ffi::OsStrExt as _;
        Request {
            capture: capture.as_os_str().as_bytes().to_vec(),
            output: output.as_os_str().as_bytes().to_vec(),
        }
    }
}

/// A path from its bytes.
pub fn path_of(bytes: &[u8]) -> &Path {
    use std::os::unix::ffi::OsStrExt as _;
    Path::new(std::ffi::OsStr::from_bytes(bytes))
}

/// What became of a capture in its worker (refused until it gets further).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The kernel ran, and the output is where the request said.
    Ran,
    /// Not run: refused before the kernel ran.
    #[default]
    Refused,
    /// The replay failed (the kernel faulted, the executor failed).
    Failed,
}

/// What a worker reports of one capture: never a verdict.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// Whether the kernel ran, or why not.
    pub outcome: Outcome,
    /// The kernel, when the descriptor could be read.
    pub kernel: Option<String>,
    /// The executor it ran on, when one was chosen.
    pub backend: Option<String>,
    /// Each repetition's kernel time, where the executor measures it (ns).
    pub kernel_times_ns: Vec<u64>,
    /// Each repetition's wall time (ns).
    pub replay_times_ns: Vec<u64>,
    /// Why the capture could not run, or nothing.
    pub message: String,
}

impl Report {
    /// The report as the worker prints it: the mark, the JSON, on a line
    /// of its own (a newline first, whatever the kernel printed before).
    pub fn line(&self) -> String {
        let json = serde_json::to_string(self).expect("a report serializes");
        format!("\n{MARK}{json}")
    }
}

/// Why a worker's output gives no result for its capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoResult {
    /// It printed no result.
    None,
    /// It printed this many (the capture's code printed some).
    Several(usize),
    /// Its one marked line is no report.
    Malformed,
    /// It gave its result, then did not end cleanly.
    Unclean,
}

/// The marked lines a worker printed for one capture.
#[derive(Debug, Default)]
pub struct Lines {
    reports: Vec<Report>,
    malformed: usize,
}

impl Lines {
    /// Takes one line of the worker's stdout; whether it was marked.
    pub fn add(&mut self, line: &[u8]) -> bool {
        let text = String::from_utf8_lossy(line);
        let Some(json) = text.trim_end().strip_prefix(MARK) else {
            return false;
        };
        match serde_json::from_str::<Report>(json) {
            Ok(r) => self.reports.push(r),
            Err(_) => self.malformed += 1,
        }
        true
    }

    /// How many marked lines were taken.
    pub fn marked(&self) -> usize {
        self.reports.len() + self.malformed
    }

    /// The one result, when there is exactly one well-formed marked line
    /// and the worker ended cleanly (`clean`).
    pub fn one(mut self, clean: bool) -> Result<Report, NoResult> {
        match (self.marked(), self.reports.pop()) {
            (0, _) => Err(NoResult::None),
            (1, Some(r)) if clean => Ok(r),
            (1, Some(_)) => Err(NoResult::Unclean),
            (1, None) => Err(NoResult::Malformed),
            (n, _) => Err(NoResult::Several(n)),
        }
    }
}
