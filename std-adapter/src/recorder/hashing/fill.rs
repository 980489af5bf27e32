//! The writer's side of device hashing: a snapshot's host buffer filled
//! from the last capture, the chunk store and, for what neither has, the
//! device copy.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use reprise_core::exec::{Executor, Queue, Segment, settle};

use crate::error::{Error, Result};
use crate::exec::{ErrorContext, lock};
use crate::layout::from_start;
use crate::pool::BufferPool;
use crate::store::{ChunkHash, KnownChunks};

/// Bytes of snapshots a writer filled, by where they came from.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Traffic {
    /// Copied from the device copy (the recording's device-to-host
    /// traffic for its snapshots).
    pub device: u64,
    /// Copied on the host from the last capture (or from the input, for
    /// the output).
    pub host: u64,
    /// Read from the chunk store.
    pub store: u64,
}

/// What a recorder's writer keeps between captures: its queue, the chunks
/// the capture directory knows, and the last snapshot it filled.
pub(in crate::recorder) struct Reader<E: Executor> {
    queue: E::Queue,
    known: KnownChunks,
    /// The last snapshot filled: its buffer, length and chunk hashes.
    last: Option<(E::Buffer, usize, Vec<ChunkHash>)>,
    traffic: Traffic,
}

impl<E: Executor> Reader<E> {
    pub(in crate::recorder) fn new(queue: E::Queue, known: KnownChunks) -> Self {
        Reader {
            queue,
            known,
            last: None,
            traffic: Traffic::default(),
        }
    }

    /// The bytes filled so far, by source.
    pub(in crate::recorder) fn traffic(&self) -> Traffic {
        self.traffic
    }
}

/// A recorded launch's snapshots, waiting in the device copy for the
/// writer ([`Pending::fill`]).
pub(in crate::recorder) struct Pending<E: Executor> {
    pub(super) region: E::Region,
    pub(super) len: usize,
    pub(super) chunk_size: u32,
    /// The input's address in the copy, and its chunks' hashes.
    pub(super) input: (u64, Vec<ChunkHash>),
    /// The output's, when saved.
    pub(super) output: Option<(u64, Vec<ChunkHash>)>,
    pub(super) reader: Arc<Mutex<Reader<E>>>,
    pub(super) idle: Arc<Mutex<Vec<E::Region>>>,
    pub(super) keep_idle: usize,
    pub(super) distrusted: Arc<AtomicBool>,
}

/// Snapshots filled: [`Filled::keep`] makes the last of them the writer's
/// reference for the next capture once they are written.
pub(in crate::recorder) struct Filled<E: Executor> {
    reader: Arc<Mutex<Reader<E>>>,
    len: usize,
    hashes: Vec<ChunkHash>,
}

/// [`Pending::fill`]'s outcome: the input's buffer, the output's (when
/// saved), and what keeps the last of them.
pub(in crate::recorder) type FilledBuffers<E> = (
    <E as Executor>::Buffer,
    Option<<E as Executor>::Buffer>,
    Filled<E>,
);

/// The byte range of chunk `i` of `len` bytes in chunks of `cs`.
fn range(i: usize, cs: usize, len: usize) -> Range<usize> {
    i * cs..((i + 1) * cs).min(len)
}

impl<E: Executor> Pending<E> {
    /// Fills `input` (and `output`, which is there when the output was
    /// saved) with the snapshots; gives the device copy back for the next
    /// launch.
    pub(in crate::recorder) fn fill(
        self,
        input: E::Buffer,
        output: Option<E::Buffer>,
    ) -> Result<FilledBuffers<E>> {
        let Pending {
            region,
            len,
            chunk_size,
            input: (input_at, input_hashes),
            output: out,
            reader,
            idle,
            keep_idle,
            distrusted,
        } = self;
        let filled = (|| {
            let mut r = lock(&reader);
            let cs = chunk_size as usize;
            let input = r.fill_one(
                input,
                (len, cs),
                (input_at, &input_hashes),
                None,
                &distrusted,
            )?;
            let (output, last) = match (out, output) {
                (Some((at, hashes)), Some(buf)) => {
                    let o = r.fill_one(
                        buf,
                        (len, cs),
                        (at, &hashes),
                        Some((&input.as_ref()[..len], &input_hashes)),
                        &distrusted,
                    )?;
                    (Some(o), hashes)
                }
                (None, None) => (None, input_hashes),
                _ => return Err(Error::Internal("an output buffer without its hashes")),
            };
            Ok((input, output, last))
        })();
        // Whatever the outcome, the copy is done with.
        {
            let mut idle = lock(&idle);
            if idle.len() < keep_idle.max(1) {
                idle.push(region);
            }
        }
        let (input, output, hashes) = filled?;
        Ok((
            input,
            output,
            Filled {
                reader,
                len,
                hashes,
            },
        ))
    }
}

impl<E: Executor> Filled<E> {
    /// Keeps `last` (the output, else the input: what the next launch's
    /// input most likely is) as the writer's reference; the buffer it
    /// replaces, and `other`, go to `pool`.
    pub(in crate::recorder) fn keep(
        self,
        last: E::Buffer,
        other: Option<E::Buffer>,
        pool: &BufferPool<E::Buffer>,
    ) {
        let old = lock(&self.reader)
            .last
            .replace((last, self.len, self.hashes));
        for b in old.map(|l| l.0).into_iter().chain(other) {
            pool.put(b);
        }
    }
}

impl<E: Executor> Reader<E> {
    /// Fills the first `len` bytes of `buf` with the snapshot whose chunks
    /// (of `cs` bytes) hash to `hashes` and lie in the device copy at
    /// `device`: from `also` (the input, when this is the output) or the
    /// last snapshot where a chunk's hash is found there, else from the
    /// store, else from the device. The chunks copied from the device are
    /// hashed again on the host: a hash that differs means the device's
    /// hashing cannot be trusted, so the whole snapshot is copied from the
    /// device and `distrusted` is set.
    fn fill_one(
        &mut self,
        mut buf: E::Buffer,
        (len, cs): (usize, usize),
        (device, hashes): (u64, &[ChunkHash]),
        also: Option<(&[u8], &[ChunkHash])>,
        distrusted: &AtomicBool,
    ) -> Result<E::Buffer> {
        if buf.as_ref().len() < len || hashes.len() != len.div_ceil(cs) {
            return Err(Error::Internal(
                "a device-hashed snapshot's buffer or hashes do not fit it",
            ));
        }
        let mut wanted: Vec<usize> = Vec::new();
        {
            let last = self
                .last
                .as_ref()
                .map(|(b, l, h)| (&b.as_ref()[..*l], h.as_slice()));
            let mut index: HashMap<ChunkHash, &[u8]> = HashMap::new();
            for (bytes, hs) in [last, also].into_iter().flatten() {
                for (i, h) in hs.iter().enumerate() {
                    index.insert(*h, &bytes[range(i, cs, bytes.len())]);
                }
            }
            let place = buf.as_mut();
            for (i, h) in hashes.iter().enumerate() {
                let r = range(i, cs, len);
                match index.get(h) {
                    Some(src) if src.len() == r.len() => {
                        place[r.clone()].copy_from_slice(src);
                        self.traffic.host += r.len() as u64;
                    }
                    _ => wanted.push(i),
                }
            }
        }
        let (from_device, stored) =
            self.known
                .copy_known(&mut buf.as_mut()[..len], (len, cs), hashes, wanted)?;
        self.traffic.store += stored;
        let segs = segments(&from_device, (len, cs), device);
        buf = self.download(buf, &segs)?;
        let bad = from_device
            .iter()
            .find(|&&i| ChunkHash::of(&buf.as_ref()[range(i, cs, len)]) != hashes[i]);
        if let Some(&i) = bad {
            distrusted.store(true, Ordering::Relaxed);
            log::error!(
                "device hashing: the device hashed chunk {i} of a snapshot to {}, the host to \
                 {}: device hashing is off from now on, and this snapshot is copied whole",
                String::from_utf8_lossy(&hashes[i].hex()),
                String::from_utf8_lossy(&ChunkHash::of(&buf.as_ref()[range(i, cs, len)]).hex())
            );
            let whole = [from_start(device, len)];
            buf = self.download(buf, &whole)?;
        }
        Ok(buf)
    }

    /// Downloads `segs` into `buf` on the writer's queue, waiting for them.
    fn download(&mut self, buf: E::Buffer, segs: &[Segment]) -> Result<E::Buffer> {
        if segs.is_empty() {
            return Ok(buf);
        }
        let what = "device hashing: copying chunks from the device copy";
        let ticket = self.queue.download(buf, segs).context(what)?;
        let mut got = None;
        crate::exec::block_on(settle(&mut self.queue, |t, b| {
            if t == ticket {
                got = Some(b);
            }
        }))
        .context(what)?;
        self.traffic.device += segs.iter().map(|s| s.len as u64).sum::<u64>();
        got.ok_or(Error::Internal("the executor lost a download buffer"))
    }
}

/// The chunks `which` (ascending) of `len` bytes in chunks of `cs` as
/// copies from the device copy at `device`, neighbours joined.
fn segments(which: &[usize], (len, cs): (usize, usize), device: u64) -> Vec<Segment> {
    let mut segs: Vec<Segment> = Vec::new();
    for &i in which {
        let r = range(i, cs, len);
        match segs.last_mut() {
            Some(s) if s.host_offset + s.len == r.start => s.len += r.len(),
            _ => segs.push(Segment {
                device: device + r.start as u64,
                host_offset: r.start,
                len: r.len(),
            }),
        }
    }
    segs
}

#[cfg(test)]
mod tests;
