//! Mapping a manifest's plain chunk files (format 2) instead of reading
//! them: what a replay on the host builds its region and its snapshot
//! buffer from ([`reprise_core::exec::MapPart`]).
//!
//! A chunk kept as a plain file holds exactly its bytes, so the file can be
//! mapped, privately (copy-on-write: a kernel's writes never reach it), at
//! the chunk's place: chunk `i` starts at `i × chunk_size`, a multiple of
//! the page size wherever the chunk size is (4 KiB at least). What is not
//! mapped (compressed chunks, a short last chunk's bytes past its last
//! whole page, chunks whose place is not page-aligned where pages are
//! larger than chunks) is read into place as usual
//! ([`ChunkStore::read_rest_into`]), except chunks of zeros: the memory
//! the parts are mapped into is zero already, so a chunk whose name is the
//! hash of zeros (untouched memory, the commonest chunk of a snapshot) is
//! neither decompressed nor copied, once its file is found to be there.
//!
//! Each file's length is checked against the manifest (on the open file)
//! before it is mapped, so a file that is not what the manifest says is
//! read, never mapped past its end. A file truncated *after* it is mapped
//! would fault where its pages went: chunk files are mode 0444 and never
//! rewritten by any writer of the store, and `docs/store.md` says what is
//! left of that risk.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use reprise_core::exec::MapPart;

use crate::error::{ChunkHash, Result};

use super::ChunkStore;
use super::layout;
use super::manifest::Manifest;
use super::read::Verify;

/// Ranges of bytes, `(offset, len)`, in order: what a mapping leaves to
/// be filled ([`Mappable::gaps`]).
pub type Gaps = Vec<(u64, u64)>;

/// The most chunk files one [`Mappable`] holds open: a quarter of the
/// process's limit on open files, and no more than this.
const MAX_FILES: u64 = 4096;

/// The plain chunk files of one manifest, open, and the parts of its bytes
/// they can be mapped as.
#[derive(Debug, Default)]
pub struct Mappable {
    /// Per chunk: its file when it is plain and open.
    pub(super) files: Vec<Option<Arc<File>>>,
    /// Per chunk: the bytes from its start that are in place once the
    /// parts are mapped (a part's bytes; all of a chunk of zeros).
    pub(super) mapped: Vec<u64>,
    parts: Vec<MapPart>,
    zeros: bool,
}

impl Mappable {
    /// The parts, in order (offsets from the start of the bytes).
    pub fn parts(&self) -> &[MapPart] {
        &self.parts
    }

    /// Whether nothing is gained: no part to map, no chunk of zeros.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty() && !self.zeros
    }

    /// The bytes mapped.
    pub fn mapped_bytes(&self) -> u64 {
        self.parts.iter().map(|p| p.len).sum()
    }

    /// The ranges of the manifest `m`'s bytes that are not in place once
    /// the parts are mapped into zeroed memory (neither mapped nor a chunk
    /// of zeros), as `(offset, len)`, in order and merged.
    pub fn gaps(&self, m: &Manifest) -> Gaps {
        let mut gaps: Gaps = Vec::new();
        for (i, c) in m.chunks().iter().enumerate() {
            let have = self.mapped.get(i).copied().unwrap_or(0);
            if have >= u64::from(c.len) {
                continue;
            }
            let (at, n) = (m.offset_of(i) + have, u64::from(c.len) - have);
            match gaps.last_mut() {
                Some((start, len)) if *start + *len == at => *len += n,
                _ => gaps.push((at, n)),
            }
        }
        gaps
    }
}

/// The name of a chunk of `len` zero bytes (remembered, not hashed again
/// for each chunk).
fn zeros_hash(len: u32) -> ChunkHash {
    static KNOWN: std::sync::Mutex<Vec<(u32, ChunkHash)>> = std::sync::Mutex::new(Vec::new());
    let mut known = crate::threads::lock(&KNOWN);
    if let Some(&(_, h)) = known.iter().find(|(l, _)| *l == len) {
        return h;
    }
    let h = ChunkHash::of(&vec![0u8; len as usize]);
    // A snapshot's chunk size and its last chunk's length: a few at most.
    if known.len() >= 16 {
        known.remove(0);
    }
    known.push((len, h));
    h
}

/// How many chunk files may be held open at once: a quarter of the soft
/// limit on open files, at most [`MAX_FILES`].
fn file_budget() -> usize {
    use rustix::process::{Resource, getrlimit};
    let soft = getrlimit(Resource::Nofile).current.unwrap_or(MAX_FILES * 4);
    (soft / 4).min(MAX_FILES) as usize
}

impl ChunkStore {
    /// The chunks of `m` that can be mapped at their places in parts of
    /// `granularity` bytes (an executor's page size): those kept as plain
    /// files (format 2) whose place starts on a multiple of it, each
    /// distinct file opened once and its length checked against the
    /// manifest, mapped over their whole pages. Chunks that are missing or
    /// cannot be opened are left out: reading them names them. Empty in a
    /// store of format 1.
    pub fn mappable(&self, m: &Manifest, granularity: u64) -> Mappable {
        let n = m.chunks().len();
        let mut out = Mappable {
            files: vec![None; n],
            mapped: vec![0; n],
            ..Mappable::default()
        };
        if self.version < layout::PLAIN_CHUNKS_SINCE || granularity == 0 {
            return out;
        }
        let budget = file_budget();
        let mut open: HashMap<ChunkHash, Option<Arc<File>>> = HashMap::new();
        let mut there: HashMap<ChunkHash, bool> = HashMap::new();
        for (i, c) in m.chunks().iter().enumerate() {
            let offset = m.offset_of(i);
            if c.hash == zeros_hash(c.len) {
                // In place already, if its file is there at all (else the
                // read names it).
                let found = *there.entry(c.hash).or_insert_with(|| {
                    self.open_chunk(c)
                        .ok()
                        .and_then(|f| f.metadata().ok())
                        .is_some_and(|md| md.is_file())
                });
                if found {
                    out.mapped[i] = u64::from(c.len);
                    out.zeros = true;
                }
                continue;
            }
            let len = u64::from(c.len) / granularity * granularity;
            if !offset.is_multiple_of(granularity) || len == 0 {
                continue;
            }
            if !open.contains_key(&c.hash) {
                if open.len() >= budget {
                    continue;
                }
                let file = self.open_chunk(c).ok().filter(|f| {
                    f.metadata()
                        .is_ok_and(|md| md.is_file() && md.len() == u64::from(c.len))
                });
                open.insert(c.hash, file.map(Arc::new));
            }
            let Some(Some(file)) = open.get(&c.hash) else {
                continue;
            };
            out.parts.push(MapPart {
                fd: file.as_raw_fd(),
                offset,
                len,
            });
            out.files[i] = Some(file.clone());
            out.mapped[i] = len;
        }
        out
    }

    /// Reads every byte of `m` that `mappable` (this manifest's) does not
    /// map into its place in `out` (`m.len()` bytes, the mapped parts in
    /// place already and every other byte zero): the rest of a plain chunk
    /// from its open file, every other chunk but those of zeros as
    /// [`ChunkStore::read_into_with`] reads it. With
    /// [`Verify::EachChunk`] each chunk is hashed whole, its mapped bytes
    /// included.
    pub fn read_rest_into(
        &self,
        m: &Manifest,
        mappable: &Mappable,
        out: &mut [u8],
        verify: Verify,
    ) -> Result<()> {
        let have = |i: usize| {
            (
                mappable.mapped.get(i).copied().unwrap_or(0),
                mappable.files.get(i).and_then(Option::as_deref),
            )
        };
        self.read_places(m, out, verify, have)
    }
}
