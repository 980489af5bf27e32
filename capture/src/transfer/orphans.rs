//! What killed writers leave beside a directory's captures, and its
//! removal: manifests whose capture has no descriptor (a recorder killed
//! after its manifests were in place and before its descriptor was), and
//! the hidden temporary files of interrupted writes (`.reprise-tmp.*`).
//! The store's own leftovers (in `.reprise-store/tmp/`) are
//! [`crate::chunks::store_leftovers`], removed by [`crate::chunks::gc`].
//!
//! A live writer is never robbed: a recorder writing into the store holds a
//! pin from before its first manifest until after its descriptor is in
//! place. [`remove_orphans`] lists the candidates first, then looks at the
//! pins: while any writer holds one, a manifest without descriptor may be
//! that writer's, and nothing is removed; when none does, every candidate
//! listed was a dead writer's or has its descriptor now (looked at again
//! just before each removal). A temporary file, which a raw writer makes
//! without a pin, goes only once it is older than the grace period too.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::chunks::{self, GcOptions, GcReport};
use crate::error::{Error, Result};
use crate::list::split_data_name;
use crate::store::TEMP_PREFIX;

/// What [`remove_orphans`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrphanReport {
    /// Manifests without a descriptor removed.
    pub manifests: Vec<PathBuf>,
    /// Temporary files removed.
    pub temp_files: Vec<PathBuf>,
    /// Orphans left because a writer holds a pin on the store (they may be
    /// its work in progress).
    pub left_for_writers: u64,
}

/// The descriptor of the capture the manifest named `name` in `dir`
/// belongs to (`STEM.json` for `STEM.EXT.chunks`, a capture file extension
/// `EXT`), the stem taken byte for byte: `None` for a name that is no
/// manifest's.
fn descriptor_of(dir: &Path, name: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt as _;
    let text = name.to_string_lossy();
    let raw = text.strip_suffix(chunks::layout::MANIFEST_SUFFIX)?;
    if text.starts_with('.') {
        return None;
    }
    let (stem, _) = split_data_name(raw)?;
    // What follows the stem is ASCII: the stem is the name's bytes before.
    let bytes = name.as_bytes();
    let mut descriptor = bytes[..bytes.len() - (text.len() - stem.len())].to_vec();
    descriptor.extend_from_slice(b".json");
    Some(dir.join(std::ffi::OsStr::from_bytes(&descriptor)))
}

/// The manifests in `dir` whose capture has no descriptor: `STEM.EXT.chunks`
/// for a capture file extension `EXT`, and no `STEM.json`. Sorted.
pub fn orphan_manifests(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| Error::io(dir, "list directory", e))? {
        let Ok(e) = e else { continue };
        let Some(descriptor) = descriptor_of(dir, &e.file_name()) else {
            continue;
        };
        if std::fs::symlink_metadata(descriptor).is_err() {
            out.push(e.path());
        }
    }
    out.sort();
    Ok(out)
}

/// The temporary files of interrupted writes in `dir` last written before
/// `older_than`.
fn temp_files(dir: &Path, older_than: SystemTime) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| Error::io(dir, "list directory", e))? {
        let Ok(e) = e else { continue };
        if !e.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
            continue;
        }
        let Ok(m) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if m.is_file() && m.modified().is_ok_and(|t| t < older_than) {
            out.push(e.path());
        }
    }
    out.sort();
    Ok(out)
}

/// Removes the orphans of `dir` (see the module's documentation):
/// manifests without a descriptor, and temporary files last written more
/// than `grace` ago, unless a writer holds a pin on the store.
pub fn remove_orphans(dir: &Path, grace: Duration) -> Result<OrphanReport> {
    let mut report = OrphanReport::default();
    // Listed before the pins are looked at.
    let manifests = orphan_manifests(dir)?;
    let older_than = SystemTime::now()
        .checked_sub(grace)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let temps = temp_files(dir, older_than)?;
    if manifests.is_empty() && temps.is_empty() {
        return Ok(report);
    }
    if chunks::live_pins(dir)? > 0 {
        report.left_for_writers = (manifests.len() + temps.len()) as u64;
        return Ok(report);
    }
    for (files, removed) in [
        (manifests, &mut report.manifests),
        (temps, &mut report.temp_files),
    ] {
        for f in files {
            // A manifest's descriptor may have come since the listing (a
            // temporary file has none).
            let descriptor = f.file_name().and_then(|n| descriptor_of(dir, n));
            if descriptor.is_some_and(|d| std::fs::symlink_metadata(d).is_ok()) {
                continue;
            }
            match std::fs::remove_file(&f) {
                Ok(()) => removed.push(f),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&f, "remove", e)),
            }
        }
    }
    Ok(report)
}

/// `reprise gc`: the orphans of `dir` removed ([`remove_orphans`], with
/// `options.grace`), then the chunks no manifest names and the store's own
/// leftovers ([`chunks::gc_with`]), so that the chunks only an orphan named
/// go in the same run.
pub fn gc(dir: &Path, options: &GcOptions) -> Result<(OrphanReport, GcReport)> {
    let orphans = remove_orphans(dir, options.grace)?;
    let report = chunks::gc_with(dir, options)?;
    Ok((orphans, report))
}
