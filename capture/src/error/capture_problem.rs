//! What can be wrong with a capture's file ([`Error::Capture`]): the one
//! home of those problems, each kind a variant carrying what was found as
//! typed fields, and its text for people in its `#[error]` attribute.
//!
//! The file at fault is the [`Error::Capture`]'s `path`; a problem names
//! the other files it concerns (the input snapshot an output is compared
//! with, the image a global is looked for in) itself.

use std::path::PathBuf;

use reprise_core::image::{ImageError, ImageKind};
use reprise_core::offload::OffloadError;
use reprise_core::record::BackendKind;

use super::{ChunkFault, ChunkHash, ChunkProblem, Error, ManifestError};

/// What is wrong with a capture's file: the `problem` of an
/// [`Error::Capture`] (see [`Error::capture_problem`]).
///
/// ```
/// use reprise_capture::error::{CaptureProblem, Error};
/// let e = Error::capture(
///     "k.memory",
///     CaptureProblem::SnapshotSize { found: 8, expected: 16 },
/// );
/// assert!(matches!(
///     e.capture_problem(),
///     Some(CaptureProblem::SnapshotSize { found: 8, .. })
/// ));
/// assert_eq!(
///     e.to_string(),
///     "k.memory: memory snapshot is 8 bytes but the descriptor says DeviceMemorySize = 16 \
///      (truncated or mismatched file)"
/// );
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaptureProblem {
    // What is at the path.
    /// Something other than a regular file is at the path.
    #[error("is {kind}, not a regular file: a capture's files are regular files")]
    NotRegular {
        /// What is there: `"a directory"`, `"a FIFO"`, `"a file of procfs"`,
        /// ... (as [`crate::capture::FileState::Special`] says it).
        kind: &'static str,
    },
    /// What is at the path could not be looked at (permissions, say).
    #[error("cannot be looked at: {reason}")]
    Unreadable {
        /// The operating system's message (as
        /// [`crate::capture::FileState::Unreadable`] holds it).
        reason: String,
    },
    /// The file was there when it was looked at, and gone when it was read.
    #[error("vanished while it was read")]
    Vanished,
    /// The file's length changed between assessing the capture and
    /// opening it.
    #[error("changed while the capture was opened")]
    Changed,
    /// The file is larger than any file of its role.
    #[error("{role} is {len} bytes, more than any {role} ({limit} bytes at most)")]
    TooLarge {
        /// Its role, for people: `"device image"`, `"globals file"`,
        /// `"descriptor"`, `"application binary"`.
        role: String,
        /// Its length in bytes.
        len: u64,
        /// The most a file of that role may have.
        limit: u64,
    },
    /// One of a capture's data files given where its descriptor belongs.
    #[error(
        "is a capture's {role}, not its descriptor: pass its descriptor{}",
        if *descriptor_exists {
            format!(", {}", descriptor.display())
        } else {
            format!(" ({} is not there)", descriptor.display())
        }
    )]
    NotADescriptor {
        /// What the file is: `"memory snapshot"`, `"recorded output"`,
        /// `"globals file"`, `"device image"`, ...
        role: &'static str,
        /// The descriptor it belongs to (by name).
        descriptor: PathBuf,
        /// Whether that descriptor is there.
        descriptor_exists: bool,
    },
    /// More bytes asked of a file than it has.
    #[error("{asked} bytes asked of a file of {len} bytes")]
    ReadPastEnd {
        /// How many were asked.
        asked: usize,
        /// How many it has.
        len: u64,
    },
    /// The file's checksum is not the one the descriptor records.
    #[error(
        "checksum mismatch: descriptor says {recorded:016x}, file has {actual:016x} (corrupted \
         or replaced)"
    )]
    ChecksumMismatch {
        /// What the descriptor says.
        recorded: u64,
        /// What the file hashes to.
        actual: u64,
    },
    /// An image taken from an entry of an offload binary (an application
    /// binary, or a container given for the capture's own image) where
    /// neither the entry nor the whole file hashes to the descriptor's
    /// image checksum.
    #[error(
        "checksum mismatch: descriptor says {recorded:016x} for the capture's image, but the \
         image taken from this file, entry #{index} of its offload binary, has {entry:016x}, and \
         {} (neither is the image recorded)",
        match file {
            Some(h) => format!("the whole file has {h:016x}"),
            None => "the file could not be hashed".into(),
        }
    )]
    EntryChecksumMismatch {
        /// What the descriptor says.
        recorded: u64,
        /// The entry's place in the offload binary.
        index: usize,
        /// What the entry hashes to.
        entry: u64,
        /// What the whole file hashes to (`None`: it could not be hashed).
        file: Option<u64>,
    },
    /// A path with no file name where a file is to be written.
    #[error("is no file name to write")]
    NoFileName,

    // The snapshots and the region.
    /// The memory snapshot is missing.
    #[error("memory snapshot is missing (the capture is incomplete)")]
    MissingSnapshot,
    /// The memory snapshot's length is not the descriptor's
    /// `DeviceMemorySize`.
    #[error(
        "memory snapshot is {found} bytes but the descriptor says DeviceMemorySize = {expected} \
         (truncated or mismatched file)"
    )]
    SnapshotSize {
        /// The snapshot's length in bytes.
        found: u64,
        /// `DeviceMemorySize`.
        expected: u64,
    },
    /// The memory snapshot is larger than the region it was taken from
    /// (the descriptor's `VAllocSize`); the path is the descriptor's.
    #[error(
        "the memory snapshot {} is {len} bytes, larger than the recorded region (VAllocSize \
         {region} bytes): a snapshot cannot be larger than the region it was taken from",
        snapshot.display()
    )]
    SnapshotLargerThanRegion {
        /// The memory snapshot.
        snapshot: PathBuf,
        /// Its length in bytes.
        len: u64,
        /// `VAllocSize`.
        region: u64,
    },
    /// The memory snapshot is larger than this address space can hold.
    #[error("snapshot larger than the address space")]
    SnapshotBeyondAddressSpace {
        /// Its length in bytes.
        len: u64,
    },
    /// The recorded output snapshot's length is not the input snapshot's.
    #[error(
        "recorded output snapshot is {output} bytes but the input snapshot {} is {input} bytes",
        input_path.display()
    )]
    OutputSize {
        /// The output's length in bytes.
        output: u64,
        /// The input snapshot.
        input_path: PathBuf,
        /// Its length in bytes.
        input: u64,
    },
    /// The recorded output cannot be verified against: it is missing.
    #[error(
        "cannot verify: {}",
        if *checksummed {
            "the recorded output file is missing, though the descriptor records its checksum \
             (the capture is incomplete, or the file was removed)"
        } else {
            "the capture has no recorded output (it was recorded without saving output)"
        }
    )]
    NoRecordedOutput {
        /// Whether the descriptor records its checksum (then the capture is
        /// incomplete, rather than recorded without output).
        checksummed: bool,
    },
    /// The recorded output's length is not the replay's.
    #[error("recorded output is {recorded} bytes, the replay produced {replayed}")]
    ReplayedSize {
        /// The recorded output's length in bytes.
        recorded: u64,
        /// The replay's, in bytes.
        replayed: usize,
    },
    /// Two outputs compared are of different lengths; the path is the one
    /// compared with `expected`.
    #[error(
        "is {len} bytes, {} is {expected_len} bytes: they are not outputs of one region",
        expected.display()
    )]
    OutputsDiffer {
        /// The path's length in bytes.
        len: u64,
        /// The output it was compared with.
        expected: PathBuf,
        /// Its length in bytes.
        expected_len: u64,
    },
    /// The region `[base, base + len)` runs past the end of the address
    /// space.
    #[error("region at {base:#x} of {len} bytes wraps past the end of the address space")]
    RegionWraps {
        /// The region base.
        base: u64,
        /// The snapshot's length in bytes.
        len: u64,
    },
    /// The region base lies in the first page (where a null pointer points).
    #[error(
        "region base {base:#x} lies in the first page, where no region can be (a null pointer \
         would point into it)"
    )]
    RegionInFirstPage {
        /// The region base.
        base: u64,
    },
    /// The descriptor records no region address, so the capture's pointers
    /// cannot be placed.
    #[error(
        "descriptor has no region address (BumpAllocVAStart/VAllocAddr); its pointers cannot be \
         placed, so it cannot be replayed"
    )]
    NoRegionAddress,

    // The globals.
    /// A recorded global that the image does not define.
    #[error("recorded global `{name}` is absent from the image ({})", image.display())]
    GlobalAbsent {
        /// The global.
        name: String,
        /// The image.
        image: PathBuf,
    },
    /// A recorded global of another size than the image's.
    #[error(
        "recorded global `{name}` has {recorded} bytes, the image's has {size} ({})",
        image.display()
    )]
    GlobalSize {
        /// The global.
        name: String,
        /// How many bytes the globals file records.
        recorded: usize,
        /// How many the image's global has.
        size: u64,
        /// The image.
        image: PathBuf,
    },

    // The image.
    /// The descriptor's `Backend` is not the executor the image runs on;
    /// the path is the descriptor's.
    #[error(
        "Backend is \"{named}\" but the image {} is {kind}, which runs on the {runs_on} \
         executor: the image does not belong to this capture (or the descriptor was edited)",
        image.display()
    )]
    BackendMismatch {
        /// The descriptor's `Backend`.
        named: BackendKind,
        /// The image.
        image: PathBuf,
        /// What it is.
        kind: ImageKind,
        /// The executor it runs on.
        runs_on: BackendKind,
    },
    /// The image is an empty file.
    #[error("the image is empty (0 bytes): no executor runs it")]
    EmptyImage,
    /// No executor runs the image's kind.
    #[error("{0}")]
    NoExecutor(#[source] ImageError),
    /// The image's executor would refuse to load the image or launch the
    /// kernel from it: the kernel is absent, the image is not one its
    /// loader reads, its metadata disagrees with the recorded arguments.
    #[error("{message}")]
    ExecutorRefuses {
        /// The executor.
        backend: BackendKind,
        /// What it refuses, in its own words: a backend says what it
        /// finds wrong with one of its images as a sentence (each
        /// backend's reading of its images is its own).
        message: String,
    },
    /// The image's executor would refuse the arguments the descriptor
    /// records (their sizes, in its `ArgSizes`); the path is the
    /// descriptor's.
    #[error("ArgSizes: {message}")]
    ArgumentsRefused {
        /// The executor.
        backend: BackendKind,
        /// What it refuses, in its own words.
        message: String,
    },
    // Offload binaries (application binaries, containers).
    /// An offload binary, or the ELF file holding one, cannot be read.
    #[error("{0}")]
    Offload(#[source] OffloadError),
    /// The file holds no device images: it is neither an offload binary
    /// nor an ELF file with an offloading section.
    #[error(
        "holds no device images: it is {kind} without a {section} section (nor an LLVM offload \
         binary)"
    )]
    NoDeviceImages {
        /// What it is.
        kind: ImageKind,
        /// The section looked for
        /// ([`crate::offload::SECTION`]).
        section: &'static str,
    },
    /// The file's offloading section holds no entry.
    #[error("its {section} section holds no entry")]
    NoEntries {
        /// The section ([`crate::offload::SECTION`]).
        section: &'static str,
    },
    /// No entry of the file's offloading section defines the kernel (for
    /// the executor asked for, if one was).
    #[error(
        "no entry of its {section} section defines the kernel {kernel}{}: it holds {held}",
        backend.map(|b| format!(" for the {b} executor")).unwrap_or_default()
    )]
    NoEntryFor {
        /// The kernel.
        kernel: String,
        /// The executor asked for.
        backend: Option<BackendKind>,
        /// The section ([`crate::offload::SECTION`]).
        section: &'static str,
        /// What the file holds, for people.
        held: String,
    },
    /// Several entries of the file's offloading section define the kernel
    /// for the executor asked for.
    #[error(
        "more than one entry of its {section} section defines the kernel {kernel} for the \
         {backend} executor: it holds {held}"
    )]
    SeveralEntriesFor {
        /// The kernel.
        kernel: String,
        /// The executor asked for.
        backend: BackendKind,
        /// The section ([`crate::offload::SECTION`]).
        section: &'static str,
        /// What the file holds, for people.
        held: String,
    },
    /// Several images were given and none holds the capture's kernel (for
    /// the executor asked for, if one was); the path is the descriptor's.
    #[error(
        "kernel {kernel} is in none of the images{}: {held}",
        backend.map(|b| format!(" for the {b} executor")).unwrap_or_default()
    )]
    InNoImage {
        /// The kernel.
        kernel: String,
        /// The executor asked for.
        backend: Option<BackendKind>,
        /// What each image holds, for people (`app holds A, B; plugin.so
        /// holds C`).
        held: String,
    },
    /// Several images were given and more than one holds the capture's
    /// kernel, in images that differ; the path is the descriptor's.
    #[error(
        "kernel {kernel} is in more than one of the images, and they differ ({files}): give \
         only the one the capture was recorded from"
    )]
    InSeveralImages {
        /// The kernel.
        kernel: String,
        /// The files that hold it, for people.
        files: String,
    },

    // The chunk store (a capture of the store format; the path is the
    // manifest's).
    /// The manifest standing for the file is malformed.
    #[error("is a damaged chunk manifest: {0}")]
    BadManifest(#[source] ManifestError),
    /// The manifest names a chunk the directory's store has no file for.
    #[error(
        "names chunk {index} ({hash}), which is missing from the directory's chunk store: the \
         capture is broken"
    )]
    MissingChunk {
        /// Its place in the manifest, from 0.
        index: u32,
        /// Its name.
        hash: ChunkHash,
    },
    /// The manifest names a chunk whose file is damaged (it does not
    /// decompress to the bytes of its name) or cannot be read.
    #[error("names chunk {index} ({hash}), which {fault}: the capture is broken")]
    DamagedChunk {
        /// Its place in the manifest, from 0.
        index: u32,
        /// Its name.
        hash: ChunkHash,
        /// What is wrong with it.
        fault: ChunkFault,
    },
    /// The capture's files are manifests, but its directory has no chunk
    /// store.
    #[error(
        "is kept in a chunk store, and {} is missing: copy the whole directory, including \
         .reprise-store, or export with --format raw",
        store.display()
    )]
    NoStore {
        /// The store's directory that is missing.
        store: PathBuf,
    },
}

impl CaptureProblem {
    /// The capture problem a chunk the store cannot read back is.
    pub fn of_chunk(p: ChunkProblem) -> Self {
        match p.fault {
            ChunkFault::Missing => CaptureProblem::MissingChunk {
                index: p.index,
                hash: p.hash,
            },
            fault => CaptureProblem::DamagedChunk {
                index: p.index,
                hash: p.hash,
                fault,
            },
        }
    }
}

impl Error {
    /// A capture problem in `path`.
    pub fn capture(path: impl Into<PathBuf>, problem: CaptureProblem) -> Self {
        Error::Capture {
            path: path.into(),
            problem,
        }
    }

    /// What is wrong with the capture, when the error is an
    /// [`Error::Capture`].
    pub fn capture_problem(&self) -> Option<&CaptureProblem> {
        match self {
            Error::Capture { problem, .. } => Some(problem),
            _ => None,
        }
    }
}
