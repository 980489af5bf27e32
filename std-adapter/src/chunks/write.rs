//! Writing: a store's `VERSION`, and puts (cut, hash, store what is new).
//!
//! A new chunk is compressed into a fresh file in `tmp/` (`O_EXCL`, a random
//! name), flushed when asked, and linked to `chunks/XX/HASH`; a name that
//! is taken means another writer stored the same bytes, and the temporary
//! file goes either way. A chunk the store has is touched instead (its
//! modification time set to now), which is what tells a concurrent gc that
//! it is in use again (see [`super::pin`]).
//!
//! The index of what is stored is the store's directory itself: whether a
//! chunk is there is asked by that touch, which gc's safety needs anyway
//! (one `utimensat`, microseconds, against the ~0.17 ms it takes to hash a
//! MiB). In memory, each [`Pin`] remembers the chunks it has made sure of,
//! so a chunk met again under the same pin (an output chunk equal to the
//! input's, the zero chunks of a snapshot) costs not even that.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rustix::io::Errno;

use crate::error::{ChunkHash, Error, Result, StoreProblem};

use super::layout::{self, StoreVersion, tmp};
use super::manifest::{ChunkRef, Manifest};
use super::{ChunkStore, Pin, StoreOptions, fs};

/// The store's `VERSION`: read, or written with `options.chunk_size` when
/// there is none (exclusively: of several processes creating the store at
/// once, one writes it and the others read it).
pub(super) fn version(
    root: &Path,
    root_fd: &OwnedFd,
    tmp_fd: &OwnedFd,
    options: StoreOptions,
) -> Result<StoreVersion> {
    match super::read::version(root, root_fd) {
        Err(Error::Store {
            problem: StoreProblem::Version(crate::error::VersionProblem::Missing),
            ..
        }) => {}
        other => return other,
    }
    let path = root.join(layout::VERSION_FILE);
    let wanted = StoreVersion {
        chunk_size: options.chunk_size,
    };
    let text = wanted.to_text();
    // The text must read back as what was asked (a chunk size out of
    // bounds is refused here, before it is written).
    StoreVersion::parse(text.as_bytes())
        .map_err(|p| Error::store(&path, StoreProblem::Version(p)))?;
    let path = &path;
    let io = |what| move |e: std::io::Error| Error::io(path, what, e);
    let (name, mut file) = fs::create_fresh(tmp_fd, tmp::VERSION, 0o444).map_err(io("create"))?;
    let placed = (|| {
        file.write_all(text.as_bytes())?;
        if options.fsync {
            file.sync_all()?;
        }
        fs::place(tmp_fd, &name, root_fd, layout::VERSION_FILE)
    })();
    let _ = fs::remove(tmp_fd, &name);
    placed.map_err(io("write"))?;
    super::read::version(root, root_fd)
}

/// What one worker of a put uses again for each chunk.
struct Scratch {
    compressor: zstd::bulk::Compressor<'static>,
    out: Vec<u8>,
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
    pub fn put_pinned(&self, pin: &Pin<'_>, bytes: &[u8]) -> Result<Manifest> {
        if !std::ptr::eq(pin.store(), self) {
            return Err(Error::Internal("a pin used with another chunk store"));
        }
        let tmp_fd = self.tmp()?;
        let cs = self.chunk_size as usize;
        let n = bytes.len().div_ceil(cs);
        let threads = self.threads_for(n);
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let linked: Mutex<BTreeSet<[u8; 2]>> = Mutex::new(BTreeSet::new());
        let work = || -> Result<Vec<(usize, ChunkRef)>> {
            let mut scratch = Scratch {
                compressor: zstd::bulk::Compressor::new(self.options.level)
                    .map_err(|e| Error::io(&self.root, "start zstd", e))?,
                out: Vec::new(),
            };
            let mut done = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let chunk = &bytes[i * cs..((i + 1) * cs).min(bytes.len())];
                let hash = ChunkHash::of(chunk);
                let result = match pin.add(&hash) {
                    Ok(true) => self
                        .ensure(tmp_fd, pin.id(), &hash, chunk, &mut scratch)
                        .inspect_err(|_| pin.unsee(&hash)),
                    // Made sure of under this pin already.
                    Ok(false) => Ok(false),
                    Err(e) => Err(e),
                };
                match result {
                    Ok(new) => {
                        if new && self.options.fsync {
                            let hex = hash.hex();
                            let mut l = linked.lock().unwrap_or_else(|e| e.into_inner());
                            l.insert([hex[0], hex[1]]);
                        }
                        done.push((
                            i,
                            ChunkRef {
                                hash,
                                len: chunk.len() as u32,
                            },
                        ));
                    }
                    Err(e) => {
                        stop.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                }
            }
            Ok(done)
        };
        let results: Vec<Result<Vec<(usize, ChunkRef)>>> = if threads == 1 {
            vec![work()]
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..threads)
                    .map(|_| crate::threads::spawn_or_run(s, work))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or(Err(Error::Internal("a chunk store worker panicked")))
                    })
                    .collect()
            })
        };
        let mut chunks: Vec<Option<ChunkRef>> = vec![None; n];
        for r in results {
            for (i, c) in r? {
                chunks[i] = Some(c);
            }
        }
        let chunks: Option<Vec<ChunkRef>> = chunks.into_iter().collect();
        let chunks = chunks.ok_or(Error::Internal("a chunk store worker skipped a chunk"))?;
        if self.options.fsync {
            // The links themselves, once per directory linked into.
            let linked = linked.into_inner().unwrap_or_else(|e| e.into_inner());
            for p in linked {
                let prefix = std::str::from_utf8(&p).unwrap_or("00");
                let path = self.root.join(layout::CHUNKS_DIR).join(prefix);
                fs::open_dir(&self.chunks_fd, prefix)
                    .and_then(fs::sync_dir)
                    .map_err(|e| Error::io(&path, "sync directory", e))?;
            }
        }
        Manifest::new(bytes.len() as u64, self.chunk_size, chunks)
            .map_err(|e| Error::store(&self.root, StoreProblem::Manifest(e)))
    }

    /// Makes sure the chunk `hash` (of `data`) is stored: touched when it
    /// is, written when it is not (through `tmp/chunk.PIN_ID.RANDOM`, named
    /// after the pin it is written under). `true` when this call linked it.
    fn ensure(
        &self,
        tmp_fd: &OwnedFd,
        pin_id: &str,
        hash: &ChunkHash,
        data: &[u8],
        scratch: &mut Scratch,
    ) -> Result<bool> {
        let hex = hash.hex();
        let name = std::str::from_utf8(&hex).unwrap_or_default();
        let prefix = layout::prefix(&hex);
        let path = || self.chunk_file(hash);
        let prefix_fd = fs::open_or_make_dir(&self.chunks_fd, prefix).map_err(|e| {
            Error::io(
                self.root.join(layout::CHUNKS_DIR).join(prefix),
                "create store directory",
                e,
            )
        })?;
        // Known or not, a stored chunk is touched: that keeps it from a gc
        // that began before this put and listed no manifest naming it.
        match fs::touch(&prefix_fd, name) {
            Ok(()) => return Ok(false),
            Err(e) if e.raw_os_error() == Some(Errno::NOENT.raw_os_error()) => {}
            // Another user's chunk, which this one may read but not touch.
            Err(e)
                if [Errno::PERM, Errno::ACCESS, Errno::ROFS]
                    .map(|e| Some(e.raw_os_error()))
                    .contains(&e.raw_os_error()) =>
            {
                return Ok(false);
            }
            Err(e) => return Err(Error::io(path(), "touch chunk", e)),
        }
        scratch.out.clear();
        // Pieces of the chunk first: when none of them shrinks by an
        // eighth, the chunk is kept raw without compressing it whole (on
        // full-mantissa floats, zstd's ~0.6 GiB/s a core is most of a new
        // chunk's cost).
        let compress = worth_compressing(&mut scratch.compressor, data, &mut scratch.out)
            .map_err(|e| Error::io(path(), "compress chunk", e))?;
        scratch.out.clear();
        if compress {
            scratch
                .out
                .reserve(zstd::zstd_safe::compress_bound(data.len()));
            scratch
                .compressor
                .compress_to_buffer(data, &mut scratch.out)
                .map_err(|e| Error::io(path(), "compress chunk", e))?;
        }
        // Bytes that hardly compress are kept raw: their replay is then a
        // copy, not zstd's ~1 GiB/s a core.
        let saved = data.len().saturating_sub(scratch.out.len());
        if !compress || saved < data.len() / layout::KEEP_COMPRESSED_BELOW {
            scratch.out.clear();
            layout::raw_frame(data, &mut scratch.out);
        }
        let tmp_path = || self.root.join(layout::TMP_DIR);
        let (tmp_name, mut file) =
            fs::create_fresh(tmp_fd, &format!("{}{pin_id}.", tmp::CHUNK), 0o444)
                .map_err(|e| Error::io(tmp_path(), "create chunk", e))?;
        let placed = (|| {
            file.write_all(&scratch.out)?;
            if self.options.fsync {
                file.sync_all()?;
            }
            drop(file);
            fs::place(tmp_fd, &tmp_name, &prefix_fd, name)
        })();
        let _ = fs::remove(tmp_fd, &tmp_name);
        placed.map_err(|e| Error::io(path(), "write chunk", e))
    }
}

/// Whether `data` is worth compressing whole: a chunk of less than four
/// samples always is; a longer one when one of [`layout::SAMPLES`] pieces
/// of [`layout::SAMPLE_LEN`] bytes (its start, its middle, its end),
/// compressed on its own, saves at least 1/[`layout::KEEP_COMPRESSED_BELOW`]
/// of its bytes. A chunk whose samples all fail is kept raw even where the
/// rest of it would have compressed: that costs disk, never correctness.
/// `out` is scratch space.
fn worth_compressing(
    compressor: &mut zstd::bulk::Compressor<'static>,
    data: &[u8],
    out: &mut Vec<u8>,
) -> std::io::Result<bool> {
    let n = layout::SAMPLE_LEN;
    if data.len() < 4 * n {
        return Ok(true);
    }
    let last = data.len() - n;
    for at in [0, (last / 2) & !4095, last] {
        out.clear();
        out.reserve(zstd::zstd_safe::compress_bound(n));
        compressor.compress_to_buffer(&data[at..at + n], out)?;
        if n.saturating_sub(out.len()) >= n / layout::KEEP_COMPRESSED_BELOW {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod sample_tests {
    use super::worth_compressing;

    fn noise(n: usize) -> Vec<u8> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn samples_decide_whether_a_chunk_is_compressed_whole() {
        let mut c = zstd::bulk::Compressor::new(1).unwrap();
        let mut out = Vec::new();
        // Noise throughout: kept raw, never compressed whole.
        assert!(!worth_compressing(&mut c, &noise(1 << 20), &mut out).unwrap());
        // Zeros compress.
        assert!(worth_compressing(&mut c, &vec![0; 1 << 20], &mut out).unwrap());
        // Noise with a zero middle: the middle sample finds it.
        let mut mixed = noise(1 << 20);
        mixed[256 << 10..768 << 10].fill(0);
        assert!(worth_compressing(&mut c, &mixed, &mut out).unwrap());
        // A chunk smaller than four samples is always compressed whole.
        assert!(worth_compressing(&mut c, &noise(32 << 10), &mut out).unwrap());
    }
}
