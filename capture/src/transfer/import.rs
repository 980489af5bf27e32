//! `import`: the raw data files of a directory's captures (reprise's and
//! LLVM's, legacy and current) moved into the directory's chunk store.
//!
//! For each raw data file `F` of a capture whose descriptor reads (the
//! descriptor itself stays as it is):
//!
//! 1. a pin is taken, and `F` is read in pieces and put into the store
//!    under it: every chunk flushed to disk and linked to its name, the
//!    directories they were linked into flushed;
//! 2. the manifest `F.chunks` is written under a temporary name, flushed,
//!    and renamed into place; the directory is flushed;
//! 3. the capture's file reads back whole: the manifest in place is read
//!    again, and every chunk it names read from the store (each checked
//!    against its name) into a checksum that must be the one of the bytes
//!    read from `F` (xxh3-128); otherwise the import fails, naming what
//!    did not read back, and `F` stays;
//! 4. the pin is dropped;
//! 5. `F` is removed (when it is still the file that was read) and the
//!    directory flushed.
//!
//! A SIGKILL before 2's rename leaves `F` whole (and chunks no manifest
//! names, which gc removes); between 2 and 5, `F` and a whole manifest
//! (the raw file is read first; `import` again finishes it); after 5, the
//! manifest alone, every chunk it names on disk, and read back, before it
//! was. No manifest ever names a chunk not yet stored, and nothing is
//! deleted before what replaces it is read back whole.

use std::collections::HashMap;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::capture::{CapturePaths, read_descriptor};
use crate::chunks::{self, ChunkStore, Manifest, StoreOptions};
use crate::error::{CaptureProblem, Error, Result, StoreProblem};

use crate::fs::sync_dir;

/// How [`import`] works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportOptions {
    /// Only say what would be moved.
    pub dry_run: bool,
    /// Flush chunks, manifests and the directory before a raw file is
    /// removed (what makes a crash lose nothing). Default: on.
    pub fsync: bool,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            dry_run: false,
            fsync: true,
        }
    }
}

/// One raw file moved into the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    /// The raw file (now gone, unless a dry run).
    pub raw: PathBuf,
    /// The manifest standing for it.
    pub manifest: PathBuf,
    /// Its bytes.
    pub bytes: u64,
}

/// A raw file left as it was, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// Why it was not moved.
    pub why: &'static str,
}

/// What [`import`] did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Captures whose files were looked at.
    pub captures: u64,
    /// The files moved.
    pub moved: Vec<Moved>,
    /// The files left.
    pub skipped: Vec<Skipped>,
    /// The bytes of the files moved.
    pub raw_bytes: u64,
    /// What removing them freed on disk (a file with several links frees
    /// nothing until the last goes).
    pub freed_bytes: u64,
    /// What the store and the manifests grew by.
    pub stored_bytes: u64,
}

impl ImportReport {
    /// The bytes on disk the import saved (negative when the store grew by
    /// more than it freed).
    pub fn saved_bytes(&self) -> i64 {
        self.freed_bytes as i64 - self.stored_bytes as i64
    }
}

/// The bytes the store of `dir` and its manifests take.
fn store_bytes(dir: &Path) -> Result<u64> {
    let u = chunks::usage(dir)?;
    Ok(u.stored_bytes + u.manifest_bytes)
}

/// Moves the raw data files of every capture in `dir` into its chunk store
/// (made when missing), as the module's documentation says. Files that are
/// not regular (a link) are left, and so are files of no capture (no
/// descriptor) and a capture's `.bc` and replayed outputs.
pub fn import(dir: &Path, options: &ImportOptions) -> Result<ImportReport> {
    let mut report = ImportReport::default();
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, "list directory", e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()))
        .collect();
    names.sort();
    let mut todo: Vec<PathBuf> = Vec::new();
    for descriptor in &names {
        let Ok(record) = read_descriptor(descriptor) else {
            continue;
        };
        report.captures += 1;
        let paths = CapturePaths::new(descriptor, record.generation);
        for raw in [paths.input, paths.output, paths.globals, paths.image] {
            match std::fs::symlink_metadata(&raw) {
                Err(_) => {}
                Ok(m) if m.is_file() => todo.push(raw),
                Ok(_) => report.skipped.push(Skipped {
                    path: raw,
                    why: "not a regular file",
                }),
            }
        }
    }
    // Nothing to move, or only to say what would be.
    if options.dry_run || todo.is_empty() {
        for raw in todo {
            let bytes = std::fs::symlink_metadata(&raw).map_or(0, |m| m.len());
            report.raw_bytes += bytes;
            report.moved.push(Moved {
                manifest: chunks::manifest_path(&raw),
                raw,
                bytes,
            });
        }
        return Ok(report);
    }
    let store = ChunkStore::create(dir, StoreOptions::flushing(options.fsync))?;
    let before = store_bytes(dir)?;
    let dir_fd = crate::fs::open_dir_fd(dir)?;
    // Links of each inode removed, to tell when its last one went.
    let mut links: HashMap<(u64, u64), (u64, u64, u64)> = HashMap::new();
    for raw in todo {
        let Some((moved, (dev, ino, nlink))) = import_file(&store, &raw, options.fsync)? else {
            let why = "changed while it was read (left as it is)";
            report.skipped.push(Skipped { path: raw, why });
            continue;
        };
        if options.fsync {
            sync_dir(&dir_fd, dir)?;
        }
        let e = links.entry((dev, ino)).or_insert((nlink, moved.bytes, 0));
        e.2 += 1;
        report.raw_bytes += moved.bytes;
        report.moved.push(moved);
    }
    report.freed_bytes = links
        .values()
        .filter(|(nlink, _, removed)| removed >= nlink)
        .map(|(_, len, _)| len)
        .sum();
    report.stored_bytes = store_bytes(dir)?.saturating_sub(before);
    Ok(report)
}

/// A file's device, inode and link count.
type Inode = (u64, u64, u64);

/// Reads the file `raw` stands for back from `store` through its manifest
/// in place (`mpath`), which must be `manifest`: every chunk read and
/// checked against its name, and the bytes' xxh3-128 `want` (that of the
/// bytes read from `raw` and put). The error names what did not read
/// back.
fn read_back(
    store: &ChunkStore,
    raw: &Path,
    mpath: &Path,
    manifest: &Manifest,
    want: u128,
) -> Result<()> {
    let placed = Manifest::read(mpath)?;
    let mut hasher = twox_hash::XxHash3_128::new();
    let mut len = 0u64;
    if placed == *manifest {
        store.for_each_chunk(&placed, |bytes| {
            hasher.write(bytes);
            len += bytes.len() as u64;
        })?;
    }
    if placed != *manifest || len != placed.len() || hasher.finish_128() != want {
        let raw = raw.to_path_buf();
        return Err(Error::store(mpath, StoreProblem::ReadBackDiffers { raw }));
    }
    Ok(())
}

/// Moves the raw file `raw` into `store` (steps 1 to 5 of the module's
/// documentation): what was moved and the file's [`Inode`]; `None` when
/// the file changed while it was read, and was left.
fn import_file(store: &ChunkStore, raw: &Path, fsync: bool) -> Result<Option<(Moved, Inode)>> {
    let file = crate::fs::open_file(rustix::fs::CWD, raw).map_err(|e| Error::io(raw, "open", e))?;
    let meta = file.metadata().map_err(|e| Error::io(raw, "stat", e))?;
    if !meta.is_file() {
        return Err(Error::capture(raw, CaptureProblem::Changed));
    }
    let len = meta.len();
    // 1. Into the store, in pieces of whole chunks, under one pin.
    let pin = store.pin()?;
    let piece = store.chunk_size() as usize * 16;
    let want = len.min(piece as u64);
    let mut buf = Error::filled_buffer(want, 0, "a buffer to import a file")?;
    let mut refs = Vec::new();
    // The bytes put, which the store must give back.
    let mut put = twox_hash::XxHash3_128::new();
    let mut at = 0u64;
    while at < len {
        let n = usize::try_from(len - at).unwrap_or(usize::MAX).min(piece);
        let mut got = 0;
        while got < n {
            match file.read_at(&mut buf[got..n], at + got as u64) {
                Ok(0) => return Ok(None),
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(raw, "read", e)),
            }
        }
        put.write(&buf[..n]);
        let m = store.put_pinned(&pin, &buf[..n])?;
        refs.extend_from_slice(m.chunks());
        at += n as u64;
    }
    let manifest = Manifest::new(len, store.chunk_size(), refs)
        .and_then(|m| m.with_version(store.version()))
        .map_err(|e| Error::store(raw, StoreProblem::Manifest(e)))?;
    // 2. The manifest, renamed into place.
    let mpath = chunks::manifest_path(raw);
    crate::store::write_atomically(&mpath, &manifest.encode(), fsync)?;
    let parent = crate::fs::dir_of(raw);
    if fsync {
        sync_dir(&crate::fs::open_dir_fd(parent)?, parent)?;
    }
    // 3. Read back whole, or the raw file stays.
    #[cfg(test)]
    if tests::DAMAGE_BEFORE_READ_BACK.load(std::sync::atomic::Ordering::Relaxed)
        && let Some(c) = manifest.chunks().first()
    {
        tests::damage(&store.chunk_file(&c.hash));
    }
    read_back(store, raw, &mpath, &manifest, put.finish_128())?;
    // 4. Its chunks are named by a manifest in place: the pin can go.
    drop(pin);
    // 5. The raw file, if it is still the one read.
    let now = std::fs::symlink_metadata(raw).map_err(|e| Error::io(raw, "stat", e))?;
    let same = now.dev() == meta.dev()
        && now.ino() == meta.ino()
        && now.len() == len
        && now.mtime() == meta.mtime()
        && now.mtime_nsec() == meta.mtime_nsec();
    if !same {
        return Ok(None);
    }
    std::fs::remove_file(raw).map_err(|e| Error::io(raw, "remove", e))?;
    Ok(Some((
        Moved {
            raw: raw.to_path_buf(),
            manifest: mpath,
            bytes: len,
        },
        (meta.dev(), meta.ino(), meta.nlink()),
    )))
}

#[cfg(test)]
mod tests;
