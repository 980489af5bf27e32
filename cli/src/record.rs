//! `reprise record -- PROGRAM ARGS...`: runs an unmodified CUDA program
//! with reprise's interposer preloaded, so that its kernel launches are
//! recorded.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use reprise::summary::{self, Summary};

use crate::error::{CliError, Result};

/// The interposer's file name.
const INTERPOSER: &str = "libreprise_interposer.so";

/// The variable that names the interposer to preload instead of the one
/// found next to the `reprise` executable.
const INTERPOSER_VARIABLE: &str = "REPRISE_INTERPOSER";

/// Record the kernel launches of an unmodified CUDA program.
///
/// Runs PROGRAM with reprise's interposer on the CUDA driver API preloaded
/// (`LD_PRELOAD`): the program's `cuMemAlloc` is served from a recording
/// region at a fixed address, and the launches selected (all, or those the
/// options choose) are recorded on the program's own stream, into DIR, in
/// reprise's capture format; `reprise replay` replays them. The program
/// computes what it computes without reprise: a failure inside the
/// interposer stops the recording (one line on stderr), not the program.
/// The `REPRISE_RECORD_*` variables work as for the library's `Recorder`;
/// the options here override them.
///
/// Programs linked with `-lcuda` are recorded, and so are programs that
/// resolve the driver through `dlopen` and `cuGetProcAddress` as CUDA's
/// runtime library does, with kernels from any of the driver's loaders
/// (`cuModuleLoad`, `cuModuleLoadData[Ex]`, `cuModuleLoadFatBinary`,
/// `cuLibraryLoadData`, `cuLibraryLoadFromFile`; a `cuLinkComplete` image
/// through the one that loads it). Not
/// recorded, and counted in the summary at the end: launches during stream
/// capture and graph launches (their kernels are graph nodes), cooperative
/// and cluster launches and launches with other attributes (a replay runs
/// plain launches), and launches with packed parameters (`extra`). A
/// launch whose arguments point outside the region (managed or host memory,
/// allocations once the region was full) or at a global is recorded with a
/// mark that `reprise inspect` shows, and counted in the summary. A launch
/// the driver refuses (a block past its limit, say) is the program's own
/// error, passed back to it unchanged, and counted as refused. The exit status is the program's
/// (128 + N when signal N ended it).
#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Where the captures go.
    #[arg(long, default_value = "reprise-captures")]
    pub dir: PathBuf,
    /// Record only kernels whose name matches GLOB (`*` and `?`).
    #[arg(long, value_name = "GLOB")]
    pub filter: Option<String>,
    /// Skip the first N matching launches.
    #[arg(long, value_name = "N")]
    pub skip: Option<u64>,
    /// Record at most M launches.
    #[arg(long, value_name = "M")]
    pub max: Option<u64>,
    /// The record schedule: async (reprise's: one synchronize) or sync
    /// (LLVM's).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Bytes of the recording region (K/M/G suffixes), which serves the
    /// program's allocations.
    #[arg(long, value_name = "SIZE", value_parser = region_size)]
    pub region_size: Option<u64>,
    /// How the data files are written: raw (a plain file each) or store
    /// (chunks in DIR's content-addressed, compressed store and a manifest
    /// each). Default: `REPRISE_RECORD_FORMAT`, else store.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<FormatArg>,
    /// Snapshot only the allocations a launch can reach from its arguments
    /// (pointers inside them followed, as a conservative garbage collector
    /// scans); the rest is poison, so a kernel reaching it differs on
    /// replay (`REPRISE_RECORD_REACHABLE`).
    #[arg(long)]
    pub reachable: bool,
    /// Stop recording before the captures take more than SIZE of disk
    /// (K/M/G/T suffixes: 500M, 10G): one line says so, and the program
    /// goes on, unrecorded. With or without it, recording stops while the
    /// file system still has 5% free (`REPRISE_RECORD_MAX_DISK`).
    #[arg(long, value_name = "SIZE", value_parser = disk_size)]
    pub max_disk: Option<u64>,
    /// The program and its arguments (after `--`).
    #[arg(required = true, last = true, value_name = "PROGRAM ARGS")]
    pub program: Vec<OsString>,
}

/// `--format` (of `record` and `demo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// A plain file per snapshot, globals and image (LLVM's replay tool
    /// reads them).
    Raw,
    /// Chunks in the directory's store, a manifest per file.
    Store,
}

impl From<FormatArg> for reprise::CaptureFormat {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Raw => reprise::CaptureFormat::Raw,
            FormatArg::Store => reprise::CaptureFormat::Store,
        }
    }
}

/// `--mode`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModeArg {
    /// Snapshots and kernel queued, one synchronize.
    Async,
    /// LLVM's schedule: a synchronize after each step.
    Sync,
}

/// The interposer: `REPRISE_INTERPOSER`, else next to this executable.
pub(crate) fn interposer() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os(INTERPOSER_VARIABLE) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(CliError::Command(format!(
                "{INTERPOSER_VARIABLE}={}: no such file",
                p.display()
            )))
        };
    }
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Command(format!("locating the reprise executable: {e}")))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    for candidate in [dir.join(INTERPOSER), dir.join("../lib").join(INTERPOSER)] {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(CliError::Command(format!(
        "the interposer {INTERPOSER} is not next to {} (build it with `cargo build -p reprise-interposer`, \
         or name it with {INTERPOSER_VARIABLE}=PATH)",
        exe.display()
    )))
}

/// The descriptors in `dir`.
fn descriptors(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && !p.to_string_lossy().ends_with(".report.json")
        })
        .collect();
    v.sort();
    v
}

/// The file the program's processes append their summaries to: made fresh
/// (never one already there), removed when done.
struct SummaryFile(PathBuf);

impl SummaryFile {
    fn new() -> Result<SummaryFile> {
        let dir = std::env::temp_dir();
        for n in 0..100u32 {
            let p = dir.join(format!("reprise-record-{}-{n}.summary", std::process::id()));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&p)
            {
                Ok(_) => return Ok(SummaryFile(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(CliError::Command(format!("creating {}: {e}", p.display())));
                }
            }
        }
        Err(CliError::Command(format!(
            "no free summary file name in {}",
            dir.display()
        )))
    }
}

impl Drop for SummaryFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn run(a: RecordArgs) -> Result<ExitCode> {
    let lib = interposer()?;
    std::fs::create_dir_all(&a.dir)
        .map_err(|e| CliError::Command(format!("creating {}: {e}", a.dir.display())))?;
    let before = descriptors(&a.dir);
    let (program, args) = a.program.split_first().expect("clap requires PROGRAM");
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    let preload = match std::env::var_os("LD_PRELOAD") {
        Some(old) if !old.is_empty() => {
            let mut v = lib.clone().into_os_string();
            v.push(":");
            v.push(old);
            v
        }
        _ => lib.clone().into_os_string(),
    };
    // Each process of the program appends its counts here at exit.
    let summary = SummaryFile::new()?;
    cmd.env("LD_PRELOAD", preload)
        .env("REPRISE_RECORD", "1")
        .env("REPRISE_RECORD_DIR", &a.dir)
        .env("REPRISE_RECORD_SUMMARY", &summary.0);
    if let Some(f) = &a.filter {
        cmd.env("REPRISE_RECORD_FILTER", f);
    }
    if let Some(n) = a.skip {
        cmd.env("REPRISE_RECORD_SKIP", n.to_string());
    }
    if let Some(m) = a.max {
        cmd.env("REPRISE_RECORD_MAX", m.to_string());
    }
    if let Some(m) = a.mode {
        cmd.env(
            "REPRISE_RECORD_MODE",
            match m {
                ModeArg::Async => "async",
                ModeArg::Sync => "sync",
            },
        );
    }
    if let Some(s) = a.region_size {
        cmd.env("REPRISE_RECORD_MEMSIZE", s.to_string());
    }
    if a.reachable {
        cmd.env("REPRISE_RECORD_REACHABLE", "1");
    }
    if let Some(n) = a.max_disk {
        cmd.env("REPRISE_RECORD_MAX_DISK", n.to_string());
    }
    if let Some(f) = a.format {
        cmd.env(
            "REPRISE_RECORD_FORMAT",
            reprise::CaptureFormat::from(f).as_str(),
        );
    }
    let status = cmd
        .status()
        .map_err(|e| CliError::Command(format!("running {}: {e}", Path::new(program).display())))?;
    let new: Vec<PathBuf> = descriptors(&a.dir)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    let counts = Summary::parse(&std::fs::read_to_string(&summary.0).unwrap_or_default());
    note!(
        "reprise record: {} recorded in {}{}",
        summary::launches(new.len() as u64),
        a.dir.display(),
        new.first()
            .map(|p| format!(" (replay one: reprise replay --verify {})", p.display()))
            .unwrap_or_default()
    );
    if counts.marked > 0 {
        note!(
            "reprise record: {} recorded with a mark (arguments outside the recording region or \
             in device globals, which a replay may not reproduce; reprise inspect shows which)",
            summary::launches(counts.marked)
        );
    }
    if let Some(t) = counts.skipped_text() {
        note!("reprise record: {t}");
    }
    use std::os::unix::process::ExitStatusExt;
    let code = match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        _ => 1,
    };
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

/// `--region-size`: a size (K/M/G suffixes), not 0; checked before the
/// program runs.
fn region_size(s: &str) -> std::result::Result<u64, String> {
    match reprise::config::parse_size("--region-size", s).map_err(|e| e.to_string())? {
        0 => Err("the region cannot be empty".into()),
        n => Ok(n),
    }
}

/// `--max-disk`: a size, K/M/G/T suffixes.
fn disk_size(s: &str) -> std::result::Result<u64, String> {
    reprise::config::parse_size("--max-disk", s).map_err(|e| e.to_string())
}
