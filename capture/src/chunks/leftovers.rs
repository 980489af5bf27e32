//! What writers that died leave in the store's `tmp/`, told apart from what
//! live writers are using by the locks they hold: a pin is locked (`flock`)
//! for as long as its writer lives, a chunk being written is named after
//! the pin it is written under (`chunk.PIN_ID.RANDOM`), and a running gc
//! holds `gc.lock`. `reprise list` shows these as ORPHAN; [`super::gc`]
//! removes them.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::FlockOperation;
use rustix::io::Errno;

use crate::error::{Error, Result};

use super::fs::{self, open_dir_fd};
use super::layout::{self, tmp};

/// What a file a dead writer left in the store's `tmp/` was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeftoverKind {
    /// A chunk being written under a pin whose writer is gone.
    ChunkWrite,
    /// The pin of a writer that is gone (nobody holds its lock).
    DeadPin,
    /// A pin being made, never locked.
    PinBeingMade,
    /// A chunk a gc that died was removing (the next gc puts it back).
    GcRemoval,
    /// The start marker of a gc that died.
    GcStart,
    /// The store's `VERSION` being written.
    VersionWrite,
    /// Something that was at a chunk's name and was not the chunk (a
    /// directory with files in it), moved aside by the writer that then
    /// stored the chunk.
    Displaced,
}

impl LeftoverKind {
    /// Why the file is a leftover, for a listing.
    pub fn why(self) -> &'static str {
        match self {
            LeftoverKind::ChunkWrite => {
                "chunk being written by a writer that is gone (gc removes it)"
            }
            LeftoverKind::DeadPin => "pin of a writer that is gone (gc removes it)",
            LeftoverKind::PinBeingMade => "pin that was being made when its writer died",
            LeftoverKind::GcRemoval => {
                "chunk an interrupted gc was removing (the next gc puts it back)"
            }
            LeftoverKind::GcStart => "start marker of an interrupted gc (gc removes it)",
            LeftoverKind::VersionWrite => "the store's VERSION, being written",
            LeftoverKind::Displaced => {
                "what was at a chunk's name and was not the chunk, moved aside (gc removes it)"
            }
        }
    }
}

/// One file of the store's `tmp/` that a dead writer left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    /// The file.
    pub path: PathBuf,
    /// What it was.
    pub kind: LeftoverKind,
}

/// Whether `name` in `dir` (at `path`, for messages) is locked by someone
/// (`flock`): `None` when it is gone. Taking a shared lock and dropping it
/// at once costs a writer nothing (its lock is exclusive and held: the
/// attempt fails).
pub(super) fn locked(dir: &OwnedFd, path: &Path, name: &str) -> Result<Option<bool>> {
    let opened = opened_locked(dir, name).map_err(|e| Error::io(path.join(name), "lock", e))?;
    Ok(opened.map(|(_, locked)| locked))
}

/// [`locked`], with the file it opened.
pub(super) fn opened_locked(
    dir: &OwnedFd,
    name: &str,
) -> std::io::Result<Option<(std::fs::File, bool)>> {
    let file = match fs::open_file(dir, name) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(Errno::NOENT.raw_os_error()) => return Ok(None),
        Err(e) => return Err(e),
    };
    match rustix::fs::flock(&file, FlockOperation::NonBlockingLockShared) {
        Ok(()) => Ok(Some((file, false))),
        Err(Errno::WOULDBLOCK) => Ok(Some((file, true))),
        Err(e) => Err(e.into()),
    }
}

/// The names in the store's directory `fd` (`path`, for messages) that
/// are text, as every name the store itself makes is.
pub(super) fn text_names(fd: &OwnedFd, path: &Path) -> Result<Vec<String>> {
    let names = fs::names(fd).map_err(|e| Error::io(path, "list", e))?;
    Ok(names
        .into_iter()
        .filter_map(|(n, _)| String::from_utf8(n).ok())
        .collect())
}

/// The pin a chunk being written is named after: `ID` of
/// `chunk.ID.RANDOM`; `None` for a name of another kind (or as older
/// writers named them, `chunk.RANDOM`).
pub(super) fn chunk_write_pin(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(tmp::CHUNK)?;
    let (id, random) = rest.split_once('.')?;
    (!id.is_empty() && !random.is_empty()).then_some(id)
}

/// The live pins of the store of `dir`, by id, read from its `tmp/`.
pub(super) fn live_pin_ids(tmp_fd: &OwnedFd, tmp_path: &Path) -> Result<Vec<String>> {
    let mut live = Vec::new();
    for name in text_names(tmp_fd, tmp_path)? {
        if let Some(id) = name.strip_prefix(tmp::PIN)
            && locked(tmp_fd, tmp_path, &name)? == Some(true)
        {
            live.push(id.to_string());
        }
    }
    Ok(live)
}

/// How many writers hold a pin on the store of the capture directory
/// `dir` now (0 without a store): while one does, a manifest without its
/// descriptor may be one it is writing.
pub fn live_pins(dir: impl AsRef<Path>) -> Result<usize> {
    let dir = dir.as_ref();
    let Some(tmp_fd) = open_tmp(dir)? else {
        return Ok(0);
    };
    let tmp_path = dir.join(layout::STORE_DIR).join(layout::TMP_DIR);
    Ok(live_pin_ids(&tmp_fd, &tmp_path)?.len())
}

fn open_tmp(dir: &Path) -> Result<Option<OwnedFd>> {
    let root = dir.join(layout::STORE_DIR);
    let open = |at: &OwnedFd, name: &str, path: &Path| match fs::open_dir(at, name) {
        Ok(fd) => Ok(Some(fd)),
        Err(e) if e.raw_os_error() == Some(Errno::NOENT.raw_os_error()) => Ok(None),
        Err(e) => Err(Error::io(path, "open store directory", e)),
    };
    match open(&open_dir_fd(dir)?, layout::STORE_DIR, &root)? {
        Some(root_fd) => open(&root_fd, layout::TMP_DIR, &root.join(layout::TMP_DIR)),
        None => Ok(None),
    }
}

/// The files of the store of `dir`'s `tmp/` that writers (or gcs) that
/// died left, sorted by name; none without a store. What live writers use
/// is left out: the chunks being written under a locked pin, locked pins,
/// and what a running gc (holding `gc.lock`) has in hand.
pub fn store_leftovers(dir: impl AsRef<Path>) -> Result<Vec<Leftover>> {
    let dir = dir.as_ref();
    let Some(tmp_fd) = open_tmp(dir)? else {
        return Ok(Vec::new());
    };
    let root = dir.join(layout::STORE_DIR);
    let tmp_path = root.join(layout::TMP_DIR);
    let live = live_pin_ids(&tmp_fd, &tmp_path)?;
    let gc_running = match fs::open_dir(open_dir_fd(dir)?, layout::STORE_DIR) {
        Ok(root_fd) => locked(&root_fd, &root, layout::GC_LOCK)? == Some(true),
        Err(_) => false,
    };
    let mut out = Vec::new();
    let mut names = text_names(&tmp_fd, &tmp_path)?;
    names.sort();
    for name in names {
        let lock_of = |name: &str| locked(&tmp_fd, &tmp_path, name);
        let kind = if let Some(id) = name.strip_prefix(tmp::PIN) {
            (!live.iter().any(|l| l == id) && lock_of(&name)? == Some(false))
                .then_some(LeftoverKind::DeadPin)
        } else if name.starts_with(tmp::CHUNK) {
            let dead = match chunk_write_pin(&name) {
                Some(id) => !live.iter().any(|l| l == id),
                None => live.is_empty(),
            };
            dead.then_some(LeftoverKind::ChunkWrite)
        } else if name.starts_with(tmp::NEW_PIN) {
            (lock_of(&name)? == Some(false)).then_some(LeftoverKind::PinBeingMade)
        } else if name.starts_with(tmp::DOOMED) {
            (!gc_running).then_some(LeftoverKind::GcRemoval)
        } else if name.starts_with(tmp::START) {
            (!gc_running).then_some(LeftoverKind::GcStart)
        } else if name.starts_with(tmp::VERSION) {
            Some(LeftoverKind::VersionWrite)
        } else if name.starts_with(tmp::DISPLACED) {
            Some(LeftoverKind::Displaced)
        } else {
            None
        };
        if let Some(kind) = kind {
            let path = tmp_path.join(&name);
            out.push(Leftover { path, kind });
        }
    }
    Ok(out)
}
