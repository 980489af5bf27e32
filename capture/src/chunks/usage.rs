//! What a capture directory's store holds: raw against stored bytes, and
//! how much of that deduplication and compression each bought.

use std::collections::HashMap;
use std::path::Path;

use rustix::fs::FileType;

use crate::error::{ChunkHash, Error, Result};

use super::fs::{self, open_dir_fd};
use super::layout::{self, is_prefix};
use super::leftovers::text_names;
use super::manifest::Manifest;

/// The sizes of a capture directory's store ([`usage`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Manifests in the directory.
    pub manifests: u64,
    /// Their own bytes.
    pub manifest_bytes: u64,
    /// The bytes the manifests stand for (what raw files would hold).
    pub raw_bytes: u64,
    /// Chunks the manifests name, each once.
    pub distinct_chunks: u64,
    /// Their uncompressed bytes.
    pub distinct_bytes: u64,
    /// The bytes on disk of those of them that are stored.
    pub referenced_stored_bytes: u64,
    /// Chunks named but not stored.
    pub missing_chunks: u64,
    /// Chunk files in the store (named or not).
    pub chunk_files: u64,
    /// Their bytes: what the store takes, less its directories.
    pub stored_bytes: u64,
}

impl Usage {
    /// Raw bytes against distinct bytes: what deduplication saves (1 for an
    /// empty store).
    pub fn dedup_ratio(&self) -> f64 {
        ratio(self.raw_bytes, self.distinct_bytes)
    }

    /// Distinct bytes against their bytes on disk: what compression saves.
    pub fn compression_ratio(&self) -> f64 {
        ratio(self.distinct_bytes, self.referenced_stored_bytes)
    }

    /// Raw bytes against everything on disk (chunks and manifests).
    pub fn ratio(&self) -> f64 {
        ratio(self.raw_bytes, self.stored_bytes + self.manifest_bytes)
    }

    /// Bytes of chunk files no manifest names (what [`super::gc`] would
    /// remove, young ones aside).
    pub fn unreferenced_bytes(&self) -> u64 {
        self.stored_bytes
            .saturating_sub(self.referenced_stored_bytes)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

/// The sizes of the store of the capture directory `dir`, from its
/// manifests and its chunk files (all zero without a store). A manifest
/// that cannot be read is the error, naming it.
pub fn usage(dir: impl AsRef<Path>) -> Result<Usage> {
    let dir = dir.as_ref();
    let mut u = Usage::default();
    let Some(store) = super::ChunkStore::open(dir)? else {
        return Ok(u);
    };
    // Each chunk named, with its length.
    let mut named: HashMap<ChunkHash, u32> = HashMap::new();
    Manifest::each_in(dir, &open_dir_fd(dir)?, |m| {
        u.manifests += 1;
        u.manifest_bytes += m.encoded_len() as u64;
        u.raw_bytes += m.len();
        named.extend(m.chunks().iter().map(|c| (c.hash, c.len)));
    })?;
    u.distinct_chunks = named.len() as u64;
    u.distinct_bytes = named.values().map(|&l| u64::from(l)).sum();
    let mut stored: HashMap<ChunkHash, u64> = HashMap::new();
    let chunks_path = store.root().join(layout::CHUNKS_DIR);
    for prefix in text_names(&store.chunks_fd, &chunks_path)? {
        if !is_prefix(&prefix) {
            continue;
        }
        let Ok(prefix_fd) = fs::open_dir(&store.chunks_fd, prefix.as_str()) else {
            continue;
        };
        let prefix_path = chunks_path.join(&prefix);
        for name in text_names(&prefix_fd, &prefix_path)? {
            let Some(hash) = ChunkHash::from_hex(&name) else {
                continue;
            };
            match fs::stat(&prefix_fd, &name) {
                Ok(Some((FileType::RegularFile, len, _))) => {
                    stored.insert(hash, len);
                }
                Ok(_) => {}
                Err(e) => return Err(Error::io(prefix_path.join(&name), "stat", e)),
            }
        }
    }
    u.chunk_files = stored.len() as u64;
    u.stored_bytes = stored.values().sum();
    for hash in named.keys() {
        match stored.get(hash) {
            Some(len) => u.referenced_stored_bytes += len,
            None => u.missing_chunks += 1,
        }
    }
    Ok(u)
}
