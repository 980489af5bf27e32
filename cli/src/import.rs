//! `reprise import DIR`: moves the raw captures of a directory into its
//! chunk store.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use crate::error::Result;
use crate::ui::human_bytes;

/// Move a directory's raw captures into its chunk store.
///
/// Every raw data file (snapshots, globals, image) of every capture in DIR,
/// reprise's and LLVM's (legacy and current) alike, is cut into chunks in
/// DIR's store (`.reprise-store`, made when missing) and replaced by a
/// manifest; descriptors stay as they are, and every capture replays,
/// lists and exports as before (`reprise export` writes the raw files back
/// byte for byte). Each file is stored and flushed, its manifest renamed
/// into place and flushed, the file read back whole from the store (every
/// chunk checked against its name, the bytes against what was read from
/// the raw file), and only then is the raw file removed: a kill at any
/// point leaves either the raw file or a whole manifest (or both: running
/// import again finishes it), and a file whose capture does not read back
/// is left, and named. Something other than a chunk found at a chunk's
/// name in the store (a directory, a link, a FIFO, a damaged file) is
/// moved aside, never taken for the chunk. Prints what it moved and the
/// bytes saved. Exit 0 on success, 2 on an error.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The capture directory.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Only say what would be moved.
    #[arg(long)]
    pub dry_run: bool,
    /// Print one JSON object (sizes in bytes).
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: ImportArgs) -> Result<ExitCode> {
    let options = reprise::transfer::ImportOptions {
        dry_run: a.dry_run,
        ..Default::default()
    };
    let r = reprise::transfer::import(&a.dir, &options)?;
    if a.json {
        out!(
            "{}",
            json!({
                "dir": a.dir.to_string_lossy(),
                "dry_run": a.dry_run,
                "captures": r.captures,
                "moved": r.moved.iter().map(|m| json!({
                    "raw": m.raw.to_string_lossy(), "manifest": m.manifest.to_string_lossy(), "bytes": m.bytes,
                })).collect::<Vec<_>>(),
                "skipped": r.skipped.iter().map(|s| json!({
                    "path": s.path.to_string_lossy(), "why": s.why,
                })).collect::<Vec<_>>(),
                "raw_bytes": r.raw_bytes,
                "freed_bytes": r.freed_bytes,
                "stored_bytes": r.stored_bytes,
                "saved_bytes": r.saved_bytes(),
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    let verb = if a.dry_run { "would move" } else { "moved" };
    for m in &r.moved {
        out!(
            "{verb} {} ({}) -> {}",
            m.raw.display(),
            human_bytes(m.bytes),
            m.manifest.display()
        );
    }
    for s in &r.skipped {
        out!("left {} ({})", s.path.display(), s.why);
    }
    if a.dry_run {
        out!(
            "{}: would move {} file(s) of {} capture(s), {} raw",
            a.dir.display(),
            r.moved.len(),
            r.captures,
            human_bytes(r.raw_bytes)
        );
    } else {
        let saved = r.saved_bytes();
        out!(
            "{}: moved {} file(s) of {} capture(s), {} raw, into the store: freed {}, the store \
             grew by {}, {} {}",
            a.dir.display(),
            r.moved.len(),
            r.captures,
            human_bytes(r.raw_bytes),
            human_bytes(r.freed_bytes),
            human_bytes(r.stored_bytes),
            if saved >= 0 { "saved" } else { "lost" },
            human_bytes(saved.unsigned_abs())
        );
    }
    Ok(ExitCode::SUCCESS)
}
