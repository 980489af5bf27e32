//! Where compiled images are kept: the platform's cache directory
//! (`XDG_CACHE_HOME`, else `~/.cache`), `reprise/ir/`, one file per
//! (bitcode hash, target, options, toolchain version), written to a
//! temporary name and renamed, so a reader never sees half an image.

use std::path::{Path, PathBuf};

use super::CompileError;

/// The directory compiled images are cached in: `REPRISE_IR_CACHE` when
/// set, else `$XDG_CACHE_HOME/reprise/ir`, else `~/.cache/reprise/ir`.
pub fn dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("REPRISE_IR_CACHE").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })?;
    Some(base.join("reprise").join("ir"))
}

/// The key of a compile: a blake3 hash over everything that changes the
/// output, as 32 hex digits.
pub fn key(parts: &[&[u8]]) -> String {
    let mut h = blake3::Hasher::new();
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().to_hex()[..32].to_string()
}

/// Writes `bytes` to `path` through [`crate::store::write_atomically`],
/// its directory made first.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CompileError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| CompileError::io(dir, "create", e))?;
    crate::store::write_atomically(path, bytes, true).map_err(|e| match e {
        crate::Error::Io { source, .. } => CompileError::io(path, "write", source),
        other => CompileError::io(path, "write", std::io::Error::other(other.to_string())),
    })
}
