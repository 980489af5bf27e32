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
/// removed (`--grace`), as are the leftovers of writers that were killed
/// (what `reprise list` shows as ORPHAN): manifests whose capture has no
/// descriptor, temporary files of interrupted writes older than the grace
/// period, and the store's own (chunks being written and pins of writers
/// that are gone). Orphans stay while a recorder writes into the store
/// (they may be its work in progress). It is safe while recorders write
/// into the same store (docs/store.md gives the protocol), and one gc runs
/// at a time. A manifest that cannot be
/// read stops it before anything is removed (it cannot know what that one
/// names). Exit 0 on success, 2 on an error.
#[derive(Args, Debug)]
pub struct GcArgs {
    /// The capture directory (by default where `record` writes).
    #[arg(env = crate::capture_dir::VAR, default_value = crate::capture_dir::DEFAULT)]
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
    let options = reprise::transfer::GcOptions {
        grace: std::time::Duration::from_secs(a.grace),
        ..Default::default()
    };
    crate::capture_dir::existing(&a.dir)?;
    let (o, r) = reprise::transfer::gc(&a.dir, &options)?;
    if a.json {
        out!(
            "{}",
            json!({
                "dir": a.dir.to_string_lossy(),
                "manifests": r.manifests,
                "pins": r.pins,
                "kept": r.kept,
                "removed": r.removed,
                "removed_bytes": r.removed_bytes,
                "restored": r.restored,
                "temp_removed": r.temp_removed,
                "orphan_manifests_removed": o.manifests.len(),
                "orphan_temp_files_removed": o.temp_files.len(),
                "orphans_left_for_writers": o.left_for_writers,
            })
        );
    } else if r.manifests + r.kept + r.removed + r.pins + r.temp_removed == 0
        && o.manifests.is_empty()
        && o.temp_files.is_empty()
    {
        out!("{}: no store here, nothing to remove", a.dir.display());
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
        if !o.manifests.is_empty() || !o.temp_files.is_empty() {
            out!(
                "  removed {} manifest(s) without a descriptor and {} temporary file(s) of \
                 interrupted writes",
                o.manifests.len(),
                o.temp_files.len()
            );
        }
        if o.left_for_writers > 0 {
            out!(
                "  left {} orphan(s): a recorder is writing into the store",
                o.left_for_writers
            );
        }
        if r.restored > 0 {
            out!(
                "  put back {} chunks an interrupted gc was removing",
                r.restored
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
