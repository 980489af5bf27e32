//! A manifest: the chunk list that stands for one capture file.
//!
//! Its bytes (versions 1 and 2, the same layout; little-endian):
//!
//! ```text
//! offset       size  field
//! 0            8     magic "RPCHUNKS"
//! 8            4     format version, u32: the store's, 1 or 2
//! 12           8     total length in bytes, u64
//! 20           4     chunk size in bytes, u32
//! 24           4     chunk count N, u32
//! 28           36*N  per chunk: blake3 of its uncompressed bytes (32), its length (u32)
//! 28 + 36*N    32    blake3 of every byte before it
//! ```
//!
//! Chunks are fixed-size: every chunk but the last is the chunk size long,
//! the last holds the rest, so chunk `i` starts at `i * chunk_size` and
//! `N = ceil(total / chunk_size)`. A decoder checks each field against the
//! length of what holds it before anything is sized by it; what it accepts
//! it encodes again to the very same bytes.

use std::path::Path;

use crate::error::{ChunkHash, Error, ManifestError, Result, StoreProblem};

use super::layout::{FORMAT_VERSION, MAX_CHUNK_SIZE, MIN_CHUNK_SIZE, OLDEST_FORMAT_VERSION};

/// The first bytes of every manifest.
pub const MAGIC: [u8; 8] = *b"RPCHUNKS";
/// The header's length: magic, version, total length, chunk size, count.
pub const HEADER_LEN: usize = 28;
/// One chunk's entry: its hash and its length.
pub const ENTRY_LEN: usize = 36;
/// The checksum at the end.
pub const TRAILER_LEN: usize = 32;
/// The most bytes a manifest file may have (29 million chunks: 29 TiB of
/// capture at 1 MiB chunks), so that reading one is bounded.
pub const MAX_ENCODED_LEN: u64 = 1 << 30;

/// One chunk of a manifest: its name and its uncompressed length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkRef {
    /// The blake3 hash of its bytes.
    pub hash: ChunkHash,
    /// Its length in bytes: the chunk size, or less for the last chunk.
    pub len: u32,
}

/// The chunk list of one capture file: its length, the chunk size it was
/// cut at, and each chunk in order; and the store format's version it is
/// written in (the store's: a store of version 1 gets manifests of
/// version 1, which older readers read).
///
/// ```
/// use reprise_capture::chunks::Manifest;
/// let m = Manifest::cut(&[7u8; 10_000], 4096).unwrap();
/// assert_eq!((m.len(), m.chunks().len()), (10_000, 3));
/// assert_eq!(m.chunks()[2].len, 10_000 - 2 * 4096);
/// assert_eq!(m.chunks()[0].hash, m.chunks()[1].hash);
/// let bytes = m.encode();
/// assert_eq!(Manifest::decode(&bytes), Ok(m));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    version: u32,
    len: u64,
    chunk_size: u32,
    chunks: Vec<ChunkRef>,
}

impl Manifest {
    /// The manifest of `bytes` cut into chunks of `chunk_size` (hashing
    /// each, storing nothing): what [`super::ChunkStore::put`] stores.
    pub fn cut(bytes: &[u8], chunk_size: u32) -> Result<Self, ManifestError> {
        check_chunk_size(chunk_size)?;
        let chunks = bytes
            .chunks(chunk_size as usize)
            .map(|c| ChunkRef {
                hash: ChunkHash::of(c),
                len: c.len() as u32,
            })
            .collect();
        Self::new(bytes.len() as u64, chunk_size, chunks)
    }

    /// A manifest of `len` bytes in `chunks` of `chunk_size`, checked as
    /// [`Manifest::decode`] checks one, of the newest format version
    /// ([`Manifest::with_version`] gives another).
    pub fn new(len: u64, chunk_size: u32, chunks: Vec<ChunkRef>) -> Result<Self, ManifestError> {
        check_chunk_size(chunk_size)?;
        let count = u32::try_from(chunks.len()).map_err(|_| ManifestError::CountForLength {
            count: u32::MAX,
            total: len,
            chunk_size,
        })?;
        check_lengths(len, chunk_size, count, chunks.iter().map(|c| c.len))?;
        Ok(Manifest {
            version: FORMAT_VERSION,
            len,
            chunk_size,
            chunks,
        })
    }

    /// The same manifest in the store format's version `version` (a
    /// store's, [`super::ChunkStore::version`]); one this build does not
    /// write is refused.
    pub fn with_version(mut self, version: u32) -> Result<Self, ManifestError> {
        check_version(version)?;
        self.version = version;
        Ok(self)
    }

    /// The store format's version it is written in.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The length in bytes of the file it stands for.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it stands for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The chunk size it was cut at.
    pub fn chunk_size(&self) -> u32 {
        self.chunk_size
    }

    /// Its chunks, in order.
    pub fn chunks(&self) -> &[ChunkRef] {
        &self.chunks
    }

    /// Where chunk `index` starts in the file.
    pub fn offset_of(&self, index: usize) -> u64 {
        index as u64 * u64::from(self.chunk_size)
    }

    /// The length of its encoding.
    pub fn encoded_len(&self) -> usize {
        HEADER_LEN + ENTRY_LEN * self.chunks.len() + TRAILER_LEN
    }

    /// Its bytes (the module's layout).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.chunk_size.to_le_bytes());
        out.extend_from_slice(&(self.chunks.len() as u32).to_le_bytes());
        for c in &self.chunks {
            out.extend_from_slice(&c.hash.0);
            out.extend_from_slice(&c.len.to_le_bytes());
        }
        let sum = blake3::hash(&out);
        out.extend_from_slice(sum.as_bytes());
        out
    }

    /// Reads a manifest's bytes. Refuses, with what is wrong: anything
    /// shorter than a manifest or longer than [`MAX_ENCODED_LEN`], another
    /// magic or version, a count that does not fit the length, a checksum
    /// that does not match, a chunk size out of bounds, and lengths that do
    /// not add up. Nothing is allocated before the count is checked against
    /// the input's length.
    pub fn decode(bytes: &[u8]) -> Result<Self, ManifestError> {
        let len = bytes.len() as u64;
        let min = (HEADER_LEN + TRAILER_LEN) as u64;
        if len < min {
            return Err(ManifestError::Truncated { len, min });
        }
        let limit = MAX_ENCODED_LEN;
        if len > limit {
            return Err(ManifestError::TooLarge { len, limit });
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        if bytes[..8] != MAGIC {
            return Err(ManifestError::NotAManifest);
        }
        let version = u32_at(8);
        check_version(version)?;
        let total = u64::from_le_bytes(bytes[12..20].try_into().unwrap());
        let chunk_size = u32_at(20);
        let count = u32_at(24);
        let needs = min + ENTRY_LEN as u64 * u64::from(count);
        if needs != len {
            return Err(ManifestError::CountMismatch { count, needs, len });
        }
        let (body, sum) = bytes.split_at(bytes.len() - TRAILER_LEN);
        if blake3::hash(body).as_bytes() != sum {
            return Err(ManifestError::Checksum);
        }
        check_chunk_size(chunk_size)?;
        let entries = &body[HEADER_LEN..];
        let entry_len = |e: &[u8]| u32::from_le_bytes(e[32..36].try_into().unwrap());
        check_lengths(
            total,
            chunk_size,
            count,
            entries.chunks_exact(ENTRY_LEN).map(entry_len),
        )?;
        // `count` entries are in `bytes`: the allocation is bounded by the
        // input.
        let chunks = entries
            .chunks_exact(ENTRY_LEN)
            .map(|e| ChunkRef {
                hash: ChunkHash(e[..32].try_into().unwrap()),
                len: entry_len(e),
            })
            .collect();
        Ok(Manifest {
            version,
            len: total,
            chunk_size,
            chunks,
        })
    }

    /// Reads the manifest file at `path` (not through a symbolic link,
    /// without waiting on a FIFO planted there, a regular file of at most
    /// [`MAX_ENCODED_LEN`] bytes): errors name the file.
    pub fn read(path: &Path) -> Result<Self> {
        let file = super::fs::open_file(rustix::fs::CWD, path)
            .map_err(|e| Error::io(path, "open manifest", e))?;
        Self::read_file(file, path)
    }

    /// Reads the manifest in `file` (at most [`MAX_ENCODED_LEN`] bytes);
    /// errors name `path`.
    fn read_file(file: std::fs::File, path: &Path) -> Result<Self> {
        let limit = MAX_ENCODED_LEN;
        let bad = |e| Error::store(path, StoreProblem::Manifest(e));
        let too_large = |len| bad(ManifestError::TooLarge { len, limit });
        let bytes = super::fs::read_file_bounded(file, limit, path, "read manifest", too_large)?;
        Self::decode(&bytes).map_err(bad)
    }

    /// Reads every manifest of the capture directory `dir` (open as
    /// `dir_fd`) into `f`. Names are taken as bytes: a capture's name need
    /// not be UTF-8, and its manifest names chunks all the same. A manifest
    /// removed since the listing, or a link (no manifest of the store's),
    /// is passed over.
    pub(super) fn each_in(
        dir: &Path,
        dir_fd: &std::os::fd::OwnedFd,
        mut f: impl FnMut(Manifest),
    ) -> Result<()> {
        use rustix::{fs::FileType, io::Errno};
        use std::os::unix::ffi::OsStrExt as _;
        for (name, kind) in super::fs::names(dir_fd).map_err(|e| Error::io(dir, "list", e))? {
            if !super::layout::is_manifest_name(&name)
                || !matches!(kind, FileType::RegularFile | FileType::Unknown)
            {
                continue;
            }
            let name = std::ffi::OsStr::from_bytes(&name);
            let path = dir.join(name);
            let file = match super::fs::open_file(dir_fd, name) {
                Ok(f) => f,
                Err(e) if matches!(Errno::from_io_error(&e), Some(Errno::NOENT | Errno::LOOP)) => {
                    continue;
                }
                Err(e) => return Err(Error::io(&path, "open manifest", e)),
            };
            f(Self::read_file(file, &path)?);
        }
        Ok(())
    }
}

fn check_version(found: u32) -> Result<(), ManifestError> {
    let supported = FORMAT_VERSION;
    let refused = ManifestError::UnsupportedVersion { found, supported };
    (OLDEST_FORMAT_VERSION..=supported)
        .contains(&found)
        .then_some(())
        .ok_or(refused)
}

fn check_chunk_size(found: u32) -> Result<(), ManifestError> {
    let (min, max) = (MIN_CHUNK_SIZE, MAX_CHUNK_SIZE);
    let refused = ManifestError::ChunkSize { found, min, max };
    (min..=max).contains(&found).then_some(()).ok_or(refused)
}

/// Whether `count` chunks of these `lens` hold `total` bytes cut at
/// `chunk_size`: all but the last whole, the last the rest.
fn check_lengths(
    total: u64,
    chunk_size: u32,
    count: u32,
    lens: impl Iterator<Item = u32>,
) -> Result<(), ManifestError> {
    let cs = u64::from(chunk_size);
    if u64::from(count) != total.div_ceil(cs) {
        return Err(ManifestError::CountForLength {
            count,
            total,
            chunk_size,
        });
    }
    if usize::try_from(total).is_err() {
        return Err(ManifestError::TotalTooLarge { total });
    }
    for (index, found) in (0u32..).zip(lens) {
        let expected = if index + 1 < count {
            chunk_size
        } else {
            // The rest: 1..=chunk_size bytes, as count = ceil(total / cs).
            (total - u64::from(index) * cs) as u32
        };
        if found != expected {
            return Err(ManifestError::ChunkLength {
                index,
                found,
                expected,
            });
        }
    }
    Ok(())
}
