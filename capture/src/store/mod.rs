//! Writing captures in reprise's own format, crash-safely.
//!
//! Every launch gets its own stem (`NAME-PID-SEQ`), so no capture overwrites
//! another. Data files are written under hidden temporary names, flushed to
//! disk, and renamed into place; the descriptor comes last, so a crash leaves
//! either a whole capture or orphaned data files (which `reprise list`
//! reports), never a descriptor whose files are half written.
//!
//! In [`CaptureFormat::Store`] the data files are chunks of the directory's
//! store ([`crate::chunks`]) and a manifest each, renamed into place beside
//! the descriptor as the raw files are; the chunks are stored (and pinned
//! against a concurrent `gc`) before any manifest naming them is, and the
//! descriptor still comes last.
//!
//! A [`CaptureStore`] opens its directory once and writes every file (the
//! descriptors, the data files or manifests, the chunk store) relative to
//! that descriptor: should the directory's path be swapped for a link
//! while a recording runs, every capture still lands whole in the
//! directory it began in.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use reprise_core::record::{Generation, KernelRecord, MAX_JSON_LEN};

mod budget;
mod extra;
mod writer;

pub use crate::capture::{ExtraParts, extra_paths};
pub use crate::chunks::ChunkHash;
pub use crate::chunks::layout::{DEFAULT_CHUNK_SIZE, DEFAULT_LEVEL};
pub use budget::{CAPTURE_OVERHEAD, DiskBudget, MAX_FREE_KEPT, MIN_FREE_PERCENT, estimate};
pub use extra::{peek_launch_seq, stage_extra, unstage_extra};
pub use writer::{CaptureWriter, KnownChunks};

use crate::CaptureFormat;
use crate::capture::{CapturePaths, checksum};
use crate::chunks::{ChunkStore, StoreOptions, manifest_path};
use crate::error::{Error, Result};

/// Sequence numbers of the matching launches (recorded or not), process-wide.
static LAUNCH_SEQ: AtomicU64 = AtomicU64::new(0);

/// Draws the next launch sequence number of this process.
pub fn next_launch_seq() -> u64 {
    LAUNCH_SEQ.fetch_add(1, Ordering::Relaxed)
}

/// Temporary files of interrupted writes start with this prefix.
pub const TEMP_PREFIX: &str = ".reprise-tmp.";

/// A directory that captures are written into.
#[derive(Debug)]
pub struct CaptureStore {
    dir: PathBuf,
    /// The directory, open: every file is written relative to it.
    dir_fd: rustix::fd::OwnedFd,
    fsync: bool,
    format: CaptureFormat,
    /// The directory's chunk store, opened at the first capture written in
    /// [`CaptureFormat::Store`].
    chunks: OnceLock<ChunkStore>,
    /// Images already written by this store, by checksum: later captures of
    /// the same image hard-link to them instead of writing it again.
    images: Mutex<HashMap<u64, PathBuf>>,
    budget: Option<DiskBudget>,
}

/// The contents of one capture to write.
#[derive(Debug, Clone, Copy)]
pub struct CaptureData<'a> {
    /// The pre-kernel snapshot.
    pub input: &'a [u8],
    /// The post-kernel snapshot, when saved.
    pub output: Option<&'a [u8]>,
    /// The globals, already encoded in the current layout.
    pub globals: &'a [u8],
    /// The device image.
    pub image: &'a [u8],
}

impl CaptureData<'_> {
    /// The most the capture can take on disk ([`estimate`]).
    pub fn estimate(&self) -> u64 {
        estimate(
            self.input.len() as u64,
            self.output.map_or(0, |o| o.len() as u64),
            self.globals.len() as u64,
            self.image.len() as u64,
        )
    }
}

/// `text` made safe for a file name: every character outside
/// `[A-Za-z0-9_.-]` (path separators, control characters, spaces) becomes
/// `_`, and leading dots go (no hidden name, no `..`).
pub fn safe_file_name(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' | '.' => c,
            _ => '_',
        })
        .collect();
    clean.trim_start_matches('.').to_string()
}

/// A kernel name made safe for a file name ([`safe_file_name`]), at most
/// 80 characters (longer names are cut and suffixed with a hash).
pub fn file_stem_for(name: &str) -> String {
    let mut clean = safe_file_name(name);
    if clean.is_empty() {
        clean = "kernel".to_string();
    }
    if clean.len() <= 80 {
        clean
    } else {
        format!("{}~{:08x}", &clean[..71], checksum(name.as_bytes()) as u32)
    }
}

impl CaptureStore {
    /// A store writing into `dir` (created if needed). With `fsync`, every
    /// file is flushed to disk before it is renamed into place.
    /// Its data files are plain files ([`CaptureFormat::Raw`]).
    pub fn new(dir: impl Into<PathBuf>, fsync: bool) -> Result<Self> {
        Self::with_format(dir, fsync, CaptureFormat::Raw)
    }

    /// [`CaptureStore::new`], writing the data files in `format`.
    pub fn with_format(
        dir: impl Into<PathBuf>,
        fsync: bool,
        format: CaptureFormat,
    ) -> Result<Self> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, "create directory", e))?;
        let dir_fd = crate::fs::open_dir_fd(&dir)?;
        Ok(CaptureStore {
            dir,
            dir_fd,
            fsync,
            format,
            chunks: OnceLock::new(),
            images: Mutex::new(HashMap::new()),
            budget: None,
        })
    }

    /// The store with a disk budget: every capture written settles its
    /// reservation ([`DiskBudget::reserve`], taken by the launching thread
    /// for [`CaptureData::estimate`] bytes) and is charged what it wrote.
    pub fn with_budget(mut self, budget: DiskBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// How its data files are written.
    pub fn format(&self) -> CaptureFormat {
        self.format
    }

    /// The directory's chunk store, created (or opened) on first use.
    fn chunk_store(&self) -> Result<&ChunkStore> {
        if let Some(s) = self.chunks.get() {
            return Ok(s);
        }
        let options = StoreOptions::flushing(self.fsync);
        let version = crate::chunks::layout::FORMAT_VERSION;
        let store = ChunkStore::create_at(&self.dir, &self.dir_fd, options, version)?;
        // Another writer thread may have set it meanwhile: either will do.
        let _ = self.chunks.set(store);
        self.chunks
            .get()
            .ok_or(Error::Internal("a chunk store that was set is not there"))
    }

    /// A descriptor path no existing capture uses, for `record`.
    fn fresh_descriptor(&self, record: &KernelRecord) -> PathBuf {
        let (stem, seq) = (file_stem_for(&record.name), record.launch_seq.unwrap_or(0));
        let base = format!("{stem}-{}-{seq}", std::process::id());
        let mut candidate = self.dir.join(format!("{base}.json"));
        let mut n = 2;
        let taken = |descriptor: &Path| {
            let input = CapturePaths::new(descriptor, Generation::Reprise).input;
            [descriptor.to_path_buf(), manifest_path(&input), input]
                .iter()
                .any(|p| self.exists(p))
        };
        while taken(&candidate) {
            candidate = self.dir.join(format!("{base}.{n}.json"));
            n += 1;
        }
        candidate
    }

    /// [`CaptureWriter::write`], adding to `counted` what it writes.
    fn write_counted(
        &self,
        record: &mut KernelRecord,
        data: CaptureData<'_>,
        counted: &mut u64,
    ) -> Result<PathBuf> {
        let descriptor = self.fresh_descriptor(record);
        let paths = CapturePaths::new(&descriptor, Generation::Reprise);
        // Memory beyond the region, when the recorder staged some.
        let extra = extra::take_staged(record);
        let (extra_input, extra_output) = extra_paths(&descriptor);
        let extra_in = extra.as_ref().map(|e| &e.input[..]);
        let extra_out = extra.as_ref().and_then(|e| e.output.as_deref());

        record.generation = Generation::Reprise;
        record
            .format_version
            .get_or_insert(reprise_core::record::FORMAT_VERSION);
        record.memory_size = Some(data.input.len() as u64);
        if self.format == CaptureFormat::Raw {
            // (The store's are taken while the files are stored.)
            record.checksums.input = Some(checksum(data.input));
            record.checksums.output = data.output.map(checksum);
        }
        record.checksums.globals = Some(checksum(data.globals));
        let image_sum = checksum(data.image);
        record.checksums.image = Some(image_sum);

        // Files already in place when a later one fails (a full disk) are
        // removed again: a failed capture leaves nothing behind (in the
        // store format, chunks no manifest names, which `gc` removes).
        let mut written: Vec<PathBuf> = Vec::new();
        let result = (|| {
            match self.format {
                CaptureFormat::Raw => {
                    for (path, bytes) in [
                        (&paths.input, Some(data.input)),
                        (&paths.output, data.output),
                        (&paths.globals, Some(data.globals)),
                        (&extra_input, extra_in),
                        (&extra_output, extra_out),
                    ] {
                        let Some(bytes) = bytes else { continue };
                        self.write_file(path, bytes)?;
                        written.push(path.clone());
                        *counted += bytes.len() as u64;
                    }
                    *counted += self.write_image(&paths.image, data.image, image_sum)?;
                    written.push(paths.image.clone());
                }
                CaptureFormat::Store => {
                    let store = self.chunk_store()?;
                    // Every chunk stays pinned until the descriptor is in
                    // place: a `gc` meanwhile keeps them.
                    let pin = store.pin()?;
                    // The output first: its chunks are those a launch
                    // changed, the new ones, whose flushes are then the
                    // first begun (they are the longest wait of a capture
                    // whose other chunks are stored).
                    let files: Vec<(&PathBuf, &[u8])> = [
                        (&paths.output, data.output),
                        (&paths.input, Some(data.input)),
                        (&paths.globals, Some(data.globals)),
                        (&paths.image, Some(data.image)),
                        (&extra_input, extra_in),
                        (&extra_output, extra_out),
                    ]
                    .into_iter()
                    .filter_map(|(raw, bytes)| Some((raw, bytes?)))
                    .collect();
                    let parts: Vec<&[u8]> = files.iter().map(|&(_, bytes)| bytes).collect();
                    // Each file's manifest is written and flushed while the
                    // new chunks are flushed, and renamed into place once
                    // they and their links are durable (never naming a
                    // chunk a crash could lose).
                    let manifest = |k: usize, m: &crate::chunks::Manifest| {
                        let encoded = m.encode();
                        let staged = self.stage(&manifest_path(files[k].0), &encoded)?;
                        Ok((staged, encoded.len()))
                    };
                    // The snapshots' checksums, and the descriptor they
                    // complete written and flushed: while the new chunks
                    // are flushed (it is renamed into place after them).
                    let descriptor_staged = || {
                        let (input, output) = checksums(data.input, data.output, self.fsync);
                        record.checksums.input = Some(input);
                        record.checksums.output = output;
                        let json = descriptor_json(record, &descriptor)?;
                        Ok::<_, Error>((self.stage(&descriptor, &json)?, json.len()))
                    };
                    let (puts, staged) =
                        store.put_all(&pin, &parts, manifest, descriptor_staged)?;
                    // Renamed into place the input's first: a stem whose
                    // input manifest is there is taken (an orphan's, should
                    // this writer be killed before its descriptor).
                    let mut placing: Vec<_> = files.iter().zip(puts).collect();
                    placing.sort_by_key(|((raw, _), _)| *raw != &paths.input);
                    for ((raw, _), (m, (staged, encoded))) in placing {
                        staged.place()?;
                        written.push(manifest_path(raw));
                        *counted += self
                            .budget
                            .as_ref()
                            .map_or(0, |b| encoded as u64 + b.new_chunk_bytes(store, &m));
                    }
                    let (staged, json_len) = staged?;
                    staged.place()?;
                    *counted += json_len as u64;
                    written.push(descriptor.clone());
                    self.sync_dir()?;
                    drop(pin);
                    return Ok(());
                }
            }

            let json = descriptor_json(record, &descriptor)?;
            self.write_file(&descriptor, &json)?;
            *counted += json.len() as u64;
            written.push(descriptor.clone());
            self.sync_dir()
        })();
        if let Err(e) = result {
            let mut images = crate::threads::lock(&self.images);
            images.retain(|_, p| p != &paths.image);
            for p in written {
                if let Some(name) = p.file_name() {
                    let _ = rustix::fs::unlinkat(&self.dir_fd, name, rustix::fs::AtFlags::empty());
                }
            }
            return Err(e);
        }
        Ok(descriptor)
    }

    /// Makes the renames into the directory durable (with `fsync`).
    fn sync_dir(&self) -> Result<()> {
        if self.fsync {
            crate::fs::sync_dir(&self.dir_fd, &self.dir)?;
        }
        Ok(())
    }

    /// Whether something is at `path` (a name in the directory), not
    /// following a link.
    fn exists(&self, path: &Path) -> bool {
        path.file_name().is_some_and(|name| {
            rustix::fs::statat(&self.dir_fd, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).is_ok()
        })
    }

    /// [`stage`] of `path`, a name in the directory, relative to it.
    fn stage(&self, path: &Path, bytes: &[u8]) -> Result<Staged> {
        let dirfd = rustix::io::dup(&self.dir_fd)
            .map_err(|e| Error::io(&self.dir, "open directory", e.into()))?;
        stage_at(dirfd, path, bytes, self.fsync)
    }

    /// Writes the image, or links an earlier capture's; returns the bytes
    /// written (none for a link).
    fn write_image(&self, path: &Path, image: &[u8], sum: u64) -> Result<u64> {
        let mut images = crate::threads::lock(&self.images);
        let (existing, fd) = (images.get(&sum).and_then(|p| p.file_name()), &self.dir_fd);
        if let (Some(existing), Some(name)) = (existing, path.file_name())
            && rustix::fs::linkat(fd, existing, fd, name, rustix::fs::AtFlags::empty()).is_ok()
        {
            return Ok(0);
        }
        self.write_file(path, image)?;
        images.insert(sum, path.to_path_buf());
        Ok(image.len() as u64)
    }

    /// Writes `bytes` to a temporary name, flushes, and renames to `path`
    /// (a name in the store's directory, written relative to it).
    pub fn write_file(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.stage(path, bytes)?.place()
    }
}

/// The checksums of a capture's input and output snapshots: on two
/// threads when `parallel` and there is an output (each is one pass over
/// its bytes, which cannot be split).
fn checksums(input: &[u8], output: Option<&[u8]>, parallel: bool) -> (u64, Option<u64>) {
    match output {
        Some(out) if parallel => std::thread::scope(|s| {
            let theirs = crate::threads::spawn_or_run(s, || checksum(input));
            let output = checksum(out);
            // (A checksum does not panic; were it to, it is taken again.)
            (
                theirs.join().unwrap_or_else(|_| checksum(input)),
                Some(output),
            )
        }),
        _ => (checksum(input), output.map(checksum)),
    }
}

/// `record` as the JSON of the descriptor at `path`.
fn descriptor_json(record: &KernelRecord, path: &Path) -> Result<Vec<u8>> {
    let mut json = vec![0u8; MAX_JSON_LEN];
    let n = record
        .to_json(Generation::Reprise, &mut json)
        .map_err(|source| Error::Descriptor {
            path: path.to_path_buf(),
            source,
        })?;
    json.truncate(n);
    Ok(json)
}

/// Writes `bytes` to a hidden temporary file beside `path`, optionally
/// flushes it to disk, and renames it to `path`.
///
/// The temporary file gets a fresh random name and is created with
/// `O_CREAT | O_EXCL | O_NOFOLLOW` relative to the directory, opened once
/// (`openat`), so no existing path is written through: a symbolic link
/// planted at any name it could take (a capture's tarball can hold one) is
/// refused, and another name drawn. It is then renamed into place with
/// `renameat` in the same directory, which replaces a link at `path`
/// rather than writing through it.
pub fn write_atomically(path: &Path, bytes: &[u8], fsync: bool) -> Result<()> {
    stage(path, bytes, fsync)?.place()
}

/// A file written (and flushed, when asked) under a hidden temporary name
/// beside the path it is for, not yet renamed to it: the first half of
/// [`write_atomically`], so that a file can be flushed while something it
/// must not be in place before is still under way. Dropped unplaced, the
/// temporary file is removed.
#[derive(Debug)]
pub struct Staged {
    dirfd: rustix::fd::OwnedFd,
    tmp: String,
    path: PathBuf,
    placed: bool,
}

/// Writes `bytes` for `path` as [`write_atomically`] does, short of the
/// rename ([`Staged::place`]).
pub fn stage(path: &Path, bytes: &[u8], fsync: bool) -> Result<Staged> {
    let dirfd = crate::fs::open_dir_fd(crate::fs::dir_of(path))?;
    stage_at(dirfd, path, bytes, fsync)
}

/// [`stage`] of the file named as `path`'s last part, in the directory
/// open as `dirfd` (whatever `path`'s directory names now).
fn stage_at(dirfd: rustix::fd::OwnedFd, path: &Path, bytes: &[u8], fsync: bool) -> Result<Staged> {
    let name = crate::fs::file_name(path)?;
    #[cfg(test)]
    if tests::FAIL_WRITE.with(|f| f.borrow().as_deref() == name.to_str()) {
        return Err(Error::io(path, "create", rustix::io::Errno::IO.into()));
    }
    let prefix = format!("{TEMP_PREFIX}{}.", name.to_string_lossy());
    let (tmp, mut f) = crate::fs::create_fresh(&dirfd, &prefix, 0o644)
        .map_err(|e| Error::io(path, "create", e))?;
    // Removed again if what follows fails; errors name the file the caller
    // asked for, the temporary one is gone by the time they are read.
    let staged = Staged {
        dirfd,
        tmp,
        path: path.to_path_buf(),
        placed: false,
    };
    f.write_all(bytes)
        .map_err(|e| Error::io(path, "write", e))?;
    if fsync {
        f.sync_all().map_err(|e| Error::io(path, "sync", e))?;
    }
    Ok(staged)
}

impl Staged {
    /// Renames the file into place (`renameat`, in its directory).
    pub fn place(mut self) -> Result<()> {
        let name = crate::fs::file_name(&self.path)?;
        rustix::fs::renameat(&self.dirfd, self.tmp.as_str(), &self.dirfd, name)
            .map_err(|e| Error::io(&self.path, "rename into place", e.into()))?;
        self.placed = true;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.placed {
            let _ = crate::fs::remove(&self.dirfd, &self.tmp);
        }
    }
}

#[cfg(test)]
mod tests;
