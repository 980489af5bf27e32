//! `reprise record -- PROGRAM ARGS...`: runs an unmodified CUDA program
//! with reprise's interposer preloaded, so that its kernel launches are
//! recorded.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};

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
/// runtime library does, `cuLibraryLoadData` kernels included. Launches
/// with attributes (`cuLaunchKernelEx`: cooperative, clusters) are not
/// recorded yet. The exit status is the
/// program's (128 + N when signal N ended it).
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
    #[arg(long, value_name = "SIZE")]
    pub region_size: Option<String>,
    /// The program and its arguments (after `--`).
    #[arg(required = true, last = true, value_name = "PROGRAM ARGS")]
    pub program: Vec<OsString>,
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
    cmd.env("LD_PRELOAD", preload)
        .env("REPRISE_RECORD", "1")
        .env("REPRISE_RECORD_DIR", &a.dir);
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
    if let Some(s) = &a.region_size {
        cmd.env("REPRISE_RECORD_MEMSIZE", s);
    }
    let status = cmd
        .status()
        .map_err(|e| CliError::Command(format!("running {}: {e}", Path::new(program).display())))?;
    let new: Vec<PathBuf> = descriptors(&a.dir)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    eprintln!(
        "reprise record: {} launch{} recorded in {}{}",
        new.len(),
        if new.len() == 1 { "" } else { "es" },
        a.dir.display(),
        new.first()
            .map(|p| format!(" (replay one: reprise replay --verify {})", p.display()))
            .unwrap_or_default()
    );
    use std::os::unix::process::ExitStatusExt;
    let code = match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        _ => 1,
    };
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}
