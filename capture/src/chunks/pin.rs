//! Pins: what keeps the chunks of a write in progress from a concurrent
//! [`super::gc`] until the manifests that name them are in the directory.
//!
//! A pin is a file `tmp/pin.RANDOM` that its writer holds locked (`flock`,
//! exclusive) for as long as it lives, and to which the writer appends each
//! chunk's hash *before* it looks whether the chunk is stored (and touches
//! it, or writes it). gc reads every locked pin before it lists the
//! manifests, and keeps every hash in one; a pin whose lock it can take
//! belongs to a writer that is gone (the kernel drops a dead process's
//! locks), and is removed. A pin is made as `tmp/new.RANDOM`, locked, and
//! only then renamed to its name, so gc never sees a pin unlocked by a
//! live writer. `docs/store.md` gives the argument that nothing a writer's
//! manifests name is lost.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::sync::{Condvar, Mutex};

use rustix::fs::FlockOperation;

use crate::error::{ChunkHash, Error, Result};

use super::layout::tmp;
use super::{ChunkStore, fs};

/// A pin on a store: the chunks put through it ([`ChunkStore::put_pinned`])
/// are kept by every [`super::gc`] until it is dropped. Hold it until the
/// manifests naming them are renamed into place.
#[derive(Debug)]
pub struct Pin<'a> {
    store: &'a ChunkStore,
    name: String,
    file: Mutex<File>,
    /// The chunks made sure of under this pin (appended, then found or
    /// written): `true` once settled (found, or written, linked and, with
    /// fsync, flushed with the directory it is linked into), `false` while
    /// a put is still at it.
    seen: Mutex<HashMap<ChunkHash, bool>>,
    /// Signalled when a chunk is settled or forgotten.
    settled: Condvar,
}

/// What [`Pin::add`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Added {
    /// New to this pin: the caller makes sure of it, then settles it
    /// ([`Pin::settle`]) or forgets it ([`Pin::unsee`]).
    New,
    /// Seen before under this pin, by this put or another: settled, or to
    /// be waited for ([`Pin::wait_settled`]) before a manifest names it.
    Seen,
}

impl ChunkStore {
    /// A new pin on this store (a store opened for writing).
    pub fn pin(&self) -> Result<Pin<'_>> {
        let tmp_fd = self.tmp()?;
        let at = self.root.join(super::layout::TMP_DIR);
        let at = &at;
        let io = |what| move |e: std::io::Error| Error::io(at, what, e);
        // A gc that finds `tmp/new.*` old and not yet locked takes it for a
        // dead writer's and removes it (with a grace of zero, at once): the
        // rename then finds nothing, and a fresh pin is made.
        let mut attempt = 0;
        loop {
            let (new, file) =
                fs::create_fresh(tmp_fd, tmp::NEW_PIN, 0o600).map_err(io("create pin"))?;
            let made = (|| {
                rustix::fs::flock(&file, FlockOperation::LockExclusive)?;
                let name = format!("{}{}", tmp::PIN, &new[tmp::NEW_PIN.len()..]);
                rustix::fs::renameat(tmp_fd, new.as_str(), tmp_fd, name.as_str())?;
                Ok::<_, rustix::io::Errno>(name)
            })();
            match made {
                Ok(name) => {
                    return Ok(Pin {
                        store: self,
                        name,
                        file: Mutex::new(file),
                        seen: Mutex::new(HashMap::new()),
                        settled: Condvar::new(),
                    });
                }
                Err(rustix::io::Errno::NOENT) if attempt < 16 => attempt += 1,
                Err(e) => {
                    let _ = fs::remove(tmp_fd, &new);
                    return Err(io("lock pin")(e.into()));
                }
            }
        }
    }
}

impl Pin<'_> {
    /// The random part of its name (`pin.ID`), which names the temporary
    /// files of the chunks written under it (`chunk.ID.RANDOM`): once the
    /// pin is not locked, they are a dead writer's.
    pub(super) fn id(&self) -> &str {
        &self.name[tmp::PIN.len()..]
    }

    /// The store it pins.
    pub fn store(&self) -> &ChunkStore {
        self.store
    }

    /// Records `hash` as pinned, before the chunk is looked for (or
    /// written): [`Added::New`] when it is new to this pin and must be made
    /// sure of, [`Added::Seen`] when this pin has seen it already (gc keeps
    /// it for the first time's sake: see the module's documentation).
    pub(super) fn add(&self, hash: &ChunkHash) -> Result<Added> {
        {
            let mut seen = crate::threads::lock(&self.seen);
            if seen.contains_key(hash) {
                return Ok(Added::Seen);
            }
            seen.insert(*hash, false);
        }
        let mut file = crate::threads::lock(&self.file);
        file.write_all(&hash.0).map(|()| Added::New).map_err(|e| {
            self.unsee(hash);
            let path = self.store.root.join(super::layout::TMP_DIR);
            Error::io(path.join(&self.name), "write pin", e)
        })
    }

    /// Forgets `hash`, whose storing failed: it is made sure of again the
    /// next time.
    pub(super) fn unsee(&self, hash: &ChunkHash) {
        crate::threads::lock(&self.seen).remove(hash);
        self.settled.notify_all();
    }

    /// Marks `hash` (added by the caller) as settled: stored, and as
    /// durable as the store was asked to make it.
    pub(super) fn settle(&self, hash: &ChunkHash) {
        if let Some(s) = crate::threads::lock(&self.seen).get_mut(hash) {
            *s = true;
        }
        self.settled.notify_all();
    }

    /// Waits until `hash`, seen under this pin, is settled by the put at
    /// it: `true` then, `false` when that put failed and forgot it (the
    /// caller makes sure of it itself). A put settles or forgets what it
    /// added before it waits for others', so no two puts wait for each
    /// other.
    pub(super) fn wait_settled(&self, hash: &ChunkHash) -> bool {
        let mut seen = crate::threads::lock(&self.seen);
        loop {
            match seen.get(hash) {
                Some(true) => return true,
                None => return false,
                Some(false) => {
                    seen = self.settled.wait(seen).unwrap_or_else(|e| e.into_inner());
                }
            }
        }
    }
}

impl Drop for Pin<'_> {
    fn drop(&mut self) {
        // Removed before it is unlocked (when the file closes, after this):
        // gc takes an unlocked pin for a dead writer's.
        if let Some(tmp_fd) = &self.store.tmp_fd {
            let _ = fs::remove(tmp_fd, &self.name);
        }
    }
}
