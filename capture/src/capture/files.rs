//! Opening a capture's files as files from someone else's run deserve:
//! regular files only, never blocking on a FIFO, never reading more than a
//! file's role allows. (Snapshots, the large files, are never read whole
//! here: the executor maps them, or reads them into its own buffers; a
//! store snapshot's plain chunk files are mapped where the executor maps
//! parts of a buffer, the other chunks decompressed around them.)
//!
//! Every file is opened non-blocking (so a FIFO or a device opens at once
//! instead of waiting for a writer) and checked with `fstat` on the open
//! descriptor (so what is checked is what is read, even if the path is
//! swapped meanwhile). A file larger than its role allows is an error that
//! names the bound before a byte is read, and an allocation that fails is
//! an error, not an abort.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use reprise_core::exec::{Executor, MapFile, RegionRequest};
use reprise_core::record::{Checksummer, KernelRecord};

use crate::chunks::{ChunkStore, Gaps, Manifest, Mappable, Verify};
use crate::error::{CaptureProblem, Error, Result};

use super::open::{DESCRIPTOR_LIMIT, open_regular, read_bounded};
use super::stored;

/// Reads a descriptor, refusing what is not a regular file and files larger
/// than [`DESCRIPTOR_LIMIT`], and one of a capture's other files, by name,
/// with the descriptor to pass instead.
pub fn read_descriptor(path: &Path) -> Result<Box<KernelRecord>> {
    if let Some(e) = not_a_descriptor(path) {
        return Err(e);
    }
    let text = read_bounded(path, "descriptor", DESCRIPTOR_LIMIT)?.ok_or_else(|| {
        Error::io(
            path,
            "open",
            std::io::Error::from(std::io::ErrorKind::NotFound),
        )
    })?;
    KernelRecord::from_json(&text)
        .map(Box::new)
        .map_err(|source| Error::Descriptor {
            path: path.to_path_buf(),
            source,
        })
}

/// The error for a path that names one of a capture's data files (its
/// snapshots, globals or image) where its descriptor belongs.
fn not_a_descriptor(path: &Path) -> Option<Error> {
    const ROLES: [(&str, &str); 9] = [
        ("original.output", "recorded output"),
        ("replay.output", "saved replay output"),
        ("record_output", "recorded output"),
        ("replay_output", "saved replay output"),
        ("record_input", "memory snapshot"),
        ("memory", "memory snapshot"),
        ("globals", "globals file"),
        ("image", "device image"),
        ("bc", "device image (LLVM bitcode)"),
    ];
    let name = path.file_name()?.to_string_lossy().into_owned();
    let (ext, role) = ROLES
        .iter()
        .find(|(ext, _)| name.len() > ext.len() + 1 && name.ends_with(&format!(".{ext}")))?;
    let stem = &name[..name.len() - ext.len() - 1];
    let descriptor = path.with_file_name(format!("{stem}.json"));
    Some(Error::capture(
        path,
        CaptureProblem::NotADescriptor {
            role,
            descriptor_exists: descriptor.exists(),
            descriptor,
        },
    ))
}

/// The first `max` bytes of the regular file at `path` (fewer if it is
/// shorter); `None` when it is missing or is not a regular file.
pub fn head(path: &Path, max: u64) -> Option<Vec<u8>> {
    let (file, _) = open_regular(path).ok()??;
    let mut out = Vec::new();
    file.take(max).read_to_end(&mut out).ok()?;
    Some(out)
}

/// Where an open snapshot's bytes are.
#[derive(Debug)]
pub enum SnapshotSource {
    /// A raw file, open.
    File(File),
    /// Chunks of the directory's store, as a manifest names them.
    Chunked {
        /// The manifest.
        manifest: Manifest,
        /// The store holding its chunks.
        store: Arc<ChunkStore>,
    },
}

/// An open snapshot: a raw file, or a manifest of the directory's chunk
/// store standing for one.
#[derive(Debug)]
pub struct SnapshotFile {
    /// Its path (the manifest's, for a chunked snapshot).
    pub path: PathBuf,
    /// Where its bytes are.
    pub source: SnapshotSource,
    /// Its length in bytes (the length a manifest stands for).
    pub len: u64,
    /// The plain chunk files a region was mapped from
    /// ([`SnapshotFile::reserve_mapped`]), open, for the buffer read next
    /// to map again rather than open them again.
    mapped: std::sync::Mutex<Option<Mappable>>,
}

impl SnapshotFile {
    /// Opens the regular file at `path`, or where it is missing the
    /// manifest standing for it (`path` with `.chunks` added) and the
    /// directory's chunk store; `Ok(None)` when there is neither.
    pub fn open(path: &Path) -> Result<Option<Self>> {
        if let Some((file, len)) = open_regular(path)? {
            return Ok(Some(SnapshotFile {
                path: path.to_path_buf(),
                source: SnapshotSource::File(file),
                len,
                mapped: Default::default(),
            }));
        }
        let Some((mpath, manifest)) = stored::manifest_for(path)? else {
            return Ok(None);
        };
        let store = stored::store_for(&mpath)?;
        Ok(Some(SnapshotFile {
            path: mpath,
            len: manifest.len(),
            source: SnapshotSource::Chunked { manifest, store },
            mapped: Default::default(),
        }))
    }

    /// Whether its bytes are chunks of the store.
    pub fn is_chunked(&self) -> bool {
        matches!(self.source, SnapshotSource::Chunked { .. })
    }

    /// The file as an executor may map it: its first `len` bytes (at most
    /// [`SnapshotFile::len`]); `None` for a chunked snapshot, which is not
    /// mappable (it is read).
    pub fn map(&self, len: u64) -> Option<MapFile> {
        use std::os::fd::AsRawFd;
        match &self.source {
            SnapshotSource::File(file) => Some(MapFile {
                fd: file.as_raw_fd(),
                len: len.min(self.len),
            }),
            SnapshotSource::Chunked { .. } => None,
        }
    }

    /// A buffer of `exec`'s holding the file's first `len` bytes: mapped
    /// where the executor can map files ([`Executor::buffer_mapped`]),
    /// else read (for a chunked snapshot, decompressed) straight into one
    /// of its buffers. A chunked snapshot read whole has its plain chunk
    /// files mapped where the executor maps parts of a buffer
    /// ([`Executor::buffer_mapped_parts`]), and every chunk's hash checked.
    pub fn read_into<E: Executor>(&self, exec: &E, len: usize) -> Result<E::Buffer> {
        self.read_into_with(exec, len, Verify::EachChunk)
    }

    /// [`SnapshotFile::read_into`], a chunked snapshot's chunks checked as
    /// `verify` says: [`Verify::Whole`] when the caller checks the
    /// checksum of all `len` bytes (and, when it fails, names the damaged
    /// chunk with [`SnapshotFile::damaged_chunk`]).
    pub fn read_into_with<E: Executor>(
        &self,
        exec: &E,
        len: usize,
        verify: Verify,
    ) -> Result<E::Buffer> {
        use std::os::unix::fs::FileExt;
        if len as u64 > self.len {
            return Err(Error::capture(
                &self.path,
                CaptureProblem::ReadPastEnd {
                    asked: len,
                    len: self.len,
                },
            ));
        }
        if let Some(map) = self.map(len as u64)
            && let Some(b) = exec
                .buffer_mapped(map)
                .map_err(|e| Error::executor(format!("mapping {}", self.path.display()), e))?
        {
            return Ok(b);
        }
        if let SnapshotSource::Chunked { manifest, store } = &self.source
            && len as u64 == manifest.len()
            && let Some(b) = self.read_mapped_parts(exec, manifest, store, verify)?
        {
            return Ok(b);
        }
        let mut buf = exec.buffer(len).map_err(|e| {
            Error::executor(
                format!("allocating {len} bytes for {}", self.path.display()),
                e,
            )
        })?;
        let out = &mut buf.as_mut()[..len];
        match &self.source {
            SnapshotSource::File(file) => file
                .read_exact_at(out, 0)
                .map_err(|e| Error::io(&self.path, "read", e))?,
            SnapshotSource::Chunked { manifest, store } if len as u64 == manifest.len() => store
                .read_into_with(manifest, out, verify)
                .map_err(|e| stored::capture_error(&self.path, e))?,
            SnapshotSource::Chunked { .. } => {
                let mut at = 0;
                self.for_each_chunk(1 << 20, |chunk| {
                    let n = chunk.len().min(len - at);
                    out[at..at + n].copy_from_slice(&chunk[..n]);
                    at += n;
                })?;
            }
        }
        Ok(buf)
    }

    /// A buffer of `exec`'s holding the chunked snapshot `manifest`
    /// whole, its plain chunk files mapped
    /// ([`Executor::buffer_mapped_parts`]) and the rest read around them;
    /// `Ok(None)` when the executor maps no parts or none can be mapped.
    fn read_mapped_parts<E: Executor>(
        &self,
        exec: &E,
        manifest: &Manifest,
        store: &ChunkStore,
        verify: Verify,
    ) -> Result<Option<E::Buffer>> {
        let Some(granularity) = exec.map_granularity() else {
            return Ok(None);
        };
        let kept = self.mapped.lock().unwrap_or_else(|e| e.into_inner()).take();
        let mappable = kept.unwrap_or_else(|| store.mappable(manifest, granularity));
        if mappable.is_empty() {
            return Ok(None);
        }
        let len = manifest.len() as usize;
        let Some(mut buf) = exec
            .buffer_mapped_parts(len, mappable.parts())
            .map_err(|e| {
                Error::executor(format!("mapping the chunks of {}", self.path.display()), e)
            })?
        else {
            return Ok(None);
        };
        store
            .read_rest_into(manifest, &mappable, &mut buf.as_mut()[..len], verify)
            .map_err(|e| stored::capture_error(&self.path, e))?;
        Ok(Some(buf))
    }

    /// Reserves a region of `exec`'s for `request` whose first bytes hold
    /// this chunked snapshot's plain chunk files, mapped
    /// ([`Executor::reserve_mapped_parts`]), with the ranges of the
    /// snapshot (`(offset, len)` from the region's base) that the caller
    /// must still fill from the snapshot's buffer. `Ok(None)` for a raw
    /// file, a snapshot with nothing to map, or an executor that maps no
    /// parts (the caller reserves as it would). The files stay open for
    /// the next [`SnapshotFile::read_into`], which maps them again.
    pub fn reserve_mapped<E: Executor>(
        &self,
        exec: &E,
        request: RegionRequest,
    ) -> Result<Option<(E::Region, Gaps)>> {
        let SnapshotSource::Chunked { manifest, store } = &self.source else {
            return Ok(None);
        };
        let Some(granularity) = exec.map_granularity() else {
            return Ok(None);
        };
        let mappable = store.mappable(manifest, granularity);
        if mappable.is_empty() {
            return Ok(None);
        }
        let Some(region) = exec
            .reserve_mapped_parts(request, mappable.parts())
            .map_err(|e| {
                Error::executor(
                    format!(
                        "mapping the chunks of {} as the region",
                        self.path.display()
                    ),
                    e,
                )
            })?
        else {
            return Ok(None);
        };
        let gaps = mappable.gaps(manifest);
        *self.mapped.lock().unwrap_or_else(|e| e.into_inner()) = Some(mappable);
        Ok(Some((region, gaps)))
    }

    /// The first chunk of a chunked snapshot that cannot be read back
    /// whole (its blake3 checked: [`ChunkStore::check`]), as the error a
    /// read of it gives, naming the chunk and its file; `None` when every
    /// chunk is whole, or for a raw file. What names the culprit when a
    /// read checked only the checksum of the whole ([`Verify::Whole`]) and
    /// it failed.
    pub fn damaged_chunk(&self) -> Option<Error> {
        let SnapshotSource::Chunked { manifest, store } = &self.source else {
            return None;
        };
        let p = store.check(manifest).into_iter().next()?;
        Some(stored::capture_error(
            &self.path,
            Error::store(
                store.chunk_file(&p.hash),
                crate::error::StoreProblem::Chunk(p),
            ),
        ))
    }

    /// How a chunked snapshot is cut: its chunk size in bytes and its
    /// number of chunks; `None` for a raw file. Chunk `i` holds the bytes
    /// from `i * chunk size`, and every chunk but the last is full.
    pub fn chunking(&self) -> Option<(usize, usize)> {
        match &self.source {
            SnapshotSource::File(_) => None,
            SnapshotSource::Chunked { manifest, .. } => {
                Some((manifest.chunk_size() as usize, manifest.chunks().len()))
            }
        }
    }

    /// How many threads a read of a chunked snapshot decompresses on (the
    /// store's [`crate::chunks::StoreOptions::threads`]); 1 for a raw
    /// file.
    pub fn read_threads(&self) -> usize {
        match &self.source {
            SnapshotSource::File(_) => 1,
            SnapshotSource::Chunked { store, .. } => store.options().threads.max(1),
        }
    }

    /// Decompresses chunks `chunks` (indices, as [`SnapshotFile::chunking`]
    /// counts them) of a chunked snapshot into `out`, which must be exactly
    /// their bytes long: in parallel on up to
    /// [`SnapshotFile::read_threads`] threads, each chunk bounded and its
    /// hash checked, as [`SnapshotFile::read_into`] reads a whole one. A
    /// chunk that is missing or damaged is the error, naming the manifest
    /// and the chunk's place in it. This is how a GPU replay streams a
    /// snapshot through small staging buffers instead of one the size of
    /// the snapshot.
    pub fn read_chunks_into(&self, chunks: std::ops::Range<usize>, out: &mut [u8]) -> Result<()> {
        let SnapshotSource::Chunked { manifest, store } = &self.source else {
            return Err(Error::Internal("read_chunks_into on a raw snapshot"));
        };
        let refs = manifest
            .chunks()
            .get(chunks.clone())
            .ok_or(Error::Internal("chunks past the end of a manifest"))?;
        let len: u64 = refs.iter().map(|c| u64::from(c.len)).sum();
        if len != out.len() as u64 {
            return Err(Error::Internal("a staging buffer of the wrong length"));
        }
        // The run of chunks is itself a manifest: every chunk but its last
        // is full (only the snapshot's last chunk is short), so the
        // store's parallel read takes it as it is.
        let part = Manifest::new(len, manifest.chunk_size(), refs.to_vec())
            .and_then(|p| p.with_version(manifest.version()))
            .map_err(|_| Error::Internal("a run of a manifest's chunks is no manifest"))?;
        store.read_into(&part, out).map_err(|e| {
            // Name the chunk by its place in the whole manifest.
            let e = match e {
                Error::Store {
                    path,
                    problem: crate::error::StoreProblem::Chunk(mut c),
                } => {
                    c.index = c.index.saturating_add(chunks.start as u32);
                    Error::Store {
                        path,
                        problem: crate::error::StoreProblem::Chunk(c),
                    }
                }
                e => e,
            };
            stored::capture_error(&self.path, e)
        })
    }

    /// Streams the file through `f`, in order, in chunks of at most
    /// `chunk` bytes (a chunked snapshot: in its own chunks, each
    /// decompressed and its hash checked).
    pub fn for_each_chunk(&self, chunk: usize, mut f: impl FnMut(&[u8])) -> Result<()> {
        match &self.source {
            SnapshotSource::File(file) => stream(file, &self.path, chunk, &mut f),
            SnapshotSource::Chunked { manifest, store } => store
                .for_each_chunk(manifest, f)
                .map_err(|e| stored::capture_error(&self.path, e)),
        }
    }

    /// The xxh3-64 checksum of its bytes, streamed (what the descriptor's
    /// checksums are, raw or chunked).
    pub fn checksum(&self) -> Result<u64> {
        let mut h = Checksummer::new();
        self.for_each_chunk(1 << 20, |b| h.update(b))?;
        Ok(h.finish())
    }
}

/// Streams `file` through `f`, in chunks of at most `chunk` bytes, no
/// further than the length the file reports (a file that grows, or one
/// that reads on past its length, is read no further).
pub(crate) fn stream(
    file: &File,
    path: &Path,
    chunk: usize,
    f: &mut dyn FnMut(&[u8]),
) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let len = file
        .metadata()
        .map_err(|e| Error::io(path, "stat", e))?
        .len();
    let mut buf = vec![0u8; chunk.max(4096)];
    let mut at = 0u64;
    while at < len {
        let want = buf
            .len()
            .min(usize::try_from(len - at).unwrap_or(usize::MAX));
        let n = file
            .read_at(&mut buf[..want], at)
            .map_err(|e| Error::io(path, "read", e))?;
        if n == 0 {
            break;
        }
        f(&buf[..n]);
        at += n as u64;
    }
    Ok(())
}

/// The xxh3-64 checksum of a file, streamed.
pub fn file_checksum(file: &File, path: &Path) -> Result<u64> {
    let mut h = Checksummer::new();
    stream(file, path, 1 << 20, &mut |b| h.update(b))?;
    Ok(h.finish())
}

/// The error for a file whose checksum is `got` where the descriptor says
/// `want`.
pub fn checksum_mismatch(path: &Path, want: u64, got: u64) -> Error {
    Error::capture(
        path,
        CaptureProblem::ChecksumMismatch {
            recorded: want,
            actual: got,
        },
    )
}

/// The error for an image taken from entry `index` of the offload binary
/// in the file at `path` (an application binary or a container, given for
/// the capture's own image) where the descriptor's image checksum is
/// `want`: neither the entry (`entry`) nor the whole file (`file`) hashes
/// to it, and the message says which was hashed to what.
pub(crate) fn entry_checksum_mismatch(
    path: &Path,
    index: usize,
    want: u64,
    entry: u64,
    file: Option<u64>,
) -> Error {
    Error::capture(
        path,
        CaptureProblem::EntryChecksumMismatch {
            recorded: want,
            index,
            entry,
            file,
        },
    )
}

/// The checksum of bytes (what the writer records: the core's rule).
pub use reprise_core::record::checksum;
