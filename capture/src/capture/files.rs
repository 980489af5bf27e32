//! A capture's descriptor, and streaming and checksumming its other files,
//! each opened as [`super::open`] says. Snapshots, the large files, are
//! never read whole here: the executor maps them, or reads them into its
//! own buffers.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use reprise_core::record::{Checksummer, KernelRecord};

use crate::error::{CaptureProblem, Error, Result};

use super::open::{DESCRIPTOR_LIMIT, not_found, open_regular, read_bounded};

/// Reads a descriptor, refusing what is not a regular file and files larger
/// than [`DESCRIPTOR_LIMIT`], and one of a capture's other files, by name,
/// with the descriptor to pass instead.
pub fn read_descriptor(path: &Path) -> Result<Box<KernelRecord>> {
    if let Some(e) = not_a_descriptor(path) {
        return Err(e);
    }
    let text = read_bounded(path, "descriptor", DESCRIPTOR_LIMIT)?
        .ok_or_else(|| not_found(path, "open"))?;
    KernelRecord::from_json(&text)
        .map(Box::new)
        .map_err(|source| Error::Descriptor {
            path: path.to_path_buf(),
            source,
        })
}

/// The error for a path that names one of a capture's data files (its
/// snapshots, globals or image) where its descriptor belongs.
fn not_a_descriptor(path: &Path) -> Option<Error> {
    const ROLES: [(&str, &str); 9] = [
        ("original.output", "recorded output"),
        ("replay.output", "saved replay output"),
        ("record_output", "recorded output"),
        ("replay_output", "saved replay output"),
        ("record_input", "memory snapshot"),
        ("memory", "memory snapshot"),
        ("globals", "globals file"),
        ("image", "device image"),
        ("bc", "device image (LLVM bitcode)"),
    ];
    let name = path.file_name()?.to_string_lossy().into_owned();
    let (ext, role) = ROLES
        .iter()
        .find(|(ext, _)| name.len() > ext.len() + 1 && name.ends_with(&format!(".{ext}")))?;
    let stem = &name[..name.len() - ext.len() - 1];
    let descriptor = path.with_file_name(format!("{stem}.json"));
    Some(Error::capture(
        path,
        CaptureProblem::NotADescriptor {
            role,
            descriptor_exists: descriptor.exists(),
            descriptor,
        },
    ))
}

/// The first `max` bytes of the regular file at `path` (fewer if it is
/// shorter); `None` when it is missing or is not a regular file.
pub fn head(path: &Path, max: u64) -> Option<Vec<u8>> {
    let (file, _) = open_regular(path).ok()??;
    let mut out = Vec::new();
    file.take(max).read_to_end(&mut out).ok()?;
    Some(out)
}

/// Streams `file` through `f`, in chunks of at most `chunk` bytes, no
/// further than the length the file reports (a file that grows, or one
/// that reads on past its length, is read no further).
pub(crate) fn stream(
    file: &File,
    path: &Path,
    chunk: usize,
    f: &mut dyn FnMut(&[u8]),
) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let len = file
        .metadata()
        .map_err(|e| Error::io(path, "stat", e))?
        .len();
    let mut buf = vec![0u8; chunk.max(4096)];
    let mut at = 0u64;
    while at < len {
        let want = buf
            .len()
            .min(usize::try_from(len - at).unwrap_or(usize::MAX));
        let n = file
            .read_at(&mut buf[..want], at)
            .map_err(|e| Error::io(path, "read", e))?;
        if n == 0 {
            break;
        }
        f(&buf[..n]);
        at += n as u64;
    }
    Ok(())
}

/// The xxh3-64 checksum of a file, streamed.
pub fn file_checksum(file: &File, path: &Path) -> Result<u64> {
    let mut h = Checksummer::new();
    stream(file, path, 1 << 20, &mut |b| h.update(b))?;
    Ok(h.finish())
}

/// The error for a file whose checksum is `actual` where the descriptor
/// says `recorded`.
pub fn checksum_mismatch(path: &Path, recorded: u64, actual: u64) -> Error {
    Error::capture(path, CaptureProblem::ChecksumMismatch { recorded, actual })
}

/// `Ok` when `got`, the checksum of `path`'s bytes, is the `want` the
/// descriptor records; else the mismatch.
pub(crate) fn expect_checksum(path: &Path, want: u64, got: u64) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(checksum_mismatch(path, want, got))
    }
}

pub use reprise_core::record::checksum;
