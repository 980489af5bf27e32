//! Where the store keeps what, and its `VERSION` file (`docs/store.md`
//! describes the layout):
//!
//! ```text
//! D/STEM.record_input.chunks          a manifest: the raw file's name + .chunks
//! D/.reprise-store/VERSION            format name and version, hash, compression, chunk size
//! D/.reprise-store/chunks/XX/HASH     a chunk whose bytes' blake3 is HASH: zstd of them,
//!                                     or (format 2) the bytes themselves
//! D/.reprise-store/tmp/               writes in progress, pins, gc's removals
//! D/.reprise-store/gc.lock            held by a running gc
//! ```

use std::path::{Path, PathBuf};

use crate::error::{ChunkHash, VersionProblem};

/// The store's directory, inside the capture directory.
pub const STORE_DIR: &str = ".reprise-store";
/// The file naming the store's format, inside [`STORE_DIR`].
pub const VERSION_FILE: &str = "VERSION";
/// The chunks' directory, inside [`STORE_DIR`].
pub const CHUNKS_DIR: &str = "chunks";
/// Writes in progress, inside [`STORE_DIR`].
pub const TMP_DIR: &str = "tmp";
/// The file a running gc holds locked, inside [`STORE_DIR`].
pub const GC_LOCK: &str = "gc.lock";
/// What a manifest's name adds to the name of the raw file it stands for.
pub const MANIFEST_SUFFIX: &str = ".chunks";

/// The format's name, the first word of `VERSION`.
pub const FORMAT_NAME: &str = "reprise-chunk-store";
/// The store format's version that new stores are written in (of the
/// layout and of the manifests): 2, where a chunk that hardly compresses is
/// a plain file of its bytes. A store keeps the version it was made with:
/// one of version 1 is read and written as version 1.
pub const FORMAT_VERSION: u32 = 2;
/// The oldest version this build reads (and writes, into a store of it).
pub const OLDEST_FORMAT_VERSION: u32 = 1;
/// The version in which a chunk may be a plain file of its bytes.
pub const PLAIN_CHUNKS_SINCE: u32 = 2;
/// The hash that names chunks.
pub const HASH: &str = "blake3";
/// The compression of chunk files.
pub const COMPRESSION: &str = "zstd";

/// The chunk size of a new store: 2 MiB (`docs/store.md`, "Why 2 MiB").
pub const DEFAULT_CHUNK_SIZE: u32 = 2 << 20;
/// The smallest chunk size a store or manifest may have.
pub const MIN_CHUNK_SIZE: u32 = 4 << 10;
/// The largest.
pub const MAX_CHUNK_SIZE: u32 = 64 << 20;
/// The zstd level new chunks are compressed at (`docs/store.md`, "Why zstd
/// level 1").
pub const DEFAULT_LEVEL: i32 = 1;

/// A compressed chunk is kept only when it saves at least this share of
/// its bytes (1/`KEEP_COMPRESSED_BELOW`); otherwise the chunk is written,
/// in format 2, as a plain file of exactly its bytes (which a replay on
/// the host maps), and in format 1 as a zstd frame of raw blocks
/// ([`raw_frame`]), which any zstd decoder reads back at the speed of a
/// copy: decompressing what hardly compresses costs more than it saves
/// (`docs/store.md`).
///
/// So a chunk file's length tells what it is: a compressed frame is kept
/// only when shorter than 7/8 of the chunk (and a frame is never shorter
/// than 9 bytes, longer than any chunk under 8 bytes), a raw frame is
/// longer than the chunk, and a plain file is exactly the chunk's length.
pub const KEEP_COMPRESSED_BELOW: usize = 8;

/// The length of the pieces of a new chunk the writer compresses first,
/// at its start and its end, to find a stretch that compresses well (zeros,
/// sparse data): 16 KiB.
pub const SAMPLE_LEN: usize = 16 << 10;

/// What one of those pieces must save for the chunk to be compressed
/// whole: half its bytes (1/`SAMPLE_SAVES_BELOW`). A piece this small
/// compresses better than the chunk would (its own literal table fitted
/// to 16 KiB), so it takes a piece that compresses far better to say
/// anything of the whole (`docs/store.md`, "Sampling").
pub const SAMPLE_SAVES_BELOW: usize = 2;

/// The length of the piece from the chunk's middle that stands for the
/// whole: one zstd block (128 KiB, the largest a frame holds), compressed
/// as a frame of one block. It saves slightly less than the chunk would
/// (no window of earlier blocks), so a chunk it says no to is kept plain
/// at a small cost in size, never in correctness.
pub const BLOCK_SAMPLE_LEN: usize = ZSTD_MAX_BLOCK;

/// The largest block a zstd frame may hold (RFC 8878, 3.1.1.2.3).
const ZSTD_MAX_BLOCK: usize = 128 << 10;

/// The length of [`raw_frame`] of `len` bytes.
pub fn raw_frame_len(len: usize) -> usize {
    len + 13 + 3 * len.div_ceil(ZSTD_MAX_BLOCK).max(1)
}

/// Reads the [`raw_frame`] of `place.len()` bytes from `file` straight
/// into `place` (no copy through a buffer), in one `preadv` whose vectors
/// put each block's bytes in their place and its 3-byte header aside:
/// `Ok(false)` when the file's framing is not exactly that (another frame,
/// or one read short), and then `place` holds nothing to trust.
pub(super) fn read_raw_frame(file: &std::fs::File, place: &mut [u8]) -> std::io::Result<bool> {
    use std::io::IoSliceMut;
    if place.is_empty() {
        return Ok(false);
    }
    let mut want = [0u8; 13];
    want[..4].copy_from_slice(&0xFD2F_B528u32.to_le_bytes());
    want[4] = 0xE0;
    want[5..].copy_from_slice(&(place.len() as u64).to_le_bytes());
    let blocks = place.len().div_ceil(ZSTD_MAX_BLOCK);
    let lens: Vec<usize> = place.chunks(ZSTD_MAX_BLOCK).map(<[u8]>::len).collect();
    let mut header = [0u8; 13];
    let mut block_headers = vec![[0u8; 3]; blocks];
    let total = raw_frame_len(place.len());
    let got = {
        let mut bufs = Vec::with_capacity(1 + 2 * blocks);
        bufs.push(IoSliceMut::new(&mut header));
        for (bh, b) in block_headers
            .iter_mut()
            .zip(place.chunks_mut(ZSTD_MAX_BLOCK))
        {
            bufs.push(IoSliceMut::new(bh));
            bufs.push(IoSliceMut::new(b));
        }
        rustix::io::preadv(file, &mut bufs, 0)?
    };
    if got != total || header != want {
        return Ok(false);
    }
    for (i, (bh, len)) in block_headers.iter().zip(lens).enumerate() {
        let last = u32::from(i + 1 == blocks);
        if bh[..] != (last | ((len as u32) << 3)).to_le_bytes()[..3] {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Appends to `out` a zstd frame (RFC 8878, 3.1.1) holding `data` in raw
/// blocks: magic number, a single-segment frame header with the 8-byte
/// content size, and `Raw_Block`s of at most 128 KiB, the last one marked.
/// No checksum (the chunk's name is its hash). It is what zstd itself
/// writes for bytes it cannot compress: how a store of format 1 keeps a
/// chunk that hardly compresses.
pub fn raw_frame(data: &[u8], out: &mut Vec<u8>) {
    out.reserve(raw_frame_len(data.len()));
    out.extend_from_slice(&0xFD2F_B528u32.to_le_bytes());
    // Frame_Header_Descriptor: FCS field 8 bytes (3 << 6), single segment
    // (1 << 5), no checksum, no dictionary.
    out.push(0xE0);
    out.extend_from_slice(&(data.len() as u64).to_le_bytes());
    let mut blocks = data.chunks(ZSTD_MAX_BLOCK).peekable();
    if blocks.peek().is_none() {
        // One empty last block.
        out.extend_from_slice(&[1, 0, 0]);
    }
    while let Some(b) = blocks.next() {
        let last = u32::from(blocks.peek().is_none());
        // Block_Header: Last_Block (bit 0), Block_Type 0 = Raw (bits 1-2),
        // Block_Size (bits 3-23).
        let header = last | ((b.len() as u32) << 3);
        out.extend_from_slice(&header.to_le_bytes()[..3]);
        out.extend_from_slice(b);
    }
}

/// The most bytes a `VERSION` file may have.
pub(super) const MAX_VERSION_LEN: u64 = 4096;

/// Names of files in `tmp/`, by what they are.
pub(super) mod tmp {
    /// A chunk being written (then linked to its name):
    /// `chunk.PIN_ID.RANDOM`, after the pin (`pin.PIN_ID`) it is written
    /// under.
    pub const CHUNK: &str = "chunk.";
    /// A `VERSION` being written.
    pub const VERSION: &str = "version.";
    /// A pin being made (then renamed to [`PIN`]).
    pub const NEW_PIN: &str = "new.";
    /// A pin: the hashes of a put in progress, locked while its writer lives.
    pub const PIN: &str = "pin.";
    /// A chunk gc is removing (`gc.HASH.RANDOM`).
    pub const DOOMED: &str = "gc.";
    /// gc's start marker, whose time is gc's start.
    pub const START: &str = "start.";
    /// Something that was at a chunk's name and was not the chunk (a
    /// directory, a link, a FIFO, a damaged file), moved aside by a writer
    /// that then stored the chunk: `displaced.RANDOM`. The writer removes
    /// it at once, but for a directory with anything in it, which gc
    /// removes.
    pub const DISPLACED: &str = "displaced.";
}

/// The manifest's path of the raw capture file `raw`: its name plus
/// [`MANIFEST_SUFFIX`].
///
/// ```
/// use std::path::Path;
/// use reprise_capture::chunks::layout::manifest_path;
/// assert_eq!(
///     manifest_path(Path::new("d/k-1-0.record_input")),
///     Path::new("d/k-1-0.record_input.chunks")
/// );
/// ```
pub fn manifest_path(raw: &Path) -> PathBuf {
    let mut name = raw.as_os_str().to_owned();
    name.push(MANIFEST_SUFFIX);
    PathBuf::from(name)
}

/// Whether a file of the capture directory named `name` is a manifest:
/// it ends with [`MANIFEST_SUFFIX`] after a name of its own, and is not
/// hidden (temporary files of interrupted writes are).
pub fn is_manifest_name(name: &[u8]) -> bool {
    name.len() > MANIFEST_SUFFIX.len()
        && name.ends_with(MANIFEST_SUFFIX.as_bytes())
        && !name.starts_with(b".")
}

/// A chunk's directory inside `chunks/`: the first two digits of its name.
pub(super) fn prefix(hex: &[u8; 64]) -> &str {
    std::str::from_utf8(&hex[..2]).unwrap_or("00")
}

/// A chunk's path relative to [`STORE_DIR`] (`chunks/XX/HASH`), for
/// messages.
pub fn chunk_path(hash: &ChunkHash) -> PathBuf {
    let hex = hash.to_string();
    Path::new(CHUNKS_DIR).join(&hex[..2]).join(hex)
}

/// The contents of a store's `VERSION` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreVersion {
    /// The store format's version ([`OLDEST_FORMAT_VERSION`] to
    /// [`FORMAT_VERSION`]).
    pub version: u32,
    /// The size of the chunks its writers cut.
    pub chunk_size: u32,
}

impl StoreVersion {
    /// The file's text:
    ///
    /// ```text
    /// reprise-chunk-store 2
    /// hash blake3
    /// compression zstd
    /// chunk-size 1048576
    /// ```
    pub fn to_text(self) -> String {
        format!(
            "{FORMAT_NAME} {}\nhash {HASH}\ncompression {COMPRESSION}\nchunk-size {}\n",
            self.version, self.chunk_size
        )
    }

    /// Reads the file's text: the first line is the format's name and a
    /// version this build reads (1 or 2), then `hash blake3`, `compression zstd` and `chunk-size N`
    /// in any order, each once; empty lines are allowed, nothing else.
    pub fn parse(text: &[u8]) -> Result<Self, VersionProblem> {
        let text = std::str::from_utf8(text).map_err(|_| VersionProblem::NotAStore)?;
        let mut lines = text.lines();
        let first = lines.next().unwrap_or("");
        let version = first
            .strip_prefix(FORMAT_NAME)
            .and_then(|v| v.strip_prefix(' '))
            .ok_or(VersionProblem::NotAStore)?;
        let (found, supported) = (version.to_string(), FORMAT_VERSION);
        let version = version
            .parse::<u32>()
            .ok()
            // The digits as written: `02` is no version.
            .filter(|v| v.to_string() == found)
            .filter(|v| (OLDEST_FORMAT_VERSION..=supported).contains(v))
            .ok_or(VersionProblem::UnsupportedVersion { found, supported })?;
        let (mut hash, mut compression, mut chunk_size) = (None, None, None);
        for line in lines.filter(|l| !l.trim().is_empty()) {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            let slot = match key {
                "hash" => Some(&mut hash),
                "compression" => Some(&mut compression),
                "chunk-size" => Some(&mut chunk_size),
                _ => None,
            };
            // A key this version does not know, or one given twice.
            if slot.is_none_or(|slot| slot.replace(value).is_some()) {
                let line = line.to_string();
                return Err(VersionProblem::UnknownLine { line });
            }
        }
        for (key, value, want) in [
            ("hash", hash, HASH),
            ("compression", compression, COMPRESSION),
        ] {
            let found = value.ok_or(VersionProblem::MissingKey { key })?;
            if found != want {
                let found = found.to_string();
                return Err(VersionProblem::Unsupported { key, found });
            }
        }
        let found = chunk_size.ok_or(VersionProblem::MissingKey { key: "chunk-size" })?;
        let chunk_size = found
            .parse::<u32>()
            .ok()
            .filter(|n| (MIN_CHUNK_SIZE..=MAX_CHUNK_SIZE).contains(n))
            .ok_or_else(|| VersionProblem::BadChunkSize {
                found: found.to_string(),
                min: MIN_CHUNK_SIZE,
                max: MAX_CHUNK_SIZE,
            })?;
        Ok(StoreVersion {
            version,
            chunk_size,
        })
    }
}

/// Whether `name` is a chunk directory's: two lowercase hexadecimal digits.
pub(super) fn is_prefix(name: &str) -> bool {
    name.len() == 2 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}
