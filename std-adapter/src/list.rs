//! Looking at captures without running them: one capture in detail
//! ([`describe`]) and every capture of a directory, orphans included
//! ([`scan`]). Nothing here executes an image.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use reprise_core::globals;
use reprise_core::image::{self, ImageKind};
use reprise_core::record::KernelRecord;

use crate::capture::{
    CapturePaths, KNOWN_EXTENSIONS, file_checksum, globals_layout, read_descriptor,
};
use crate::error::{Error, Names, Result, Setting, UnknownGeometry};
use crate::store::TEMP_PREFIX;

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

/// One file of a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStatus {
    /// Its role: `descriptor`, `input`, `output`, `globals`, `image`,
    /// `replay output`.
    pub role: &'static str,
    /// Its path.
    pub path: PathBuf,
    /// Its length, `None` when missing.
    pub len: Option<u64>,
    /// Its checksum state.
    pub checksum: ChecksumStatus,
}

/// Everything `inspect` shows about a capture.
#[derive(Debug)]
pub struct Description {
    /// The descriptor.
    pub record: Box<KernelRecord>,
    /// The capture's files.
    pub paths: CapturePaths,
    /// Each file's presence, length and checksum.
    pub files: Vec<FileStatus>,
    /// What the image is, when it is there.
    pub image_kind: Option<ImageKind>,
    /// The recorded globals (name, size), or why they cannot be read.
    pub globals: std::result::Result<Vec<(String, u64)>, String>,
}

impl Description {
    /// Length of the memory snapshot, when its file is there.
    pub fn snapshot_len(&self) -> Option<u64> {
        self.files
            .iter()
            .find(|f| f.role == "input")
            .and_then(|f| f.len)
    }

    /// Whether argument `i`'s value points into the recorded region.
    pub fn arg_in_region(&self, i: usize) -> bool {
        let (Some(base), Some(len)) = (self.record.region_base, self.snapshot_len()) else {
            return false;
        };
        let v = self.record.arg_value(i);
        self.record.arg_size(i) == 8 && v >= base && v - base < len.max(1)
    }

    /// Problems that would stop a replay (missing files, bad checksums).
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for f in &self.files {
            match (f.role, f.len) {
                ("input" | "image", None) => out.push(format!("{}: missing", f.path.display())),
                ("globals", None) if self.record.checksums.globals.is_some() => out.push(format!(
                    "{}: missing, though the descriptor records its checksum",
                    f.path.display()
                )),
                _ => {}
            }
            if let ChecksumStatus::Mismatch { recorded, actual } = f.checksum {
                out.push(format!(
                    "{}: checksum mismatch (descriptor {recorded:016x}, file {actual:016x})",
                    f.path.display()
                ));
            }
        }
        if let (Some(size), Some(len)) = (self.record.memory_size, self.snapshot_len())
            && size != len
        {
            out.push(format!(
                "input snapshot is {len} bytes, descriptor says {size}"
            ));
        }
        if let (Some(size), Some(len)) = (self.record.region_size, self.snapshot_len())
            && len > size
        {
            out.push(format!(
                "input snapshot is {len} bytes, more than the region it was taken from (VAllocSize {size})"
            ));
        }
        if let (Some(named), Some(Ok(detected))) =
            (self.record.backend, self.image_kind.map(|k| k.backend()))
            && named != detected
        {
            out.push(format!(
                "Backend is \"{named}\" but the image runs on the {detected} executor: the image does not belong to this capture"
            ));
        }
        if let Err(e) = &self.globals
            && self.globals_file_present()
        {
            out.push(e.clone());
        }
        out
    }

    /// What is worth knowing but does not make the capture faulty: a
    /// missing globals file that the descriptor never vouched for (LLVM
    /// captures from before LLVM saved globals), a team or thread count
    /// LLVM did not record (replay needs it given). Settings are named as
    /// the library names them; [`Description::notes_named`] names them
    /// otherwise.
    pub fn notes(&self) -> Vec<String> {
        self.notes_named(Names::LIBRARY)
    }

    /// [`Description::notes`], with settings named as `names` says.
    pub fn notes_named(&self, names: Names) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(why) = UnknownGeometry::of(&self.record, None, None) {
            out.push(why.named(names).to_string());
        }
        if !self.globals_file_present() && self.record.checksums.globals.is_none() {
            out.push(format!(
                "{}: no globals file (recorded before LLVM saved globals?); replay with \
                 {}, and globals keep the values the image gives them",
                self.paths.globals.display(),
                (names.given)(Setting::AllowMissingGlobals)
            ));
        }
        out
    }

    fn globals_file_present(&self) -> bool {
        self.files
            .iter()
            .any(|f| f.role == "globals" && f.len.is_some())
    }
}

fn file_len(path: &Path) -> Option<u64> {
    std::fs::metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len())
}

fn status(path: &Path, recorded: Option<u64>, verify: bool) -> Result<ChecksumStatus> {
    let Some(recorded) = recorded else {
        return Ok(ChecksumStatus::NotRecorded);
    };
    if !verify {
        return Ok(ChecksumStatus::NotChecked);
    }
    let Ok(f) = File::open(path) else {
        return Ok(ChecksumStatus::NotChecked);
    };
    let actual = file_checksum(&f, path)?;
    Ok(if actual == recorded {
        ChecksumStatus::Verified
    } else {
        ChecksumStatus::Mismatch { recorded, actual }
    })
}

/// Describes the capture whose descriptor is `path`, reading but never
/// executing its files. With `verify`, recorded checksums are checked.
pub fn describe(path: &Path, verify: bool) -> Result<Description> {
    let record = read_descriptor(path)?;
    let paths = CapturePaths::new(path, record.generation);
    let sums = record.checksums;
    let mut files = vec![FileStatus {
        role: "descriptor",
        path: paths.descriptor.clone(),
        len: file_len(&paths.descriptor),
        checksum: ChecksumStatus::NotRecorded,
    }];
    for (role, p, sum) in [
        ("input", &paths.input, sums.input),
        ("output", &paths.output, sums.output),
        ("globals", &paths.globals, sums.globals),
        ("image", &paths.image, sums.image),
        ("replay output", &paths.replay_output, None),
    ] {
        let len = file_len(p);
        if len.is_none() && (role == "output" || role == "replay output") {
            continue;
        }
        files.push(FileStatus {
            role,
            path: p.clone(),
            len,
            checksum: if len.is_some() {
                status(p, sum, verify)?
            } else {
                ChecksumStatus::NotRecorded
            },
        });
    }
    let image_kind = File::open(&paths.image).ok().map(|f| {
        let mut head = Vec::with_capacity(64 * 1024);
        let _ = f.take(64 * 1024).read_to_end(&mut head);
        image::sniff(&head)
    });
    let globals = match std::fs::read(&paths.globals) {
        Err(e) => Err(format!("{}: {e}", paths.globals.display())),
        Ok(bytes) => match globals::decode(globals_layout(record.generation), &bytes) {
            Err(e) => Err(format!("{}: {e}", paths.globals.display())),
            Ok(d) => d
                .map(|g| g.map(|g| (g.name.to_string(), g.bytes.len() as u64)))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| format!("{}: {e}", paths.globals.display())),
        },
    };
    Ok(Description {
        record,
        paths,
        files,
        image_kind,
        globals,
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
    let mut head = Vec::new();
    let _ = File::open(path).map(|f| f.take(64 * 1024).read_to_end(&mut head));
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

/// Lists every capture in `dir` (sorted by name), and every file that
/// belongs to no whole capture: data files whose descriptor is missing (an
/// interrupted recording) and temporary files of interrupted writes.
pub fn scan(dir: &Path) -> Result<Vec<Entry>> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, "list directory", e))?;
    let mut stems: BTreeMap<String, Vec<(String, PathBuf)>> = BTreeMap::new();
    let mut out = Vec::new();
    let mut names: Vec<_> = rd.filter_map(|e| e.ok()).collect();
    names.sort_by_key(|e| e.file_name());
    for e in names {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        if name.starts_with(TEMP_PREFIX) {
            out.push(Entry::Orphan {
                path,
                why: "temporary file of an interrupted write",
            });
            continue;
        }
        if let Some((stem, ext)) = split_known(&name) {
            stems
                .entry(stem.to_string())
                .or_default()
                .push((ext.to_string(), path));
        }
    }
    for (_, files) in stems {
        match files.iter().find(|(ext, _)| ext == "json") {
            Some((_, json)) => match describe(json, false) {
                Ok(d) => {
                    // Data files of the other generation's naming belong to nothing.
                    let mine: Vec<&PathBuf> = d.files.iter().map(|f| &f.path).collect();
                    for (ext, p) in &files {
                        if ext != "json" && ext != "bc" && !mine.contains(&p) {
                            out.push(Entry::Orphan {
                                path: p.clone(),
                                why: "data file this capture's format does not use",
                            });
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
                for (_, p) in files {
                    out.push(Entry::Orphan {
                        path: p,
                        why: "data file without a descriptor (an interrupted recording)",
                    });
                }
            }
        }
    }
    Ok(out)
}
