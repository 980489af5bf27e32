//! The worker: `reprise check --worker-serve`, run by the suite
//! ([`super::serve`]). It replays each capture a [`Request`] names, leaves
//! the output where the request says, and answers with a [`Report`], never
//! a verdict: whatever runs in this process can print anything, so the
//! suite compares the output itself ([`super::verdict`]).

use std::future::IntoFuture;
use std::path::Path;
use std::process::ExitCode;

use super::protocol::{Outcome, Report, Request, path_of};
use crate::error::{CliError, Result};
use crate::isolate;
use reprise::capture::BaseOrigin;
use reprise::{Capture, ErrorKind};

/// The replay of the capture at `path`, its output written to `output`,
/// on GPU `device` (`None`: the executor's own choice), as a report.
fn replay(
    path: &Path,
    output: &Path,
    options: reprise::OpenOptions,
    device: Option<i32>,
    repetitions: u32,
) -> Report {
    let mut report = Report::default();
    let said = |e: reprise::Error| CliError::from(e).to_string();
    let mut capture = match Capture::open_with(path, options) {
        Ok(c) => c,
        Err(e) => {
            report.message = said(e);
            return report;
        }
    };
    report.kernel = Some(capture.record.name.to_string());
    // The output goes where the suite reads it, never beside the capture.
    capture.paths.replay_output = output.to_path_buf();
    let builder = reprise::replay(&capture)
        .save_output(true)
        .repetitions(repetitions);
    let builder = crate::backend::given(builder, device, |b, d| b.device_id(d));
    match builder.resolved_backend() {
        // A GPU worker serves many captures: one that would run its code in
        // this process must have a process of its own (the suite sends
        // host captures to workers that take one each).
        Ok(b) if device.is_some() && reprise::executors::capabilities(b).in_process => {
            report.message = format!(
                "the suite sent this capture to a GPU worker, but it runs on the {b} executor"
            );
            return report;
        }
        Ok(b) => report.backend = Some(b.to_string()),
        Err(e) => {
            report.message = said(e);
            return report;
        }
    }
    let outcome = match reprise::block_on(builder.into_future()) {
        Ok(o) => o,
        Err(e) => {
            if !could_not_start(&e) {
                report.outcome = Outcome::Failed;
            }
            let fault = e.kernel_faulted().then(|| isolate::fault_address(&e));
            report.message = said(e);
            if let Some(at) = fault
                && let Some(b @ BaseOrigin::Derived { .. }) = capture.base_origin()
            {
                report.message.push_str(&isolate::fault_hint(
                    capture.region_base().unwrap_or(0),
                    &b,
                    &capture.record,
                    path,
                    at,
                ));
            }
            return report;
        }
    };
    let ns = |d: &std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    report.replay_times_ns = outcome.times.iter().map(ns).collect();
    report.kernel_times_ns = outcome.kernel_times.iter().flatten().map(ns).collect();
    if outcome.output_path.is_none() {
        report.outcome = Outcome::Failed;
        report.message = "the replay wrote no output".into();
        return report;
    }
    report.outcome = Outcome::Ran;
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

/// `check --worker-serve`: replays each capture asked for on stdin (one
/// [`Request`] a line) and answers with its marked report line, until
/// stdin ends or a capture fails (a kernel that faulted may have left the
/// process unsound: the suite starts a fresh worker).
pub fn serve(
    options: reprise::OpenOptions,
    device: Option<i32>,
    repetitions: u32,
) -> Result<ExitCode> {
    use std::io::BufRead as _;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| reprise::Error::io("stdin", "read", e))?;
        let request: Request = serde_json::from_str(&line)
            .map_err(|e| CliError::Usage(format!("a worker reads requests as JSON lines: {e}")))?;
        let report = replay(
            path_of(&request.capture),
            path_of(&request.output),
            options.clone(),
            device,
            repetitions,
        );
        // On a line of its own, whatever the kernel printed before it.
        out_text!("{}", report.line());
        if report.outcome == Outcome::Failed {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}
