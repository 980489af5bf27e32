//! Reading captures: LLVM legacy, LLVM current and reprise's own.
//!
//! A capture is a descriptor `STEM.json` and sibling files found from the
//! descriptor's own path (never from the working directory):
//!
//! | file | LLVM legacy | LLVM current and reprise |
//! | --- | --- | --- |
//! | memory before the kernel | `STEM.memory` | `STEM.record_input` |
//! | memory after the kernel (recorded) | `STEM.original.output` | `STEM.record_output` |
//! | memory after the kernel (replayed) | `STEM.replay.output` | `STEM.replay_output` |
//! | globals | `STEM.globals` (seed layout) | `STEM.globals` (current layout) |
//! | device image | `STEM.image` | `STEM.image` |
//!
//! Opening checks everything that can be checked without running anything:
//! snapshot lengths against the descriptor, the recorded region and each
//! other, the image's kind against the descriptor's `Backend`, the globals
//! file's structure, and checksums where the descriptor has them.
//! Sizes written in a descriptor are only ever compared with real file
//! lengths, so a lying size field costs nothing. Snapshots stay on disk: the
//! executor reads them into its own buffers (the host executor maps them).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use reprise_core::exec::{Executor, MapFile};
use reprise_core::globals::{self, Layout};
use reprise_core::image::{self, ImageKind};
use reprise_core::record::{Generation, KernelRecord};

use crate::error::{Error, Result};

/// Largest descriptor accepted (any real one is a few KiB).
pub const DESCRIPTOR_LIMIT: u64 = 1 << 20;

/// The files of one capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturePaths {
    /// `STEM.json`.
    pub descriptor: PathBuf,
    /// Memory snapshot before the kernel.
    pub input: PathBuf,
    /// Memory snapshot after the kernel, as recorded.
    pub output: PathBuf,
    /// Where a replay saves its output.
    pub replay_output: PathBuf,
    /// Globals.
    pub globals: PathBuf,
    /// Device image.
    pub image: PathBuf,
}

/// The extensions of data files, by generation: (input, output, replay output).
fn extensions(generation: Generation) -> (&'static str, &'static str, &'static str) {
    match generation {
        Generation::LlvmLegacy => ("memory", "original.output", "replay.output"),
        Generation::LlvmCurrent | Generation::Reprise => {
            ("record_input", "record_output", "replay_output")
        }
    }
}

/// Every extension a capture's files may carry (for listing and orphans).
pub const KNOWN_EXTENSIONS: &[&str] = &[
    "json",
    "memory",
    "original.output",
    "replay.output",
    "record_input",
    "record_output",
    "replay_output",
    "globals",
    "image",
    "bc",
];

impl CapturePaths {
    /// The sibling files of `descriptor` for a capture of `generation`.
    pub fn new(descriptor: &Path, generation: Generation) -> Self {
        let stem = stem_of(descriptor);
        let (input, output, replay) = extensions(generation);
        let with = |ext: &str| {
            let mut s = stem.clone().into_os_string();
            s.push(".");
            s.push(ext);
            PathBuf::from(s)
        };
        CapturePaths {
            descriptor: descriptor.to_path_buf(),
            input: with(input),
            output: with(output),
            replay_output: with(replay),
            globals: with("globals"),
            image: with("image"),
        }
    }
}

/// `dir/STEM.json` -> `dir/STEM`.
pub fn stem_of(descriptor: &Path) -> PathBuf {
    let s = descriptor.as_os_str().to_string_lossy();
    match s.strip_suffix(".json") {
        Some(stem) => PathBuf::from(stem),
        None => descriptor.to_path_buf(),
    }
}

/// Reads a descriptor, refusing files larger than [`DESCRIPTOR_LIMIT`].
pub fn read_descriptor(path: &Path) -> Result<Box<KernelRecord>> {
    let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
    let len = file
        .metadata()
        .map_err(|e| Error::io(path, "stat", e))?
        .len();
    if len > DESCRIPTOR_LIMIT {
        return Err(Error::capture(
            path,
            format!(
                "descriptor is {len} bytes, more than any descriptor ({DESCRIPTOR_LIMIT} bytes at most)"
            ),
        ));
    }
    let mut text = Vec::with_capacity(len as usize);
    file.take(DESCRIPTOR_LIMIT)
        .read_to_end(&mut text)
        .map_err(|e| Error::io(path, "read", e))?;
    KernelRecord::from_json(&text)
        .map(Box::new)
        .map_err(|source| Error::Descriptor {
            path: path.to_path_buf(),
            source,
        })
}

/// An open snapshot file.
#[derive(Debug)]
pub struct SnapshotFile {
    /// Its path.
    pub path: PathBuf,
    /// The open file.
    pub file: File,
    /// Its length in bytes.
    pub len: u64,
}

impl SnapshotFile {
    fn open(path: &Path) -> Result<Option<Self>> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, "open", e)),
        };
        let meta = file.metadata().map_err(|e| Error::io(path, "stat", e))?;
        if !meta.is_file() {
            return Err(Error::capture(path, "not a regular file"));
        }
        Ok(Some(SnapshotFile {
            path: path.to_path_buf(),
            file,
            len: meta.len(),
        }))
    }

    /// The file as an executor may map it: its first `len` bytes (at most
    /// [`SnapshotFile::len`]).
    pub fn map(&self, len: u64) -> MapFile {
        use std::os::fd::AsRawFd;
        MapFile {
            fd: self.file.as_raw_fd(),
            len: len.min(self.len),
        }
    }

    /// A buffer of `exec`'s holding the file's first `len` bytes: mapped
    /// where the executor can map files ([`Executor::buffer_mapped`]),
    /// else read straight into one of its buffers.
    pub fn read_into<E: Executor>(&self, exec: &E, len: usize) -> Result<E::Buffer> {
        use std::os::unix::fs::FileExt;
        if len as u64 > self.len {
            return Err(Error::capture(
                &self.path,
                format!("{len} bytes asked of a file of {} bytes", self.len),
            ));
        }
        if let Some(b) = exec
            .buffer_mapped(self.map(len as u64))
            .map_err(|e| Error::executor(format!("mapping {}", self.path.display()), e))?
        {
            return Ok(b);
        }
        let mut buf = exec.buffer(len).map_err(|e| {
            Error::executor(
                format!("allocating {len} bytes for {}", self.path.display()),
                e,
            )
        })?;
        self.file
            .read_exact_at(&mut buf.as_mut()[..len], 0)
            .map_err(|e| Error::io(&self.path, "read", e))?;
        Ok(buf)
    }

    /// Streams the file through `f` in chunks of at most `chunk` bytes.
    pub fn for_each_chunk(&self, chunk: usize, mut f: impl FnMut(&[u8])) -> Result<()> {
        stream(&self.file, &self.path, chunk, &mut f)
    }
}

fn stream(file: &File, path: &Path, chunk: usize, f: &mut dyn FnMut(&[u8])) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; chunk.max(4096)];
    let mut at = 0u64;
    loop {
        let n = file
            .read_at(&mut buf, at)
            .map_err(|e| Error::io(path, "read", e))?;
        if n == 0 {
            return Ok(());
        }
        f(&buf[..n]);
        at += n as u64;
    }
}

/// The xxh3-64 checksum of a file, streamed.
pub fn file_checksum(file: &File, path: &Path) -> Result<u64> {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    stream(file, path, 1 << 20, &mut |b| h.update(b))?;
    Ok(h.digest())
}

/// The error for a file whose checksum is `got` where the descriptor says
/// `want`.
pub(crate) fn checksum_mismatch(path: &Path, want: u64, got: u64) -> Error {
    Error::capture(
        path,
        format!(
            "checksum mismatch: descriptor says {want:016x}, file has {got:016x} (corrupted or replaced)"
        ),
    )
}

/// The xxh3-64 checksum of bytes (what the writer records).
pub fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// How a capture is opened.
#[derive(Debug, Clone, Copy)]
pub struct OpenOptions {
    /// Accept a capture without a globals file (recorded before LLVM saved
    /// globals); its globals are then left as the image initialises them,
    /// and a warning naming the missing file is logged.
    pub allow_missing_globals: bool,
    /// Verify checksums the descriptor carries (reads every file once).
    pub verify_checksums: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            allow_missing_globals: false,
            verify_checksums: true,
        }
    }
}

/// A capture, opened and checked, ready to replay.
#[derive(Debug)]
pub struct Capture {
    /// Its files.
    pub paths: CapturePaths,
    /// The descriptor.
    pub record: Box<KernelRecord>,
    /// The memory snapshot before the kernel.
    pub input: SnapshotFile,
    /// The recorded snapshot after the kernel, when it was saved.
    pub output: Option<SnapshotFile>,
    /// The globals file's bytes (validated), `None` when it is missing and
    /// that was allowed.
    pub globals: Option<Vec<u8>>,
    /// The device image.
    pub image: Vec<u8>,
    /// What the image is.
    pub image_kind: ImageKind,
    /// Whether the descriptor's checksums of the globals and the image were
    /// present and verified when the capture was opened.
    pub checksums_verified: bool,
    /// Whether the snapshots' checksums are to be verified when they are
    /// read ([`Capture::check_input`], [`Capture::expected_output_checksum`]): the
    /// snapshots can be large, so they are hashed once, where they are used.
    pub verify_snapshots: bool,
}

impl Capture {
    /// Opens the capture whose descriptor is `path`, with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Capture> {
        Capture::open_with(path, OpenOptions::default())
    }

    /// Opens the capture whose descriptor is `path`.
    pub fn open_with(path: impl AsRef<Path>, options: OpenOptions) -> Result<Capture> {
        let path = path.as_ref();
        let record = read_descriptor(path)?;
        let paths = CapturePaths::new(path, record.generation);

        let image = std::fs::read(&paths.image).map_err(|e| Error::io(&paths.image, "read", e))?;
        let image_kind = image::sniff(&image);
        // The recorder writes the backend it recorded on and the image it
        // loaded there: when they disagree, the files do not belong together
        // (an image replaced, or a descriptor edited), and replaying would
        // run other code than was recorded.
        if let (Some(named), Ok(detected)) = (record.backend, image_kind.backend())
            && named != detected
        {
            return Err(Error::capture(
                path,
                format!(
                    "Backend is \"{named}\" but the image {} is {image_kind}, which runs on the \
                     {detected} executor: the image does not belong to this capture (or the \
                     descriptor was edited)",
                    paths.image.display()
                ),
            ));
        }

        let input = SnapshotFile::open(&paths.input)?.ok_or_else(|| {
            Error::capture(
                &paths.input,
                "memory snapshot is missing (the capture is incomplete)",
            )
        })?;
        if let Some(size) = record.memory_size
            && size != input.len
        {
            return Err(Error::capture(
                &paths.input,
                format!(
                    "memory snapshot is {} bytes but the descriptor says DeviceMemorySize = {size} \
                         (truncated or mismatched file)",
                    input.len
                ),
            ));
        }
        if let Some(size) = record.region_size
            && input.len > size
        {
            return Err(Error::capture(
                path,
                format!(
                    "the memory snapshot {} is {} bytes, larger than the recorded region \
                     (VAllocSize {size} bytes): a snapshot cannot be larger than the region it \
                     was taken from",
                    input.path.display(),
                    input.len
                ),
            ));
        }
        let output = SnapshotFile::open(&paths.output)?;
        if let Some(out) = &output
            && out.len != input.len
        {
            return Err(Error::capture(
                &out.path,
                format!(
                    "recorded output snapshot is {} bytes but the input snapshot {} is {} bytes",
                    out.len,
                    input.path.display(),
                    input.len
                ),
            ));
        }
        if let Some(base) = record.region_base
            && base.checked_add(input.len).is_none()
        {
            return Err(Error::capture(
                path,
                format!(
                    "region at {base:#x} of {} bytes wraps past the end of the address space",
                    input.len
                ),
            ));
        }

        let globals = match std::fs::read(&paths.globals) {
            Ok(bytes) => {
                globals::decode(globals_layout(record.generation), &bytes)
                    .and_then(|d| d.validate())
                    .map_err(|source| Error::Globals {
                        path: paths.globals.clone(),
                        source,
                    })?;
                Some(bytes)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && options.allow_missing_globals => {
                log::warn!(
                    "{}: globals file is missing; every global keeps the value the image gives it{}",
                    paths.globals.display(),
                    if record.checksums.globals.is_some() {
                        " (the descriptor records the file's checksum: the capture is incomplete, \
                         and the replay may compute something else)"
                    } else {
                        ""
                    }
                );
                None
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::MissingGlobals {
                    path: paths.globals.clone(),
                    checksummed: record.checksums.globals.is_some(),
                });
            }
            Err(e) => return Err(Error::io(&paths.globals, "read", e)),
        };

        let mut capture = Capture {
            paths,
            record,
            input,
            output,
            globals,
            image,
            image_kind,
            checksums_verified: false,
            verify_snapshots: options.verify_checksums,
        };
        if options.verify_checksums {
            capture.checksums_verified = capture.verify_small_files()?;
        }
        Ok(capture)
    }

    /// Checks the checksums of the globals and the image (already in
    /// memory); `Ok(false)` when the descriptor has neither.
    fn verify_small_files(&self) -> Result<bool> {
        let sums = self.record.checksums;
        let mut any = false;
        if let (Some(want), Some(g)) = (sums.globals, &self.globals) {
            any = true;
            let got = checksum(g);
            if got != want {
                return Err(checksum_mismatch(&self.paths.globals, want, got));
            }
        }
        if let Some(want) = sums.image {
            any = true;
            let got = checksum(&self.image);
            if got != want {
                return Err(checksum_mismatch(&self.paths.image, want, got));
            }
        }
        Ok(any)
    }

    /// Checks the input snapshot's bytes, as read, against the descriptor's
    /// checksum (when it has one and checking is on).
    pub fn check_input(&self, bytes: &[u8]) -> Result<()> {
        match self.record.checksums.input {
            Some(want) if self.verify_snapshots => {
                let got = checksum(bytes);
                if got != want {
                    return Err(checksum_mismatch(&self.input.path, want, got));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The checksum the recorded output must have, when it is to be checked.
    pub fn expected_output_checksum(&self) -> Option<u64> {
        self.record
            .checksums
            .output
            .filter(|_| self.verify_snapshots)
    }

    /// Checks every checksum the descriptor carries, reading the snapshots
    /// from disk; `Ok(false)` when it carries none.
    pub fn verify_checksums(&self) -> Result<bool> {
        let sums = self.record.checksums;
        let mut any = self.verify_small_files()?;
        if let Some(want) = sums.input {
            any = true;
            let got = file_checksum(&self.input.file, &self.input.path)?;
            if got != want {
                return Err(checksum_mismatch(&self.input.path, want, got));
            }
        }
        if let (Some(want), Some(out)) = (sums.output, &self.output) {
            any = true;
            let got = file_checksum(&out.file, &out.path)?;
            if got != want {
                return Err(checksum_mismatch(&out.path, want, got));
            }
        }
        Ok(any)
    }

    /// The layout of this capture's globals file.
    pub fn globals_layout(&self) -> Layout {
        globals_layout(self.record.generation)
    }

    /// The recorded globals (empty when the file was missing).
    pub fn globals(&self) -> impl Iterator<Item = globals::Global<'_>> {
        let bytes = self.globals.as_deref().unwrap_or(&[]);
        let layout = if self.globals.is_some() {
            self.globals_layout()
        } else {
            Layout::Seed
        };
        // Validated when the capture was opened.
        globals::decode(layout, bytes)
            .into_iter()
            .flatten()
            .filter_map(|g| g.ok())
    }

    /// Length of the memory snapshot.
    pub fn snapshot_len(&self) -> u64 {
        self.input.len
    }

    /// The recorded region base, or an error naming the descriptor.
    pub fn region_base(&self) -> Result<u64> {
        self.record.region_base.ok_or_else(|| {
            Error::capture(
                &self.paths.descriptor,
                "descriptor has no region address (BumpAllocVAStart/VAllocAddr); \
                 its pointers cannot be placed, so it cannot be replayed",
            )
        })
    }
}

/// The globals layout each generation writes.
pub fn globals_layout(generation: Generation) -> Layout {
    match generation {
        Generation::LlvmLegacy => Layout::Seed,
        Generation::LlvmCurrent | Generation::Reprise => Layout::Current,
    }
}
