//! `reprise du`: what a capture directory's store takes on disk, against
//! the raw files it stands for.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use reprise::list::{Entry, scan_with};

use crate::error::{FLAGS, Result};
use crate::ui::human_bytes;

/// Say what the captures of a directory take on disk.
///
/// Captures are kept in the directory's chunk store (`.reprise-store`, see
/// docs/store.md): their snapshots, globals and images cut into chunks
/// (2 MiB by default) named by their hash, each kept once and compressed. This reads
/// every manifest of DIR and the store's chunk files, and prints the raw
/// size (what the files would take written out), the distinct bytes, what
/// is on disk, and the deduplication and compression ratios. Chunks that
/// no manifest names (`reprise gc` removes them) and chunks a manifest
/// names but the store lacks are counted too. Nothing is written.
#[derive(Args, Debug)]
pub struct DuArgs {
    /// The capture directory (by default where `record` writes).
    #[arg(env = crate::capture_dir::VAR, default_value = crate::capture_dir::DEFAULT)]
    pub dir: PathBuf,
    /// Print one JSON object (sizes in bytes).
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: DuArgs) -> Result<ExitCode> {
    crate::capture_dir::existing(&a.dir)?;
    let u = reprise::transfer::usage(&a.dir)?;
    if a.json {
        out!(
            "{}",
            json!({
                "dir": a.dir.to_string_lossy(),
                "manifests": u.manifests,
                "raw_bytes": u.raw_bytes,
                "distinct_chunks": u.distinct_chunks,
                "distinct_bytes": u.distinct_bytes,
                "stored_bytes": u.stored_bytes,
                "manifest_bytes": u.manifest_bytes,
                "unreferenced_bytes": u.unreferenced_bytes(),
                "missing_chunks": u.missing_chunks,
                "dedup_ratio": u.dedup_ratio(),
                "compression_ratio": u.compression_ratio(),
                "ratio": u.ratio(),
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    if u.manifests == 0 && u.chunk_files == 0 {
        return without_store(&a.dir);
    }
    out!("{}", a.dir.display());
    out!(
        "  raw       {:>10}  in {} manifests",
        human_bytes(u.raw_bytes),
        u.manifests
    );
    out!(
        "  distinct  {:>10}  {} chunks (dedup {:.1}x)",
        human_bytes(u.distinct_bytes),
        u.distinct_chunks,
        u.dedup_ratio()
    );
    out!(
        "  on disk   {:>10}  {} chunk files + {} of manifests (compression {:.2}x)",
        human_bytes(u.stored_bytes),
        u.chunk_files,
        human_bytes(u.manifest_bytes),
        u.compression_ratio()
    );
    out!("  ratio     {:.1}x raw against on disk", u.ratio());
    if u.unreferenced_bytes() > 0 {
        out!(
            "  unreferenced {} (no manifest names them: `reprise gc` removes them)",
            human_bytes(u.unreferenced_bytes())
        );
    }
    if u.missing_chunks > 0 {
        note!(
            "warning: {} chunks named by manifests are missing: `reprise list {}` names the broken captures",
            u.missing_chunks,
            a.dir.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// What a directory without a store holds: nothing, captures in raw files,
/// or captures whose store was left behind (exit 1: they cannot be read).
fn without_store(dir: &Path) -> Result<ExitCode> {
    let options = reprise::OpenOptions::new().verify_checksums(false);
    let (mut raw, mut stranded) = (0, None);
    for e in scan_with(dir, &options)? {
        let findings = match &e {
            Entry::Capture(d) => d.findings.iter().map(|f| &f.error).collect(),
            Entry::Broken { error, .. } => vec![error],
            _ => continue,
        };
        match findings.into_iter().find(|e| crate::list::is_no_store(e)) {
            Some(e) => {
                stranded = Some((
                    stranded.map_or(0, |(n, _)| n) + 1,
                    e.named(FLAGS).to_string(),
                ))
            }
            None => raw += usize::from(matches!(e, Entry::Capture(_))),
        }
    }
    if let Some((n, why)) = stranded {
        out!("{}: {n} capture(s) whose store is not here", dir.display());
        note!("{why}");
        return Ok(ExitCode::from(1));
    }
    if raw == 0 {
        out!("{}: no stored captures, and no raw ones", dir.display());
        note!("{}", crate::capture_dir::nothing_here(dir));
    } else {
        out!(
            "{}: no stored captures: {raw} capture(s), all in raw files",
            dir.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
