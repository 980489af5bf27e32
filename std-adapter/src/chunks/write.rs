//! Writing: a store's `VERSION`, and puts (cut, hash, store what is new).
//!
//! A new chunk is written (compressed, or in format 2 as its plain bytes
//! when it hardly compresses) into a fresh file in `tmp/` (`O_EXCL`, a
//! random name), or where the system has them into an unnamed file
//! (`O_TMPFILE`, which leaves nothing behind a killed writer and takes no
//! lock of `tmp/`); a worker's new chunk files are flushed when asked, a
//! batch at a time, and only then linked to `chunks/XX/HASH`, so that a
//! chunk's name never stands for bytes not yet on disk; a name that is
//! taken means another writer stored the same bytes, and the temporary
//! file goes either way. A chunk the store has is touched instead (its
//! modification time set to now), which is what tells a concurrent gc that
//! it is in use again (see [`super::pin`]).
//!
//! The index of what is stored is the store's directory itself: whether a
//! chunk is there is asked by that touch, which gc's safety needs anyway
//! (one `utimensat`, microseconds, against the ~0.17 ms it takes to hash a
//! MiB). In memory, each [`Pin`] remembers the chunks it has made sure of,
//! so a chunk met again under the same pin (an output chunk equal to the
//! input's, the zero chunks of a snapshot) costs not even that.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rustix::io::Errno;

use crate::error::{ChunkHash, Error, Result, StoreProblem};

use super::layout::{self, StoreVersion, tmp};
use super::manifest::{ChunkRef, Manifest};
use super::names::Quick;
use super::pin::Added;
use super::{ChunkStore, Pin, StoreOptions, fs};

/// The store's `VERSION`: read, or written with `options.chunk_size` and
/// format `version` when there is none (exclusively: of several processes
/// creating the store at once, one writes it and the others read it).
pub(super) fn version(
    root: &Path,
    root_fd: &OwnedFd,
    tmp_fd: &OwnedFd,
    options: StoreOptions,
    version: u32,
) -> Result<StoreVersion> {
    match super::read::version(root, root_fd) {
        Err(Error::Store {
            problem: StoreProblem::Version(crate::error::VersionProblem::Missing),
            ..
        }) => {}
        other => return other,
    }
    let path = root.join(layout::VERSION_FILE);
    let wanted = StoreVersion {
        version,
        chunk_size: options.chunk_size,
    };
    let text = wanted.to_text();
    // The text must read back as what was asked (a chunk size or version
    // out of bounds is refused here, before it is written).
    StoreVersion::parse(text.as_bytes())
        .map_err(|p| Error::store(&path, StoreProblem::Version(p)))?;
    let path = &path;
    let io = |what| move |e: std::io::Error| Error::io(path, what, e);
    let (name, mut file) = fs::create_fresh(tmp_fd, tmp::VERSION, 0o444).map_err(io("create"))?;
    let placed = (|| {
        file.write_all(text.as_bytes())?;
        if options.fsync {
            file.sync_all()?;
        }
        fs::place(tmp_fd, &name, root_fd, layout::VERSION_FILE)
    })();
    let _ = fs::remove(tmp_fd, &name);
    placed.map_err(io("write"))?;
    super::read::version(root, root_fd)
}

/// What one worker of a put uses again for each chunk.
struct Scratch {
    compressor: zstd::bulk::Compressor<'static>,
    out: Vec<u8>,
}

/// How many chunk files a worker of a put writes before it flushes and
/// links them (so that a put of any size holds a bounded number of files
/// open).
const BATCH: usize = 32;

/// A chunk written and not yet linked to its name: a file in `tmp/`
/// (removed when dropped), or an unnamed one (`O_TMPFILE`: gone when its
/// descriptor closes, even if the writer is killed).
struct Written<'s> {
    tmp_fd: &'s OwnedFd,
    /// `None` for an unnamed file.
    tmp_name: Option<String>,
    file: Option<std::fs::File>,
    hash: ChunkHash,
}

impl Drop for Written<'_> {
    fn drop(&mut self) {
        drop(self.file.take());
        if let Some(name) = &self.tmp_name {
            let _ = fs::remove(self.tmp_fd, name);
        }
    }
}

/// An unnamed file (`O_TMPFILE`, mode 0444) in `dir`; `None` where the
/// file system or the kernel has none.
fn unnamed_file(dir: &OwnedFd) -> std::io::Result<Option<std::fs::File>> {
    use rustix::fs::{Mode, OFlags};
    match rustix::fs::openat(
        dir,
        ".",
        OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o444),
    ) {
        Ok(fd) => Ok(Some(std::fs::File::from(fd))),
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL | Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Whether an unnamed file made in `tmp/` can be linked to a name (the
/// kernel and the file system have `O_TMPFILE`, `/proc` is mounted):
/// tried once, on a file linked as a chunk being written under the pin
/// `pin_id` (so that gc knows it for a dead writer's should this one be
/// killed before it removes it).
fn unnamed_links(tmp_fd: &OwnedFd, pin_id: &str) -> std::io::Result<bool> {
    let Some(file) = unnamed_file(tmp_fd)? else {
        return Ok(false);
    };
    let name = format!("{}{pin_id}.{:016x}", tmp::CHUNK, fastrand::u64(..));
    let linked = link_unnamed(&file, tmp_fd, &name);
    let _ = fs::remove(tmp_fd, &name);
    Ok(linked.unwrap_or(false))
}

/// Links the unnamed file `file` to `name` in `dir` (through
/// `/proc/self/fd`, which needs no privilege, unlike `AT_EMPTY_PATH`):
/// `false` when the name is taken.
fn link_unnamed(file: &std::fs::File, dir: &OwnedFd, name: &str) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    let proc = format!("/proc/self/fd/{}", file.as_raw_fd());
    match rustix::fs::linkat(
        rustix::fs::CWD,
        proc.as_str(),
        dir,
        name,
        rustix::fs::AtFlags::SYMLINK_FOLLOW,
    ) {
        Ok(()) => Ok(true),
        Err(Errno::EXIST) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// What [`ChunkStore::ensure`] did.
enum Ensured<'s> {
    /// The chunk is stored (it was there, and is touched).
    Stored,
    /// It was written into `tmp/`, to be flushed and linked.
    Written(Written<'s>),
    /// Nothing: the name remembered for its bytes is not theirs (two
    /// chunks of one xxh3-128), and this is their blake3.
    Misnamed(ChunkHash),
}

/// A chunk's name, and where it came from.
#[derive(Debug, Clone, Copy)]
enum Name {
    /// Its blake3, computed from its bytes here.
    Computed(ChunkHash),
    /// Remembered for bytes of the same xxh3-128 ([`super::names`]).
    Remembered(ChunkHash),
}

impl Name {
    fn hash(self) -> ChunkHash {
        match self {
            Name::Computed(h) | Name::Remembered(h) => h,
        }
    }
}

/// The hashes a put added to its pin ([`Added::New`]) and has not
/// settled: forgotten when it fails (or panics), so that a put waiting for
/// one of them makes sure of it itself.
struct Unsettled<'p, 'a> {
    pin: &'p Pin<'a>,
    hashes: Mutex<Vec<ChunkHash>>,
}

impl Unsettled<'_, '_> {
    fn push(&self, hash: ChunkHash) {
        self.hashes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(hash);
    }

    /// Every one is stored, and as durable as asked.
    fn settle(self) {
        let hashes = std::mem::take(&mut *self.hashes.lock().unwrap_or_else(|e| e.into_inner()));
        for h in &hashes {
            self.pin.settle(h);
        }
    }
}

impl Drop for Unsettled<'_, '_> {
    fn drop(&mut self) {
        for h in self
            .hashes
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            self.pin.unsee(h);
        }
    }
}

impl ChunkStore {
    /// Stores `bytes`: cuts them into chunks, hashes each, and stores only
    /// those the store lacks (compressing those only); returns the manifest
    /// that stands for them. A chunk equal to one stored before (an output
    /// chunk the kernel left as the input had it) costs no write.
    ///
    /// Its chunks are kept from a concurrent [`super::gc`] while it runs,
    /// not after: a manifest written after it returns may name chunks a gc
    /// removed in between. Put through a [`Pin`] held until the manifest is
    /// in place ([`ChunkStore::put_pinned`]) when a gc may run.
    pub fn put(&self, bytes: &[u8]) -> Result<Manifest> {
        let pin = self.pin()?;
        self.put_pinned(&pin, bytes)
    }

    /// [`ChunkStore::put`], with the chunks kept from gc until `pin` is
    /// dropped. The pin must be this store's.
    ///
    /// When it returns, every chunk the manifest names is linked to its
    /// name, and with [`StoreOptions::fsync`] flushed and so is the
    /// directory it is linked into: new chunk files are written first,
    /// flushed together (a worker's batch after another), then linked, and
    /// the directories flushed once each, in parallel. A chunk that another
    /// put under the same pin is storing is waited for.
    pub fn put_pinned(&self, pin: &Pin<'_>, bytes: &[u8]) -> Result<Manifest> {
        self.put_pinned_with(pin, bytes, |_| Ok(()))
            .map(|(m, ())| m)
    }

    /// [`ChunkStore::put_pinned`], running `prepare` on the manifest while
    /// the directories its new chunks were linked into are flushed, and
    /// giving back what it made: a caller writes the manifest's file (and
    /// flushes it) there, and renames it into place when this returns,
    /// where written after the put it would wait for a flush of its own.
    /// `prepare` runs again, and its first result is dropped, in the one
    /// case where the manifest changes after it ran (a chunk named from
    /// memory for another chunk's bytes: two chunks of one xxh3-128).
    pub fn put_pinned_with<T: Send>(
        &self,
        pin: &Pin<'_>,
        bytes: &[u8],
        prepare: impl Fn(&Manifest) -> Result<T> + Sync,
    ) -> Result<(Manifest, T)> {
        if !std::ptr::eq(pin.store(), self) {
            return Err(Error::Internal("a pin used with another chunk store"));
        }
        let tmp_fd = self.tmp()?;
        let cs = self.chunk_size as usize;
        let n = bytes.len().div_ceil(cs);
        let threads = self.threads_for(n);
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let linked: Mutex<BTreeSet<u8>> = Mutex::new(BTreeSet::new());
        let mine = Unsettled {
            pin,
            hashes: Mutex::new(Vec::new()),
        };
        // Chunks another put under this pin (or this one, earlier) was at.
        let waits: Mutex<Vec<usize>> = Mutex::new(Vec::new());
        let chunk_at = |i: usize| &bytes[i * cs..((i + 1) * cs).min(bytes.len())];
        let work = || -> Result<Vec<(usize, ChunkRef)>> {
            let mut scratch = Scratch {
                compressor: zstd::bulk::Compressor::new(self.options.level)
                    .map_err(|e| Error::io(&self.root, "start zstd", e))?,
                out: Vec::new(),
            };
            let mut done = Vec::new();
            let mut batch = Vec::new();
            let result = (|| {
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let chunk = chunk_at(i);
                    let quick = Quick::of(chunk);
                    let mut name = match self.names.get(&quick) {
                        Some(hash) => Name::Remembered(hash),
                        None => {
                            let hash = ChunkHash::of(chunk);
                            self.names.insert(quick, hash);
                            Name::Computed(hash)
                        }
                    };
                    let hash = loop {
                        let hash = name.hash();
                        match pin.add(&hash)? {
                            Added::New => {
                                mine.push(hash);
                                match self.ensure(tmp_fd, pin.id(), name, chunk, &mut scratch)? {
                                    Ensured::Stored => {}
                                    Ensured::Written(w) => {
                                        batch.push(w);
                                        if batch.len() >= BATCH {
                                            self.link_batch(&mut batch, &linked)?;
                                        }
                                    }
                                    Ensured::Misnamed(real) => {
                                        self.names.insert(quick, real);
                                        name = Name::Computed(real);
                                        continue;
                                    }
                                }
                            }
                            Added::Seen => waits.lock().unwrap_or_else(|e| e.into_inner()).push(i),
                        }
                        break hash;
                    };
                    done.push((
                        i,
                        ChunkRef {
                            hash,
                            len: chunk.len() as u32,
                        },
                    ));
                }
                self.link_batch(&mut batch, &linked)
            })();
            if let Err(e) = result {
                stop.store(true, Ordering::Relaxed);
                return Err(e);
            }
            Ok(done)
        };
        let results: Vec<Result<Vec<(usize, ChunkRef)>>> = if threads == 1 {
            vec![work()]
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..threads)
                    .map(|_| crate::threads::spawn_or_run(s, work))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or(Err(Error::Internal("a chunk store worker panicked")))
                    })
                    .collect()
            })
        };
        let mut chunks: Vec<Option<ChunkRef>> = vec![None; n];
        for r in results {
            for (i, c) in r? {
                chunks[i] = Some(c);
            }
        }
        let chunks: Option<Vec<ChunkRef>> = chunks.into_iter().collect();
        let mut chunks = chunks.ok_or(Error::Internal("a chunk store worker skipped a chunk"))?;
        let manifest_of = |chunks: &[ChunkRef]| {
            Manifest::new(bytes.len() as u64, self.chunk_size, chunks.to_vec())
                .and_then(|m| m.with_version(self.version))
                .map_err(|e| Error::store(&self.root, StoreProblem::Manifest(e)))
        };
        let manifest = manifest_of(&chunks)?;
        let prefixes = linked.into_inner().unwrap_or_else(|e| e.into_inner());
        // The links themselves are flushed, once per directory linked into,
        // while `prepare` runs.
        let prepared = if self.options.fsync && !prefixes.is_empty() {
            std::thread::scope(|s| {
                let prepared = crate::threads::spawn_or_run(s, || prepare(&manifest));
                let synced = self.sync_prefixes(prefixes);
                let prepared = prepared
                    .join()
                    .unwrap_or(Err(Error::Internal("preparing a manifest panicked")));
                synced.and(prepared)
            })?
        } else {
            prepare(&manifest)?
        };
        mine.settle();
        // Seen under this pin: settled by now, or by the put at it (which
        // settles its own before it waits for any other's); one whose put
        // failed is made sure of here.
        let mut renamed = false;
        for i in waits.into_inner().unwrap_or_else(|e| e.into_inner()) {
            let hash = chunks[i].hash;
            if !pin.wait_settled(&hash) {
                // Named anew where the name remembered was another chunk's.
                chunks[i].hash = self.ensure_alone(pin, tmp_fd, hash, chunk_at(i))?;
                renamed |= chunks[i].hash != hash;
            }
        }
        if renamed {
            let manifest = manifest_of(&chunks)?;
            drop(prepared);
            let prepared = prepare(&manifest)?;
            return Ok((manifest, prepared));
        }
        Ok((manifest, prepared))
    }

    /// Makes sure of one chunk on its own, settled before it returns (a
    /// chunk whose other put failed); returns its name, which is `hash`
    /// unless that was remembered for other bytes.
    fn ensure_alone(
        &self,
        pin: &Pin<'_>,
        tmp_fd: &OwnedFd,
        hash: ChunkHash,
        data: &[u8],
    ) -> Result<ChunkHash> {
        if pin.add(&hash)? == Added::Seen {
            // Another put took it up again meanwhile.
            return if pin.wait_settled(&hash) {
                Ok(hash)
            } else {
                self.ensure_alone(pin, tmp_fd, hash, data)
            };
        }
        let mine = Unsettled {
            pin,
            hashes: Mutex::new(vec![hash]),
        };
        let mut scratch = Scratch {
            compressor: zstd::bulk::Compressor::new(self.options.level)
                .map_err(|e| Error::io(&self.root, "start zstd", e))?,
            out: Vec::new(),
        };
        let name = Name::Remembered(hash);
        match self.ensure(tmp_fd, pin.id(), name, data, &mut scratch)? {
            Ensured::Stored => {}
            Ensured::Written(w) => {
                let linked = Mutex::new(BTreeSet::new());
                self.link_batch(&mut vec![w], &linked)?;
                if self.options.fsync {
                    self.sync_prefixes(linked.into_inner().unwrap_or_else(|e| e.into_inner()))?;
                }
            }
            Ensured::Misnamed(real) => {
                mine.settle();
                return self.ensure_alone(pin, tmp_fd, real, data);
            }
        }
        mine.settle();
        Ok(hash)
    }

    /// Flushes the chunk files of `batch` (with fsync), then links each to
    /// its name (a name that is taken: another writer stored the same
    /// bytes) and removes its temporary file; the directories linked into
    /// go into `linked`.
    fn link_batch(&self, batch: &mut Vec<Written<'_>>, linked: &Mutex<BTreeSet<u8>>) -> Result<()> {
        if self.options.fsync {
            for w in batch.iter() {
                if let Some(f) = &w.file {
                    f.sync_all()
                        .map_err(|e| Error::io(self.chunk_file(&w.hash), "write chunk", e))?;
                }
            }
        }
        for mut w in batch.drain(..) {
            let hex = w.hash.hex();
            let name = std::str::from_utf8(&hex).unwrap_or_default();
            let prefix_fd = self.prefix_dir(w.hash.0[0], true).map_err(|e| {
                Error::io(self.prefix_path(w.hash.0[0]), "create store directory", e)
            })?;
            let placed = match (&w.tmp_name, &w.file) {
                (None, Some(f)) => link_unnamed(f, prefix_fd, name),
                (Some(tmp_name), _) => {
                    drop(w.file.take());
                    fs::place(w.tmp_fd, tmp_name, prefix_fd, name)
                }
                (None, None) => Err(std::io::Error::other("an unnamed chunk file closed early")),
            };
            if placed.map_err(|e| Error::io(self.chunk_file(&w.hash), "write chunk", e))?
                && self.options.fsync
            {
                linked
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(w.hash.0[0]);
            }
        }
        Ok(())
    }

    /// Flushes the chunk directories `prefixes` (by their first byte), in
    /// parallel.
    fn sync_prefixes(&self, prefixes: BTreeSet<u8>) -> Result<()> {
        let prefixes: Vec<u8> = prefixes.into_iter().collect();
        let next = AtomicUsize::new(0);
        let work = || -> Result<()> {
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&p) = prefixes.get(k) else {
                    return Ok(());
                };
                self.prefix_dir(p, true)
                    .and_then(fs::sync_dir)
                    .map_err(|e| Error::io(self.prefix_path(p), "sync directory", e))?;
            }
        };
        let threads = self.threads_for(prefixes.len());
        if threads <= 1 {
            return work();
        }
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| crate::threads::spawn_or_run(s, work))
                .collect();
            let mut first = Ok(());
            for h in handles {
                let r = h.join().unwrap_or(Err(Error::Internal(
                    "a chunk store directory flush panicked",
                )));
                if first.is_ok() {
                    first = r;
                }
            }
            first
        })
    }

    /// Makes sure the chunk `hash` (of `data`) is stored: touched when it
    /// is ([`Ensured::Stored`]), written into `tmp/chunk.PIN_ID.RANDOM`
    /// (named after the pin it is written under) when it is not, to be
    /// flushed and linked by [`ChunkStore::link_batch`].
    ///
    /// A chunk it must write under a [`Name::Remembered`] is named by
    /// blake3 first, and when that is another name it writes nothing and
    /// says so ([`Ensured::Misnamed`]): no chunk file is ever named by
    /// anything but its own bytes' blake3.
    fn ensure<'s>(
        &'s self,
        tmp_fd: &'s OwnedFd,
        pin_id: &str,
        given: Name,
        data: &[u8],
        scratch: &mut Scratch,
    ) -> Result<Ensured<'s>> {
        let hash = &given.hash();
        let hex = hash.hex();
        let name = std::str::from_utf8(&hex).unwrap_or_default();
        let path = || self.chunk_file(hash);
        let prefix_fd = self
            .prefix_dir(hash.0[0], true)
            .map_err(|e| Error::io(self.prefix_path(hash.0[0]), "create store directory", e))?;
        // Known or not, a stored chunk is touched: that keeps it from a gc
        // that began before this put and listed no manifest naming it.
        match fs::touch(prefix_fd, name) {
            Ok(()) => return Ok(Ensured::Stored),
            Err(e) if e.raw_os_error() == Some(Errno::NOENT.raw_os_error()) => {}
            // Another user's chunk, which this one may read but not touch.
            Err(e)
                if [Errno::PERM, Errno::ACCESS, Errno::ROFS]
                    .map(|e| Some(e.raw_os_error()))
                    .contains(&e.raw_os_error()) =>
            {
                return Ok(Ensured::Stored);
            }
            Err(e) => return Err(Error::io(path(), "touch chunk", e)),
        }
        if let Name::Remembered(_) = given {
            let real = ChunkHash::of(data);
            if real != *hash {
                return Ok(Ensured::Misnamed(real));
            }
        }
        scratch.out.clear();
        // Pieces of the chunk first: when none of them shrinks by an
        // eighth, the chunk is kept raw without compressing it whole (on
        // full-mantissa floats, zstd's ~0.6 GiB/s a core is most of a new
        // chunk's cost).
        let compress =
            super::sample::worth_compressing(&mut scratch.compressor, data, &mut scratch.out)
                .map_err(|e| Error::io(path(), "compress chunk", e))?;
        scratch.out.clear();
        if compress {
            scratch
                .out
                .reserve(zstd::zstd_safe::compress_bound(data.len()));
            scratch
                .compressor
                .compress_to_buffer(data, &mut scratch.out)
                .map_err(|e| Error::io(path(), "compress chunk", e))?;
        }
        // Bytes that hardly compress are kept raw: their replay is then a
        // copy (or, from a plain file, a mapping), not zstd's ~1 GiB/s a
        // core. A frame as long as the chunk would read as a plain file:
        // it never is one (see `layout::KEEP_COMPRESSED_BELOW`), and is
        // kept raw if it were.
        let saved = data.len().saturating_sub(scratch.out.len());
        let raw = !compress
            || saved < data.len() / layout::KEEP_COMPRESSED_BELOW
            || scratch.out.len() == data.len();
        let contents: &[u8] = if !raw {
            &scratch.out
        } else if self.version >= layout::PLAIN_CHUNKS_SINCE {
            data
        } else {
            scratch.out.clear();
            layout::raw_frame(data, &mut scratch.out);
            &scratch.out
        };
        let create = |e| Error::io(self.root.join(layout::TMP_DIR), "create chunk", e);
        // An unnamed file where the system has them: no name in `tmp/` to
        // make and remove (each of which takes `tmp/`'s lock, which all of
        // a writer's threads contend for), and nothing left by a writer
        // that is killed.
        let works = *self
            .unnamed
            .get_or_init(|| unnamed_links(tmp_fd, pin_id).unwrap_or(false));
        let unnamed = if works {
            unnamed_file(tmp_fd).map_err(create)?
        } else {
            None
        };
        let (tmp_name, file) = match unnamed {
            Some(f) => (None, f),
            None => {
                let (name, f) =
                    fs::create_fresh(tmp_fd, &format!("{}{pin_id}.", tmp::CHUNK), 0o444)
                        .map_err(create)?;
                (Some(name), f)
            }
        };
        // Removed again if the write fails.
        let mut written = Written {
            tmp_fd,
            tmp_name,
            file: Some(file),
            hash: *hash,
        };
        if let Some(f) = &mut written.file {
            f.write_all(contents)
                .map_err(|e| Error::io(path(), "write chunk", e))?;
        }
        Ok(Ensured::Written(written))
    }
}
