//! `reprise list`: the captures of a directory, and what is left of
//! interrupted ones.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use reprise::list::{Entry, report_counts, scan_with};

use crate::error::{FLAGS, Result};
use crate::ui::human_bytes;

/// List the captures of a directory, one line each.
///
/// Each line gives kernel, format, executor, geometry, snapshot size and
/// descriptor. Files of incomplete captures (an interrupted recording or
/// write) are listed as ORPHAN.
///
/// Every capture's checksums are checked (each file is read once). Where a
/// recorder's report is in the directory (`REPRISE_RECORD_DEDUP`,
/// `REPRISE_RECORD_REPORT`), each capture shows how many launches of its
/// kernel and geometry there were.
///
/// A capture of the store format whose chunks are missing or damaged (each
/// named), or whose manifests are malformed, is BROKEN too.
///
/// Exits 1 when a capture is unreadable (BROKEN) or incomplete (a file
/// missing or not a regular file, a size or checksum that does not match),
/// 0 otherwise.
#[derive(Args, Debug)]
pub struct ListArgs {
    /// The directory to scan (by default where `record` writes).
    #[arg(env = crate::capture_dir::VAR, default_value = crate::capture_dir::DEFAULT)]
    pub dir: PathBuf,
    /// Skip hashing the files (faster for large captures).
    #[arg(long)]
    pub no_checksums: bool,
    /// Take each capture's device image from PATH (as `replay --image`
    /// does): LLVM 16's captures have none of their own, their images are
    /// in the application binary. A capture whose kernel PATH lacks is
    /// incomplete.
    ///
    /// Give it once per binary (the application and each plugin it
    /// `dlopen`s): each capture's image is taken from the one that holds
    /// its kernel, and a capture whose kernel none holds is incomplete.
    #[arg(long, value_name = "PATH")]
    pub image: Vec<PathBuf>,
}

/// Whether `e` says a capture's chunks or manifests are damaged or gone.
pub(crate) fn is_store_damage(e: &reprise::Error) -> bool {
    use reprise::CaptureProblem as P;
    matches!(
        e.capture_problem(),
        Some(
            P::MissingChunk { .. } | P::DamagedChunk { .. } | P::BadManifest(_) | P::NoStore { .. }
        )
    )
}

/// Whether `e` says a capture's store is not there.
pub(crate) fn is_no_store(e: &reprise::Error) -> bool {
    matches!(
        e.capture_problem(),
        Some(reprise::CaptureProblem::NoStore { .. })
    )
}

pub fn run(a: ListArgs) -> Result<ExitCode> {
    let options = reprise::OpenOptions {
        images: a.image.clone(),
        ..reprise::OpenOptions::new().verify_checksums(!a.no_checksums)
    };
    crate::capture_dir::existing(&a.dir)?;
    let entries = scan_with(&a.dir, &options)?;
    let counts = report_counts(&a.dir);
    let (mut captures, mut orphans, mut broken, mut incomplete, mut other) = (0, 0, 0, 0, 0);
    if entries.iter().any(|e| matches!(e, Entry::Capture(_))) {
        // The columns of a capture's line, below.
        out!(
            "{:<32} {:<12} {:<6} {:>5} x {:<5} {:>10}  DESCRIPTOR",
            "KERNEL",
            "FORMAT",
            "EXEC",
            "TEAMS",
            "THRDS",
            "SNAPSHOT"
        );
    }
    for e in &entries {
        match e {
            Entry::Capture(d) => {
                captures += 1;
                let r = &d.record;
                let backend = r
                    .backend
                    .or_else(|| d.image_kind.and_then(|k| k.backend().ok()))
                    .map_or_else(|| "?".into(), |b| b.to_string());
                let problems = d.problems_named(FLAGS);
                // A chunk the store cannot give back (or a manifest that
                // cannot be read) breaks the capture: nothing rewrites it.
                let mut chunk_problems: Vec<String> = d
                    .findings
                    .iter()
                    .filter(|f| f.incomplete && is_store_damage(&f.error))
                    .map(|f| f.error.named(FLAGS).to_string())
                    .collect();
                // A missing store is one problem, however many files it
                // holds: said once.
                let mut label = "BROKEN  ";
                if let Some(f) = d.findings.iter().find(|f| is_no_store(&f.error)) {
                    chunk_problems = vec![f.error.named(FLAGS).to_string()];
                    label = "NO STORE";
                }
                if !chunk_problems.is_empty() {
                    broken += 1;
                    out!(
                        "{label} {}: {}",
                        d.paths.descriptor.display(),
                        chunk_problems.join("; ")
                    );
                    continue;
                }
                incomplete += usize::from(!problems.is_empty());
                let launches = d
                    .paths
                    .descriptor
                    .file_name()
                    .and_then(|n| counts.get(n.to_string_lossy().as_ref()))
                    .map_or_else(String::new, |(launches, recorded)| {
                        format!("  [{launches} launches, {recorded} recorded]")
                    });
                out!(
                    "{:<32} {:<12} {:<6} {:>5} x {:<5} {:>10}  {}{launches}{}",
                    r.name,
                    // Strings, so the widths apply.
                    r.generation.to_string(),
                    backend,
                    r.num_teams(),
                    r.num_threads(),
                    d.snapshot_len()
                        .map(human_bytes)
                        .unwrap_or_else(|| "-".into()),
                    d.paths.descriptor.display(),
                    if problems.is_empty() {
                        d.notes_named(FLAGS)
                            .iter()
                            .map(|n| format!("  NOTE: {n}"))
                            .collect::<String>()
                    } else {
                        format!("  INCOMPLETE: {}", problems.join("; "))
                    }
                );
            }
            Entry::Broken { path, error } => {
                broken += 1;
                // Errors about a file usually name it already.
                let text = error.named(FLAGS).to_string();
                if text.contains(&path.display().to_string()) {
                    out!("BROKEN   {text}");
                } else {
                    out!("BROKEN   {}: {text}", path.display());
                }
            }
            Entry::Orphan { path, why } => {
                orphans += 1;
                out!("ORPHAN   {} ({why})", path.display());
            }
            Entry::Other { .. } => other += 1,
        }
    }
    let skipped = if other > 0 {
        format!(" ({other} other JSON file(s) skipped)")
    } else {
        String::new()
    };
    out!(
        "{captures} capture(s) ({incomplete} incomplete), {broken} unreadable, {orphans} orphaned file(s) in {}{skipped}",
        a.dir.display()
    );
    if captures + broken + orphans == 0 {
        note!("{}", crate::capture_dir::nothing_here(&a.dir));
    }
    // Like a failed verification: the listing worked and found problems.
    Ok(ExitCode::from(u8::from(broken + incomplete > 0)))
}
