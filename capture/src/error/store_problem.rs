//! What can be wrong with the chunk store ([`Error::Store`]): its `VERSION`
//! file, a manifest, a chunk. Each kind is a variant carrying what was found
//! as typed fields, with its text for people in its `#[error]` attribute; and the name by
//! which every problem names a chunk, [`ChunkHash`].
//!
//! The types live here, beside the error that carries them, so that the
//! store (`crate::chunks`, which re-exports them) depends on the errors and
//! not the other way round.

use std::fmt;
use std::path::PathBuf;

use super::Error;

/// A chunk's name: the blake3 hash of its uncompressed bytes, shown (and
/// named on disk) as 64 lowercase hexadecimal digits.
///
/// ```
/// use reprise_capture::chunks::ChunkHash;
/// let h = ChunkHash::of(b"");
/// let hex = h.to_string();
/// assert_eq!(hex, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262");
/// assert_eq!(ChunkHash::from_hex(&hex), Some(h));
/// assert_eq!(ChunkHash::from_hex("AF13"), None);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChunkHash(pub [u8; 32]);

impl ChunkHash {
    /// The hash of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        ChunkHash(*blake3::hash(bytes).as_bytes())
    }

    /// The hash that `text` spells: exactly 64 lowercase hexadecimal digits
    /// (a chunk file's name), or `None`.
    pub fn from_hex(text: &str) -> Option<Self> {
        let text = text.as_bytes();
        if text.len() != 64 {
            return None;
        }
        let digit = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        let mut out = [0u8; 32];
        for (o, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
            *o = digit(pair[0])? << 4 | digit(pair[1])?;
        }
        Some(ChunkHash(out))
    }

    /// The 64 hexadecimal digits, as bytes (what `Display` writes).
    pub fn hex(&self) -> [u8; 64] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 64];
        for (pair, b) in out.chunks_exact_mut(2).zip(self.0) {
            pair[0] = DIGITS[usize::from(b >> 4)];
            pair[1] = DIGITS[usize::from(b & 15)];
        }
        out
    }
}

impl fmt::Display for ChunkHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = self.hex();
        // Hexadecimal digits are ASCII.
        f.write_str(std::str::from_utf8(&hex).unwrap_or_default())
    }
}

impl fmt::Debug for ChunkHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ChunkHash({self})")
    }
}

/// What is wrong with a manifest's bytes
/// (`reprise_capture::chunks::Manifest::decode`). Every field of a manifest is
/// checked against the length of what holds it before anything is sized by
/// it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// Shorter than the smallest manifest (a header and a checksum, no
    /// chunks).
    #[error("manifest is {len} bytes, shorter than any manifest ({min} bytes at least): truncated")]
    Truncated {
        /// Its length in bytes.
        len: u64,
        /// The smallest manifest's.
        min: u64,
    },
    /// Longer than any manifest that is read.
    #[error("manifest is {len} bytes, more than any manifest ({limit} bytes at most)")]
    TooLarge {
        /// Its length in bytes.
        len: u64,
        /// The most a manifest may have.
        limit: u64,
    },
    /// It does not start with a manifest's magic bytes: it is no manifest.
    #[error("is no chunk manifest (its magic bytes are wrong)")]
    NotAManifest,
    /// A manifest of a format version this build does not read.
    #[error("manifest of format version {found}; this build reads versions 1 to {supported}")]
    UnsupportedVersion {
        /// The version it says.
        found: u32,
        /// The newest version this build reads (it reads every one from
        /// 1).
        supported: u32,
    },
    /// The header's chunk count does not fit the manifest's length (a
    /// lying count, or a truncated or padded manifest).
    #[error(
        "manifest header says {count} chunks, which take {needs} bytes, but the manifest is \
         {len} bytes (a lying count, or a truncated file)"
    )]
    CountMismatch {
        /// The count the header says.
        count: u32,
        /// The length in bytes a manifest of that many chunks has.
        needs: u64,
        /// The length it has.
        len: u64,
    },
    /// The checksum at its end does not match the bytes before it (a
    /// damaged manifest).
    #[error("manifest checksum does not match its contents (the manifest is damaged)")]
    Checksum,
    /// A chunk size outside the bounds any store uses.
    #[error("manifest chunk size {found} is outside [{min}, {max}]")]
    ChunkSize {
        /// The chunk size it says.
        found: u32,
        /// The smallest chunk size.
        min: u32,
        /// The largest.
        max: u32,
    },
    /// The chunk count is not the one its total length takes at its chunk
    /// size (a lying length or count).
    #[error(
        "manifest says {total} bytes in {count} chunks of {chunk_size} bytes, which take {} \
         chunks (a lying length or count)",
        total.div_ceil(u64::from(*chunk_size))
    )]
    CountForLength {
        /// The count it says.
        count: u32,
        /// The total length it says.
        total: u64,
        /// Its chunk size.
        chunk_size: u32,
    },
    /// A chunk's length is not the one its place takes: every chunk but the
    /// last is a whole chunk size, the last holds the rest.
    #[error(
        "manifest chunk {index} says {found} bytes where its place takes {expected} (a lying \
         length)"
    )]
    ChunkLength {
        /// The chunk's place in the manifest, from 0.
        index: u32,
        /// The length it says.
        found: u32,
        /// The length its place takes.
        expected: u32,
    },
    /// The total length does not fit this machine's address space.
    #[error("manifest says {total} bytes, more than this machine's address space")]
    TotalTooLarge {
        /// The total length it says.
        total: u64,
    },
}

/// What is wrong with one chunk a manifest names.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ChunkFault {
    /// The store has no file for it.
    #[error("is missing from the store")]
    Missing,
    /// Something other than a regular file is at its name (a link, a
    /// directory).
    #[error("is not a regular file")]
    NotRegular,
    /// Its file could not be opened or read.
    #[error("cannot be read: {kind}")]
    Unreadable {
        /// What the operating system said.
        kind: std::io::ErrorKind,
    },
    /// Its file is larger than any compression of its length can be.
    #[error(
        "is {len} bytes compressed, more than any compression of it ({limit} bytes at most): \
         damaged"
    )]
    TooLarge {
        /// The file's length.
        len: u64,
        /// The most a compressed chunk of its length takes.
        limit: u64,
    },
    /// Its file is shorter than any file of the chunk can be (an empty
    /// file, say): neither its plain bytes nor a zstd frame of them.
    #[error("is {len} bytes, shorter than any file of it can be ({least} bytes at least): damaged")]
    TooShort {
        /// The file's length.
        len: u64,
        /// The least a file of the chunk takes.
        least: u64,
    },
    /// Its file is no zstd data, or damaged zstd data, or holds more than
    /// the chunk's length.
    #[error("does not decompress (damaged)")]
    Undecompressible,
    /// It decompresses to another length than the manifest's.
    #[error("decompresses to {found} bytes where the manifest says {expected} (damaged)")]
    WrongLength {
        /// The length it decompresses to (or says it does).
        found: u64,
        /// The manifest's.
        expected: u32,
    },
    /// It decompresses to bytes of another hash than its name (damaged, or
    /// not the chunk it is named for).
    #[error("holds bytes whose hash is {found}, not its name (damaged)")]
    HashMismatch {
        /// The hash of what it holds.
        found: ChunkHash,
    },
}

/// One chunk of a manifest that cannot be read back, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("chunk {index} ({hash}) {fault}")]
pub struct ChunkProblem {
    /// Its place in the manifest, from 0 (the first place, when the manifest
    /// names it more than once).
    pub index: u32,
    /// Its name.
    pub hash: ChunkHash,
    /// What is wrong.
    pub fault: ChunkFault,
}

/// What is wrong with a store's `VERSION` file.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionProblem {
    /// The store's directory has no `VERSION` file.
    #[error("the chunk store has no VERSION file (damaged store)")]
    Missing,
    /// Larger than any `VERSION` file.
    #[error("VERSION is {len} bytes, more than any ({limit} bytes at most)")]
    TooLarge {
        /// Its length.
        len: u64,
        /// The most it may have.
        limit: u64,
    },
    /// Its first line is not the store format's name and a version.
    #[error("VERSION does not start with `reprise-chunk-store VERSION`")]
    NotAStore,
    /// A version of the store format this build does not read.
    #[error(
        "chunk store of format version {}; this build reads versions 1 to {supported}",
        found.escape_debug()
    )]
    UnsupportedVersion {
        /// The version it says, as written.
        found: String,
        /// The newest version this build reads (it reads every one from
        /// 1).
        supported: u32,
    },
    /// A setting this build cannot use (a hash other than blake3, a
    /// compression other than zstd).
    #[error("VERSION says {key} {}, which this build cannot use", found.escape_debug())]
    Unsupported {
        /// The setting's key.
        key: &'static str,
        /// Its value, as written.
        found: String,
    },
    /// A chunk size that is no number within the bounds.
    #[error(
        "VERSION says chunk-size {}, not a number within [{min}, {max}]",
        found.escape_debug()
    )]
    BadChunkSize {
        /// The value, as written.
        found: String,
        /// The smallest chunk size.
        min: u32,
        /// The largest.
        max: u32,
    },
    /// A setting it must have and does not.
    #[error("VERSION has no {key} line")]
    MissingKey {
        /// The key.
        key: &'static str,
    },
    /// A line that is no setting of this version.
    #[error(
        "VERSION has a line this format version does not know: {}",
        line.escape_debug()
    )]
    UnknownLine {
        /// The line, as written.
        line: String,
    },
}

/// What is wrong with the chunk store or a capture in it: the `problem` of
/// an [`Error::Store`] (see [`Error::store_problem`]).
///
/// ```
/// use reprise_capture::chunks::{ChunkFault, ChunkHash, ChunkProblem, StoreProblem};
/// use reprise_capture::Error;
/// let hash = ChunkHash::of(b"x");
/// let e = Error::store(
///     "d/.reprise-store/chunks/ab/ab12",
///     StoreProblem::Chunk(ChunkProblem { index: 3, hash, fault: ChunkFault::Missing }),
/// );
/// assert!(e.to_string().contains(&hash.to_string()));
/// assert!(matches!(
///     e.store_problem(),
///     Some(StoreProblem::Chunk(ChunkProblem { fault: ChunkFault::Missing, .. }))
/// ));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreProblem {
    /// The store's `VERSION` file is missing, malformed or of another
    /// version.
    #[error("{0}")]
    Version(VersionProblem),
    /// A manifest is malformed.
    #[error("{0}")]
    Manifest(#[source] ManifestError),
    /// A chunk a manifest names cannot be read back.
    #[error("{0}")]
    Chunk(#[source] ChunkProblem),
    /// A store opened for reading was asked to write.
    #[error("the chunk store was opened for reading, not for writing")]
    ReadOnly,
    /// A buffer to read a manifest's bytes into is not the manifest's
    /// length.
    #[error("a manifest of {manifest} bytes read into a buffer of {buffer} bytes")]
    BufferLength {
        /// The manifest's length.
        manifest: u64,
        /// The buffer's.
        buffer: u64,
    },
    /// A capture cannot be exported to the format asked for as that
    /// format's own recorder would have written it (`reprise export`).
    #[error("cannot be exported exactly: {0}")]
    Export(ExportProblem),
    /// Something other than the chunk (a directory, a link, a FIFO, a
    /// damaged file) was at the chunk's name each time the writer moved
    /// it aside to store the chunk: another process keeps putting it
    /// there, and the chunk is not stored.
    #[error(
        "something other than the chunk was at its name each of the {tries} times it was moved \
         aside (another process keeps putting it there): the chunk is not stored"
    )]
    Occupied {
        /// How many times it was found there.
        tries: u32,
    },
    /// A file moved into the store reads back from it as other bytes
    /// than the file holds (`reprise import`): the file is kept.
    #[error(
        "reads back from the store as other bytes than {} holds: that file is kept",
        raw.display()
    )]
    ReadBackDiffers {
        /// The file.
        raw: PathBuf,
    },
}

/// Why a capture has no exact form in the format it was to be exported to
/// (`reprise_capture::transfer::export`): LLVM's formats cannot say everything
/// reprise's does, and LLVM 16 saved less than the others need.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExportProblem {
    /// A grid or block with more than one dimension: LLVM records teams
    /// and threads per team as single numbers.
    #[error(
        "the launch has a {}x{}x{} grid of {}x{}x{} blocks; LLVM records teams and threads in \
         one dimension",
        grid[0], grid[1], grid[2], block[0], block[1], block[2]
    )]
    Dimensions {
        /// The grid.
        grid: [u32; 3],
        /// The block.
        block: [u32; 3],
    },
    /// An argument that is not an 8-byte slot: LLVM passes every argument
    /// as one.
    #[error("argument {index} is {size} bytes; LLVM passes every argument in an 8-byte slot")]
    ArgumentSize {
        /// The argument.
        index: usize,
        /// Its size in bytes.
        size: u32,
    },
    /// Memory beyond the region (managed or host memory the kernel
    /// reached), which LLVM's formats have no place for.
    #[error(
        "the capture holds {count} range(s) of memory beyond the region ({class} at \
         {addr:#x}, ...), which LLVM's formats have no place for"
    )]
    BeyondRegion {
        /// How many ranges.
        count: usize,
        /// The first range's class, as people call it.
        class: &'static str,
        /// Its address.
        addr: u64,
    },
    /// Dynamic shared memory, which LLVM legacy does not record.
    #[error(
        "the launch uses {bytes} bytes of dynamic shared memory, which LLVM legacy's format \
         does not record"
    )]
    SharedMemory {
        /// Its bytes.
        bytes: u32,
    },
    /// A file the target format always has is missing from the capture
    /// (LLVM 16 saves no image and no globals).
    #[error(
        "the capture has no {role} ({} is missing), and the format always has one",
        path.display()
    )]
    Missing {
        /// Its role: "device image", "globals file".
        role: &'static str,
        /// The file looked for.
        path: PathBuf,
    },
    /// The descriptor cannot be written in the target's key set.
    #[error("the descriptor cannot be written: {0}")]
    Descriptor(reprise_core::record::RecordError),
    /// The capture's globals file cannot be read in its own layout.
    #[error("the globals file cannot be read: {0}")]
    GlobalsUnreadable(reprise_core::globals::DecodeError),
    /// The globals cannot be written in the target's layout.
    #[error("the globals cannot be written in the format's layout: {0}")]
    Globals(reprise_core::globals::EncodeError<core::convert::Infallible>),
    /// LLVM legacy names a capture's files after its kernel, and this
    /// kernel's name is no file name.
    #[error("LLVM legacy names a capture's files after its kernel, and {name:?} is no file name")]
    KernelName {
        /// The kernel's name.
        name: String,
    },
    /// A file of that name is in the target directory already: export
    /// never replaces a file.
    #[error("{} exists already (export never replaces a file)", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
}

impl Error {
    /// A problem of the chunk store at `path` (the store, a manifest, a
    /// chunk file).
    pub fn store(path: impl Into<PathBuf>, problem: StoreProblem) -> Self {
        Error::Store {
            path: path.into(),
            problem,
        }
    }

    /// What is wrong with the store, when the error is an
    /// [`Error::Store`].
    pub fn store_problem(&self) -> Option<&StoreProblem> {
        match self {
            Error::Store { problem, .. } => Some(problem),
            _ => None,
        }
    }
}
