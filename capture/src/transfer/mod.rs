//! Moving captures into a directory's chunk store and out of it again:
//! [`import`] replaces the raw data files of a directory's captures (LLVM's
//! included) by manifests and chunks, crash-safely; [`export`] writes a
//! capture's files as a raw recording in LLVM's or reprise's format would
//! have been, byte for byte; [`remove_orphans`] clears what killed writers
//! left beside the captures, and [`gc`] does that and the store's own gc.
//! `docs/store.md` gives the order of each step and why a SIGKILL at any
//! point loses nothing whole.

mod export;
mod import;
mod orphans;

use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::Path;

pub use export::{ExportFormat, Exported, export};
pub use import::{ImportOptions, ImportReport, Moved, Skipped, import};
pub use orphans::{OrphanReport, gc, orphan_manifests, remove_orphans};

pub use crate::chunks::{GcOptions, GcReport, Usage, usage};

use crate::error::{Error, ExportProblem, Result, StoreProblem};
use crate::store::TEMP_PREFIX;

/// Writes a new file `name` in the directory `dir_fd` (`dir`, for
/// messages): `fill` writes it under a fresh hidden temporary name
/// (`O_CREAT | O_EXCL | O_NOFOLLOW`), it is flushed, and then given its
/// name with `linkat`, which never replaces a file that is there (that is
/// [`ExportProblem::Exists`]). The temporary name goes either way.
fn write_new(
    dir_fd: &OwnedFd,
    dir: &Path,
    name: &str,
    fill: impl FnOnce(&mut File) -> Result<()>,
) -> Result<()> {
    let path = dir.join(name);
    let (tmp, mut file) = crate::fs::create_fresh(dir_fd, &format!("{TEMP_PREFIX}{name}."), 0o644)
        .map_err(|e| Error::io(&path, "create", e))?;
    let result = (|| {
        fill(&mut file)?;
        file.sync_all().map_err(|e| Error::io(&path, "sync", e))?;
        drop(file);
        match crate::fs::place(dir_fd, &tmp, dir_fd, name) {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::store(
                &path,
                StoreProblem::Export(ExportProblem::Exists { path: path.clone() }),
            )),
            Err(e) => Err(Error::io(&path, "link into place", e)),
        }
    })();
    let _ = crate::fs::remove(dir_fd, &tmp);
    result
}
