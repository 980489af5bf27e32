//! Puts: bytes cut into chunks, each named and stored where the store
//! lacks it ([`super::write`] does one chunk), on a pool of workers; a
//! capture's files go in one put ([`ChunkStore::put_all`]).
//!
//! With [`super::StoreOptions::fsync`], a new chunk's file is handed to a
//! flusher as soon as it is written, and the worker goes on to the next
//! chunk: the flush (the longest wait of a capture whose chunks are mostly
//! stored) overlaps the hashing still to do. The flushers link each chunk
//! to its name once it is flushed, and flush the directory linked into at
//! once, before taking the next; a put returns the manifests that name
//! them only once every flusher is done.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use crate::error::{ChunkHash, Error, Result, StoreProblem};
use crate::threads::lock;

use super::manifest::{ChunkRef, Manifest};
use super::names::Quick;
use super::pin::Added;
use super::write::{Ensured, Name, Scratch, Written};
use super::{ChunkStore, Pin};

/// How many written chunk files wait for a flusher at most (a worker that
/// finds the queue full waits): a put of any size holds a bounded number
/// of files open.
const QUEUED: usize = 32;

/// The hashes a put added to its pin ([`Added::New`]) and has not
/// settled: forgotten when it fails (or panics), so that a put waiting for
/// one of them makes sure of it itself.
struct Unsettled<'p, 'a> {
    pin: &'p Pin<'a>,
    hashes: Mutex<Vec<ChunkHash>>,
}

impl Unsettled<'_, '_> {
    fn push(&self, hash: ChunkHash) {
        lock(&self.hashes).push(hash);
    }

    /// Every one is stored, and as durable as asked.
    fn settle(self) {
        let hashes = std::mem::take(&mut *lock(&self.hashes));
        for h in &hashes {
            self.pin.settle(h);
        }
    }
}

impl Drop for Unsettled<'_, '_> {
    fn drop(&mut self) {
        for h in self
            .hashes
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            self.pin.unsee(h);
        }
    }
}

/// The parts of one put, numbered as one list of chunks: part `k`'s
/// chunk `i` is chunk `starts[k] + i`.
struct Parts<'b> {
    parts: &'b [&'b [u8]],
    /// Where each part's chunks begin, and the total after the last.
    starts: Vec<usize>,
    chunk_size: usize,
}

impl<'b> Parts<'b> {
    fn new(parts: &'b [&'b [u8]], chunk_size: usize) -> Parts<'b> {
        let mut starts = Vec::with_capacity(parts.len() + 1);
        let mut total = 0;
        for p in parts {
            starts.push(total);
            total += p.len().div_ceil(chunk_size);
        }
        starts.push(total);
        Parts {
            parts,
            starts,
            chunk_size,
        }
    }

    fn total(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }

    /// The part chunk `g` (less than [`Parts::total`]) is of.
    fn part_of(&self, g: usize) -> usize {
        // The last part beginning at or before `g`: parts without bytes
        // begin where the next does, and hold no chunk.
        self.starts.partition_point(|&s| s <= g) - 1
    }

    /// The bytes of chunk `g` (less than [`Parts::total`]).
    fn chunk(&self, g: usize) -> &'b [u8] {
        let k = self.part_of(g);
        let bytes = self.parts[k];
        let at = (g - self.starts[k]) * self.chunk_size;
        &bytes[at..(at + self.chunk_size).min(bytes.len())]
    }

    fn range(&self, k: usize) -> std::ops::Range<usize> {
        self.starts[k]..self.starts[k + 1]
    }
}

impl ChunkStore {
    /// Stores `bytes`: cuts them into chunks, hashes each, and stores only
    /// those the store lacks (compressing those only); returns the manifest
    /// that stands for them. A chunk equal to one stored before (an output
    /// chunk the kernel left as the input had it) costs no write.
    ///
    /// Its chunks are kept from a concurrent [`super::gc`] while it runs,
    /// not after: a manifest written after it returns may name chunks a gc
    /// removed in between. Put through a [`Pin`] held until the manifest is
    /// in place ([`ChunkStore::put_pinned`]) when a gc may run.
    pub fn put(&self, bytes: &[u8]) -> Result<Manifest> {
        let pin = self.pin()?;
        self.put_pinned(&pin, bytes)
    }

    /// [`ChunkStore::put`], with the chunks kept from gc until `pin` is
    /// dropped. The pin must be this store's.
    ///
    /// When it returns, every chunk the manifest names is linked to its
    /// name, and with [`super::StoreOptions::fsync`] flushed and so is the
    /// directory it is linked into: each new chunk file is flushed as soon
    /// as it is written (on threads of their own, while the other chunks
    /// are hashed), then linked, and the directory linked into flushed. A
    /// chunk that another put under the same pin is storing is waited for.
    pub fn put_pinned(&self, pin: &Pin<'_>, bytes: &[u8]) -> Result<Manifest> {
        let (mut puts, ()) = self.put_all(pin, &[bytes], |_, _| Ok(()), || ())?;
        puts.pop()
            .map(|(m, ())| m)
            .ok_or(Error::Internal("a put of one file gave no manifest"))
    }

    /// [`ChunkStore::put_pinned`] for several files at once (a capture's
    /// output, input, globals and image): one manifest for each of `parts`,
    /// in order, each with what `prepare` made of it (given the part's
    /// index). `prepare` runs once every chunk is named, while the new
    /// chunks (and then the directories they were linked into) are flushed,
    /// the parts' in parallel: a caller writes a manifest's file (and
    /// flushes it) there, and renames it into place when this returns,
    /// where written after the put it would wait for a flush of its own.
    /// It runs again, and its first result is dropped, in the one case
    /// where the manifest changes after it ran (a chunk named from memory
    /// for another chunk's bytes: two chunks of one xxh3-128).
    ///
    /// The parts share one pool of workers, which takes their chunks in
    /// order: put first the part whose chunks are likeliest new (a
    /// capture's output), so that their flushes begin soonest. `meanwhile`
    /// runs on the calling thread once every chunk is hashed and written,
    /// while the new ones are still being flushed (a capture's descriptor
    /// is made there), and what it gives is returned beside the
    /// manifests. When the put fails, `meanwhile` may not have run.
    pub fn put_all<'s, T: Send, R>(
        &'s self,
        pin: &Pin<'_>,
        parts: &[&[u8]],
        prepare: impl Fn(usize, &Manifest) -> Result<T> + Sync,
        meanwhile: impl FnOnce() -> R,
    ) -> Result<(Vec<(Manifest, T)>, R)> {
        if !std::ptr::eq(pin.store(), self) {
            return Err(Error::Internal("a pin used with another chunk store"));
        }
        let tmp_fd = self.tmp()?;
        let parts = Parts::new(parts, self.chunk_size as usize);
        let n = parts.total();
        let threads = self.threads_for(n);
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let mine = Unsettled {
            pin,
            hashes: Mutex::new(Vec::new()),
        };
        // Chunks another put under this pin (or this one, earlier) was at.
        let waits: Mutex<Vec<usize>> = Mutex::new(Vec::new());
        let flush_failed: Mutex<Option<Error>> = Mutex::new(None);
        // A worker: names and stores chunks until none is left, handing
        // each new chunk file to the flushers through `to_flush` (`None`:
        // it links its own, flushing it first if asked).
        let work = |to_flush: Option<mpsc::SyncSender<Written<'s>>>| {
            let mut scratch = Scratch::new(self)?;
            let mut done = Vec::new();
            let result = (|| {
                while !stop.load(Ordering::Relaxed) {
                    let g = next.fetch_add(1, Ordering::Relaxed);
                    if g >= n {
                        break;
                    }
                    let chunk = parts.chunk(g);
                    let quick = Quick::of(chunk);
                    let mut name = match self.names.get(&quick) {
                        Some(hash) => Name::Remembered(hash),
                        None => {
                            let hash = ChunkHash::of(chunk);
                            self.names.insert(quick, hash);
                            Name::Computed(hash)
                        }
                    };
                    let hash = loop {
                        let hash = name.hash();
                        match pin.add(&hash)? {
                            Added::New => {
                                mine.push(hash);
                                match self.ensure(tmp_fd, pin.id(), name, chunk, &mut scratch)? {
                                    Ensured::Stored => {}
                                    Ensured::Written(w) => match &to_flush {
                                        Some(to) => to.send(w).map_err(|_| {
                                            Error::Internal("the chunk flushers stopped")
                                        })?,
                                        None => self.link_one(w)?,
                                    },
                                    Ensured::Misnamed(real) => {
                                        self.names.insert(quick, real);
                                        name = Name::Computed(real);
                                        continue;
                                    }
                                }
                            }
                            Added::Seen => lock(&waits).push(g),
                        }
                        break hash;
                    };
                    done.push((
                        g,
                        ChunkRef {
                            hash,
                            len: chunk.len() as u32,
                        },
                    ));
                }
                Ok(())
            })();
            if let Err(e) = result {
                stop.store(true, Ordering::Relaxed);
                return Err(e);
            }
            Ok(done)
        };
        // A flusher: flushes and links the chunks it is handed until every
        // worker is done (after a failure, it only drops them, which
        // removes their files).
        let flush = |queue: Arc<Mutex<mpsc::Receiver<Written<'s>>>>| {
            loop {
                let Ok(w) = lock(&queue).recv() else {
                    return;
                };
                if stop.load(Ordering::Relaxed) {
                    continue;
                }
                if let Err(e) = self.link_one(w) {
                    stop.store(true, Ordering::Relaxed);
                    lock(&flush_failed).get_or_insert(e);
                }
            }
        };
        let manifest_of = |k: usize, chunks: &[ChunkRef]| {
            let len = parts.parts[k].len() as u64;
            Manifest::new(len, self.chunk_size, chunks[parts.range(k)].to_vec())
                .and_then(|m| m.with_version(self.version))
                .map_err(|e| Error::store(&self.root, StoreProblem::Manifest(e)))
        };
        let prepare = &prepare;
        let (mut chunks, puts, also) = std::thread::scope(|s| -> Result<_> {
            let (to_flush, queue) = mpsc::sync_channel::<Written<'s>>(QUEUED);
            // Each flusher holds the queue: should all of them end early (a
            // panic), a worker's send fails rather than waits.
            let queue = Arc::new(Mutex::new(queue));
            let flush = &flush;
            let flushers: Vec<_> = if self.options.fsync && n > 0 {
                (0..threads)
                    .filter_map(|_| {
                        let queue = Arc::clone(&queue);
                        crate::threads::spawn(s, move || flush(queue))
                    })
                    .collect()
            } else {
                Vec::new()
            };
            drop(queue);
            // No flusher (none asked, or no thread to be had): the workers
            // link their own.
            let to_flush = (!flushers.is_empty()).then_some(to_flush);
            let results = crate::threads::run_all(vec![to_flush.clone(); threads], work);
            // The queue closes: the flushers end once it is empty (and are
            // joined when the scope ends, should this return early).
            drop(to_flush);
            let mut chunks: Vec<Option<ChunkRef>> = vec![None; n];
            for r in results {
                for (g, c) in r.unwrap_or(Err(Error::Internal("a chunk store worker panicked")))? {
                    chunks[g] = Some(c);
                }
            }
            if let Some(e) = lock(&flush_failed).take() {
                return Err(e);
            }
            let chunks: Option<Vec<ChunkRef>> = chunks.into_iter().collect();
            let chunks = chunks.ok_or(Error::Internal("a chunk store worker skipped a chunk"))?;
            let manifests = (0..parts.parts.len())
                .map(|k| manifest_of(k, &chunks))
                .collect::<Result<Vec<_>>>()?;
            // Every chunk is named: the manifests are prepared while the new
            // chunks are flushed (each `prepare` flushes a file of its own),
            // in parallel when there is anything to wait for.
            let wait = self.options.fsync && (manifests.len() > 1 || !flushers.is_empty());
            let mut preparing = Vec::with_capacity(manifests.len());
            let mut inline = Vec::new();
            for (k, m) in manifests.into_iter().enumerate() {
                if wait {
                    preparing.push(crate::threads::spawn_or_run(s, move || {
                        let t = prepare(k, &m);
                        (m, t)
                    }));
                } else {
                    inline.push((k, m));
                }
            }
            // `meanwhile` runs while the flushers finish.
            let also = meanwhile();
            for f in flushers {
                if f.join().is_err() {
                    lock(&flush_failed)
                        .get_or_insert(Error::Internal("a chunk store flusher panicked"));
                }
            }
            let flushed = lock(&flush_failed).take().map_or(Ok(()), Err);
            // Every task joined before a failure is returned (what the
            // others made is dropped).
            let puts: Vec<Result<_>> = preparing
                .into_iter()
                .map(|t| {
                    t.join()
                        .map_err(|_| Error::Internal("preparing a manifest panicked"))
                })
                .chain(inline.into_iter().map(|(k, m)| {
                    let t = prepare(k, &m);
                    Ok((m, t))
                }))
                .map(|p| p.and_then(|(m, t)| Ok((m, t?))))
                .collect();
            flushed?;
            Ok((chunks, puts.into_iter().collect::<Result<Vec<_>>>()?, also))
        })?;
        mine.settle();
        // Seen under this pin: settled by now, or by the put at it (which
        // settles its own before it waits for any other's); one whose put
        // failed is made sure of here.
        let mut renamed = vec![false; puts.len()];
        for g in waits.into_inner().unwrap_or_else(|e| e.into_inner()) {
            let hash = chunks[g].hash;
            if !pin.wait_settled(&hash) {
                // Named anew where the name remembered was another chunk's.
                chunks[g].hash = self.ensure_alone(pin, tmp_fd, hash, parts.chunk(g))?;
                renamed[parts.part_of(g)] |= chunks[g].hash != hash;
            }
        }
        let mut again = Vec::with_capacity(puts.len());
        for (k, put) in puts.into_iter().enumerate() {
            if renamed[k] {
                drop(put);
                let manifest = manifest_of(k, &chunks)?;
                let prepared = prepare(k, &manifest)?;
                again.push((manifest, prepared));
            } else {
                again.push(put);
            }
        }
        Ok((again, also))
    }

    /// Makes sure of one chunk on its own, settled before it returns (a
    /// chunk whose other put failed); returns its name, which is `hash`
    /// unless that was remembered for other bytes.
    fn ensure_alone(
        &self,
        pin: &Pin<'_>,
        tmp_fd: &std::os::fd::OwnedFd,
        hash: ChunkHash,
        data: &[u8],
    ) -> Result<ChunkHash> {
        if pin.add(&hash)? == Added::Seen {
            // Another put took it up again meanwhile.
            return if pin.wait_settled(&hash) {
                Ok(hash)
            } else {
                self.ensure_alone(pin, tmp_fd, hash, data)
            };
        }
        let mine = Unsettled {
            pin,
            hashes: Mutex::new(vec![hash]),
        };
        let mut scratch = Scratch::new(self)?;
        let name = Name::Remembered(hash);
        match self.ensure(tmp_fd, pin.id(), name, data, &mut scratch)? {
            Ensured::Stored => {}
            Ensured::Written(w) => self.link_one(w)?,
            Ensured::Misnamed(real) => {
                mine.settle();
                return self.ensure_alone(pin, tmp_fd, real, data);
            }
        }
        mine.settle();
        Ok(hash)
    }
}

#[cfg(test)]
mod tests;
