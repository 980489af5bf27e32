//! Streaming a snapshot of the chunk store into device memory: chunks are
//! decompressed into a ring of two page-locked staging buffers (each a
//! batch of chunks, one per read thread), and each batch's host-to-device
//! copy runs while the next batch decompresses.
//!
//! The queue's one synchronize is all the executor contract offers to learn
//! that a copy is done (and to get its buffer back), so the ring is two
//! buffers and one synchronize per batch: batch `k` is decompressed into
//! the buffer batch `k - 2` used, then the queue is synchronized, which
//! waits for batch `k - 1`'s copy (enqueued before batch `k` started to
//! decompress, so it had all that time to run) and hands its buffer back,
//! and then batch `k`'s copy is enqueued. No buffer is written while a
//! copy from it may still run: a buffer comes back from the queue only
//! after a synchronize covered its copy.
//!
//! This is the replay's set-up, before the launch schedule: the schedule
//! itself still synchronizes once (its restore is then
//! [`reprise_core::schedule::Restore::Nothing`] or a copy on the device).

use reprise_core::exec::{Executor, Queue, Segment, settle};
use reprise_core::record::Checksummer;

use crate::capture::SnapshotFile;
use crate::error::{Error, Result};

/// Buffers in the staging ring.
pub(super) const RING: usize = 2;

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

/// Streams the first `len` bytes of the chunked snapshot `file` (all of
/// it: `len` is its length) into device memory at `device` on `queue`,
/// and waits until every copy is done. Returns what it did, the staging
/// buffers (for the caller to keep or drop) and the xxh3-64 checksum of
/// the bytes streamed (the descriptor's input checksum, checked by the
/// caller).
///
/// On an error, copies already enqueued run on; their buffers stay with the
/// queue until its next synchronize or its `Drop`.
pub(super) async fn stream<E: Executor>(
    exec: &E,
    queue: &mut E::Queue,
    file: &SnapshotFile,
    device: u64,
    len: usize,
) -> Result<(Streamed, Vec<E::Buffer>, u64)> {
    let (chunk, count) = file
        .chunking()
        .ok_or(Error::Internal("streaming a raw snapshot"))?;
    if len as u64 != file.len || chunk == 0 {
        return Err(Error::Internal("streaming part of a snapshot"));
    }
    let per_batch = file.read_threads().clamp(1, MAX_BATCH).min(count.max(1));
    let buffer_len = (per_batch * chunk).min(len).max(1);
    let batches = count.div_ceil(per_batch);
    let mut free = Vec::with_capacity(RING);
    for _ in 0..RING.min(batches.max(1)) {
        free.push(exec.buffer(buffer_len).map_err(|e| {
            Error::executor(
                format!(
                    "allocating a {buffer_len}-byte staging buffer for {}",
                    file.path.display()
                ),
                e,
            )
        })?);
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
        queue.upload(buf, &seg).map_err(|e| {
            Error::executor(format!("copying {} to the device", file.path.display()), e)
        })?;
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
    .map_err(|e| Error::executor(format!("copying {} to the device", file.path.display()), e))
}
