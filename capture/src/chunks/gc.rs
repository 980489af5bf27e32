//! Garbage collection: removes the chunks that no manifest of the capture
//! directory names, and stale temporary files, while writers write.
//!
//! One gc runs at a time (it holds `gc.lock`). In order, it:
//!
//! 1. puts back what a gc that died left in `tmp/` (a chunk it was removing
//!    is linked back to its name: the next gc decides on it again);
//! 2. notes its start `T`: the modification time of a file it makes;
//! 3. reads every live pin (a locked `tmp/pin.*`: a put in progress) and
//!    keeps every chunk named in one; removes dead ones, and the chunk files
//!    being written under them (`tmp/chunk.PIN_ID.*`);
//! 4. *then* lists the manifests of the directory and keeps every chunk
//!    they name (a manifest it cannot read stops it: it cannot know what
//!    that one names);
//! 5. removes each other chunk whose modification time is older than
//!    `T - grace`: it renames the chunk into `tmp/`, looks at its time
//!    again, and links it back when a writer touched it meanwhile.
//!
//! Why nothing a writer's manifest names is lost: a writer appends a
//! chunk's hash to its pin before it looks for the chunk, touches (or
//! writes) the chunk after, and places its manifest before it drops the
//! pin. If gc read the pin after the append, it keeps the chunk (3). If it
//! read it before, the touch came after `T`, so the chunk is young (5): a
//! touch before gc's rename shows on the renamed file, which is linked
//! back; a touch after it (made through the file's descriptor, the writer
//! having opened it to compare its bytes) is followed by a look at the
//! chunk's name, which finds no chunk, and the writer writes it anew.
//! If gc found no pin at all, the writer had placed its manifest before
//! gc listed the manifests (4 comes after 3). `grace` (default 5 minutes)
//! only absorbs clocks: file times are the file system's (the kernel's, or
//! an NFS server's), and a clock stepped back must not make a fresh touch
//! look old.

use std::collections::HashSet;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use rustix::fs::{FileType, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

use crate::error::{ChunkHash, Error, Result};

use super::fs::{self, Mtime, open_dir_fd};
use super::layout::{self, is_prefix, tmp};
use super::leftovers;
use super::manifest::Manifest;

/// How [`gc_with`] decides what is old.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcOptions {
    /// Chunks touched less than this long before gc started are kept even
    /// when no manifest names them. Default: 5 minutes.
    pub grace: Duration,
    /// Chunk files being written under no pin's name (`chunk.RANDOM`, as
    /// older writers named them) older than this are a dead
    /// writer's and removed. Default: 1 hour. (A chunk being written under
    /// a pin goes as soon as its pin is unlocked, a pin being made or a
    /// `VERSION` being written once older than `grace`.)
    pub stale_temp: Duration,
}

impl Default for GcOptions {
    fn default() -> Self {
        GcOptions {
            grace: Duration::from_secs(5 * 60),
            stale_temp: Duration::from_secs(60 * 60),
        }
    }
}

/// What a gc did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Manifests read.
    pub manifests: u64,
    /// Live pins read (puts in progress).
    pub pins: u64,
    /// Chunks kept: named by a manifest or a pin, or too young.
    pub kept: u64,
    /// Chunks removed.
    pub removed: u64,
    /// Their bytes on disk.
    pub removed_bytes: u64,
    /// Chunks a writer touched while gc was removing them, put back.
    pub restored: u64,
    /// Temporary files removed (and dead writers' pins).
    pub temp_removed: u64,
}

/// [`gc_with`] with the default options.
pub fn gc(dir: impl AsRef<Path>) -> Result<GcReport> {
    gc_with(dir, &GcOptions::default())
}

/// Removes from the store of the capture directory `dir` the chunks no
/// manifest in `dir` names, and stale temporary files; safe while writers
/// write (the module's documentation says why). A directory without a
/// store has nothing to remove.
pub fn gc_with(dir: impl AsRef<Path>, options: &GcOptions) -> Result<GcReport> {
    let dir = dir.as_ref();
    let mut report = GcReport::default();
    let Some(store) = super::ChunkStore::open(dir)? else {
        return Ok(report);
    };
    let root = store.root.clone();
    let io = |path: &Path, what: &'static str| {
        let path = path.to_path_buf();
        move |e: std::io::Error| Error::io(path, what, e)
    };
    let root_fd = fs::open_dir(open_dir_fd(dir)?, layout::STORE_DIR)
        .map_err(io(&root, "open store directory"))?;
    let tmp_path = root.join(layout::TMP_DIR);
    let tmp_fd = fs::open_or_make_dir(&root_fd, layout::TMP_DIR)
        .map_err(io(&tmp_path, "open store directory"))?;
    let chunks_path = root.join(layout::CHUNKS_DIR);
    let chunks_fd = &store.chunks_fd;

    // One gc at a time.
    let lock_path = root.join(layout::GC_LOCK);
    let flags = OFlags::CREATE | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let lock = rustix::fs::openat(&root_fd, layout::GC_LOCK, flags, Mode::from_raw_mode(0o644))
        .map_err(|e| Error::io(&lock_path, "open", e.into()))?;
    rustix::fs::flock(&lock, FlockOperation::LockExclusive)
        .map_err(|e| Error::io(&lock_path, "lock", e.into()))?;

    // 1. What a dead gc was removing goes back.
    for name in leftovers::text_names(&tmp_fd, &tmp_path)? {
        if let Some(hash) = doomed_hash(&name) {
            restore(chunks_fd, &tmp_fd, &name, &hash)
                .map_err(io(&tmp_path.join(&name), "restore"))?;
            report.restored += 1;
        }
    }

    // 2. The start.
    let (marker, file) =
        fs::create_fresh(&tmp_fd, tmp::START, 0o600).map_err(io(&tmp_path, "create"))?;
    let start = file
        .metadata()
        .and_then(|m| m.modified())
        .map_err(io(&tmp_path.join(&marker), "stat"));
    drop(file);
    let _ = fs::remove(&tmp_fd, &marker);
    let start = Mtime(start?.duration_since(UNIX_EPOCH).unwrap_or_default());
    let young = start.minus(options.grace);
    let stale = start.minus(options.stale_temp);

    // 3. Pins, then the temporary files of writers that are gone.
    let mut keep: HashSet<ChunkHash> = HashSet::new();
    let mut live: HashSet<String> = HashSet::new();
    let tmp_names = leftovers::text_names(&tmp_fd, &tmp_path)?;
    for name in tmp_names.iter().filter(|n| n.starts_with(tmp::PIN)) {
        let path = tmp_path.join(name);
        match read_pin(&tmp_fd, name).map_err(io(&path, "read pin"))? {
            Some(hashes) => {
                report.pins += 1;
                keep.extend(hashes);
                live.insert(name[tmp::PIN.len()..].to_string());
            }
            None => {
                fs::remove(&tmp_fd, name).map_err(io(&path, "remove"))?;
                report.temp_removed += 1;
            }
        }
    }
    for name in tmp_names.iter().filter(|n| !n.starts_with(tmp::PIN)) {
        let path = tmp_path.join(name);
        let Some((_, _, mtime)) = fs::stat(&tmp_fd, name).map_err(io(&path, "stat"))? else {
            continue;
        };
        let dead = if name.starts_with(tmp::CHUNK) {
            match leftovers::chunk_write_pin(name) {
                // Its writer's pin is not locked: the writer is gone (a
                // live one removes its chunk files before it drops its pin).
                Some(id) => !live.contains(id),
                None => mtime < stale,
            }
        } else if name.starts_with(tmp::NEW_PIN) {
            // Locked as soon as it is made; one that is not, and old, is a
            // dead writer's.
            mtime < young && leftovers::locked(&tmp_fd, &tmp_path, name)? == Some(false)
        } else if name.starts_with(tmp::VERSION) {
            mtime < young
        } else if name.starts_with(tmp::DISPLACED) {
            // What a writer found at a chunk's name and moved aside: a
            // directory, whatever it holds, goes too (never followed
            // through a link). One that cannot go stays, shown by `list`,
            // and stops nothing.
            match fs::remove_all(&tmp_fd, std::ffi::OsStr::new(name), DISPLACED_DEPTH) {
                Ok(()) => report.temp_removed += 1,
                Err(e) => log::warn!("{}: {e} (left as it is)", path.display()),
            }
            continue;
        } else {
            // Another gc's start marker: that gc is gone (this one holds
            // the lock).
            name.starts_with(tmp::START)
        };
        if dead {
            fs::remove(&tmp_fd, name).map_err(io(&path, "remove"))?;
            report.temp_removed += 1;
        }
    }

    // 4. Manifests, after the pins.
    Manifest::each_in(dir, &open_dir_fd(dir)?, |m| {
        report.manifests += 1;
        keep.extend(m.chunks().iter().map(|c| c.hash));
    })?;

    // 5. The rest, when old.
    for (prefix, kind) in fs::names(chunks_fd).map_err(io(&chunks_path, "list"))? {
        let is_dir = matches!(kind, FileType::Directory | FileType::Unknown);
        let Some(prefix) = std::str::from_utf8(&prefix)
            .ok()
            .filter(|p| is_dir && is_prefix(p))
        else {
            continue;
        };
        let prefix_path = chunks_path.join(prefix);
        // Not a directory of the store's: left alone.
        let Ok(prefix_fd) = fs::open_dir(chunks_fd, prefix) else {
            continue;
        };
        for name in leftovers::text_names(&prefix_fd, &prefix_path)? {
            let name = name.as_str();
            let Some(hash) = ChunkHash::from_hex(name).filter(|_| name.starts_with(prefix)) else {
                continue; // no chunk: left alone
            };
            if keep.contains(&hash) {
                report.kept += 1;
                continue;
            }
            let path = prefix_path.join(name);
            match fs::stat(&prefix_fd, name).map_err(io(&path, "stat"))? {
                Some((FileType::RegularFile, _, mtime)) if mtime < young => {}
                Some((FileType::RegularFile, _, _)) => {
                    report.kept += 1;
                    continue;
                }
                _ => continue,
            }
            // Renamed away, then looked at again: a writer's touch before
            // the rename shows on the file, one after it finds nothing.
            let doomed = format!("{}{name}.{:016x}", tmp::DOOMED, fastrand::u64(..));
            match rustix::fs::renameat(&prefix_fd, name, &tmp_fd, doomed.as_str()) {
                Ok(()) => {}
                Err(Errno::NOENT) => continue,
                Err(e) => return Err(Error::io(&path, "remove chunk", e.into())),
            }
            let doomed_path = tmp_path.join(&doomed);
            match fs::stat(&tmp_fd, &doomed).map_err(io(&doomed_path, "stat"))? {
                Some((_, _, mtime)) if mtime >= young => {
                    restore(chunks_fd, &tmp_fd, &doomed, &hash)
                        .map_err(io(&doomed_path, "restore"))?;
                    report.restored += 1;
                    report.kept += 1;
                }
                Some((_, len, _)) => {
                    fs::remove(&tmp_fd, &doomed).map_err(io(&doomed_path, "remove"))?;
                    report.removed += 1;
                    report.removed_bytes += len;
                }
                None => {}
            }
        }
    }
    Ok(report)
}

/// How deep a directory moved aside from a chunk's name may nest for gc
/// to remove it (deeper stays, and gc says why).
const DISPLACED_DEPTH: u32 = 64;

/// The chunk a `tmp/gc.HASH.RANDOM` file was.
fn doomed_hash(name: &str) -> Option<ChunkHash> {
    let rest = name.strip_prefix(tmp::DOOMED)?;
    ChunkHash::from_hex(rest.get(..64)?).filter(|_| rest[64..].starts_with('.'))
}

/// Links the `tmp/` file `name` back to chunk `hash`'s name (a chunk there
/// already is as good) and removes it from `tmp/`.
fn restore(
    chunks_fd: &OwnedFd,
    tmp_fd: &OwnedFd,
    name: &str,
    hash: &ChunkHash,
) -> std::io::Result<()> {
    let hex = hash.hex();
    let prefix_fd = fs::open_or_make_dir(chunks_fd, layout::prefix(&hex))?;
    let chunk = std::str::from_utf8(&hex).unwrap_or_default();
    fs::place(tmp_fd, name, &prefix_fd, chunk)?;
    fs::remove(tmp_fd, name)
}

/// The hashes a pin holds while its writer lives; `None` for a dead
/// writer's pin (its lock free) or one gone.
fn read_pin(tmp_fd: &OwnedFd, name: &str) -> std::io::Result<Option<Vec<ChunkHash>>> {
    // Nobody holds it: its writer is gone.
    let Some((mut file, true)) = leftovers::opened_locked(tmp_fd, name)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    // A hash being appended as this reads is cut off: its chunk is
    // touched after this, and so kept as young.
    Ok(Some(
        bytes
            .chunks_exact(32)
            .map(|h| ChunkHash(h.try_into().unwrap_or([0; 32])))
            .collect(),
    ))
}
