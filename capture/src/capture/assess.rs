//! Whether a capture is whole: the one check that `replay` (through
//! [`crate::Capture::open`]), `inspect` and `list` share, so that none of
//! them calls complete what another refuses.
//!
//! [`assess`] looks at every file of a capture without running anything:
//! what is at each path (a missing file, a FIFO or a directory where a
//! regular file must be), lengths against the descriptor and each other,
//! the image's kind against the descriptor's `Backend`, the globals file's
//! structure, the descriptor's checksum map, what the image's executor
//! would refuse of the image that needs no run (its format, machine and
//! ELF type, a truncated file, the kernel and the recorded globals it must
//! define, argument sizes: [`image_checks`]), and (when asked) the files'
//! checksums. Each thing wrong is a [`Finding`]: an [`Error`] that says it,
//! and what it stops.

mod image_checks;
mod integrity;

use integrity::{check_checksum_map, check_chunks, hash};

use std::path::{Path, PathBuf};

use reprise_core::globals;
use reprise_core::image::{self, ImageKind};
use reprise_core::record::{Generation, KernelRecord};

use super::base::{BaseOrigin, ResolvedBase};
use super::files::{checksum, checksum_mismatch, file_checksum};
use super::offload::ImageOrigin;
use super::open::{FileState, GLOBALS_LIMIT, IMAGE_LIMIT, not_found, not_regular, open_regular};
use super::stored::{self, Stores, read_data_in};
use super::{CapturePaths, OpenOptions};
use crate::chunks::manifest_path;
use crate::error::{CaptureProblem, ChecksumMapProblem, Error, Setting};

/// The state of one file's checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksumStatus {
    /// The descriptor carries none for this file.
    NotRecorded,
    /// Recorded but not checked (checking was not asked for).
    NotChecked,
    /// Checked and equal.
    Verified,
    /// Checked and different.
    Mismatch {
        /// What the descriptor says.
        recorded: u64,
        /// What the file hashes to.
        actual: u64,
    },
}

/// Which checksums [`assess`] checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hashing {
    /// None.
    None,
    /// Those of the files it reads anyway, the image and the globals (the
    /// snapshots, which can be large, are checked where they are read).
    SmallFiles,
    /// All of them (every file is read once).
    All,
}

/// What a [`Finding`] stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocks {
    /// Replaying at all.
    Replay,
    /// Replaying, unless the setting says to go on (allow missing globals,
    /// skip checksums).
    ReplayUnless(Setting),
    /// Verifying a replay's output (replaying without verification works).
    Verification,
}

/// One thing wrong with a capture.
#[derive(Debug)]
pub struct Finding {
    /// What is wrong, naming the file.
    pub error: Error,
    /// Whether it leaves the capture incomplete or inconsistent (`inspect`
    /// and `list` report it as a problem and exit 1), rather than only
    /// needing a setting or not verifiable (a note).
    pub incomplete: bool,
    /// What it stops.
    pub blocks: Blocks,
}

/// One file of a capture, as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    /// Its role: `descriptor`, `input`, `output`, `globals`, `image`,
    /// `replay output`.
    pub role: &'static str,
    /// Its path.
    pub path: PathBuf,
    /// What is there.
    pub state: FileState,
    /// Its checksum's state.
    pub checksum: ChecksumStatus,
}

/// Everything [`assess`] found.
#[derive(Debug, Default)]
pub struct Assessment {
    /// Each file: the descriptor, the snapshots, the globals, the image, a
    /// replay's saved output (the optional ones only when there).
    pub files: Vec<FileReport>,
    /// What the image is, when it could be read.
    pub image_kind: Option<ImageKind>,
    /// The image's bytes, when it could be read (at most
    /// [`IMAGE_LIMIT`](super::open::IMAGE_LIMIT)).
    pub image: Option<Vec<u8>>,
    /// The globals file's bytes, when it is there and well formed.
    pub globals: Option<Vec<u8>>,
    /// Where the image came from, when it was not the capture's own file.
    pub image_origin: Option<ImageOrigin>,
    /// What is wrong, most serious first within each file.
    pub findings: Vec<Finding>,
}

impl Assessment {
    /// Adds the file of `role` at `path`, in `state`, its checksum not
    /// (yet) looked at.
    fn found(&mut self, role: &'static str, path: PathBuf, state: FileState) {
        self.files.push(FileReport {
            role,
            path,
            state,
            checksum: ChecksumStatus::NotRecorded,
        });
    }

    /// Adds `errors` as findings that leave the capture incomplete and stop
    /// what `blocks` says.
    fn add(&mut self, errors: impl IntoIterator<Item = Error>, blocks: Blocks) {
        // A missing store is one problem however many files it held.
        let no_store =
            |e: &Error| matches!(e.capture_problem(), Some(CaptureProblem::NoStore { .. }));
        for error in errors {
            if no_store(&error) && self.findings.iter().any(|f| no_store(&f.error)) {
                continue;
            }
            self.findings.push(Finding {
                error,
                incomplete: true,
                blocks,
            });
        }
    }

    /// The state of the file with `role`.
    pub fn state(&self, role: &str) -> FileState {
        self.files
            .iter()
            .find(|f| f.role == role)
            .map_or(FileState::Missing, |f| f.state.clone())
    }

    /// The first finding that stops a replay opened with `options`, taken
    /// out, as the error to report.
    pub fn take_replay_blocker(&mut self, options: &OpenOptions) -> Option<Error> {
        let at = self.findings.iter().position(|f| match f.blocks {
            Blocks::Replay => true,
            Blocks::ReplayUnless(Setting::AllowMissingGlobals) => !options.allow_missing_globals,
            Blocks::ReplayUnless(Setting::VerifyChecksums) => options.verify_checksums,
            Blocks::ReplayUnless(_) => true,
            Blocks::Verification => false,
        })?;
        Some(self.findings.remove(at).error)
    }
}

/// Why the recorded output cannot be verified against, if it cannot: the
/// one answer `replay --verify` and `inspect` give.
pub fn output_problem(
    record: &KernelRecord,
    paths: &CapturePaths,
    output: &FileState,
) -> Option<Finding> {
    if output.exists() {
        return None;
    }
    let checksummed = record.checksums.output.is_some();
    Some(Finding {
        error: Error::capture(
            &paths.output,
            CaptureProblem::NoRecordedOutput { checksummed },
        ),
        incomplete: checksummed,
        blocks: Blocks::Verification,
    })
}

/// Assesses the capture whose descriptor `record` was read from
/// `paths.descriptor` (its region base `base`, as [`super::resolve_base`]
/// settled it), as a replay opened with `options` would see it
/// (`options.allow_missing_globals` makes a missing globals file a warning
/// only; `options.verify_checksums` off skips the descriptor's checksum
/// map), hashing the files `hashing` says. Reads the image and the globals
/// (bounded) and, for [`Hashing::All`], streams the snapshots; never
/// executes anything.
pub fn assess(
    record: &KernelRecord,
    paths: &CapturePaths,
    options: &OpenOptions,
    base: Option<ResolvedBase>,
    hashing: Hashing,
) -> Assessment {
    assess_in(&Stores::default(), record, paths, options, base, hashing)
}

/// [`assess`], every manifest's chunks read through `stores`: a chunk read
/// once is not decompressed again to be checked.
pub(crate) fn assess_in(
    stores: &Stores,
    record: &KernelRecord,
    paths: &CapturePaths,
    options: &OpenOptions,
    base: Option<ResolvedBase>,
    hashing: Hashing,
) -> Assessment {
    let base_addr = base.and_then(|b| b.addr);
    let mut a = Assessment::default();
    let problem = |a: &mut Assessment, error: Error| a.add([error], Blocks::Replay);
    let at = |a: &mut Assessment, path: &Path, p| problem(a, Error::capture(path, p));
    let sums = record.checksums;
    let state_of = |a: &mut Assessment, role: &'static str, path: &Path| {
        let state = FileState::of(path);
        a.found(role, path.to_path_buf(), state.clone());
        state
    };
    let special = |a: &mut Assessment, path: &Path, state: &FileState| match state {
        FileState::Special(kind) => problem(a, not_regular(path, kind)),
        FileState::Unreadable(reason) => {
            let reason = reason.clone();
            at(a, path, CaptureProblem::Unreadable { reason })
        }
        _ => {}
    };

    state_of(&mut a, "descriptor", &paths.descriptor);

    // What is at a data file's path, or the manifest standing for it;
    // `None` when that manifest is malformed (and reported so).
    let data_state = |a: &mut Assessment, role: &'static str, raw: &Path, listed_missing: bool| {
        let raw_state = FileState::of(raw);
        let (path, state) = match stored::manifest_for(raw) {
            Ok(Some((path, m))) => {
                let (len, chunks) = (m.len(), m.chunks().len() as u64);
                (path, FileState::Chunked { len, chunks })
            }
            Ok(None) => (raw.to_path_buf(), raw_state),
            Err(e) => {
                let state = FileState::Unreadable(e.to_string());
                a.found(role, manifest_path(raw), state);
                a.add([e], Blocks::Replay);
                return None;
            }
        };
        if listed_missing || state.exists() {
            a.found(role, path, state.clone());
        }
        Some(state)
    };

    // The snapshots.
    let input = data_state(&mut a, "input", &paths.input, true);
    match &input {
        Some(FileState::Missing) => at(&mut a, &paths.input, CaptureProblem::MissingSnapshot),
        Some(other) => special(&mut a, &paths.input, other),
        None => {}
    }
    let output = data_state(&mut a, "output", &paths.output, false);
    if let Some(output) = &output {
        special(&mut a, &paths.output, output);
        if let Some(f) = output_problem(record, paths, output) {
            a.findings.push(f);
        }
    }
    let output = output.unwrap_or(FileState::Missing);
    // Memory beyond the region, where the capture holds some.
    if !record.extra_ranges.is_empty() {
        let (extra_input, extra_output) = super::extra_paths(&paths.descriptor);
        if let Some(FileState::Missing) = data_state(&mut a, "extra input", &extra_input, true) {
            at(&mut a, &extra_input, CaptureProblem::MissingSnapshot);
        }
        data_state(&mut a, "extra output", &extra_output, false);
    }
    // Lengths first: a snapshot whose length (a manifest's, say) lies
    // about the descriptor's is not read, decompressed or hashed for it.
    let wrong = match input.as_ref().and_then(FileState::regular_len) {
        Some(len) => length_problems(record, base_addr, paths, len, output.regular_len()),
        None => Vec::new(),
    };
    let lengths_hold = wrong.is_empty();
    a.add(wrong, Blocks::Replay);
    let hashing = match hashing {
        Hashing::All if !lengths_hold => Hashing::SmallFiles,
        h => h,
    };

    // A data file that is there, read (bounded); `None` when it cannot be
    // (which is a problem).
    let read = |a: &mut Assessment, path: &Path, role: &str, limit: u64| {
        match read_data_in(stores, path, role, limit) {
            Ok(Some(bytes)) => return Some(bytes),
            Ok(None) => at(a, path, CaptureProblem::Vanished),
            Err(e) => problem(a, e),
        }
        None
    };

    // The image: the capture's own, or one the options name.
    let take_image = |a: &mut Assessment, bytes: Vec<u8>| {
        let kind = image::sniff(&bytes);
        a.image_kind = Some(kind);
        a.image = Some(bytes);
        check_backend(a, record, paths, kind);
    };
    if let Some(given) = options.given_image(record, &paths.descriptor) {
        // Of several files, the image's is the one chosen; each file given
        // when none was (or there is only one).
        let files: Vec<&PathBuf> = match (&given, options.images.as_slice()) {
            (Ok((_, origin)), [_, _, ..]) => vec![&origin.path],
            _ => options.images.iter().collect(),
        };
        for path in files {
            a.found("image", path.clone(), FileState::of(path));
        }
        match given {
            Ok((bytes, origin)) => {
                a.image_origin = Some(origin);
                take_image(&mut a, bytes);
            }
            Err(e) => problem(&mut a, e),
        }
    } else {
        let image_state = data_state(&mut a, "image", &paths.image, true);
        match &image_state {
            None => {}
            Some(FileState::Missing) => problem(&mut a, missing_image(record, paths)),
            Some(FileState::Regular(_) | FileState::Chunked { .. }) => {
                if let Some(bytes) = read(&mut a, &paths.image, "device image", IMAGE_LIMIT) {
                    take_image(&mut a, bytes);
                }
            }
            Some(other) => special(&mut a, &paths.image, other),
        }
    }

    // The globals.
    let globals_state = data_state(&mut a, "globals", &paths.globals, true);
    match &globals_state {
        None => {}
        Some(FileState::Missing) => {
            let checksummed = sums.globals.is_some();
            a.findings.push(Finding {
                error: Error::MissingGlobals {
                    path: paths.globals.clone(),
                    checksummed,
                },
                incomplete: checksummed,
                blocks: Blocks::ReplayUnless(Setting::AllowMissingGlobals),
            });
        }
        Some(FileState::Regular(_) | FileState::Chunked { .. }) => {
            if let Some(bytes) = read(&mut a, &paths.globals, "globals file", GLOBALS_LIMIT) {
                let layout = record.generation.globals_layout();
                match globals::decode(layout, &bytes).and_then(|d| d.validate()) {
                    Ok(_) => a.globals = Some(bytes),
                    Err(source) => {
                        let path = paths.globals.clone();
                        problem(&mut a, Error::Globals { path, source })
                    }
                }
            }
        }
        Some(other) => special(&mut a, &paths.globals, other),
    }

    // The chunks the manifests name: every one there (and, hashing every
    // file, whole).
    check_chunks(&mut a, stores, record, hashing == Hashing::All);

    // A replay's saved output: only shown.
    if FileState::of(&paths.replay_output).exists() {
        state_of(&mut a, "replay output", &paths.replay_output);
    }

    if base_addr.is_none() {
        let path = paths.descriptor.clone();
        let error = match base.map(|b| b.origin) {
            Some(BaseOrigin::Ambiguous { candidates }) => Error::AmbiguousRegionBase {
                path,
                candidates: candidates.named().to_vec(),
                total: candidates.total,
            },
            _ => Error::NoRegionBase { path },
        };
        problem(&mut a, error);
    }
    let environment = super::launch_env::check(record, paths, base);
    a.add(environment, Blocks::Replay);
    if let (Some(image), Some(kind)) = (&a.image, a.image_kind) {
        let image_path = a.image_origin.as_ref().map_or(&paths.image, |o| &o.path);
        let layout = record.generation.globals_layout();
        let globals = a
            .globals
            .as_deref()
            .map(|g| (g, layout, paths.globals.as_path()));
        let image = (image.as_slice(), kind, image_path.as_path());
        let found =
            image_checks::problems(record, &paths.descriptor, image, options.backend, globals);
        a.add(found, Blocks::Replay);
    }
    check_checksum_map(&mut a, record, paths, options);
    if hashing != Hashing::None {
        hash(&mut a, record, hashing);
    }
    a
}

/// Why the recorded global `name` of `recorded` bytes (from the globals
/// file `globals`) cannot be restored into the image at `image`, whose
/// global of that name has `size` bytes (`None`: it has none); `None` when
/// it can. The one answer of [`assess`] and of a replay that looks the
/// global up in the loaded image.
pub fn global_problem(
    globals: &Path,
    image: &Path,
    name: &str,
    recorded: usize,
    size: Option<u64>,
) -> Option<Error> {
    let name = name.to_string();
    let image = image.to_path_buf();
    let why = match size {
        None => CaptureProblem::GlobalAbsent { name, image },
        Some(size) if size != recorded as u64 => CaptureProblem::GlobalSize {
            name,
            recorded,
            size,
            image,
        },
        Some(_) => return None,
    };
    Some(Error::capture(globals, why))
}

/// A missing image: LLVM 16 never saves one (the image is in the
/// application binary), which the error says with the setting that names
/// the binary.
fn missing_image(record: &KernelRecord, paths: &CapturePaths) -> Error {
    if record.generation == Generation::LlvmLegacy {
        Error::MissingImage {
            path: paths.image.clone(),
        }
    } else {
        not_found(&paths.image, "read")
    }
}

/// Snapshot lengths (`input`, `output`: a file's, or what its manifest
/// says) against the descriptor, the region and each other: what is wrong,
/// found before a byte of them is read (the one check of an assessment and
/// of an export).
pub(crate) fn length_problems(
    record: &KernelRecord,
    base: Option<u64>,
    paths: &CapturePaths,
    input: u64,
    output: Option<u64>,
) -> Vec<Error> {
    let (descriptor, len) = (&paths.descriptor, input);
    let mut problems = Vec::new();
    let mut refuse = |path: &Path, problem| problems.push(Error::capture(path, problem));
    if let Some(expected) = record.memory_size.filter(|&size| size != len) {
        let (path, found) = (&paths.input, len);
        refuse(path, CaptureProblem::SnapshotSize { found, expected });
    }
    if let Some(region) = record.region_size.filter(|&size| len > size) {
        let snapshot = paths.input.clone();
        let problem = CaptureProblem::SnapshotLargerThanRegion {
            snapshot,
            len,
            region,
        };
        refuse(descriptor, problem);
    }
    if let Some(output) = output.filter(|&out| out != len) {
        let input_path = paths.input.clone();
        let problem = CaptureProblem::OutputSize {
            output,
            input_path,
            input,
        };
        refuse(&paths.output, problem);
    }
    if let Some(base) = base.filter(|base| base.checked_add(len).is_none()) {
        refuse(descriptor, CaptureProblem::RegionWraps { base, len });
    }
    // Every executor reserves the region from its page: one in the
    // first page would map address 0, where a null pointer points.
    if let Some(base) = base.filter(|&base| base != 0 && base < 4096) {
        refuse(descriptor, CaptureProblem::RegionInFirstPage { base });
    }
    problems
}

/// The recorder writes the backend it recorded on and the image it loaded
/// there: when they disagree, the files do not belong together (an image
/// replaced, or a descriptor edited), and replaying would run other code
/// than was recorded.
fn check_backend(a: &mut Assessment, record: &KernelRecord, paths: &CapturePaths, kind: ImageKind) {
    if let (Some(named), Ok(detected)) = (record.backend, kind.backend())
        && named != detected
    {
        let problem = CaptureProblem::BackendMismatch {
            named,
            image: paths.image.clone(),
            kind,
            runs_on: detected,
        };
        a.add([Error::capture(&paths.descriptor, problem)], Blocks::Replay);
    }
}
