//! Reading a capture's memory beyond the region
//! ([`KernelRecord::extra_ranges`](reprise_core::record::KernelRecord)):
//! `STEM.extra_input` and `STEM.extra_output`, raw or in the store, each
//! checked against its length and checksum.

use std::path::Path;

use reprise_core::record::extra_len;

use super::{Capture, SnapshotFile, SnapshotSource, checksum_mismatch};
use crate::error::{CaptureProblem, Error, Result};
use crate::store::{ExtraParts, extra_paths};

/// Pieces the extra files are read in.
const PIECE: usize = 1 << 20;

/// The `len` bytes of the extra file at `path` (raw or a manifest), checked
/// against `sum` where the descriptor records one; `None` when it is not
/// there.
fn read_checked(path: &Path, len: u64, sum: Option<u64>) -> Result<Option<Vec<u8>>> {
    let Some(file) = SnapshotFile::open(path)? else {
        return Ok(None);
    };
    if file.len != len {
        return Err(Error::capture(
            &file.path,
            CaptureProblem::SnapshotSize {
                found: file.len,
                expected: len,
            },
        ));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.for_each_chunk(PIECE, |piece| bytes.extend_from_slice(piece))?;
    if let Some(want) = sum {
        let got = crate::capture::checksum(&bytes);
        if got != want {
            return Err(checksum_mismatch(&file.path, want, got));
        }
    }
    Ok(Some(bytes))
}

impl Capture {
    /// The bytes of the capture's extra ranges before the kernel and, when
    /// recorded, after it; `None` when the capture lists no extra range.
    /// A listed range whose bytes are missing, of the wrong length or
    /// checksum is an error naming the file.
    pub fn extra_parts(&self) -> Result<Option<ExtraParts>> {
        let ranges = &self.record.extra_ranges;
        if ranges.is_empty() {
            return Ok(None);
        }
        let len = extra_len(ranges);
        let (input_path, output_path) = extra_paths(&self.paths.descriptor);
        let sums = &self.record.checksums;
        let input = read_checked(&input_path, len, sums.extra_input)?
            .ok_or_else(|| Error::capture(&input_path, CaptureProblem::MissingSnapshot))?;
        let output = read_checked(&output_path, len, sums.extra_output)?;
        if output.is_none() && sums.extra_output.is_some() {
            return Err(Error::capture(
                &output_path,
                CaptureProblem::MissingSnapshot,
            ));
        }
        Ok(Some(ExtraParts {
            ranges: ranges.to_vec(),
            input,
            output,
        }))
    }
}
