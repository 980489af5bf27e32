//! Looking at captures without running them: one capture in detail
//! ([`describe`]) and every capture of a directory, orphans included
//! ([`scan`]). Nothing here executes an image.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use reprise_core::globals;
use reprise_core::image::ImageKind;
use reprise_core::record::KernelRecord;

use crate::capture::base::Siblings;
use crate::capture::offload::ImageOrigin;
use crate::capture::{
    BaseOrigin, CapturePaths, FileState, Finding, Hashing, KNOWN_EXTENSIONS, OpenOptions,
    ResolvedBase, assess, head, read_descriptor, resolve_base_among,
};
pub use crate::capture::{ChecksumStatus, FileReport};
use crate::chunks::layout::MANIFEST_SUFFIX;
use crate::error::{Error, Names, Result, Setting, UnknownGeometry};
use crate::store::TEMP_PREFIX;

/// Everything `inspect` shows about a capture.
#[derive(Debug)]
pub struct Description {
    /// The descriptor.
    pub record: Box<KernelRecord>,
    /// The capture's files.
    pub paths: CapturePaths,
    /// Each file's state, length and checksum.
    pub files: Vec<FileReport>,
    /// What the image is, when it is there.
    pub image_kind: Option<ImageKind>,
    /// Where the image came from, when not from the capture's own file.
    pub image_origin: Option<ImageOrigin>,
    /// The region base a replay would use and where it came from (the
    /// record keeps what was recorded).
    pub base: Option<ResolvedBase>,
    /// The recorded globals (name, size), or why they cannot be read.
    pub globals: std::result::Result<Vec<(String, u64)>, String>,
    /// What [`assess`] found wrong.
    pub findings: Vec<Finding>,
}

impl Description {
    /// The region base a replay would use (recorded, given or derived).
    pub fn base_addr(&self) -> Option<u64> {
        self.base.and_then(|b| b.addr)
    }

    /// Where the region base came from, when there is one.
    pub fn base_origin(&self) -> Option<BaseOrigin> {
        self.base.map(|b| b.origin)
    }

    /// Length of the memory snapshot, when its file is there.
    pub fn snapshot_len(&self) -> Option<u64> {
        self.files
            .iter()
            .find(|f| f.role == "input")
            .and_then(|f| f.state.regular_len())
    }

    /// Whether argument `i`'s value points into the recorded region.
    pub fn arg_in_region(&self, i: usize) -> bool {
        let (Some(base), Some(len)) = (self.base_addr(), self.snapshot_len()) else {
            return false;
        };
        let v = self.record.arg_value(i);
        self.record.arg_size(i) == 8 && v >= base && v - base < len.max(1)
    }

    /// What makes the capture incomplete or inconsistent, so that a replay
    /// refuses it (or refuses to verify it): files missing, not regular,
    /// of the wrong length or checksum. Settings named as `names` says
    /// ([`Names::LIBRARY`]: as the library names them).
    pub fn problems_named(&self, names: Names) -> Vec<String> {
        self.findings
            .iter()
            .filter(|f| f.incomplete)
            .map(|f| f.error.named(names).to_string())
            .collect()
    }

    /// What is worth knowing but does not make the capture faulty: what a
    /// replay needs a setting for (a missing globals file that the
    /// descriptor never vouched for, in LLVM captures from before LLVM saved
    /// globals; a team or thread count LLVM did not record), and a capture
    /// recorded without output, which cannot be verified. Settings named
    /// as `names` says.
    pub fn notes_named(&self, names: Names) -> Vec<String> {
        let mut out = Vec::new();
        // A host kernel is given no geometry: the host replays it as it is.
        let without_geometry = self.image_kind.is_some_and(|k| {
            k.backend()
                .is_ok_and(|b| !crate::images::capabilities(b).launch_geometry)
        });
        if let Some(why) = UnknownGeometry::of(&self.record, None, None)
            && !without_geometry
        {
            out.push(why.named(names).to_string());
        }
        out.extend(marked_args(&self.record));
        for f in self.findings.iter().filter(|f| !f.incomplete) {
            match &f.error {
                Error::MissingGlobals { path, .. } => out.push(format!(
                    "{}: no globals file (LLVM 16 saves none, nor did LLVM before it saved \
                     globals); replay with {}, and globals keep the values the image gives them",
                    path.display(),
                    (names.given)(Setting::AllowMissingGlobals)
                )),
                other => out.push(other.named(names).to_string()),
            }
        }
        out
    }
}

/// Describes the capture whose descriptor is `path`, reading but never
/// executing its files. With `verify`, recorded checksums are checked
/// (every file is read once). What it reports wrong is what a replay
/// refuses: both come from [`assess`].
pub fn describe(path: &Path, verify: bool) -> Result<Description> {
    describe_with(path, OpenOptions::new().verify_checksums(verify))
}

/// [`describe`] with the image, region base or executor `options` name
/// (the checksums are verified when `options.verify_checksums` says).
pub fn describe_with(path: &Path, options: OpenOptions) -> Result<Description> {
    describe_among(path, options, &OnceCell::new())
}

/// [`describe_with`], a derived base's siblings read once into `siblings`
/// for the whole directory.
fn describe_among(
    path: &Path,
    options: OpenOptions,
    siblings: &OnceCell<Siblings>,
) -> Result<Description> {
    let record = read_descriptor(path)?;
    let base = resolve_base_among(&record, path, &options, siblings);
    let paths = CapturePaths::new(path, record.generation);
    let hashing = if options.verify_checksums {
        Hashing::All
    } else {
        Hashing::None
    };
    let a = assess(&record, &paths, &options, base, hashing);
    let shown = paths.globals.display();
    let globals = match (&a.globals, a.state("globals")) {
        (Some(bytes), _) => globals::decode(record.generation.globals_layout(), bytes)
            .map_err(|e| e.to_string())
            .and_then(|d| {
                d.map(|g| g.map(|g| (g.name.to_string(), g.bytes.len() as u64)))
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| e.to_string())
            })
            .map_err(|e| format!("{shown}: {e}")),
        (None, FileState::Missing) => Err(format!("{shown}: missing")),
        (None, _) => Err(format!("{shown}: unreadable or malformed")),
    };
    Ok(Description {
        record,
        paths,
        files: a.files,
        image_kind: a.image_kind,
        image_origin: a.image_origin,
        base,
        globals,
        findings: a.findings,
    })
}

/// One line of a directory listing.
#[derive(Debug)]
pub enum Entry {
    /// A capture with a readable descriptor.
    Capture(Box<Description>),
    /// A descriptor that cannot be read.
    Broken {
        /// The descriptor.
        path: PathBuf,
        /// Why.
        error: Error,
    },
    /// A JSON file that is no capture descriptor (it names none of a
    /// descriptor's keys, as a `package.json` or `compile_commands.json`)
    /// and has no capture files beside it.
    Other {
        /// The file.
        path: PathBuf,
    },
    /// A file that belongs to no whole capture.
    Orphan {
        /// The file.
        path: PathBuf,
        /// Why it is an orphan.
        why: &'static str,
    },
}

/// Whether the start of a JSON file names a descriptor's key, so
/// that an unreadable one is a broken capture rather than some other JSON
/// file (a `package.json`, a `compile_commands.json`).
fn mentions_descriptor_keys(path: &Path) -> bool {
    let head = head(path, 64 * 1024).unwrap_or_default();
    let text = String::from_utf8_lossy(&head);
    [
        "Name",
        "NumArgs",
        "ArgPtrs",
        "ArgOffsets",
        "NumTeams",
        "NumTeamsClause",
        "VAllocAddr",
        "BumpAllocVAStart",
    ]
    .iter()
    .any(|k| text.contains(&format!("\"{k}\"")))
}

/// Splits the name of a capture's file into (stem, extension): a raw
/// file's for the known extensions (`k.record_input` -> `k`,
/// `record_input`), and a manifest's standing for one
/// (`k.record_input.chunks` -> `k`, `record_input.chunks`).
pub(crate) fn split_data_name(name: &str) -> Option<(&str, String)> {
    match name.strip_suffix(MANIFEST_SUFFIX) {
        Some(raw) if !name.starts_with('.') => split_known(raw)
            .filter(|(_, ext)| *ext != "json")
            .map(|(stem, ext)| (stem, format!("{ext}{MANIFEST_SUFFIX}"))),
        Some(_) => None,
        None => split_known(name).map(|(stem, ext)| (stem, ext.to_string())),
    }
}

/// Splits a file name into (stem, extension) for the known extensions.
fn split_known(name: &str) -> Option<(&str, &str)> {
    // Two-part extensions first ("original.output" before "output").
    let mut exts: Vec<&str> = KNOWN_EXTENSIONS.to_vec();
    exts.sort_by_key(|e| std::cmp::Reverse(e.len()));
    exts.into_iter().find_map(|ext| {
        let stem = name.strip_suffix(ext)?.strip_suffix('.')?;
        (!stem.is_empty()).then_some((stem, ext))
    })
}

pub use crate::report::counts_in as report_counts;

/// Lists every capture in `dir` (sorted by name), and every file that
/// belongs to no whole capture: data files whose descriptor is missing (an
/// interrupted recording) and temporary files of interrupted writes. With
/// `verify`, each capture's checksums are checked (every file is read
/// once), as [`describe`] does.
pub fn scan(dir: &Path, verify: bool) -> Result<Vec<Entry>> {
    scan_with(dir, &OpenOptions::new().verify_checksums(verify))
}

/// [`scan`], each capture opened with `options` (an application binary
/// holding the images of LLVM 16's captures, say): what a replay opened
/// with them would refuse is a problem of the capture.
pub fn scan_with(dir: &Path, options: &OpenOptions) -> Result<Vec<Entry>> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, "list directory", e))?;
    // By the stem's bytes: names need not be UTF-8, and two that differ
    // only where they are not must not be taken for one.
    let mut stems: BTreeMap<Vec<u8>, Vec<(String, PathBuf)>> = BTreeMap::new();
    let mut out = Vec::new();
    let orphan = |path, why| Entry::Orphan { path, why };
    // The LLVM 16 descriptors whose bases are derived, read once for all.
    let siblings = OnceCell::new();
    let mut names: Vec<_> = rd.filter_map(|e| e.ok()).collect();
    names.sort_by_key(|e| e.file_name());
    for e in names {
        let raw = e.file_name();
        let name = raw.to_string_lossy().into_owned();
        let path = e.path();
        // A recorder's report: read for its counts ([`report_counts`]).
        if name.ends_with(crate::report::REPORT_SUFFIX) {
            continue;
        }
        if name.starts_with(TEMP_PREFIX) {
            out.push(orphan(path, "temporary file of an interrupted write"));
            continue;
        }
        if let Some((stem, ext)) = split_data_name(&name) {
            // The extension is ASCII: the stem is the name's bytes before it.
            let suffix = name.len() - stem.len();
            let bytes = std::os::unix::ffi::OsStrExt::as_bytes(raw.as_os_str());
            let stem = bytes[..bytes.len() - suffix].to_vec();
            stems.entry(stem).or_default().push((ext, path));
        }
    }
    for (_, files) in stems {
        match files.iter().find(|(ext, _)| ext == "json") {
            Some((_, json)) => match describe_among(json, options.clone(), &siblings) {
                Ok(d) => {
                    // Data files of the other generation's naming belong to nothing.
                    let mine: Vec<&PathBuf> = d.files.iter().map(|f| &f.path).collect();
                    for (ext, p) in &files {
                        // A manifest beside the raw file it stands for: an
                        // import was interrupted between the two (the raw
                        // file is read; `import` again finishes it).
                        let raw = p.to_str().and_then(|s| s.strip_suffix(MANIFEST_SUFFIX));
                        let beside_raw = ext.ends_with(MANIFEST_SUFFIX)
                            && raw.is_some_and(|raw| mine.contains(&&PathBuf::from(raw)));
                        if ext != "json" && ext != "bc" && !beside_raw && !mine.contains(&p) {
                            let why = "data file this capture's format does not use";
                            out.push(orphan(p.clone(), why));
                        }
                    }
                    out.push(Entry::Capture(Box::new(d)));
                }
                Err(_) if files.len() == 1 && !mentions_descriptor_keys(json) => {
                    out.push(Entry::Other { path: json.clone() })
                }
                Err(error) => out.push(Entry::Broken {
                    path: json.clone(),
                    error,
                }),
            },
            None => {
                for (ext, p) in files {
                    let why = if ext.ends_with(MANIFEST_SUFFIX) {
                        "manifest without a descriptor (an interrupted recording; gc removes it)"
                    } else {
                        "data file without a descriptor (an interrupted recording)"
                    };
                    out.push(orphan(p, why));
                }
            }
        }
    }
    // What writers that died left in the store (a store that cannot be
    // looked into hides none of the captures).
    match crate::chunks::store_leftovers(dir) {
        Ok(leftovers) => out.extend(leftovers.into_iter().map(|l| orphan(l.path, l.kind.why()))),
        Err(e) => log::warn!("{e}: the store's leftovers are not listed"),
    }
    Ok(out)
}

/// What a recording marked about the arguments of `record` (`ArgsOutside`,
/// `ArgsInGlobals`): one line per marked argument, saying why a replay may
/// not reproduce the launch. `inspect` and `list` show them as notes, and
/// a replay warns with them.
pub fn marked_args(record: &KernelRecord) -> Vec<String> {
    let outside = record.args_outside.iter().map(|&i| {
        format!(
            "argument {i} held {:#x}, outside the recording region (memory the recorder could not \
             place there: managed, host-mapped, or allocated once the region was full); the capture \
             does not hold it, so a replay may read other data there or fault",
            record.arg_value(usize::from(i))
        )
    });
    let globals = record.args_in_globals.iter().map(|&i| {
        format!(
            "argument {i} held {:#x}, the address of a device global; a replay loads the image \
             anew, and the global may be elsewhere",
            record.arg_value(usize::from(i))
        )
    });
    outside.chain(globals).collect()
}

#[cfg(test)]
mod tests;
