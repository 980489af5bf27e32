//! How `check` and `tune` spread their work: shards (a stable slice of
//! the work, by a name's hash), Slurm job arrays (the shards as array
//! tasks, merged once the job has ended) and worker processes of this
//! executable.

pub mod process;
pub mod shard;
pub mod slurm;

use std::path::{Path, PathBuf};

use crate::error::Result;

/// The `*.jsonl` files in `dir` (the shards' results or rows files), in
/// name order.
pub fn jsonl_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).map_err(|e| reprise::Error::io(dir, "list directory", e))?;
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}
