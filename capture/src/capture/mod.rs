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
//! | LLVM IR, optional ([`ir`]) | `STEM.image` when it is bitcode | `STEM.bc` |
//!
//! Opening checks everything that can be checked without running anything:
//! snapshot lengths against the descriptor, the recorded region and each
//! other, the image's kind against the descriptor's `Backend`, the globals
//! file's structure, and checksums where the descriptor has them.
//! Sizes written in a descriptor are only ever compared with real file
//! lengths, so a lying size field costs nothing. Snapshots stay on disk: the
//! executor reads them into its own buffers (the host executor maps them).
//!
//! A capture of the store format (`RecordConfig::format`) has a manifest
//! `FILE.chunks` in place of each data file `FILE`, its chunks in the
//! directory's chunk store ([`crate::chunks`]); it opens, checks and
//! replays as a raw one does (a chunked snapshot's plain chunk files are
//! mapped where the executor maps parts of its buffers, the other chunks
//! decompressed into place), and a chunk missing or damaged is a problem
//! naming it.

mod assess;
pub mod base;
mod extra;
mod files;
pub mod ir;
mod launch_env;
pub mod offload;
mod open;
mod paths;
mod snapshot;
mod stored;
pub mod targets;

use std::path::{Path, PathBuf};

use reprise_core::globals::{self, Layout};
use reprise_core::image::{self, ImageKind};
use reprise_core::record::{BackendKind, KernelRecord};

use crate::error::{CaptureProblem, Error, Result};
pub use base::{BaseOrigin, ResolvedBase};
pub use extra::{ExtraParts, extra_paths};
use offload::ImageOrigin;

pub(crate) use assess::length_problems;
pub use assess::{
    Assessment, Blocks, ChecksumStatus, FileReport, Finding, Hashing, assess, global_problem,
    output_problem,
};
pub(crate) use files::expect_checksum;
pub use files::{checksum, checksum_mismatch, file_checksum, head, read_descriptor};
pub use ir::{ir_path, read_ir};
pub use open::{
    DESCRIPTOR_LIMIT, FileState, GLOBALS_LIMIT, IMAGE_LIMIT, open_regular, read_bounded,
};
pub use paths::{CapturePaths, KNOWN_EXTENSIONS, stem_of};
pub use snapshot::{Gaps, SnapshotFile, SnapshotSource, Streamed};
pub use stored::{Storage, data_file, read_data, storage};

/// How a capture is opened. Build it from [`OpenOptions::new`] (or
/// `..OpenOptions::default()`, the same): checksums verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenOptions {
    /// Accept a capture without a globals file (recorded before LLVM saved
    /// globals, or by LLVM 16, which never saves them); its globals are then
    /// left as the image initialises them, and a warning naming the missing
    /// file is logged.
    pub allow_missing_globals: bool,
    /// Verify checksums the descriptor carries (reads every file once).
    /// Default: on.
    pub verify_checksums: bool,
    /// The images to use instead of the capture's own `STEM.image` (which
    /// LLVM 16 never writes), none by default: each a device image, or an
    /// application binary (or LLVM offload container) from whose
    /// `.llvm.offloading` entries the one that defines the capture's kernel
    /// is taken (see [`crate::offload`]). With several (an application and
    /// the plugins it `dlopen`s), each capture takes its image from the
    /// file that holds its kernel ([`OpenOptions::given_image`]).
    pub images: Vec<PathBuf>,
    /// Whether the image of [`OpenOptions::images`] (then one) was
    /// compiled from the capture's IR (`replay --from-ir`): the
    /// descriptor's image checksum is of the recorded image, not of this
    /// one, and is not checked against it.
    pub image_compiled: bool,
    /// The region base to use instead of the recorded (or derived) one.
    pub region_base: Option<u64>,
    /// The executor the capture is for, when its descriptor does not say:
    /// chooses among an application binary's entries for several targets.
    pub backend: Option<BackendKind>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions::new()
    }
}

impl OpenOptions {
    /// The defaults: checksums verified, a globals file required, the
    /// capture's own image and recorded base.
    pub fn new() -> Self {
        OpenOptions {
            allow_missing_globals: false,
            verify_checksums: true,
            images: Vec::new(),
            image_compiled: false,
            region_base: None,
            backend: None,
        }
    }

    /// The same, missing globals allowed or not.
    pub fn allow_missing_globals(mut self, allow: bool) -> Self {
        self.allow_missing_globals = allow;
        self
    }

    /// The same, checksums verified or not.
    pub fn verify_checksums(mut self, verify: bool) -> Self {
        self.verify_checksums = verify;
        self
    }

    /// The same with `path` among the files images are taken from (see
    /// [`OpenOptions::images`]): once for one, again for each more.
    pub fn image(mut self, path: impl Into<PathBuf>) -> Self {
        self.images.push(path.into());
        self
    }

    /// The same with the image `path` compiled from the capture's IR (see
    /// [`OpenOptions::image_compiled`]), in place of any other.
    pub fn compiled_image(mut self, path: impl Into<PathBuf>) -> Self {
        self.images = vec![path.into()];
        self.image_compiled = true;
        self
    }

    /// The image these options give the capture `record` describes (whose
    /// descriptor is `descriptor`), and where it came from: the one choice
    /// among [`OpenOptions::images`] ([`offload::image_among`]), for
    /// [`OpenOptions::backend`] when the descriptor names no executor.
    /// `None` when they name no image: the capture's own is used.
    pub fn given_image(
        &self,
        record: &KernelRecord,
        descriptor: &Path,
    ) -> Option<Result<(Vec<u8>, ImageOrigin)>> {
        let backend = record.backend.or(self.backend);
        let chosen = offload::image_among(&self.images, descriptor, &record.name, backend)?;
        Some(chosen.map(|(bytes, mut origin)| {
            origin.compiled = self.image_compiled;
            (bytes, origin)
        }))
    }

    /// The same with the region at `base`.
    pub fn region_base(mut self, base: u64) -> Self {
        self.region_base = Some(base);
        self
    }

    /// The same for the `backend` executor.
    pub fn backend(mut self, backend: BackendKind) -> Self {
        self.backend = Some(backend);
        self
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
    /// Where the image came from, when not from the capture's own file
    /// ([`OpenOptions::images`]).
    pub image_origin: Option<ImageOrigin>,
    /// The region base a replay uses and where it came from (the record
    /// keeps what was recorded).
    pub base: Option<ResolvedBase>,
}

/// Settles the region base of the capture `record` describes:
/// `options.region_base` when given, else the recorded one, else one
/// derived by the rule of [`base`] (LLVM 16 records none); `None` when
/// there is none ([`BaseOrigin::Ambiguous`], without an address, when
/// several are possible). The record is left as it was recorded.
pub fn resolve_base(
    record: &KernelRecord,
    descriptor: &Path,
    options: &OpenOptions,
) -> Option<ResolvedBase> {
    resolve_base_among(record, descriptor, options, &std::cell::OnceCell::new())
}

/// [`resolve_base`] with the siblings of the descriptor's directory read
/// once into `siblings` (when a base is derived) for every capture of the
/// directory.
pub fn resolve_base_among(
    record: &KernelRecord,
    descriptor: &Path,
    options: &OpenOptions,
    siblings: &std::cell::OnceCell<base::Siblings>,
) -> Option<ResolvedBase> {
    let settled = |addr, origin| Some(ResolvedBase { addr, origin });
    if let Some(b) = options.region_base {
        return settled(Some(b), BaseOrigin::Given);
    }
    if let Some(b) = record.region_base {
        return settled(Some(b), BaseOrigin::Recorded);
    }
    if record.generation != reprise_core::record::Generation::LlvmLegacy {
        return None;
    }
    let siblings = siblings.get_or_init(|| base::Siblings::of(descriptor));
    match base::derive_among(record, descriptor, siblings) {
        base::Derivation::None => None,
        base::Derivation::Base(b, origin) => settled(Some(b), origin),
        base::Derivation::Ambiguous(candidates) => {
            settled(None, BaseOrigin::Ambiguous { candidates })
        }
    }
}

impl Capture {
    /// Opens the capture whose descriptor is `path`, with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Capture> {
        Capture::open_with(path, OpenOptions::new())
    }

    /// Opens the capture whose descriptor is `path`.
    ///
    /// Everything [`assess`] finds that stops a replay is an error here
    /// (the first one): what `inspect` and `list` report as problems is
    /// what this refuses. A missing globals file that `options` allows is
    /// a warning in the log.
    pub fn open_with(path: impl AsRef<Path>, options: OpenOptions) -> Result<Capture> {
        let path = path.as_ref();
        // One chunk store for every file of a store capture (its globals
        // and image read, its snapshots opened), not one each.
        let stores = stored::Stores::default();
        let record = read_descriptor(path)?;
        let base = resolve_base(&record, path, &options);
        let paths = CapturePaths::new(path, record.generation);
        let hashing = if options.verify_checksums {
            Hashing::SmallFiles
        } else {
            Hashing::None
        };
        let mut a = assess::assess_in(&stores, &record, &paths, &options, base, hashing);
        if let Some(e) = a.take_replay_blocker(&options) {
            return Err(e);
        }
        if a.globals.is_none() {
            log::warn!(
                "{}: globals file is missing; every global keeps the value the image gives it \
                 (a kernel that reads a global the application changed, with `target update` \
                 say, computes something else, and verification reports the difference){}",
                paths.globals.display(),
                if record.checksums.globals.is_some() {
                    " (the descriptor records the file's checksum: the capture is incomplete, \
                     and the replay may compute something else)"
                } else {
                    ""
                }
            );
        }
        // Opened again, checked again on the open file: what was assessed
        // may have changed since.
        let input = SnapshotFile::open_in(&stores, &paths.input)?
            .ok_or_else(|| Error::capture(&paths.input, CaptureProblem::MissingSnapshot))?;
        let output = SnapshotFile::open_in(&stores, &paths.output)?;
        for (file, assessed) in [
            (Some(&input), a.state("input")),
            (output.as_ref(), a.state("output")),
        ] {
            if let Some(f) = file
                && Some(f.len) != assessed.regular_len()
            {
                return Err(Error::capture(&f.path, CaptureProblem::Changed));
            }
        }
        let image = a
            .image
            .take()
            .ok_or(Error::Internal("an assessed image was not read"))?;
        let image_kind = image::sniff(&image);
        let sums = record.checksums;
        let checksums_verified = options.verify_checksums
            && ((sums.image.is_some() && a.image_origin.is_none())
                || (sums.globals.is_some() && a.globals.is_some()));
        Ok(Capture {
            paths,
            record,
            input,
            output,
            globals: a.globals.take(),
            image,
            image_kind,
            checksums_verified,
            verify_snapshots: options.verify_checksums,
            image_origin: a.image_origin.take(),
            base,
        })
    }

    /// The file the image was read from: the capture's own, or the one of
    /// [`OpenOptions::images`] chosen.
    pub fn image_path(&self) -> &Path {
        self.image_origin
            .as_ref()
            .map_or(&self.paths.image, |o| &o.path)
    }

    /// Why the recorded output cannot be verified against, if it cannot
    /// (missing, or recorded without output): the error `replay --verify`
    /// gives, which `inspect` reports too.
    pub fn output_problem(&self) -> Option<Error> {
        let state = match &self.output {
            Some(o) => FileState::Regular(o.len),
            None => FileState::Missing,
        };
        output_problem(&self.record, &self.paths, &state).map(|f| f.error)
    }

    /// Checks the input snapshot's bytes, as read, against the descriptor's
    /// checksum (when it has one and checking is on). When they differ and
    /// the snapshot is the store's, the error names the first chunk whose
    /// blake3 is wrong (or that is missing), where there is one.
    pub fn check_input(&self, bytes: &[u8]) -> Result<()> {
        match self.record.checksums.input {
            Some(want) if self.verify_snapshots => {
                files::expect_checksum(&self.input.path, want, checksum(bytes))
                    .map_err(|e| self.input.damaged_chunk().unwrap_or(e))
            }
            _ => Ok(()),
        }
    }

    /// The input snapshot's first `len` bytes in a buffer of `exec`'s
    /// ([`SnapshotFile::read_into`]), checked ([`Capture::check_input`]).
    /// Read whole and with a checksum to check, a store snapshot's chunks
    /// are not hashed one by one: the checksum is checked over every
    /// byte, as for raw files, and only when it fails are the chunks'
    /// hashes checked, to name the damaged one.
    pub fn read_input<E: reprise_core::exec::Executor>(
        &self,
        exec: &E,
        len: usize,
    ) -> Result<E::Buffer> {
        let whole = self.verify_snapshots
            && self.record.checksums.input.is_some()
            && len as u64 == self.input.len;
        let verify = if whole {
            crate::chunks::Verify::Whole
        } else {
            crate::chunks::Verify::EachChunk
        };
        let buffer = self.input.read_into_with(exec, len, verify)?;
        self.check_input(&buffer.as_ref()[..len])?;
        Ok(buffer)
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
        let compiled = self.image_origin.as_ref().is_some_and(|o| o.compiled);
        let mut any = false;
        if let (Some(want), Some(g)) = (sums.globals, &self.globals) {
            any = true;
            files::expect_checksum(&self.paths.globals, want, checksum(g))?;
        }
        if let Some(want) = sums.image.filter(|_| !compiled) {
            any = true;
            files::expect_checksum(&self.paths.image, want, checksum(&self.image))?;
        }
        if let Some(want) = sums.input {
            any = true;
            files::expect_checksum(&self.input.path, want, self.input.checksum()?)?;
        }
        if let (Some(want), Some(out)) = (sums.output, &self.output) {
            any = true;
            files::expect_checksum(&out.path, want, out.checksum()?)?;
        }
        Ok(any)
    }

    /// The layout of this capture's globals file.
    pub fn globals_layout(&self) -> Layout {
        self.record.generation.globals_layout()
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

    /// Where the region base came from, when there is one.
    pub fn base_origin(&self) -> Option<BaseOrigin> {
        self.base.map(|b| b.origin)
    }

    /// The region base a replay uses (recorded, given or derived), or an
    /// error naming the descriptor.
    pub fn region_base(&self) -> Result<u64> {
        self.base
            .and_then(|b| b.addr)
            .ok_or_else(|| Error::capture(&self.paths.descriptor, CaptureProblem::NoRegionAddress))
    }
}
