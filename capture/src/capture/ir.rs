//! A capture's LLVM IR: `STEM.bc` beside the descriptor, the name LLVM's
//! recorder gives it (`RecordReplay.cpp`, `FileTy::IRImage` -> `"bc"`,
//! written only when the image was JIT-compiled from bitcode) and the one
//! reprise's Recorder writes; or the capture's image itself when that is
//! bitcode (LLVM's legacy recorder saved the JIT input as `STEM.image`).

use std::path::{Path, PathBuf};

use reprise_core::image::{self, ImageKind};

use super::open::{IMAGE_LIMIT, not_found, read_bounded};
use super::paths::{CapturePaths, sibling};
use crate::error::{Error, Result};

/// The extension of a capture's IR file.
pub const IR_EXTENSION: &str = "bc";

/// `STEM.bc` for the descriptor `STEM.json`.
pub fn ir_path(descriptor: &Path) -> PathBuf {
    sibling(descriptor, IR_EXTENSION)
}

/// The LLVM bitcode of the capture at `paths`: the file `given` when named
/// (it must be there), else `STEM.bc`, else the image when it is bitcode;
/// `Ok(None)` when there is none. Read with the image's bound; a file that
/// is not LLVM bitcode is an error naming it. `want` is the checksum the
/// descriptor records for `STEM.bc` (reprise's `Checksums` key `ir`): then
/// the file must be there and match.
pub fn read_ir(
    paths: &CapturePaths,
    want: Option<u64>,
    given: Option<&Path>,
) -> Result<Option<(PathBuf, Vec<u8>)>> {
    if let (Some(want), None) = (want, given) {
        let path = ir_path(&paths.descriptor);
        let Some(bytes) = read_bounded(&path, "LLVM IR", IMAGE_LIMIT)? else {
            let why = "read (the descriptor records its checksum)";
            return Err(not_found(&path, why));
        };
        super::files::expect_checksum(&path, want, super::files::checksum(&bytes))?;
    }
    let candidates: Vec<PathBuf> = match given {
        Some(p) => vec![p.to_path_buf()],
        None => vec![ir_path(&paths.descriptor), paths.image.clone()],
    };
    for (i, path) in candidates.iter().enumerate() {
        // The image is read whole only when it is bitcode.
        if i == 1
            && !super::files::head(path, 4).is_some_and(|h| image::sniff(&h) == ImageKind::Bitcode)
        {
            return Ok(None);
        }
        let Some(bytes) = read_bounded(path, "LLVM IR", IMAGE_LIMIT)? else {
            if given.is_some() {
                return Err(not_found(path, "read"));
            }
            continue;
        };
        let kind = image::sniff(&bytes);
        if kind == ImageKind::Bitcode {
            return Ok(Some((path.clone(), bytes)));
        }
        // The image is not IR: nothing wrong with it.
        if given.is_none() && i == 1 {
            return Ok(None);
        }
        return Err(Error::Config {
            var: "the IR file",
            value: path.display().to_string(),
            problem: format!("it is {kind}, not LLVM bitcode"),
        });
    }
    Ok(None)
}
