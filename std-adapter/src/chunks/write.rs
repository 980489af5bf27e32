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
//! Something at a chunk's name is not proof that the chunk is stored: a
//! directory, a link, a FIFO, an empty or damaged file may be there. A
//! chunk counts as stored only when a regular file at its name holds its
//! bytes: opened without following a link or waiting
//! (`O_NOFOLLOW | O_NONBLOCK`), `fstat`ed, and its bytes (plain, or
//! decompressed no further than the chunk's length) compared with the
//! chunk's in hand, which is cheaper than hashing them and proves as
//! much. It is then touched through that descriptor (its modification
//! time set to now), which is what tells a concurrent gc that it is in use
//! again (see [`super::pin`]), and looked up by name once more: a chunk gc
//! renamed away meanwhile is written anew. What is there and is not the
//! chunk is moved aside into `tmp/` ([`layout::tmp::DISPLACED`]) and the
//! chunk written as for a missing one; a link that finds the name taken
//! again looks at what took it the same way (by its hash: another writer
//! stored the same bytes, or not). A name found taken by something else
//! [`TRIES`] times is an error naming the chunk: a process that keeps
//! putting things there does not keep a writer looping.
//!
//! The index of what is stored is the store's directory itself. In memory,
//! each [`super::Pin`] remembers the chunks it has made sure of, so a chunk
//! met again under the same pin (an output chunk equal to the input's, the
//! zero chunks of a snapshot) is not looked at again.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;

use crate::error::{ChunkHash, Error, Result, StoreProblem};

use super::layout::{self, StoreVersion, tmp};
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

/// A chunk whose link fails, for the tests of a put's flushers.
#[cfg(test)]
pub(super) static FAIL_LINK: std::sync::Mutex<Option<ChunkHash>> = std::sync::Mutex::new(None);

/// How many times a writer finds something other than the chunk at its
/// name (and moves it aside) before it gives up, naming the chunk.
pub(super) const TRIES: u32 = 3;

/// The pieces a plain chunk file is read and compared in: small enough to
/// stay in a core's cache between the read and the compare.
const PIECE: usize = 256 << 10;

/// The shortest zstd frame: magic number, frame header, one block header.
const MIN_FRAME: u64 = 9;

/// Plants something at the chunk path it is given (a test's).
#[cfg(test)]
pub(super) type Planter = fn(&Path);

/// What to plant at a chunk's name before each try to link it, by chunk,
/// for the tests of a name found taken at link time.
#[cfg(test)]
pub(super) static PLANT_BEFORE_LINK: std::sync::Mutex<Vec<(ChunkHash, Planter)>> =
    std::sync::Mutex::new(Vec::new());

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

/// What looking at a chunk file that is there uses again: the buffers its
/// bytes are read or decompressed into, and a decompressor (made when
/// first needed: most chunks met again are plain).
#[derive(Default)]
pub(super) struct Look {
    decompressor: Option<zstd::bulk::Decompressor<'static>>,
    piece: Vec<u8>,
    compressed: Vec<u8>,
    whole: Vec<u8>,
}

/// What a chunk file that is there must hold.
#[derive(Clone, Copy)]
enum Want<'d> {
    /// These bytes (the chunk's, in hand).
    Bytes(&'d [u8]),
    /// Bytes of this many bytes and this hash (its name).
    Hash(&'d ChunkHash, usize),
}

/// A plain chunk file of this user's, mapped read-only to be compared
/// with the chunk in hand where reading it would copy it first (a tenth
/// of a millisecond a MiB). Unmapped when dropped.
///
/// A file shortened under a mapping raises `SIGBUS` where a page past its
/// new end is read: only a file this user owns is mapped (no other user
/// can shorten it; chunk files are created once and never rewritten).
struct Mapped {
    at: std::ptr::NonNull<libc::c_void>,
    len: usize,
}

impl Mapped {
    /// The first `len` bytes (`len` > 0, at most the file's length) of
    /// `file`, mapped with every page in place; `None` where mapping fails
    /// (then the file is read).
    fn of(file: &std::fs::File, len: usize) -> Option<Mapped> {
        use std::os::fd::AsRawFd;
        if len == 0 {
            return None;
        }
        // SAFETY: a fresh mapping of an open file, placed by the kernel
        // (no address given), read-only; nothing else is touched.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                file.as_raw_fd(),
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return None;
        }
        std::ptr::NonNull::new(at).map(|at| Mapped { at, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `len` readable bytes mapped at `at` until `self` drops.
        unsafe { std::slice::from_raw_parts(self.at.as_ptr().cast::<u8>(), self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: the mapping made by `Mapped::of`, no slice of it left.
        unsafe {
            libc::munmap(self.at.as_ptr(), self.len);
        }
    }
}

/// What [`ChunkStore::look_at`] found at a chunk's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// The chunk: a regular file holding its bytes, touched, and still at
    /// its name after the touch.
    Whole,
    /// Nothing.
    Missing,
    /// Something that is not the chunk.
    Wrong,
    /// The chunk, gone from its name by the time it was touched (a gc
    /// renamed it away): to be looked at again.
    Moved,
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
    /// The chunk's length.
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
    /// hash the others, where one flush of each directory after the last
    /// link began only once every chunk was named. Two chunks of one put
    /// rarely share a directory (256 of them; 16 new chunks share one in
    /// one put of two), and a directory flushed again has only its newest
    /// link to write.
    pub(super) fn link_one(&self, mut w: Written<'_>) -> Result<()> {
        let failed = |e| Error::io(self.chunk_file(&w.hash), "write chunk", e);
        if self.options.fsync
            && let Some(f) = &w.file
        {
            f.sync_all().map_err(failed)?;
        }
        #[cfg(test)]
        if *FAIL_LINK.lock().unwrap_or_else(|e| e.into_inner()) == Some(w.hash) {
            return Err(failed(std::io::Error::other(
                "a link failed, as the test asked",
            )));
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
            let plant = PLANT_BEFORE_LINK
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .find(|(h, _)| *h == w.hash)
                .map(|(_, plant)| *plant);
            #[cfg(test)]
            if let Some(plant) = plant {
                plant(&self.chunk_file(&w.hash));
            }
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
                    fs::sync_dir(prefix_fd)
                        .map_err(|e| Error::io(self.prefix_path(prefix), "sync directory", e))?;
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

    /// The error of a chunk whose name something else kept taking.
    fn occupied(&self, hash: &ChunkHash) -> Error {
        Error::store(
            self.chunk_file(hash),
            StoreProblem::Occupied { tries: TRIES },
        )
    }

    /// Moves what is at the chunk name `name` in `prefix_fd` (not the
    /// chunk `hash`) aside into `tmp/`, under a fresh name
    /// ([`layout::tmp::DISPLACED`]; a rename moves a directory too), and
    /// removes it there: a file, a link or a FIFO at once, a directory if
    /// it is empty (one with anything in it is left to gc, and shown by
    /// `list`). Nothing there any more is fine.
    fn displace(
        &self,
        prefix_fd: &OwnedFd,
        name: &str,
        tmp_fd: &OwnedFd,
        hash: &ChunkHash,
    ) -> Result<()> {
        let aside = format!("{}{:016x}", tmp::DISPLACED, fastrand::u64(..));
        match rustix::fs::renameat(prefix_fd, name, tmp_fd, aside.as_str()) {
            Ok(()) => {}
            Err(Errno::NOENT) => return Ok(()),
            Err(e) => {
                return Err(Error::io(
                    self.chunk_file(hash),
                    "move aside what is at the name of chunk",
                    e.into(),
                ));
            }
        }
        // A directory with anything in it is left for gc.
        if let Err(Errno::ISDIR) = rustix::fs::unlinkat(tmp_fd, aside.as_str(), AtFlags::empty()) {
            let _ = rustix::fs::unlinkat(tmp_fd, aside.as_str(), AtFlags::REMOVEDIR);
        }
        Ok(())
    }

    /// Looks at what is at the chunk name `name` in `dir`: [`Found::Whole`]
    /// only for a regular file whose bytes are what `want` says (its length
    /// bounded by the chunk's before anything is read), which is then
    /// touched through its descriptor and found at its name still.
    ///
    /// Opened `O_NOFOLLOW | O_NONBLOCK`: a link is no chunk, and a FIFO or
    /// a device opens without waiting and is refused by its `fstat`. A
    /// touch that another user's chunk refuses (`EPERM`, `EACCES`,
    /// `EROFS`) still leaves it stored, as before.
    fn look_at(
        &self,
        dir: &OwnedFd,
        name: &str,
        want: Want<'_>,
        look: &mut Look,
    ) -> std::io::Result<Found> {
        use rustix::fs::{Mode, OFlags};
        let fd = match rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(Found::Missing),
            // A link, a socket, a device without a driver, what this user
            // may not read: no chunk any reader could read.
            Err(Errno::LOOP | Errno::NXIO | Errno::NODEV | Errno::ACCESS | Errno::PERM) => {
                return Ok(Found::Wrong);
            }
            Err(e) => return Err(e.into()),
        };
        let file = std::fs::File::from(fd);
        let st = rustix::fs::fstat(&file)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Ok(Found::Wrong);
        }
        // Mapped only when no other user can shorten it under the mapping.
        let owned = st.st_uid == rustix::process::geteuid().as_raw();
        let size = (st.st_size as u64, owned);
        let whole = match want {
            Want::Bytes(data) => {
                let mut at = 0;
                self.stream(&file, size, data.len(), look, |piece| {
                    let same = data.get(at..at + piece.len()) == Some(piece);
                    at += piece.len();
                    same
                })?
            }
            Want::Hash(hash, len) => {
                let mut hasher = blake3::Hasher::new();
                self.stream(&file, size, len, look, |piece| {
                    hasher.update(piece);
                    true
                })? && ChunkHash(*hasher.finalize().as_bytes()) == *hash
            }
        };
        if !whole {
            return Ok(Found::Wrong);
        }
        match fs::touch_open(&file) {
            Ok(()) => {}
            // Another user's chunk, which this one may read but not touch.
            Err(e)
                if [Errno::PERM, Errno::ACCESS, Errno::ROFS]
                    .map(|e| Some(e.raw_os_error()))
                    .contains(&e.raw_os_error()) => {}
            Err(e) => return Err(e),
        }
        // gc renames a chunk it removes aside before it looks at its time
        // again: a touch of a file already renamed may come after that
        // look. Only a file at its name after the touch is kept for sure
        // (a touch before gc's rename shows on the renamed file, which gc
        // links back).
        match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(now) if now.st_dev == st.st_dev && now.st_ino == st.st_ino => Ok(Found::Whole),
            Ok(_) | Err(Errno::NOENT) => Ok(Found::Moved),
            Err(e) => Err(e.into()),
        }
    }

    /// Streams the bytes the chunk file `file` (of `size` bytes) holds, a
    /// piece at a time, into `sink`, as a chunk of `len` bytes: `true` when
    /// it holds exactly `len` bytes and `sink` took every piece (said
    /// `true`); `false` as soon as it cannot. In a store of format 2 a file
    /// of `len` bytes is the plain bytes: mapped (and handed over whole)
    /// when `owned` says this user owns it, else read in pieces; any other
    /// file is a zstd frame no larger than zstd's bound for `len` bytes (as
    /// a read refuses), decompressed into `len` bytes and no further.
    fn stream(
        &self,
        mut file: &std::fs::File,
        (size, owned): (u64, bool),
        len: usize,
        look: &mut Look,
        mut sink: impl FnMut(&[u8]) -> bool,
    ) -> std::io::Result<bool> {
        use std::os::unix::fs::FileExt;
        if self.version >= layout::PLAIN_CHUNKS_SINCE && size == len as u64 {
            if owned && let Some(mapped) = Mapped::of(file, len) {
                return Ok(sink(mapped.bytes()));
            }
            if look.piece.len() < PIECE.min(len) {
                look.piece.resize(PIECE.min(len), 0);
            }
            let mut at = 0;
            while at < len {
                let piece = &mut look.piece[..(len - at).min(PIECE)];
                match file.read_exact_at(piece, at as u64) {
                    Ok(()) => {}
                    // Shorter than it was a moment ago.
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
                    Err(e) => return Err(e),
                }
                if !sink(piece) {
                    return Ok(false);
                }
                at += piece.len();
            }
            return Ok(true);
        }
        let limit = zstd::zstd_safe::compress_bound(len) as u64;
        if !(MIN_FRAME..=limit).contains(&size) {
            return Ok(false);
        }
        look.compressed.clear();
        // A file that grew since its `fstat` is read to the limit and one
        // byte more, and refused.
        Read::by_ref(&mut file)
            .take(limit + 1)
            .read_to_end(&mut look.compressed)?;
        if look.compressed.len() as u64 > limit {
            return Ok(false);
        }
        let decompressor = match &mut look.decompressor {
            Some(d) => d,
            None => look.decompressor.insert(zstd::bulk::Decompressor::new()?),
        };
        if look.whole.len() < len {
            look.whole.resize(len, 0);
        }
        // Into the chunk's length and no further: a frame that holds more
        // fails here.
        let place = &mut look.whole[..len];
        match decompressor.decompress_to_buffer(&look.compressed, place) {
            Ok(n) if n == len => Ok(sink(place)),
            _ => Ok(false),
        }
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
                    if !named {
                        let real = ChunkHash::of(data);
                        if real != *hash {
                            return Ok(Ensured::Misnamed(real));
                        }
                        named = true;
                    }
                    self.displace(prefix_fd, name, tmp_fd, hash)?;
                    break;
                }
            }
            tries += 1;
            if tries >= TRIES {
                return Err(self.occupied(hash));
            }
        }
        if !named {
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
mod tests {
    use super::super::layout;
    use super::super::tests::noise;
    use super::super::{ChunkStore, StoreOptions};
    use crate::error::ChunkHash;

    /// A chunk found missing whose name something takes before the link (a
    /// directory, here) is linked all the same, once what took it is moved
    /// aside; a name taken again before every link fails the put, naming the
    /// chunk, after a bounded number of tries, and leaves no chunk file in
    /// `tmp/`. A name taken by the chunk itself (another writer's) is as good.
    #[test]
    fn a_name_taken_at_link_time_is_looked_at_and_taken_back() {
        use super::super::write::{PLANT_BEFORE_LINK, TRIES};
        fn mkdir(path: &std::path::Path) {
            let _ = std::fs::create_dir(path);
        }
        fn empty(path: &std::path::Path) {
            let _ = std::fs::write(path, b"");
        }
        for fsync in [false, true] {
            for plant in [mkdir as fn(&std::path::Path), empty] {
                let dir = tempfile::tempdir().unwrap();
                let store = ChunkStore::create(
                    dir.path(),
                    StoreOptions {
                        chunk_size: 64 << 10,
                        fsync,
                        threads: 2,
                        ..StoreOptions::default()
                    },
                )
                .unwrap();
                let data = noise(4 << 16, 41 + u64::from(fsync));
                let victim = ChunkHash::of(&data[2 << 16..3 << 16]);
                // Once: taken back.
                static PLANTED: std::sync::atomic::AtomicBool =
                    std::sync::atomic::AtomicBool::new(false);
                fn once(path: &std::path::Path) {
                    if !PLANTED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                        let _ = std::fs::create_dir(path);
                    }
                }
                PLANTED.store(false, std::sync::atomic::Ordering::Relaxed);
                PLANT_BEFORE_LINK.lock().unwrap().push((victim, once));
                let m = store.put(&data);
                PLANT_BEFORE_LINK
                    .lock()
                    .unwrap()
                    .retain(|(h, _)| *h != victim);
                let m = m.unwrap();
                assert!(PLANTED.load(std::sync::atomic::Ordering::Relaxed));
                assert_eq!(store.check(&m), Vec::new());
                assert!(store.chunk_file(&victim).is_file());

                // Every time: the put fails, naming the chunk.
                let dir = tempfile::tempdir().unwrap();
                let store = ChunkStore::create(
                    dir.path(),
                    StoreOptions {
                        chunk_size: 64 << 10,
                        fsync,
                        ..StoreOptions::default()
                    },
                )
                .unwrap();
                PLANT_BEFORE_LINK.lock().unwrap().push((victim, plant));
                let e = store.put(&data).unwrap_err();
                PLANT_BEFORE_LINK
                    .lock()
                    .unwrap()
                    .retain(|(h, _)| *h != victim);
                assert!(
                    matches!(
                        e.store_problem(),
                        Some(crate::error::StoreProblem::Occupied { tries }) if *tries == TRIES
                    ),
                    "{e}"
                );
                let path = store.chunk_file(&victim).display().to_string();
                assert!(e.to_string().contains(&path), "{e}");
                let left: Vec<_> = std::fs::read_dir(store.root().join(layout::TMP_DIR))
                    .unwrap()
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(layout::tmp::CHUNK))
                    .collect();
                assert!(left.is_empty(), "{left:?}");
                // The same bytes put again, with nobody planting, are stored.
                let m = store.put(&data).unwrap();
                assert_eq!(store.check(&m), Vec::new());
            }
        }
    }

    /// A name taken at link time by another writer's file of the chunk is
    /// that chunk stored: nothing is moved aside.
    #[test]
    fn a_name_taken_at_link_time_by_the_chunk_itself_is_as_good() {
        use super::super::write::PLANT_BEFORE_LINK;
        static GOOD: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());
        fn good(path: &std::path::Path) {
            let _ = std::fs::write(path, &*GOOD.lock().unwrap());
        }
        let dir = tempfile::tempdir().unwrap();
        let store = ChunkStore::create(
            dir.path(),
            StoreOptions {
                chunk_size: 64 << 10,
                ..StoreOptions::default()
            },
        )
        .unwrap();
        let data = noise(3 << 16, 43);
        let victim_bytes = &data[1 << 16..2 << 16];
        let victim = ChunkHash::of(victim_bytes);
        // Another writer's file: the chunk at another zstd level.
        *GOOD.lock().unwrap() = zstd::bulk::compress(victim_bytes, 19).unwrap();
        PLANT_BEFORE_LINK.lock().unwrap().push((victim, good));
        let m = store.put(&data);
        PLANT_BEFORE_LINK
            .lock()
            .unwrap()
            .retain(|(h, _)| *h != victim);
        let m = m.unwrap();
        assert_eq!(store.check(&m), Vec::new());
        assert_eq!(
            std::fs::read(store.chunk_file(&victim)).unwrap(),
            *GOOD.lock().unwrap()
        );
    }
}
