//! Finding the captures of a corpus: every descriptor under the
//! directories given (recursively) and the files given, through the
//! library's listing, whose completeness check (the one `list`, `inspect`
//! and `replay` share) decides which can be run at all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use reprise::BackendKind;
use reprise::list::{Description, Entry, describe_with, scan_with};

use crate::error::{FLAGS, Result};

/// A capture found.
#[derive(Debug, Clone)]
pub struct Found {
    /// Its descriptor, as found (the directory given joined with the rest).
    pub path: PathBuf,
    /// The descriptor's path relative to the directory it was found in
    /// (for a file given, its name): what `--shard` hashes.
    pub name: String,
    /// Its kernel, when the descriptor could be read.
    pub kernel: Option<String>,
    /// The executor its image calls for (or its descriptor names).
    pub backend: Option<BackendKind>,
    /// Why it cannot be replayed, when the listing already knows: an
    /// unreadable descriptor, or a capture that is incomplete.
    pub refused: Option<String>,
}

/// What was found.
#[derive(Debug, Default)]
pub struct Corpus {
    /// The captures, sorted by path, each once.
    pub captures: Vec<Found>,
    /// Files that belong to no whole capture (interrupted recordings).
    pub orphans: usize,
}

/// Every capture under `paths` (directories, recursively, and descriptor
/// files), opened with `options` as a replay would be.
pub fn find(paths: &[PathBuf], options: &reprise::OpenOptions) -> Result<Corpus> {
    // By canonical path, so that a capture found twice (a file given and
    // its directory, nested directories) is checked once.
    let mut by_file: BTreeMap<PathBuf, Found> = BTreeMap::new();
    let mut orphans = 0;
    for given in paths {
        let meta = std::fs::metadata(given).map_err(|e| reprise::Error::io(given, "look at", e))?;
        if !meta.is_dir() {
            let name = given
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| given.display().to_string());
            let d = describe_with(given, options.clone());
            by_file.insert(canonical(given), found(given.clone(), name, d.as_ref()));
            continue;
        }
        let mut dirs = vec![given.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in scan_with(&dir, options)? {
                let (path, d) = match entry {
                    Entry::Capture(d) => (d.paths.descriptor.clone(), Ok(d)),
                    Entry::Broken { path, error } => (path, Err(error)),
                    Entry::Orphan { .. } => {
                        orphans += 1;
                        continue;
                    }
                    Entry::Other { .. } => continue,
                };
                let name = name_in(given, &path);
                keep(&mut by_file, found(path, name, d.as_deref()));
            }
            dirs.extend(subdirectories(&dir)?);
        }
    }
    let mut captures: Vec<Found> = by_file.into_values().collect();
    captures.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Corpus { captures, orphans })
}

/// Keeps `found` in `out` under its canonical path. A descriptor in a
/// directory that is a symbolic link never stands for a capture: where the
/// capture it leads to is in the corpus too, that one is kept (whichever
/// was found first); where it is not, the link is refused as a link (a
/// corpus is untrusted input, and its captures are checked where they are).
fn keep(out: &mut BTreeMap<PathBuf, Found>, found: Found) {
    let key = canonical(&found.path);
    let link = is_link(&found.path);
    if out.get(&key).is_some_and(|had| link || !is_link(&had.path)) {
        return;
    }
    let refused = if link {
        Some(format!(
            "a symbolic link to {}: a corpus's captures are checked where they are (give that \
             capture, or its directory)",
            key.display()
        ))
    } else {
        found.refused
    };
    out.insert(key, Found { refused, ..found });
}

fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// The directories in `dir` to search: not through symbolic links (a
/// corpus is untrusted input: a link could lead anywhere, or round in a
/// circle), and not hidden ones (`.git`; the chunk store's own directory,
/// whose chunks and temporary files are no captures).
fn subdirectories(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).map_err(|e| reprise::Error::io(dir, "list directory", e))?;
    let mut out: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    out.sort();
    Ok(out)
}

/// A capture as the listing described it, or why it could not read its
/// descriptor.
fn found(
    path: PathBuf,
    name: String,
    described: std::result::Result<&Description, &reprise::Error>,
) -> Found {
    let (kernel, backend, refused) = match described {
        Ok(d) => {
            let backend = d
                .image_kind
                .and_then(|k| k.backend().ok())
                .or(d.record.backend);
            let problems = d.problems_named(FLAGS);
            let refused =
                (!problems.is_empty()).then(|| format!("incomplete: {}", problems.join("; ")));
            (Some(d.record.name.to_string()), backend, refused)
        }
        Err(e) => (None, None, Some(format!("unreadable: {}", e.named(FLAGS)))),
    };
    Found {
        path,
        name,
        kernel,
        backend,
        refused,
    }
}

/// `path` relative to `root`, with `/` between its parts.
fn name_in(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}
