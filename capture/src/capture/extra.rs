//! Reading a capture's memory beyond the region
//! ([`KernelRecord::extra_ranges`](reprise_core::record::KernelRecord)):
//! `STEM.extra_input` and `STEM.extra_output`, raw or in the store, each
//! checked against its length and checksum.

use std::path::{Path, PathBuf};

use reprise_core::record::{EXTRA_EXTENSIONS, ExtraRange, extra_len};

use super::{Capture, SnapshotFile, SnapshotSource};
use crate::error::{CaptureProblem, Error, Result};

/// What a recorder took of memory beyond the region for one launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraParts {
    /// The ranges, in the order their bytes follow one another.
    pub ranges: Vec<ExtraRange>,
    /// Their bytes before the kernel.
    pub input: Vec<u8>,
    /// Their bytes after it, when the recording saves the output.
    pub output: Option<Vec<u8>>,
}

impl ExtraParts {
    /// Whether the bytes are as long as the ranges.
    pub(crate) fn whole(&self) -> bool {
        let len = extra_len(&self.ranges);
        self.input.len() as u64 == len
            && self.output.as_ref().is_none_or(|o| o.len() as u64 == len)
            && !self.ranges.is_empty()
    }
}

/// The files of a capture's extra ranges, before and after the kernel,
/// beside its descriptor.
pub fn extra_paths(descriptor: &Path) -> (PathBuf, PathBuf) {
    let with = |ext| super::paths::sibling(descriptor, ext);
    (with(EXTRA_EXTENSIONS[0]), with(EXTRA_EXTENSIONS[1]))
}

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
        let (found, expected) = (file.len, len);
        return Err(Error::capture(
            &file.path,
            CaptureProblem::SnapshotSize { found, expected },
        ));
    }
    let mut bytes = Error::empty_buffer(len, "the extra ranges' bytes")?;
    file.for_each_chunk(PIECE, |piece| bytes.extend_from_slice(piece))?;
    if let Some(want) = sum {
        super::expect_checksum(&file.path, want, crate::capture::checksum(&bytes))?;
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
        let missing = |path: &Path| Error::capture(path, CaptureProblem::MissingSnapshot);
        let input = read_checked(&input_path, len, sums.extra_input)?
            .ok_or_else(|| missing(&input_path))?;
        let output = read_checked(&output_path, len, sums.extra_output)?;
        if output.is_none() && sums.extra_output.is_some() {
            return Err(missing(&output_path));
        }
        Ok(Some(ExtraParts {
            ranges: ranges.to_vec(),
            input,
            output,
        }))
    }
}
