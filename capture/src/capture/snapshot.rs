//! An open snapshot, as a replay reads it: a raw file (mapped by an
//! executor that maps files, else read), or a manifest of the directory's
//! chunk store standing for one (its plain chunk files mapped where the
//! executor maps parts, the rest decompressed; or streamed into device
//! memory through staging buffers). What the rest of reprise sees of
//! either is [`SnapshotSource`].

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use reprise_core::exec::{ExecError, Executor, MapFile, Queue, RegionRequest, Segment, settle};
use reprise_core::record::Checksummer;

use crate::chunks::{ChunkStore, Manifest, Mappable, Verify};
use crate::error::{CaptureProblem, Error, Result};

use super::files::stream;
use super::open::open_regular;
use super::stored;

pub use crate::chunks::Gaps;

/// Where an open snapshot's bytes are: the one place the two formats part.
#[derive(Debug)]
enum Bytes {
    /// A raw file, open.
    File(File),
    /// Chunks of the directory's store, as a manifest names them.
    Chunked {
        manifest: Manifest,
        store: Arc<ChunkStore>,
    },
}

/// An open snapshot: a raw file, or a manifest of the directory's chunk
/// store standing for one.
#[derive(Debug)]
pub struct SnapshotFile {
    /// Its path (the manifest's, for a chunked snapshot).
    pub path: PathBuf,
    source: Bytes,
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
        Self::open_in(&stored::Stores::default(), path)
    }

    /// [`SnapshotFile::open`], a manifest's store taken from `stores`.
    pub(crate) fn open_in(stores: &stored::Stores, path: &Path) -> Result<Option<Self>> {
        if let Some((file, len)) = open_regular(path)? {
            return Ok(Some(SnapshotFile {
                path: path.to_path_buf(),
                source: Bytes::File(file),
                len,
                mapped: Default::default(),
            }));
        }
        let Some((mpath, manifest)) = stored::manifest_for(path)? else {
            return Ok(None);
        };
        let store = stores.store_for(&mpath)?;
        Ok(Some(SnapshotFile {
            path: mpath,
            len: manifest.len(),
            source: Bytes::Chunked { manifest, store },
            mapped: Default::default(),
        }))
    }

    /// The error of an executor that failed at `doing` this snapshot, and
    /// `rest` (`mapping`, ` as the region`).
    fn failed<X: ExecError + Send + Sync + 'static>(
        &self,
        doing: impl std::fmt::Display,
        rest: &str,
    ) -> impl FnOnce(X) -> Error {
        let context = format!("{doing} {}{rest}", self.path.display());
        move |e| Error::executor(context, e)
    }

    /// Whether its bytes are chunks of the store.
    pub fn is_chunked(&self) -> bool {
        matches!(self.source, Bytes::Chunked { .. })
    }

    /// [`SnapshotSource::read_into`], a chunked snapshot's chunks checked as
    /// `verify` says: [`Verify::Whole`] when the caller checks the
    /// checksum of all `len` bytes (and, when it fails, names the damaged
    /// chunk with [`SnapshotFile::damaged_chunk`]).
    pub(crate) fn read_into_with<E: Executor>(
        &self,
        exec: &E,
        len: usize,
        verify: Verify,
    ) -> Result<E::Buffer> {
        use std::os::unix::fs::FileExt;
        if len as u64 > self.len {
            let (asked, len) = (len, self.len);
            return Err(Error::capture(
                &self.path,
                CaptureProblem::ReadPastEnd { asked, len },
            ));
        }
        if let Some(map) = self.map(len as u64)
            && let Some(b) = exec
                .buffer_mapped(map)
                .map_err(self.failed("mapping", ""))?
        {
            return Ok(b);
        }
        if len as u64 == self.len
            && let Some(b) = self.read_mapped_parts(exec, verify)?
        {
            return Ok(b);
        }
        let mut buf = exec
            .buffer(len)
            .map_err(self.failed(format!("allocating {len} bytes for"), ""))?;
        let out = &mut buf.as_mut()[..len];
        match &self.source {
            Bytes::File(file) => file
                .read_exact_at(out, 0)
                .map_err(|e| Error::io(&self.path, "read", e))?,
            Bytes::Chunked { manifest, store } if len as u64 == manifest.len() => store
                .read_into_with(manifest, out, verify)
                .map_err(|e| stored::capture_error(&self.path, e))?,
            Bytes::Chunked { .. } => {
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

    /// The plain chunk files of a chunked snapshot that `exec` maps (those
    /// a region was mapped from first), with its manifest and store; `None`
    /// for a raw file, an executor that maps no parts, or no such file.
    fn mappable<E: Executor>(&self, exec: &E) -> Option<(&Manifest, &ChunkStore, Mappable)> {
        let Bytes::Chunked { manifest, store } = &self.source else {
            return None;
        };
        let granularity = exec.map_granularity()?;
        let kept = crate::threads::lock(&self.mapped).take();
        let mappable = kept.unwrap_or_else(|| store.mappable(manifest, granularity));
        (!mappable.is_empty()).then_some((manifest, &**store, mappable))
    }

    /// A buffer of `exec`'s holding the whole chunked snapshot, its plain
    /// chunk files mapped ([`Executor::buffer_mapped_parts`]) and the rest
    /// read around them; `Ok(None)` when nothing can be mapped so.
    fn read_mapped_parts<E: Executor>(
        &self,
        exec: &E,
        verify: Verify,
    ) -> Result<Option<E::Buffer>> {
        let Some((manifest, store, mappable)) = self.mappable(exec) else {
            return Ok(None);
        };
        let len = manifest.len() as usize;
        let Some(mut buf) = exec
            .buffer_mapped_parts(len, mappable.parts())
            .map_err(self.failed("mapping the chunks of", ""))?
        else {
            return Ok(None);
        };
        store
            .read_rest_into(manifest, &mappable, &mut buf.as_mut()[..len], verify)
            .map_err(|e| stored::capture_error(&self.path, e))?;
        Ok(Some(buf))
    }

    /// The first chunk of a chunked snapshot that cannot be read back
    /// whole (its blake3 checked: [`ChunkStore::check`]), as the error a
    /// read of it gives, naming the chunk and its file; `None` when every
    /// chunk is whole, or for a raw file. What names the culprit when a
    /// read checked only the checksum of the whole ([`Verify::Whole`]) and
    /// it failed.
    pub(crate) fn damaged_chunk(&self) -> Option<Error> {
        let Bytes::Chunked { manifest, store } = &self.source else {
            return None;
        };
        let p = store.check(manifest).into_iter().next()?;
        Some(Error::capture(&self.path, CaptureProblem::of_chunk(p)))
    }

    /// Decompresses chunks `chunks` (indices in its manifest) of a chunked
    /// snapshot into `out`, which must be exactly their bytes long: in
    /// parallel on up to the store's threads, each chunk bounded and its
    /// hash checked, as [`SnapshotSource::read_into`] reads a whole one. A
    /// chunk that is missing or damaged is the error, naming the manifest
    /// and the chunk's place in it. This is how a GPU replay streams a
    /// snapshot through small staging buffers instead of one the size of
    /// the snapshot.
    fn read_chunks_into(&self, chunks: std::ops::Range<usize>, out: &mut [u8]) -> Result<()> {
        let Bytes::Chunked { manifest, store } = &self.source else {
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
        store
            .read_into(&part, out)
            .map_err(|e| match e.store_problem() {
                // Named by its place in the whole manifest.
                Some(crate::error::StoreProblem::Chunk(c)) => {
                    let index = c.index.saturating_add(chunks.start as u32);
                    let c = crate::error::ChunkProblem { index, ..*c };
                    Error::capture(&self.path, CaptureProblem::of_chunk(c))
                }
                _ => stored::capture_error(&self.path, e),
            })
    }
}

/// What a replay reads a snapshot through, whatever keeps its bytes: the
/// one way the rest of reprise reads a capture's snapshots, so that raw
/// files and the chunk store are told apart in the capture crate alone.
pub trait SnapshotSource {
    /// The snapshot as an executor may map it: its first `len` bytes;
    /// `None` where its bytes are no one file (they are read).
    fn map(&self, len: u64) -> Option<MapFile>;

    /// Reserves a region of `exec`'s for `request` whose first bytes hold
    /// the parts of the snapshot that can be mapped, mapped
    /// ([`Executor::reserve_mapped_parts`]), with the ranges of the
    /// snapshot that the caller must still fill from the snapshot's
    /// buffer. `Ok(None)` when nothing can be mapped so, or the executor
    /// maps no parts (the caller reserves as it would). The parts stay
    /// open for the next [`SnapshotSource::read_into`], which maps them
    /// again.
    fn reserve_mapped<E: Executor>(
        &self,
        exec: &E,
        request: RegionRequest,
    ) -> Result<Option<(E::Region, Gaps)>>;

    /// A buffer of `exec`'s holding the snapshot's first `len` bytes:
    /// mapped where the executor can map files
    /// ([`Executor::buffer_mapped`]) or parts of a buffer
    /// ([`Executor::buffer_mapped_parts`]), else read straight into one of
    /// its buffers, every part checked as it is read.
    fn read_into<E: Executor>(&self, exec: &E, len: usize) -> Result<E::Buffer>;

    /// Whether the snapshot is better streamed into device memory
    /// ([`SnapshotSource::stream_into`]) than read whole into one buffer
    /// first: when its bytes must be decompressed on the host anyway.
    fn streams(&self) -> bool;

    /// Streams the whole snapshot (`len` is its length) into device memory
    /// at `device` on `queue`, through a ring of staging buffers, and
    /// waits until every copy is done. Returns what it did, the staging
    /// buffers (for the caller to keep or drop) and the xxh3-64 checksum
    /// of the bytes streamed (the descriptor's input checksum, checked by
    /// the caller). Only for a snapshot that [`SnapshotSource::streams`].
    ///
    /// On an error, copies already enqueued run on; their buffers stay
    /// with the queue until its next synchronize or its `Drop`.
    fn stream_into<E: Executor>(
        &self,
        exec: &E,
        queue: &mut E::Queue,
        device: u64,
        len: usize,
    ) -> impl Future<Output = Result<(Streamed, Vec<E::Buffer>, u64)>>;

    /// Streams the snapshot through `f`, in order, in pieces of at most
    /// `chunk` bytes, each checked as it is read.
    fn for_each_chunk(&self, chunk: usize, f: impl FnMut(&[u8])) -> Result<()>;

    /// Streams this snapshot and `other` side by side through `f`, as
    /// `f(offset, mine, theirs)`, in pieces of at most `chunk` bytes; the
    /// two must be of the same length.
    fn for_each_pair(
        &self,
        other: &Self,
        chunk: usize,
        f: impl FnMut(u64, &[u8], &[u8]),
    ) -> Result<()>;

    /// The xxh3-64 checksum of its bytes, streamed (what the descriptor's
    /// checksums are, whatever keeps the bytes).
    fn checksum(&self) -> Result<u64> {
        let mut h = Checksummer::new();
        self.for_each_chunk(1 << 20, |b| h.update(b))?;
        Ok(h.finish())
    }
}

impl SnapshotSource for SnapshotFile {
    fn map(&self, len: u64) -> Option<MapFile> {
        use std::os::fd::AsRawFd;
        match &self.source {
            Bytes::File(file) => Some(MapFile {
                fd: file.as_raw_fd(),
                len: len.min(self.len),
            }),
            Bytes::Chunked { .. } => None,
        }
    }

    fn reserve_mapped<E: Executor>(
        &self,
        exec: &E,
        request: RegionRequest,
    ) -> Result<Option<(E::Region, Gaps)>> {
        let Some((manifest, _, mappable)) = self.mappable(exec) else {
            return Ok(None);
        };
        let Some(region) = exec
            .reserve_mapped_parts(request, mappable.parts())
            .map_err(self.failed("mapping the chunks of", " as the region"))?
        else {
            return Ok(None);
        };
        let gaps = mappable.gaps(manifest);
        *crate::threads::lock(&self.mapped) = Some(mappable);
        Ok(Some((region, gaps)))
    }

    fn read_into<E: Executor>(&self, exec: &E, len: usize) -> Result<E::Buffer> {
        self.read_into_with(exec, len, Verify::EachChunk)
    }

    fn streams(&self) -> bool {
        self.is_chunked()
    }

    async fn stream_into<E: Executor>(
        &self,
        exec: &E,
        queue: &mut E::Queue,
        device: u64,
        len: usize,
    ) -> Result<(Streamed, Vec<E::Buffer>, u64)> {
        stream_chunks(exec, queue, self, device, len).await
    }

    fn for_each_chunk(&self, chunk: usize, mut f: impl FnMut(&[u8])) -> Result<()> {
        match &self.source {
            Bytes::File(file) => stream(file, &self.path, chunk, &mut f),
            Bytes::Chunked { manifest, store } => store
                .for_each_chunk(manifest, f)
                .map_err(|e| stored::capture_error(&self.path, e)),
        }
    }

    fn for_each_pair(
        &self,
        other: &Self,
        chunk: usize,
        mut f: impl FnMut(u64, &[u8], &[u8]),
    ) -> Result<()> {
        use std::os::unix::fs::FileExt;
        if self.len != other.len {
            return Err(Error::Internal(
                "streaming two snapshots of different lengths",
            ));
        }
        // This one streams (in its own chunks, when it is a manifest); the
        // other is read at the same offsets, or, chunked too, whole.
        let theirs_whole = match &other.source {
            Bytes::File(_) => None,
            Bytes::Chunked { .. } => {
                let mut v = Vec::new();
                usize::try_from(other.len)
                    .ok()
                    .and_then(|n| v.try_reserve_exact(n).ok())
                    .ok_or(Error::TooLarge {
                        what: "a buffer for a chunked output",
                        bytes: other.len,
                    })?;
                other.for_each_chunk(chunk, |c| v.extend_from_slice(c))?;
                Some(v)
            }
        };
        let mut theirs = vec![0u8; chunk];
        let mut at = 0u64;
        let mut failed = None;
        self.for_each_chunk(chunk, |mine| {
            if failed.is_some() {
                return;
            }
            let n = mine.len();
            let piece: &[u8] = match (&theirs_whole, &other.source) {
                (Some(v), _) => &v[at as usize..at as usize + n],
                (None, Bytes::File(file)) => {
                    if theirs.len() < n {
                        theirs.resize(n, 0);
                    }
                    if let Err(err) = file.read_exact_at(&mut theirs[..n], at) {
                        failed = Some(Error::io(&other.path, "read", err));
                        return;
                    }
                    &theirs[..n]
                }
                (None, Bytes::Chunked { .. }) => return,
            };
            f(at, mine, piece);
            at += n as u64;
        })?;
        failed.map_or(Ok(()), Err)
    }
}

/// Buffers in the staging ring.
const RING: usize = 2;

/// The most chunks one staging buffer holds (the read threads of a batch
/// beyond it would only make the buffers larger).
const MAX_BATCH: usize = 8;

/// What streaming a snapshot from the store into the device did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Streamed {
    /// Chunks decompressed.
    pub chunks: usize,
    /// Batches (host-to-device copies), each of up to a staging buffer.
    pub batches: usize,
    /// Staging buffers in the ring.
    pub buffers: usize,
    /// Bytes of each staging buffer.
    pub buffer_len: usize,
}

impl Streamed {
    /// Whether the ring came round: some staging buffer held more than one
    /// batch.
    pub fn wrapped(&self) -> bool {
        self.batches > self.buffers
    }
}

/// [`SnapshotSource::stream_into`] of the chunked snapshot `file`: chunks
/// are decompressed into a ring of two staging buffers (each a batch of
/// chunks, one per read thread), and each batch's host-to-device copy runs
/// while the next batch decompresses.
///
/// The queue's one synchronize is all the executor contract offers to
/// learn that a copy is done (and to get its buffer back), so the ring is
/// two buffers and one synchronize per batch: batch `k` is decompressed
/// into the buffer batch `k - 2` used, then the queue is synchronized,
/// which waits for batch `k - 1`'s copy (enqueued before batch `k` started
/// to decompress, so it had all that time to run) and hands its buffer
/// back, and then batch `k`'s copy is enqueued. No buffer is written while
/// a copy from it may still run: a buffer comes back from the queue only
/// after a synchronize covered its copy.
async fn stream_chunks<E: Executor>(
    exec: &E,
    queue: &mut E::Queue,
    file: &SnapshotFile,
    device: u64,
    len: usize,
) -> Result<(Streamed, Vec<E::Buffer>, u64)> {
    let Bytes::Chunked { manifest, store } = &file.source else {
        return Err(Error::Internal("streaming a raw snapshot"));
    };
    // Chunk `i` holds the bytes from `i * chunk`; every chunk but the last
    // is full.
    let (chunk, count) = (manifest.chunk_size() as usize, manifest.chunks().len());
    if len as u64 != file.len || chunk == 0 {
        return Err(Error::Internal("streaming part of a snapshot"));
    }
    let threads = store.options().threads;
    let per_batch = threads.clamp(1, MAX_BATCH).min(count.max(1));
    let buffer_len = (per_batch * chunk).min(len).max(1);
    let batches = count.div_ceil(per_batch);
    let mut free = Vec::with_capacity(RING);
    for _ in 0..RING.min(batches.max(1)) {
        let doing = format!("allocating a {buffer_len}-byte staging buffer for");
        free.push(exec.buffer(buffer_len).map_err(file.failed(doing, ""))?);
    }
    let mut sum = Checksummer::new();
    let mut in_flight = false;
    for b in 0..batches {
        let first = b * per_batch;
        let last = (first + per_batch).min(count);
        let start = first * chunk;
        let end = (last * chunk).min(len);
        let mut buf = free
            .pop()
            .ok_or(Error::Internal("no staging buffer came back"))?;
        let out = &mut buf.as_mut()[..end - start];
        file.read_chunks_into(first..last, out)?;
        sum.update(out);
        if in_flight {
            // Waits for the previous batch's copy, which ran while this
            // batch decompressed, and takes its buffer back.
            synchronize(queue, file, &mut free, buffer_len).await?;
        }
        let seg = [Segment {
            device: device + start as u64,
            host_offset: 0,
            len: end - start,
        }];
        let copying = file.failed("copying", " to the device");
        queue.upload(buf, &seg).map_err(copying)?;
        in_flight = true;
    }
    if in_flight {
        synchronize(queue, file, &mut free, buffer_len).await?;
    }
    let streamed = Streamed {
        chunks: count,
        batches,
        buffers: RING.min(batches.max(1)),
        buffer_len,
    };
    Ok((streamed, free, sum.finish()))
}

/// Waits for everything on `queue`, and takes back the staging buffers
/// (of `buffer_len` bytes; any other buffer a queue hands back is
/// dropped).
async fn synchronize<Q: Queue>(
    queue: &mut Q,
    file: &SnapshotFile,
    free: &mut Vec<Q::Buffer>,
    buffer_len: usize,
) -> Result<()>
where
    Q::Buffer: AsRef<[u8]>,
{
    settle(queue, |_, b| {
        if b.as_ref().len() == buffer_len {
            free.push(b);
        }
    })
    .await
    .map_err(file.failed("copying", " to the device"))
}
