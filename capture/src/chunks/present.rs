//! What is at a chunk's name, looked at before it counts as stored: a
//! directory, a link, a FIFO, an empty or damaged file may be there. A
//! chunk counts as stored only when a regular file at its name holds its
//! bytes: opened without following a link or waiting
//! (`O_NOFOLLOW | O_NONBLOCK`), `fstat`ed, and its bytes (plain, or
//! decompressed no further than the chunk's length) compared with the
//! chunk's in hand, which is cheaper than hashing them and proves as much.
//! It is then touched through that descriptor, which is what tells a
//! concurrent gc that it is in use again (see [`super::pin`]), and looked
//! up by name once more. What is there and is not the chunk is moved aside
//! into `tmp/` ([`layout::tmp::DISPLACED`]).

use std::io::Read;
use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;

use crate::error::{ChunkHash, Error, Result, StoreProblem};

use super::layout::{self, tmp};
use super::{ChunkStore, fs};

/// How many times a writer finds something other than the chunk at its
/// name (and moves it aside) before it gives up, naming the chunk.
pub(super) const TRIES: u32 = 3;

/// The pieces a plain chunk file is read and compared in: small enough to
/// stay in a core's cache between the read and the compare.
const PIECE: usize = 256 << 10;

/// The shortest zstd frame: magic number, frame header, one block header.
pub(super) const MIN_FRAME: u64 = 9;

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
pub(super) enum Want<'d> {
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
pub(super) enum Found {
    /// The chunk: a regular file holding its bytes, touched, and still at
    /// its name after the touch.
    Whole,
    Missing,
    /// Something that is not the chunk.
    Wrong,
    /// The chunk, gone from its name by the time it was touched (a gc
    /// renamed it away): to be looked at again.
    Moved,
}

impl ChunkStore {
    /// The error of a chunk whose name something else kept taking.
    pub(super) fn occupied(&self, hash: &ChunkHash) -> Error {
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
    pub(super) fn displace(
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
                let doing = "move aside what is at the name of chunk";
                return Err(Error::io(self.chunk_file(hash), doing, e.into()));
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
    /// `EROFS`) still leaves it stored.
    pub(super) fn look_at(
        &self,
        dir: &OwnedFd,
        name: &str,
        want: Want<'_>,
        look: &mut Look,
    ) -> std::io::Result<Found> {
        let file = match fs::open_file(dir, name) {
            Ok(f) => f,
            Err(e) => match Errno::from_io_error(&e) {
                Some(Errno::NOENT) => return Ok(Found::Missing),
                // A link, a socket, a device without a driver, what this
                // user may not read: no chunk any reader could read.
                Some(Errno::LOOP | Errno::NXIO | Errno::NODEV | Errno::ACCESS | Errno::PERM) => {
                    return Ok(Found::Wrong);
                }
                _ => return Err(e),
            },
        };
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
}
