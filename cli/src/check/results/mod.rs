//! One result per capture, as a JSON line: written whole as each capture
//! finishes (one `write` per line, `O_APPEND`), so that a run killed at
//! any moment leaves whole lines, which `--resume` reads to skip what was
//! checked and `--merge` reads to join the shards' files.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::discover::Found;
use crate::error::{CliError, Result};

/// What became of a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Replayed, and its output is the recorded one.
    Passed,
    /// Replayed, and its output differs from the recorded one.
    Differs,
    /// Not run: the replay refused it before its kernel ran (an incomplete
    /// capture, a checksum that does not match, no executor or device for
    /// it, a launch the device refuses).
    Refused,
    /// Ran and failed: the kernel faulted, the worker crashed or was killed
    /// by a signal, or ended without a result.
    Failed,
    /// Ran past `--timeout`, and its worker was killed.
    Timeout,
}

impl Status {
    /// Every status, in the order the summary lists them.
    pub const ALL: [Status; 5] = [
        Status::Passed,
        Status::Differs,
        Status::Refused,
        Status::Failed,
        Status::Timeout,
    ];

    /// The status as the result lines spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Differs => "differs",
            Status::Refused => "refused",
            Status::Failed => "failed",
            Status::Timeout => "timeout",
        }
    }

    /// Whether the capture could not be checked (refused, failed, timed
    /// out): the suite then exits 2.
    pub fn did_not_run(self) -> bool {
        matches!(self, Status::Refused | Status::Failed | Status::Timeout)
    }

    /// The exit status `reprise replay --verify` gives for it, which a
    /// result reports as its worker's.
    pub fn exit_code(self) -> i32 {
        match self {
            Status::Passed => 0,
            Status::Differs => 1,
            _ => 2,
        }
    }
}

/// A capture's time (ns), what it is (`kernel`, `replay`), and the
/// repetitions' times it is the median of.
pub type Time<'a> = (u64, &'static str, &'a [u64]);

/// One capture's result: one line of a results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureResult {
    /// The descriptor, as found (what `--resume` matches).
    pub path: String,
    /// Its path relative to the directory it was found in (the name
    /// `--shard` and `--baseline` go by).
    pub name: String,
    /// The kernel, when the descriptor could be read.
    pub kernel: Option<String>,
    /// The executor it runs on, when known.
    pub backend: Option<String>,
    /// What became of it.
    pub status: Status,
    /// The worker's exit status (0 passed, 1 differs, 2 could not run);
    /// none when it was killed by a signal or never started.
    pub exit_code: Option<i32>,
    /// The signal that killed the worker, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// The median of the kernel's times over the repetitions, where the
    /// executor measures them (nanoseconds).
    #[serde(default)]
    pub kernel_ns: Option<u64>,
    /// Each repetition's kernel time (nanoseconds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_times_ns: Vec<u64>,
    /// The median of each repetition's wall time (restore, launch, wait),
    /// nanoseconds.
    #[serde(default)]
    pub replay_ns: Option<u64>,
    /// Each repetition's wall time (nanoseconds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replay_times_ns: Vec<u64>,
    /// The worker's wall time, start to end (nanoseconds).
    pub wall_ns: u64,
    /// What the replay said: the verification's line, or why it could not
    /// run.
    pub message: String,
}

impl CaptureResult {
    /// The result of `found` with `status` and `message`, before (or
    /// without) a worker's times.
    pub fn of(found: &Found, status: Status, message: String) -> CaptureResult {
        CaptureResult {
            path: found.path.display().to_string(),
            name: found.name.clone(),
            kernel: found.kernel.clone(),
            backend: found.backend.map(|b| b.to_string()),
            status,
            exit_code: None,
            signal: None,
            kernel_ns: None,
            kernel_times_ns: Vec::new(),
            replay_ns: None,
            replay_times_ns: Vec::new(),
            wall_ns: 0,
            message,
        }
    }

    /// The time the summary and the baseline go by, and what it is: the
    /// kernel's median where the executor measured it, else the median
    /// repetition.
    pub fn time(&self) -> Option<Time<'_>> {
        match (self.kernel_ns, self.replay_ns) {
            (Some(k), _) => Some((k, "kernel", &self.kernel_times_ns)),
            (None, Some(r)) => Some((r, "replay", &self.replay_times_ns)),
            (None, None) => None,
        }
    }

    /// This result as one line of a results file (newline included):
    /// JSON, with every character a terminal could act on escaped.
    pub fn line(&self) -> String {
        let json = serde_json::to_string(self).expect("a result serializes");
        let mut line = crate::ui::shown_text(&json).into_owned();
        line.push('\n');
        line
    }
}

/// A results file being written: every line with one `write` on an
/// `O_APPEND` descriptor.
pub struct ResultsFile {
    file: File,
    path: PathBuf,
}

impl ResultsFile {
    /// Opens `path` for results: appended to with `resume`, else emptied
    /// first. Never through a symbolic link.
    pub fn open(path: &Path, resume: bool) -> Result<ResultsFile> {
        let file = crate::side_files::open_append(path, true)?;
        if !resume {
            file.set_len(0)
                .map_err(|e| reprise::Error::io(path, "empty the results file", e))?;
        }
        Ok(ResultsFile {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Appends `r` as one whole line.
    pub fn append(&mut self, r: &CaptureResult) -> Result<()> {
        let line = r.line();
        // One write: with O_APPEND, a regular file takes it whole.
        let n = self
            .file
            .write(line.as_bytes())
            .map_err(|e| reprise::Error::io(&self.path, "write to the results file", e))?;
        if n != line.len() {
            return Err(CliError::file(
                &self.path,
                format!(
                    "only {n} of a result line's {} bytes were written (is the disk full?)",
                    line.len()
                ),
            ));
        }
        Ok(())
    }
}

/// What a results file holds: the results by path (a later line for the
/// same capture replaces an earlier one), and how many lines were not
/// results (a line cut short, say).
#[derive(Debug, Default)]
pub struct Read {
    /// The results, by path.
    pub results: BTreeMap<String, CaptureResult>,
    /// Lines that are no result.
    pub bad_lines: usize,
}

impl Read {
    /// Adds what `text` holds: result lines (a results file), or the
    /// `results` of a `reprise check --json` summary.
    pub fn add_text(&mut self, text: &str) {
        let summary = serde_json::from_str::<serde_json::Value>(text).ok();
        let results: Vec<serde_json::Result<CaptureResult>> =
            match summary.as_ref().and_then(|s| s.get("results")?.as_array()) {
                Some(all) => all.iter().map(CaptureResult::deserialize).collect(),
                None => text
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(serde_json::from_str)
                    .collect(),
            };
        // A later result for the same capture replaces an earlier one.
        self.bad_lines += results.iter().filter(|r| r.is_err()).count();
        let all = results.into_iter().flatten();
        self.results.extend(all.map(|r| (r.path.clone(), r)));
    }

    /// Adds what the file `path` holds; a file that is not there holds
    /// nothing.
    pub fn add_file(&mut self, path: &Path) -> Result<()> {
        if let Some(bytes) = crate::side_files::read(path, "results file")? {
            self.add_text(&String::from_utf8_lossy(&bytes));
        }
        Ok(())
    }
}

/// Reads every `*.jsonl` file in `dir` (the shards' results files), in
/// name order; returns what they hold and the files read.
pub fn read_dir(dir: &Path) -> Result<(Read, Vec<PathBuf>)> {
    let files = crate::jobs::jsonl_files(dir)?;
    let mut read = Read::default();
    for f in &files {
        read.add_file(f)?;
    }
    Ok((read, files))
}

/// The median of `v` (the mean of the middle two for an even count).
pub fn median(v: &[u64]) -> Option<u64> {
    let mut s = v.to_vec();
    s.sort_unstable();
    let n = s.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(s[n / 2]),
        _ => Some(((u128::from(s[n / 2 - 1]) + u128::from(s[n / 2])) / 2) as u64),
    }
}

#[cfg(test)]
mod tests;
