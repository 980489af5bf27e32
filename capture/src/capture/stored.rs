//! A capture's data files in the store format: each raw file
//! (`STEM.record_input` and the like) replaced by a manifest beside it
//! (`STEM.record_input.chunks`), whose chunks are in the directory's chunk
//! store ([`crate::chunks`]).
//!
//! A raw file that is there wins: a manifest is looked for only where the
//! raw file is missing. A manifest's length is checked against what its
//! role allows before anything is allocated for its bytes, and a chunk the
//! store cannot give back is a capture problem naming the chunk
//! ([`CaptureProblem::MissingChunk`], [`CaptureProblem::DamagedChunk`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::chunks::{self, ChunkStore, Manifest};
use crate::error::{CaptureProblem, Error, Result, StoreProblem};

use super::CapturePaths;
use super::open::{FileState, read_bounded, too_large};

/// The path a capture's data file is at: `raw` itself, or the manifest
/// standing for it where `raw` is missing and the manifest is there.
pub fn data_file(raw: &Path) -> PathBuf {
    let manifest = chunks::manifest_path(raw);
    if !FileState::of(raw).exists() && FileState::of(&manifest).exists() {
        manifest
    } else {
        raw.to_path_buf()
    }
}

/// The manifest standing for `raw`, when `raw` is missing and a manifest
/// is at its manifest path: `Ok(None)` when there is none, an error
/// naming the manifest when it cannot be read or is malformed
/// ([`CaptureProblem::BadManifest`]).
pub fn manifest_for(raw: &Path) -> Result<Option<(PathBuf, Manifest)>> {
    let path = data_file(raw);
    if path == raw {
        return Ok(None);
    }
    let m = Manifest::read(&path).map_err(|e| capture_error(&path, e))?;
    Ok(Some((path, m)))
}

/// The chunk stores one piece of work (an assessment, a capture opened)
/// reads through, one per capture directory, so that what one read found
/// whole (a capture's globals and image, read; its snapshots, hashed) a
/// later check of the same chunks does not decompress again
/// ([`ChunkStore::check`]). Work that is done with them drops them, so a
/// chunk damaged later is found by the next.
#[derive(Debug, Default)]
pub(crate) struct Stores(std::cell::RefCell<Vec<(PathBuf, Arc<ChunkStore>)>>);

impl Stores {
    /// The chunk store of the directory of the capture file `manifest`;
    /// an error naming the manifest when there is none.
    pub(crate) fn store_for(&self, manifest: &Path) -> Result<Arc<ChunkStore>> {
        let dir = crate::fs::dir_of(manifest);
        if let Some((_, store)) = self.0.borrow().iter().find(|(d, _)| d == dir) {
            return Ok(store.clone());
        }
        let Some(store) = ChunkStore::open(dir).map_err(|e| capture_error(manifest, e))? else {
            let store = dir.join(chunks::layout::STORE_DIR);
            return Err(Error::capture(manifest, CaptureProblem::NoStore { store }));
        };
        let store = Arc::new(store);
        self.0.borrow_mut().push((dir.to_path_buf(), store.clone()));
        Ok(store)
    }
}

/// The store's error `e` about the capture file `manifest`, as a capture
/// problem of that file where it is one (a malformed manifest, a chunk
/// that cannot be read back); other errors as they are.
pub fn capture_error(manifest: &Path, e: Error) -> Error {
    match e.store_problem() {
        Some(StoreProblem::Manifest(m)) => {
            Error::capture(manifest, CaptureProblem::BadManifest(*m))
        }
        Some(StoreProblem::Chunk(c)) => Error::capture(manifest, CaptureProblem::of_chunk(*c)),
        _ => e,
    }
}

/// The bytes of the capture's data file `raw` (its `role`, "device image"
/// say, for messages), at most `limit` of them, from the raw file or from
/// the manifest standing for it: a larger file, or a manifest saying a
/// larger length, is an error naming the bound before anything is
/// allocated. `Ok(None)` when neither is there.
pub fn read_data(raw: &Path, role: &str, limit: u64) -> Result<Option<Vec<u8>>> {
    read_data_in(&Stores::default(), raw, role, limit)
}

/// [`read_data`], a manifest's chunks read through `stores`.
pub(crate) fn read_data_in(
    stores: &Stores,
    raw: &Path,
    role: &str,
    limit: u64,
) -> Result<Option<Vec<u8>>> {
    let Some((path, m)) = manifest_for(raw)? else {
        return read_bounded(raw, role, limit);
    };
    if m.len() > limit {
        return Err(too_large(&path, role, m.len(), limit));
    }
    let store = stores.store_for(&path)?;
    let mut bytes = Error::filled_buffer(m.len(), 0, "a buffer for a capture file")?;
    store
        .read_into(&m, &mut bytes)
        .map_err(|e| capture_error(&path, e))?;
    Ok(Some(bytes))
}

/// How a capture's data files are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// Plain files.
    Raw,
    /// Manifests in the directory, chunks in its store.
    Store {
        /// The store format's version.
        version: u32,
        /// Distinct chunks the capture's manifests name.
        chunks: u64,
        /// The bytes on disk of those of them that are there (compressed;
        /// shared with every other capture that names them).
        stored_bytes: u64,
        /// The bytes the manifests stand for.
        raw_bytes: u64,
    },
}

/// How the capture at `paths` keeps its data files: [`Storage::Store`]
/// when any of them is a manifest.
pub fn storage(paths: &CapturePaths) -> Storage {
    let mut seen = std::collections::HashSet::new();
    let (mut version, mut stored_bytes, mut raw_bytes) = (None, 0, 0);
    let stores = Stores::default();
    for raw in [&paths.input, &paths.output, &paths.globals, &paths.image] {
        let Ok(Some((path, m))) = manifest_for(raw) else {
            continue;
        };
        version.get_or_insert(m.version());
        raw_bytes += m.len();
        let store = stores.store_for(&path).ok();
        for c in m.chunks().iter().filter(|c| seen.insert(c.hash)) {
            stored_bytes += store
                .as_ref()
                .and_then(|s| std::fs::symlink_metadata(s.chunk_file(&c.hash)).ok())
                .map_or(0, |md| md.len());
        }
    }
    let Some(version) = version else {
        return Storage::Raw;
    };
    Storage::Store {
        version,
        chunks: seen.len() as u64,
        stored_bytes,
        raw_bytes,
    }
}
