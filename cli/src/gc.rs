//! `reprise gc`: removes the chunks no capture of a directory uses.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use crate::error::Result;
use crate::ui::human_bytes;

/// Remove the chunks of a directory's store that no capture uses.
///
/// A chunk stays while a manifest of DIR names it or a recorder writing
/// into the store has pinned it; others older than the grace period are
/// removed (`--grace`), as are temporary files of writes that were interrupted. It is
/// safe while recorders write into the same store (docs/store.md gives
/// the protocol), and one gc runs at a time. A manifest that cannot be
/// read stops it before anything is removed (it cannot know what that one
/// names). Exit 0 on success, 2 on an error.
#[derive(Args, Debug)]
pub struct GcArgs {
    /// The capture directory.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Remove only unused chunks last written more than this many seconds
    /// ago (what absorbs clocks that differ, as on network file systems).
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub grace: u64,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: GcArgs) -> Result<ExitCode> {
    let options = reprise::chunks::GcOptions {
        grace: std::time::Duration::from_secs(a.grace),
        ..Default::default()
    };
    let r = reprise::chunks::gc_with(&a.dir, &options)?;
    if a.json {
        out!(
            "{}",
            json!({
                "dir": a.dir,
                "manifests": r.manifests,
                "pins": r.pins,
                "kept": r.kept,
                "removed": r.removed,
                "removed_bytes": r.removed_bytes,
                "restored": r.restored,
                "temp_removed": r.temp_removed,
            })
        );
    } else {
        out!(
            "{}: kept {} chunks ({} manifests, {} writers in progress); removed {} ({}) and {} temporary files",
            a.dir.display(),
            r.kept,
            r.manifests,
            r.pins,
            r.removed,
            human_bytes(r.removed_bytes),
            r.temp_removed
        );
        if r.restored > 0 {
            out!(
                "  put back {} chunks an interrupted gc was removing",
                r.restored
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
