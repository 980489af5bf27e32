//! The verdict on a capture, given by the suite, a process that never runs
//! a capture's code: it opens the capture (which runs nothing), reads the
//! output a worker left once that worker reported, and compares it with the
//! recorded output as `reprise replay --verify` does.
//!
//! What it can promise about a hostile kernel: nothing the kernel prints
//! or writes decides another capture's verdict, or the run's exit status
//! beyond its own capture's part in it. What it cannot: a kernel is native
//! code on the host executor, and can make its own output match by copying
//! the recorded one, so a capture's own PASS says its output was the
//! recorded one, not that its kernel is honest.

use std::path::Path;

use reprise::Capture;
use reprise::capture::{BaseOrigin, SnapshotFile, SnapshotSource};
use reprise::replayer::{resolve_ranges, verify};

use super::results::Status;
use crate::compare_args::CompareArgs;
use crate::error::CliError;
use crate::isolate;

/// Compares the output a worker wrote at `output` for the capture at
/// `descriptor` with its recorded output: `passed` or `differs` with the
/// comparison's lines, or `failed` naming what is wrong (no output, one of
/// the wrong length, a capture that no longer reads).
pub fn judge(
    descriptor: &Path,
    options: &reprise::OpenOptions,
    compare: &CompareArgs,
    output: &Path,
) -> (Status, String) {
    let said = |status| move |e: reprise::Error| (status, CliError::from(e).to_string());
    let (failed, refused) = (said(Status::Failed), said(Status::Refused));
    let judged = || {
        let capture = Capture::open_with(descriptor, options.clone()).map_err(failed)?;
        if let Some(e) = capture.output_problem() {
            return Err(refused(e));
        }
        let Some(recorded) = capture.output.as_ref() else {
            return Err((Status::Refused, "the capture has no recorded output".into()));
        };
        let base = capture.region_base().map_err(failed)?;
        let len = capture.snapshot_len();
        let ranges =
            resolve_ranges(&compare.spec(), &capture.record, base, len).map_err(refused)?;
        let replayed = read_output(output, len).map_err(|why| (Status::Failed, why))?;
        let checksum = capture.expected_output_checksum();
        let v =
            verify(&replayed, recorded, checksum, compare.tolerance(), ranges).map_err(failed)?;
        let mut message = compare
            .arg_lines(&capture.record, base, len)
            .into_iter()
            .chain(compare.report("verification", &v.comparison, &v.ranges, Some(base)))
            .collect::<Vec<_>>()
            .join("\n");
        if v.is_match() {
            return Ok((Status::Passed, message));
        }
        // A region base chosen among several may be what differs.
        if let Some(b @ BaseOrigin::Derived { .. }) = capture.base_origin()
            && b.alternatives().is_some()
        {
            let hint = isolate::derived_hint(base, &b);
            message.push_str(&format!("\nbut{}", hint.trim_start_matches(';')));
        }
        Ok((Status::Differs, message))
    };
    judged().unwrap_or_else(|no| no)
}

/// The output at `path`, which must be a regular file of `len` bytes.
fn read_output(path: &Path, len: u64) -> Result<Vec<u8>, String> {
    let file = match SnapshotFile::open(path) {
        Ok(Some(f)) => f,
        Ok(None) => {
            return Err(format!(
                "the worker said the kernel ran, but left no output ({} is missing)",
                path.display()
            ));
        }
        Err(e) => return Err(CliError::from(e).to_string()),
    };
    if file.len != len {
        return Err(format!(
            "the replay's output is {} bytes where the capture's region is {len}",
            file.len
        ));
    }
    let n = usize::try_from(len).map_err(|_| format!("an output of {len} bytes is too large"))?;
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(n)
        .map_err(|_| format!("an output of {len} bytes does not fit in memory"))?;
    file.for_each_chunk(1 << 20, |c| bytes.extend_from_slice(c))
        .map_err(|e| CliError::from(e).to_string())?;
    if bytes.len() != n {
        return Err(format!(
            "{}: the output changed while it was read",
            path.display()
        ));
    }
    Ok(bytes)
}
