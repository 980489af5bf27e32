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
    let failed = |e: reprise::Error| (Status::Failed, CliError::from(e).to_string());
    let capture = match Capture::open_with(descriptor, options.clone()) {
        Ok(c) => c,
        Err(e) => return failed(e),
    };
    if let Some(e) = capture.output_problem() {
        return (Status::Refused, CliError::from(e).to_string());
    }
    let Some(recorded) = capture.output.as_ref() else {
        return (Status::Refused, "the capture has no recorded output".into());
    };
    let base = match capture.region_base() {
        Ok(b) => b,
        Err(e) => return failed(e),
    };
    let ranges = match resolve_ranges(
        &compare.spec(),
        &capture.record,
        base,
        capture.snapshot_len(),
    ) {
        Ok(r) => r,
        Err(e) => return (Status::Refused, CliError::from(e).to_string()),
    };
    let replayed = match read_output(output, capture.snapshot_len()) {
        Ok(bytes) => bytes,
        Err(why) => return (Status::Failed, why),
    };
    let v = match verify(
        &replayed,
        recorded,
        capture.expected_output_checksum(),
        compare.tolerance(),
        ranges,
    ) {
        Ok(v) => v,
        Err(e) => return failed(e),
    };
    let mut message = compare
        .report("verification", &v.comparison, &v.ranges, Some(base))
        .join("\n");
    if v.is_match() {
        return (Status::Passed, message);
    }
    // A region base chosen among several may be what differs.
    if let Some(b @ BaseOrigin::Derived { .. }) = capture.base_origin()
        && b.alternatives().is_some()
    {
        let hint = isolate::derived_hint(base, &b);
        message.push_str(&format!("\nbut{}", hint.trim_start_matches(';')));
    }
    (Status::Differs, message)
}

/// The output at `path`, which must be a regular file of `len` bytes.
fn read_output(path: &Path, len: u64) -> Result<Vec<u8>, String> {
    let missing = || {
        format!(
            "the worker said the kernel ran, but left no output ({} is missing)",
            path.display()
        )
    };
    let file = match SnapshotFile::open(path) {
        Ok(Some(f)) => f,
        Ok(None) => return Err(missing()),
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
