//! Writing: a store's `VERSION`, and one chunk (what a put,
//! [`super::put`], does for each).
//!
//! A new chunk is written (compressed, or in format 2 as its plain bytes
//! when it hardly compresses) into a fresh file in `tmp/` (`O_EXCL`, a
//! random name), or where the system has them into an unnamed file
//! (`O_TMPFILE`, which leaves nothing behind a killed writer and takes no
//! lock of `tmp/`); it is flushed when asked, and only then linked to
//! `chunks/XX/HASH`, so that a chunk's name never stands for bytes not yet
//! on disk. The temporary file goes either way.
//!
//! Something at a chunk's name is not proof that the chunk is stored: it
//! is looked at first (the `present` module) and moved aside when it is
//! not the chunk, [`TRIES`] times at most ([`ChunkStore::ensure`],
//! [`ChunkStore::link_one`]).
//!
//! The index of what is stored is the store's directory itself. In memory,
//! each [`super::Pin`] remembers the chunks it has made sure of, so a chunk
//! met again under the same pin (an output chunk equal to the input's, the
//! zero chunks of a snapshot) is not looked at again.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::io::Errno;

use crate::error::{ChunkHash, Error, Result, StoreProblem};

use super::layout::{self, StoreVersion, tmp};
use super::present::{Found, Look, TRIES, Want};
use super::{ChunkStore, StoreOptions, fs};

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
pub(super) struct Scratch {
    compressor: zstd::bulk::Compressor<'static>,
    out: Vec<u8>,
    look: Look,
}

impl Scratch {
    /// A worker's, compressing at `level`.
    pub(super) fn new(store: &ChunkStore) -> Result<Scratch> {
        Ok(Scratch {
            compressor: zstd::bulk::Compressor::new(store.options.level)
                .map_err(|e| Error::io(&store.root, "start zstd", e))?,
            out: Vec::new(),
            look: Look::default(),
        })
    }
}

/// A chunk written and not yet linked to its name: a file in `tmp/`
/// (removed when dropped), or an unnamed one (`O_TMPFILE`: gone when its
/// descriptor closes, even if the writer is killed).
pub(super) struct Written<'s> {
    tmp_fd: &'s OwnedFd,
    /// `None` for an unnamed file.
    tmp_name: Option<String>,
    file: Option<std::fs::File>,
    hash: ChunkHash,
    len: usize,
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
    let flags = OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, ".", flags, Mode::from_raw_mode(0o444)) {
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
    let follow = rustix::fs::AtFlags::SYMLINK_FOLLOW;
    match rustix::fs::linkat(rustix::fs::CWD, proc.as_str(), dir, name, follow) {
        Ok(()) => Ok(true),
        Err(Errno::EXIST) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// What [`ChunkStore::ensure`] did.
pub(super) enum Ensured<'s> {
    /// The chunk is stored (it was there, whole, and is touched).
    Stored,
    /// It was written into `tmp/`, to be flushed and linked.
    Written(Written<'s>),
    /// Nothing: the name remembered for its bytes is not theirs (two
    /// chunks of one xxh3-128), and this is their blake3.
    Misnamed(ChunkHash),
}

/// A chunk's name, and where it came from.
#[derive(Debug, Clone, Copy)]
pub(super) enum Name {
    /// Its blake3, computed from its bytes here.
    Computed(ChunkHash),
    /// Remembered for bytes of the same xxh3-128 ([`super::names`]).
    Remembered(ChunkHash),
}

impl Name {
    pub(super) fn hash(self) -> ChunkHash {
        match self {
            Name::Computed(h) | Name::Remembered(h) => h,
        }
    }
}

impl ChunkStore {
    /// Flushes the chunk file `w` (with fsync), then links it to its name
    /// and removes its temporary file; with fsync, flushes the directory it
    /// linked into, so that the link is durable when this returns.
    ///
    /// A name that is taken is looked at ([`ChunkStore::look_at`], by the
    /// chunk's hash): another writer's chunk of the same bytes is as good
    /// (and touched); anything else is moved aside and the link made again,
    /// [`TRIES`] times at most.
    ///
    /// Each link flushes its own directory, at once: a put's first new
    /// chunk (a capture's output) is then durable while the workers still
    /// hash the others.
    pub(super) fn link_one(&self, mut w: Written<'_>) -> Result<()> {
        let failed = |e| Error::io(self.chunk_file(&w.hash), "write chunk", e);
        if self.options.fsync
            && let Some(f) = &w.file
        {
            f.sync_all().map_err(failed)?;
        }
        #[cfg(test)]
        if *crate::threads::lock(&tests::FAIL_LINK) == Some(w.hash) {
            let asked = std::io::Error::other("a link failed, as the test asked");
            return Err(failed(asked));
        }
        let hex = w.hash.hex();
        let name = std::str::from_utf8(&hex).unwrap_or_default();
        let prefix = w.hash.0[0];
        let prefix_fd = self
            .prefix_dir(prefix, true)
            .map_err(|e| Error::io(self.prefix_path(prefix), "create store directory", e))?;
        // Only where the name is found taken.
        let mut look = Look::default();
        for _ in 0..TRIES {
            #[cfg(test)]
            tests::plant_before_link(&w.hash, &self.chunk_file(&w.hash));
            let placed = match (&w.tmp_name, &w.file) {
                (None, Some(f)) => link_unnamed(f, prefix_fd, name),
                (Some(tmp_name), _) => {
                    drop(w.file.take());
                    fs::place(w.tmp_fd, tmp_name, prefix_fd, name)
                }
                (None, None) => Err(std::io::Error::other("an unnamed chunk file closed early")),
            };
            if placed.map_err(failed)? {
                if self.options.fsync {
                    fs::sync_dir(prefix_fd, &self.prefix_path(prefix))?;
                }
                return Ok(());
            }
            match self
                .look_at(prefix_fd, name, Want::Hash(&w.hash, w.len), &mut look)
                .map_err(|e| Error::io(self.chunk_file(&w.hash), "read chunk", e))?
            {
                // Another writer stored the same bytes.
                Found::Whole => return Ok(()),
                // Gone again: linked again.
                Found::Missing | Found::Moved => {}
                Found::Wrong => self.displace(prefix_fd, name, w.tmp_fd, &w.hash)?,
            }
        }
        Err(self.occupied(&w.hash))
    }

    /// Makes sure the chunk `hash` (of `data`) is stored: when a regular
    /// file at its name holds `data`, touched ([`Ensured::Stored`]); when
    /// nothing is there, or something that is not the chunk (moved aside
    /// first), written into `tmp/chunk.PIN_ID.RANDOM` (named after the pin
    /// it is written under), to be flushed and linked by
    /// [`ChunkStore::link_one`].
    ///
    /// A chunk it must write under a [`Name::Remembered`] is named by
    /// blake3 first, and when that is another name it writes nothing and
    /// says so ([`Ensured::Misnamed`]): no chunk file is ever named by
    /// anything but its own bytes' blake3, and a file found at a name
    /// remembered for other bytes is not taken for damaged.
    pub(super) fn ensure<'s>(
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
        let mut named = matches!(given, Name::Computed(_));
        // The bytes' own name, when the name given is not it.
        let misnamed = |named: bool| (!named).then(|| ChunkHash::of(data)).filter(|r| r != hash);
        let mut tries = 0;
        loop {
            match self
                .look_at(prefix_fd, name, Want::Bytes(data), &mut scratch.look)
                .map_err(|e| Error::io(path(), "read chunk", e))?
            {
                Found::Whole => return Ok(Ensured::Stored),
                Found::Missing => break,
                Found::Moved => {}
                Found::Wrong => {
                    // Not these bytes: damaged, or the chunk of another
                    // name's bytes, which is no business of this one.
                    if let Some(real) = misnamed(named) {
                        return Ok(Ensured::Misnamed(real));
                    }
                    named = true;
                    self.displace(prefix_fd, name, tmp_fd, hash)?;
                    break;
                }
            }
            tries += 1;
            if tries >= TRIES {
                return Err(self.occupied(hash));
            }
        }
        if let Some(real) = misnamed(named) {
            return Ok(Ensured::Misnamed(real));
        }
        scratch.out.clear();
        // Pieces of the chunk first: when none of them shrinks by an
        // eighth, the chunk is kept raw without compressing it whole
        // (compressing is most of a new chunk's cost).
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
        // copy (or, from a plain file, a mapping), not a decompression. A
        // frame as long as the chunk would read as a plain file:
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
        let unnamed = works.then(|| unnamed_file(tmp_fd)).transpose();
        let (tmp_name, file) = match unnamed.map_err(create)?.flatten() {
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
            len: data.len(),
        };
        if let Some(f) = &mut written.file {
            f.write_all(contents)
                .map_err(|e| Error::io(path(), "write chunk", e))?;
        }
        Ok(Ensured::Written(written))
    }
}

#[cfg(test)]
pub(super) mod tests;
