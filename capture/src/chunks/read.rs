//! Reading: a store's `VERSION`, a manifest's bytes back (in parallel over
//! its chunks, each decompressed straight into its place), streaming them,
//! and checking them.
//!
//! Every chunk read is bounded and verified: its file may be no larger than
//! zstd's bound for its length, it is decompressed into exactly the
//! manifest's length for it and no further, and what comes out must hash to
//! its name ([`Verify::EachChunk`]), unless the caller checks a checksum of
//! the whole instead ([`Verify::Whole`]). In a store of format 2 a chunk
//! file exactly as long as the chunk is its plain bytes, read as they are.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rustix::fs::FileType;
use rustix::io::Errno;

use crate::error::{
    ChunkFault, ChunkHash, ChunkProblem, Error, Result, StoreProblem, VersionProblem,
};

use super::layout::{self, MAX_VERSION_LEN, StoreVersion};
use super::manifest::{ChunkRef, Manifest};
use super::{ChunkStore, fs};

/// The store's `VERSION`, read and checked.
pub(super) fn version(root: &Path, root_fd: &OwnedFd) -> Result<StoreVersion> {
    let path = root.join(layout::VERSION_FILE);
    let bad = |p| Error::store(&path, StoreProblem::Version(p));
    let file = match fs::open_file(root_fd, layout::VERSION_FILE) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(bad(VersionProblem::Missing));
        }
        Err(e) => return Err(Error::io(&path, "open", e)),
    };
    let limit = MAX_VERSION_LEN;
    let too_large = |len| bad(VersionProblem::TooLarge { len, limit });
    let text = fs::read_file_bounded(file, limit, &path, "read", too_large)?;
    StoreVersion::parse(&text).map_err(bad)
}

/// How a read checks the chunks it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// Every chunk's bytes are hashed and checked against its name (and
    /// remembered as whole, [`ChunkStore::check`]).
    EachChunk,
    /// No chunk is hashed: the caller checks a checksum of all the bytes
    /// (a snapshot's xxh3, which the descriptor records) and, when that
    /// fails, [`ChunkStore::check`] names the chunk that is damaged. A
    /// chunk that is missing, too large, of the wrong length or
    /// undecompressible is still the read's error.
    Whole,
}

/// What one reader thread uses again for each chunk.
pub(super) struct Scratch {
    decompressor: zstd::bulk::Decompressor<'static>,
    compressed: Vec<u8>,
}

impl Scratch {
    fn new() -> Result<Self> {
        Ok(Scratch {
            decompressor: zstd::bulk::Decompressor::new()
                .map_err(|e| Error::io("zstd", "start zstd", e))?,
            compressed: Vec::new(),
        })
    }

    /// This thread's scratch, made once (a zstd context is costly to set
    /// up for a small read), or a new one when it is in use.
    fn take() -> Result<Self> {
        KEPT.with(|k| k.take()).map_or_else(Self::new, Ok)
    }

    /// Gives it back for this thread's next read.
    fn keep(mut self) {
        // A large frame's buffer is not kept.
        if self.compressed.capacity() > 4 << 20 {
            self.compressed = Vec::new();
        }
        KEPT.with(|k| k.set(Some(self)));
    }
}

thread_local! {
    /// A reader thread's [`Scratch`] between reads.
    static KEPT: std::cell::Cell<Option<Scratch>> = const { std::cell::Cell::new(None) };
}

impl ChunkStore {
    /// Reads the bytes `m` stands for into `out`, which must be `m.len()`
    /// bytes: every chunk decompressed into its place (in parallel, on up
    /// to [`super::StoreOptions::threads`] threads) and its hash checked.
    /// The first chunk that is missing or damaged is the error, naming it.
    pub fn read_into(&self, m: &Manifest, out: &mut [u8]) -> Result<()> {
        self.read_into_with(m, out, Verify::EachChunk)
    }

    /// [`ChunkStore::read_into`], each chunk checked as `verify` says.
    pub fn read_into_with(&self, m: &Manifest, out: &mut [u8], verify: Verify) -> Result<()> {
        self.read_places(m, out, verify, |_| (0, None))
    }

    /// Reads the chunks of `m` into their places in `out` (`m.len()`
    /// bytes), on up to [`super::StoreOptions::threads`] threads: of chunk
    /// `i`, `have(i)` says how many bytes from its start are in place
    /// already (mapped) and which file holds it when it is open (a plain
    /// file, read from there); a chunk wholly in place is not read.
    pub(super) fn read_places<'f>(
        &self,
        m: &Manifest,
        out: &mut [u8],
        verify: Verify,
        have: impl Fn(usize) -> (u64, Option<&'f std::fs::File>) + Sync,
    ) -> Result<()> {
        let (manifest, buffer) = (m.len(), out.len() as u64);
        if buffer != manifest {
            let problem = StoreProblem::BufferLength { manifest, buffer };
            return Err(Error::store(&self.root, problem));
        }
        let todo = (0..m.chunks().len())
            .filter(|&i| verify == Verify::EachChunk || have(i).0 < u64::from(m.chunks()[i].len))
            .count();
        if todo == 0 {
            return Ok(());
        }
        let threads = self.threads_for(todo);
        let mut slots: Vec<Vec<(usize, &mut [u8])>> = (0..threads).map(|_| Vec::new()).collect();
        // Round robin: zero chunks decompress faster than others, and
        // neighbours are alike.
        let mut k = 0;
        for (i, place) in out.chunks_mut(m.chunk_size() as usize).enumerate() {
            if verify == Verify::Whole && have(i).0 >= place.len() as u64 {
                continue;
            }
            slots[k % threads].push((i, place));
            k += 1;
        }
        let stop = AtomicBool::new(false);
        let work = |mine: Vec<(usize, &mut [u8])>| -> Result<()> {
            let mut scratch = Scratch::take()?;
            for (i, place) in mine {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let c = &m.chunks()[i];
                let (skip, file) = have(i);
                let loaded = if skip >= place.len() as u64 {
                    // In place already: only its hash is checked.
                    self.check_loaded(c, place, verify)
                } else {
                    self.load(file, c, place, skip as usize, &mut scratch, verify)
                };
                if let Err(fault) = loaded {
                    stop.store(true, Ordering::Relaxed);
                    return Err(self.chunk_error(i, c, fault));
                }
            }
            scratch.keep();
            Ok(())
        };
        crate::threads::run_all(slots, work)
            .into_iter()
            .map(|r| r.unwrap_or(Err(Error::Internal("a chunk store reader panicked"))))
            .find(Result::is_err)
            .unwrap_or(Ok(()))
    }

    /// Calls `f` with each chunk of `m` in order, decompressed and checked
    /// (one chunk in memory at a time: to stream a file's bytes, to hash
    /// them, to compare them). Stops at the first chunk that is missing or
    /// damaged, which is the error.
    pub fn for_each_chunk(&self, m: &Manifest, mut f: impl FnMut(&[u8])) -> Result<()> {
        let mut scratch = Scratch::new()?;
        let mut buf =
            vec![0u8; m.chunk_size().min(m.len().try_into().unwrap_or(u32::MAX)) as usize];
        for (i, c) in m.chunks().iter().enumerate() {
            let place = &mut buf[..c.len as usize];
            self.load(None, c, place, 0, &mut scratch, Verify::EachChunk)
                .map_err(|fault| self.chunk_error(i, c, fault))?;
            f(place);
        }
        Ok(())
    }

    /// Every chunk of `m` that cannot be read back, each named once (at its
    /// first place): missing, not a regular file, unreadable, or damaged
    /// (too large, undecompressible, of the wrong length or hash). Every
    /// chunk is decompressed and hashed, once per store: a chunk found
    /// whole, by a check or by a read through this store, is not read
    /// again.
    pub fn check(&self, m: &Manifest) -> Vec<ChunkProblem> {
        let todo = self.distinct(m, |h| !crate::threads::lock(&self.verified).contains(h));
        let threads = self.threads_for(todo.len());
        let next = AtomicUsize::new(0);
        let work = || {
            let mut problems = Vec::new();
            let mut scratch = match Scratch::new() {
                Ok(s) => s,
                // No decompressor: every chunk goes unread.
                Err(_) => {
                    return todo
                        .iter()
                        .map(|&(index, c)| problem(index, &c, ChunkFault::Undecompressible))
                        .collect();
                }
            };
            let mut buf = Vec::new();
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(index, c)) = todo.get(k) else {
                    break;
                };
                buf.resize(c.len as usize, 0);
                match self.load(None, &c, &mut buf, 0, &mut scratch, Verify::EachChunk) {
                    Ok(()) => {
                        crate::threads::lock(&self.verified).insert(c.hash);
                    }
                    Err(fault) => problems.push(problem(index, &c, fault)),
                }
            }
            problems
        };
        let mut problems: Vec<ChunkProblem> =
            crate::threads::run_all(vec![(); threads], |()| work())
                .into_iter()
                .flat_map(|r| r.unwrap_or_default())
                .collect();
        problems.sort_by_key(|p| p.index);
        problems
    }

    /// The chunks of `m` that the store has no regular file for, each named
    /// once: [`ChunkStore::check`] without reading any chunk (a look at
    /// each name only).
    pub fn missing(&self, m: &Manifest) -> Vec<ChunkProblem> {
        self.looked_at(m, false)
    }

    /// [`ChunkStore::missing`], and the chunks whose file is of a length
    /// no file of the chunk has: larger than zstd's bound for its length
    /// ([`ChunkFault::TooLarge`]), or shorter than both its plain bytes
    /// (format 2) and the shortest zstd frame ([`ChunkFault::TooShort`]:
    /// an empty file, say). Still no chunk is read: one look at each name,
    /// what a capture's quick assessment (`list --no-checksums`, and
    /// `reprise record` before it counts a capture) asks.
    pub fn glance(&self, m: &Manifest) -> Vec<ChunkProblem> {
        self.looked_at(m, true)
    }

    /// The chunks of `m` whose name holds no regular file, each named
    /// once, and with `lengths` those whose file's length no file of the
    /// chunk has: one look at each name, no chunk read.
    fn looked_at(&self, m: &Manifest, lengths: bool) -> Vec<ChunkProblem> {
        let mut problems = Vec::new();
        for (index, c) in self.distinct(m, |_| true) {
            let hex = c.hash.hex();
            let name = std::str::from_utf8(&hex).unwrap_or_default();
            let stat = self
                .prefix_dir(c.hash.0[0], false)
                .and_then(|d| fs::stat(d, name));
            let fault = match stat.map_err(unreadable) {
                Ok(Some((FileType::RegularFile, len, _))) => {
                    let Some(fault) = self.implausible(&c, len).filter(|_| lengths) else {
                        continue;
                    };
                    fault
                }
                Ok(Some(_)) => ChunkFault::NotRegular,
                Ok(None) => ChunkFault::Missing,
                Err(fault) => fault,
            };
            problems.push(problem(index, &c, fault));
        }
        problems
    }

    /// What is wrong with a file of `len` bytes for chunk `c`, by its
    /// length alone; `None` when a file of the chunk may be that long.
    fn implausible(&self, c: &ChunkRef, len: u64) -> Option<ChunkFault> {
        let plain = self.version >= layout::PLAIN_CHUNKS_SINCE;
        let limit = zstd::zstd_safe::compress_bound(c.len as usize) as u64;
        if plain && len == u64::from(c.len) {
            None
        } else if len > limit {
            Some(ChunkFault::TooLarge { len, limit })
        } else if len < super::present::MIN_FRAME {
            // A chunk under 9 bytes has a plain file shorter than a frame.
            let least = if plain && len < u64::from(c.len) {
                super::present::MIN_FRAME.min(u64::from(c.len))
            } else {
                super::present::MIN_FRAME
            };
            Some(ChunkFault::TooShort { len, least })
        } else {
            None
        }
    }

    /// The distinct chunks of `m` that `keep` keeps, each at its first
    /// place.
    fn distinct(&self, m: &Manifest, keep: impl Fn(&ChunkHash) -> bool) -> Vec<(usize, ChunkRef)> {
        let mut seen = std::collections::HashSet::new();
        m.chunks()
            .iter()
            .enumerate()
            .filter(|(_, c)| seen.insert(c.hash) && keep(&c.hash))
            .map(|(i, c)| (i, *c))
            .collect()
    }

    pub(super) fn chunk_error(&self, index: usize, c: &ChunkRef, fault: ChunkFault) -> Error {
        let chunk = StoreProblem::Chunk(problem(index, c, fault));
        Error::store(self.chunk_file(&c.hash), chunk)
    }

    /// Opens the file of chunk `c`: a regular file (not through a link).
    pub(super) fn open_chunk(&self, c: &ChunkRef) -> Result<std::fs::File, ChunkFault> {
        #[cfg(test)]
        self.loads.fetch_add(1, Ordering::Relaxed);
        let hex = c.hash.hex();
        let name = std::str::from_utf8(&hex).unwrap_or_default();
        let dir = self.prefix_dir(c.hash.0[0], false).map_err(unreadable)?;
        fs::open_file(dir, name).map_err(unreadable)
    }

    /// Reads chunk `c` into `place` (its length) from its file (`file`,
    /// when it is open), all but its first `skip` bytes when the file is
    /// plain (those are in place already), and checks it as `verify` says.
    fn load(
        &self,
        file: Option<&std::fs::File>,
        c: &ChunkRef,
        place: &mut [u8],
        skip: usize,
        scratch: &mut Scratch,
        verify: Verify,
    ) -> Result<(), ChunkFault> {
        let opened;
        let mut file = match file {
            Some(f) => f,
            None => {
                opened = self.open_chunk(c)?;
                &opened
            }
        };
        let meta = file.metadata().map_err(unreadable)?;
        if !meta.is_file() {
            return Err(ChunkFault::NotRegular);
        }
        let limit = zstd::zstd_safe::compress_bound(c.len as usize) as u64;
        let bounded = |len| match len > limit {
            true => Err(ChunkFault::TooLarge { len, limit }),
            false => Ok(()),
        };
        bounded(meta.len())?;
        let wrong_length = |found| ChunkFault::WrongLength {
            found,
            expected: c.len,
        };
        // Format 2: a file as long as the chunk is its bytes (no frame is:
        // see `layout::KEEP_COMPRESSED_BELOW`), read straight into place.
        if self.version >= layout::PLAIN_CHUNKS_SINCE && meta.len() == u64::from(c.len) {
            use std::os::unix::fs::FileExt;
            let skip = skip.min(place.len());
            file.read_exact_at(&mut place[skip..], skip as u64)
                .map_err(|e| match e.kind() {
                    // Shorter than it was a moment ago.
                    std::io::ErrorKind::UnexpectedEof => wrong_length(meta.len()),
                    _ => unreadable(e),
                })?;
            return self.check_loaded(c, place, verify);
        }
        // A chunk kept raw in format 1 ([`layout::raw_frame`]) is read
        // straight into its place; its hash is checked below all the same.
        if meta.len() == layout::raw_frame_len(place.len()) as u64
            && layout::read_raw_frame(file, place).unwrap_or(false)
        {
            return self.check_loaded(c, place, verify);
        }
        scratch.compressed.clear();
        (&mut file)
            .take(limit + 1)
            .read_to_end(&mut scratch.compressed)
            .map_err(unreadable)?;
        let src = &scratch.compressed;
        bounded(src.len() as u64)?;
        match zstd::zstd_safe::get_frame_content_size(src) {
            Ok(Some(n)) if n != u64::from(c.len) => return Err(wrong_length(n)),
            Ok(_) => {}
            Err(_) => return Err(ChunkFault::Undecompressible),
        }
        // Into the chunk's place and no further: a frame that holds more
        // fails here.
        let n = scratch
            .decompressor
            .decompress_to_buffer(src, place)
            .map_err(|_| ChunkFault::Undecompressible)?;
        if n != place.len() {
            return Err(wrong_length(n as u64));
        }
        self.check_loaded(c, place, verify)
    }

    /// Checks `place`, chunk `c` as read, as `verify` says: with
    /// [`Verify::EachChunk`], that it hashes to its name (and remembers it
    /// as whole).
    fn check_loaded(&self, c: &ChunkRef, place: &[u8], verify: Verify) -> Result<(), ChunkFault> {
        if verify == Verify::Whole {
            return Ok(());
        }
        let found = ChunkHash::of(place);
        if found != c.hash {
            return Err(ChunkFault::HashMismatch { found });
        }
        // Read whole: a later [`ChunkStore::check`] of this store need not
        // decompress it again (a capture's globals and image are read, then
        // checked; its snapshots hashed, then checked).
        crate::threads::lock(&self.verified).insert(c.hash);
        Ok(())
    }
}

/// The problem of chunk `c`, at `index` in its manifest.
fn problem(index: usize, c: &ChunkRef, fault: ChunkFault) -> ChunkProblem {
    ChunkProblem {
        index: index as u32,
        hash: c.hash,
        fault,
    }
}

/// The fault of a chunk file that cannot be opened or read.
fn unreadable(e: std::io::Error) -> ChunkFault {
    match e.raw_os_error().map(Errno::from_raw_os_error) {
        Some(Errno::NOENT) => ChunkFault::Missing,
        Some(Errno::LOOP | Errno::NOTDIR) => ChunkFault::NotRegular,
        _ => ChunkFault::Unreadable { kind: e.kind() },
    }
}
