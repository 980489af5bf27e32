//! The chunk store: capture files as content-addressed, compressed chunks,
//! each kept once per capture directory, and a manifest per file.
//!
//! A file's bytes are cut into fixed-size chunks (2 MiB unless the store
//! says otherwise); each chunk is named by the blake3 hash of its bytes and
//! kept as `D/.reprise-store/chunks/XX/HASH`, once however many files hold
//! it: zstd-compressed, or (format 2) as a plain file of its bytes when it
//! hardly compresses, which a replay on the host maps ([`Mappable`]). The
//! file itself becomes a [`Manifest`]: its length and its chunks' names, in
//! order. `docs/store.md` describes the layout, the format's version and
//! why the chunk size and the compression level are what they are;
//! [`layout`] has the names.
//!
//! Several writers, in one process or many (an MPI job's ranks), may write
//! one store at once: a chunk is written into a fresh temporary file and
//! linked to its name, which never replaces what is there, and what is at
//! a chunk's name counts only when it holds the chunk's bytes. Manifests
//! are renamed into place by the caller
//! (`reprise_capture::store::write_atomically`). [`gc`] removes the chunks
//! no manifest names while writers write, and [`usage`] says what the
//! store holds.
//!
//! ```
//! use reprise_capture::chunks::{ChunkStore, StoreOptions};
//! # fn main() -> reprise_capture::Result<()> {
//! let dir = tempfile::tempdir().unwrap();
//! let store = ChunkStore::create(dir.path(), StoreOptions::default())?;
//! let input = vec![1u8; 3 << 20];
//! let mut output = input.clone();
//! output[5] = 2; // the kernel changed the first chunk only
//!
//! // A pin keeps what is stored from a concurrent gc until the manifests
//! // naming it are in the directory.
//! let pin = store.pin()?;
//! let m_in = store.put_pinned(&pin, &input)?;
//! let m_out = store.put_pinned(&pin, &output)?;
//! let path = dir.path().join("k.record_output.chunks");
//! reprise_capture::store::write_atomically(&path, &m_out.encode(), false)?;
//! drop(pin);
//!
//! // The output's last two chunks are the input's: four chunk files in all
//! // (the input's three equal chunks are one).
//! assert_eq!(m_out.chunks()[1..], m_in.chunks()[1..]);
//! let mut back = vec![0u8; m_out.len() as usize];
//! store.read_into(&reprise_capture::chunks::Manifest::read(&path)?, &mut back)?;
//! assert_eq!(back, output);
//! assert!(store.check(&m_out).is_empty());
//! # Ok(()) }
//! ```

use crate::fs;
mod gc;
pub mod layout;
mod leftovers;
mod manifest;
mod map;
mod names;
mod pin;
mod present;
mod put;
mod read;
mod sample;
#[cfg(test)]
mod tests;
mod usage;
mod write;

use std::collections::HashSet;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use rustix::io::Errno;

pub use crate::error::{
    ChunkFault, ChunkHash, ChunkProblem, ManifestError, StoreProblem, VersionProblem,
};
pub use gc::{GcOptions, GcReport, gc, gc_with};
pub use layout::{StoreVersion, manifest_path};
pub use leftovers::{Leftover, LeftoverKind, live_pins, store_leftovers};
pub use manifest::{ChunkRef, MAX_ENCODED_LEN, Manifest};
pub use map::{Gaps, Mappable};
pub use pin::Pin;
pub use read::Verify;
pub use usage::{Usage, usage};

use crate::error::{Error, Result};

/// How a store writes and reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// Flush every new chunk file to disk before it is linked to its name,
    /// and the directories it was linked into before a put returns (what
    /// `RecordConfig::fsync` asks of a capture). Default: on.
    pub fsync: bool,
    /// The zstd level new chunks are compressed at. Default:
    /// [`layout::DEFAULT_LEVEL`].
    pub level: i32,
    /// The chunk size of a store that does not exist yet; a store that
    /// exists keeps its own (its `VERSION` says it). Default:
    /// [`layout::DEFAULT_CHUNK_SIZE`].
    pub chunk_size: u32,
    /// How many threads a put or a read uses at most (1: the calling thread
    /// alone). Default: the machine's cores, at most 4.
    pub threads: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            fsync: true,
            level: layout::DEFAULT_LEVEL,
            chunk_size: layout::DEFAULT_CHUNK_SIZE,
            threads: default_threads(),
        }
    }
}

impl StoreOptions {
    /// The defaults, flushing to disk or not ([`StoreOptions::fsync`]).
    pub fn flushing(fsync: bool) -> Self {
        StoreOptions {
            fsync,
            ..StoreOptions::default()
        }
    }
}

/// The machine's cores, at most 4: asked once (the system's answer reads
/// cgroup files).
fn default_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get().min(4))
            .unwrap_or(1)
    })
}

/// The chunk store of one capture directory, for writing
/// ([`ChunkStore::create`]) or reading ([`ChunkStore::open`]).
///
/// It is `Sync`: one store may be shared by the threads of a process.
#[derive(Debug)]
pub struct ChunkStore {
    dir: PathBuf,
    root: PathBuf,
    chunks_fd: OwnedFd,
    /// `tmp/`: `None` for a store opened for reading.
    tmp_fd: Option<OwnedFd>,
    chunk_size: u32,
    /// The store format's version of its `VERSION`.
    version: u32,
    /// The chunk directories `chunks/XX` opened so far, by `XX`'s byte.
    prefixes: Box<[OnceLock<OwnedFd>]>,
    /// Whether new chunks are written as unnamed files (`O_TMPFILE`) and
    /// linked to their names through `/proc/self/fd`, found out by the
    /// first put.
    unnamed: OnceLock<bool>,
    options: StoreOptions,
    /// Chunks [`ChunkStore::check`] or a read found whole.
    verified: Mutex<HashSet<ChunkHash>>,
    /// The names this store's puts gave chunks, by a fast hash of their
    /// bytes.
    names: names::Names,
    /// Chunk files read (decompressed or refused), for the tests.
    #[cfg(test)]
    pub(crate) loads: std::sync::atomic::AtomicU64,
}

impl ChunkStore {
    /// The store of the capture directory `dir`, for writing: the
    /// directory and its `.reprise-store` are made when missing (by any
    /// number of processes at once), and the store's `VERSION` is checked
    /// (or written, with `options.chunk_size`).
    pub fn create(dir: impl AsRef<Path>, options: StoreOptions) -> Result<Self> {
        Self::create_in_version(dir, options, layout::FORMAT_VERSION)
    }

    /// [`ChunkStore::create`], a store made here getting the format
    /// version `version` ([`layout::OLDEST_FORMAT_VERSION`] to
    /// [`layout::FORMAT_VERSION`]: a store of version 1 for readers that
    /// know no other); a store that exists keeps its own, and is written
    /// in it.
    pub fn create_in_version(
        dir: impl AsRef<Path>,
        options: StoreOptions,
        version: u32,
    ) -> Result<Self> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
        let dir_fd = fs::open_dir_fd(dir)?;
        Self::create_at(dir, &dir_fd, options, version)
    }

    /// [`ChunkStore::create_in_version`] in the capture directory open as
    /// `dir_fd` (`dir` names it in messages): a writer that holds its
    /// directory open writes into that one, whatever its path comes to
    /// name meanwhile.
    pub fn create_at(
        dir: &Path,
        dir_fd: &OwnedFd,
        options: StoreOptions,
        version: u32,
    ) -> Result<Self> {
        let root = dir.join(layout::STORE_DIR);
        let root_fd = fs::open_or_make_dir(dir_fd, layout::STORE_DIR)
            .map_err(|e| Error::io(&root, "create store directory", e))?;
        let sub = |name: &str| {
            fs::open_or_make_dir(&root_fd, name)
                .map_err(|e| Error::io(root.join(name), "create store directory", e))
        };
        let chunks_fd = sub(layout::CHUNKS_DIR)?;
        let tmp_fd = sub(layout::TMP_DIR)?;
        let version = write::version(&root, &root_fd, &tmp_fd, options, version)?;
        let tmp_fd = Some(tmp_fd);
        Ok(Self::new(dir, root, chunks_fd, tmp_fd, version, options))
    }

    fn new(
        dir: &Path,
        root: PathBuf,
        chunks_fd: OwnedFd,
        tmp_fd: Option<OwnedFd>,
        version: StoreVersion,
        options: StoreOptions,
    ) -> Self {
        ChunkStore {
            dir: dir.to_path_buf(),
            root,
            chunks_fd,
            tmp_fd,
            chunk_size: version.chunk_size,
            version: version.version,
            prefixes: (0..256).map(|_| OnceLock::new()).collect(),
            unnamed: OnceLock::new(),
            options,
            verified: Mutex::new(HashSet::new()),
            names: names::Names::default(),
            #[cfg(test)]
            loads: Default::default(),
        }
    }

    /// The store of the capture directory `dir`, for reading; `None` when
    /// the directory has none. Its `VERSION` is checked.
    pub fn open(dir: impl AsRef<Path>) -> Result<Option<Self>> {
        Self::open_with(dir, StoreOptions::default())
    }

    /// [`ChunkStore::open`], reading with `options.threads` threads.
    pub fn open_with(dir: impl AsRef<Path>, options: StoreOptions) -> Result<Option<Self>> {
        let dir = dir.as_ref();
        let root = dir.join(layout::STORE_DIR);
        let dir_fd = fs::open_dir_fd(dir)?;
        let root_fd = match fs::open_dir(&dir_fd, layout::STORE_DIR) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(Errno::NOENT.raw_os_error()) => return Ok(None),
            Err(e) => return Err(Error::io(&root, "open store directory", e)),
        };
        let version = read::version(&root, &root_fd)?;
        let chunks_fd = fs::open_dir(&root_fd, layout::CHUNKS_DIR)
            .map_err(|e| Error::io(root.join(layout::CHUNKS_DIR), "open store directory", e))?;
        let store = Self::new(dir, root, chunks_fd, None, version, options);
        Ok(Some(store))
    }

    /// The capture directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The store's own directory, `dir/.reprise-store`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The size of the chunks this store's writers cut.
    pub fn chunk_size(&self) -> u32 {
        self.chunk_size
    }

    /// The store format's version it is kept in (its `VERSION`'s), which
    /// its writers write in.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The options it was made with.
    pub fn options(&self) -> StoreOptions {
        self.options
    }

    /// The path of a chunk's file, for messages.
    pub fn chunk_file(&self, hash: &ChunkHash) -> PathBuf {
        self.root.join(layout::chunk_path(hash))
    }

    fn threads_for(&self, n: usize) -> usize {
        self.options.threads.clamp(1, n.max(1))
    }

    /// The chunk directory `chunks/XX` of the chunks whose hash starts
    /// with the byte `prefix`, opened once (and made first when `make`
    /// says so and it is missing).
    fn prefix_dir(&self, prefix: u8, make: bool) -> std::io::Result<&OwnedFd> {
        let slot = &self.prefixes[usize::from(prefix)];
        if let Some(fd) = slot.get() {
            return Ok(fd);
        }
        let name = format!("{prefix:02x}");
        // Opened first: a `mkdir` that finds it there still takes the
        // chunks directory's lock, which every writer's threads contend for.
        let fd = match fs::open_dir(&self.chunks_fd, &name) {
            Err(e) if make && e.raw_os_error() == Some(Errno::NOENT.raw_os_error()) => {
                fs::open_or_make_dir(&self.chunks_fd, &name)?
            }
            other => other?,
        };
        // Another thread may have opened it meanwhile: either will do.
        Ok(slot.get_or_init(|| fd))
    }

    /// The path of the chunk directory `chunks/XX`, for messages.
    fn prefix_path(&self, prefix: u8) -> PathBuf {
        self.root
            .join(layout::CHUNKS_DIR)
            .join(format!("{prefix:02x}"))
    }

    fn tmp(&self) -> Result<&OwnedFd> {
        self.tmp_fd
            .as_ref()
            .ok_or_else(|| Error::store(&self.root, StoreProblem::ReadOnly))
    }
}
