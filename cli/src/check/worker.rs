//! The worker: `reprise check --worker-serve ...`, run by the suite in
//! child processes. It replays each capture named on its stdin with
//! verification, as `reprise replay --verify` does, and prints what
//! happened as one marked JSON line on stdout. A kernel that takes the
//! process with it leaves no line, and the suite says how the process
//! ended instead.

use std::future::IntoFuture;
use std::path::Path;
use std::process::ExitCode;

use reprise::{Capture, ErrorKind};
use serde::{Deserialize, Serialize};

use super::results::{Status, median};
use crate::compare_args::CompareArgs;
use crate::error::{CliError, Result};
use crate::isolate;

/// What starts the worker's line on stdout (the kernel may print too).
pub const MARK: &str = "reprise-check-result ";

/// What a worker reports.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// What became of the capture (never `timeout`: that is the suite's).
    pub status: Status,
    /// The kernel, when the descriptor could be read.
    pub kernel: Option<String>,
    /// The executor it ran on, when one was chosen.
    pub backend: Option<String>,
    /// Each repetition's kernel time, where the executor measures it (ns).
    pub kernel_times_ns: Vec<u64>,
    /// Each repetition's wall time (ns).
    pub replay_times_ns: Vec<u64>,
    /// The verification's lines, or why the capture could not run.
    pub message: String,
}

impl Report {
    /// The median kernel time.
    pub fn kernel_ns(&self) -> Option<u64> {
        median(&self.kernel_times_ns)
    }

    /// The median repetition time.
    pub fn replay_ns(&self) -> Option<u64> {
        median(&self.replay_times_ns)
    }
}

/// What the worker is asked.
pub struct Job<'a> {
    /// The capture's descriptor.
    pub path: &'a Path,
    /// How to open it.
    pub options: reprise::OpenOptions,
    /// The GPU to run on (`None`: the executor's own choice).
    pub device: Option<i32>,
    /// Timed repetitions.
    pub repetitions: u32,
    /// How to compare.
    pub compare: &'a CompareArgs,
}

/// The replay, as a report.
fn replay(job: &Job<'_>) -> Report {
    let mut report = Report {
        status: Status::Refused,
        kernel: None,
        backend: None,
        kernel_times_ns: Vec::new(),
        replay_times_ns: Vec::new(),
        message: String::new(),
    };
    let capture = match Capture::open_with(job.path, job.options.clone()) {
        Ok(c) => c,
        Err(e) => {
            report.message = CliError::from(e).to_string();
            return report;
        }
    };
    report.kernel = Some(capture.record.name.to_string());
    let mut builder = reprise::replay(&capture)
        .verify(true)
        .compare(job.compare.spec())
        .repetitions(job.repetitions);
    if let Some(d) = job.device {
        builder = builder.device_id(d);
    }
    match builder.resolved_backend() {
        Ok(b) => report.backend = Some(b.to_string()),
        Err(e) => {
            report.message = CliError::from(e).to_string();
            return report;
        }
    }
    let derived = match capture.base_origin() {
        Some(b @ reprise::capture::BaseOrigin::Derived { .. }) => Some(b),
        _ => None,
    };
    let hint = || {
        derived
            .map(|b| isolate::derived_hint(capture.region_base().unwrap_or(0), &b))
            .unwrap_or_default()
    };
    let outcome = match reprise::block_on(builder.into_future()) {
        Ok(o) => o,
        Err(e) => {
            report.status = if could_not_start(&e) {
                Status::Refused
            } else {
                Status::Failed
            };
            let fault = e.kernel_faulted();
            report.message = CliError::from(e).to_string();
            if fault {
                report.message.push_str(&hint());
            }
            return report;
        }
    };
    let ns = |d: &std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    report.replay_times_ns = outcome.times.iter().map(ns).collect();
    report.kernel_times_ns = outcome.kernel_times.iter().flatten().map(ns).collect();
    let Some(v) = &outcome.verification else {
        report.status = Status::Failed;
        report.message = "the replay verified nothing".into();
        return report;
    };
    let lines = job.compare.report(
        "verification",
        &v.comparison,
        &v.ranges,
        capture.region_base().ok(),
    );
    report.message = lines.join("\n");
    if v.is_match() {
        report.status = Status::Passed;
    } else {
        report.status = Status::Differs;
        // A region base chosen among several may be what differs.
        if derived.is_some_and(|b| b.alternatives().is_some()) {
            report
                .message
                .push_str(&format!("\nbut{}", hint().trim_start_matches(';')));
        }
    }
    report
}

/// Whether the replay refused `e` before the kernel ran: anything but an
/// executor's failure while it worked (a capture or option refused, no
/// executor, driver or device for it, a launch beyond the device's
/// limits).
fn could_not_start(e: &reprise::Error) -> bool {
    match e.executor_kind() {
        None => !matches!(e, reprise::Error::Internal(_)),
        Some(kind) => matches!(
            kind,
            ErrorKind::DeviceMissing | ErrorKind::NoDevice | ErrorKind::LaunchRefused
        ),
    }
}

/// `check --worker-serve`: replays each capture named on stdin (one JSON
/// string a line) and answers with its marked report line, until stdin
/// ends or a capture fails (a kernel that faulted may have left the
/// process unsound: the suite starts a fresh worker).
pub fn serve(
    options: reprise::OpenOptions,
    device: Option<i32>,
    repetitions: u32,
    compare: &CompareArgs,
) -> Result<ExitCode> {
    use std::io::BufRead as _;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| reprise::Error::io("stdin", "read", e))?;
        let path: String = serde_json::from_str(&line).map_err(|e| {
            CliError::Command(format!("a worker reads capture paths as JSON strings: {e}"))
        })?;
        let report = replay(&Job {
            path: Path::new(&path),
            options: options.clone(),
            device,
            repetitions,
            compare,
        });
        let json = serde_json::to_string(&report).expect("a report serializes");
        // On a line of its own, whatever the kernel printed before it.
        out_text!("\n{MARK}{json}");
        if report.status == Status::Failed {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}
