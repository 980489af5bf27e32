//! `reprise record -- PROGRAM ARGS...`: runs an unmodified CUDA program
//! with reprise's interposer preloaded, so that its kernel launches are
//! recorded.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use reprise::summary::{self, Summary};

use crate::error::{CliError, Result};

/// The interposer, built with this executable and embedded in it
/// (`build-support/interposer.rs`): written out to the cache directory on
/// first use.
const EMBEDDED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libreprise_interposer.so"));

/// A hash of [`EMBEDDED`]: the cached copy's name, so that two builds of
/// `reprise` never share one file for two libraries.
const EMBEDDED_HASH: &str = env!("REPRISE_INTERPOSER_HASH");

/// The variable that names the interposer to preload instead of the one
/// embedded in the `reprise` executable.
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
/// error, passed back to it unchanged, and counted as refused.
///
/// A capture counts as recorded only once it would pass `reprise list`: one
/// whose files do not assess whole (a chunk missing from the store, not a
/// regular file, or of a length no file of it has; a manifest malformed; a
/// file missing) is counted as failed and named. The exit status is the
/// program's (128 + N when signal N ended it), or 1 when the program
/// exited 0 and a capture failed so.
#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Where the captures go (`list`, `du` and `gc` look there too).
    #[arg(long, env = crate::capture_dir::VAR, default_value = crate::capture_dir::DEFAULT)]
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
    /// Address space of the recording region, which serves the program's
    /// allocations (K/M/G suffixes): a cap it never grows past. Default:
    /// the device's memory size (memory is mapped as allocations reach it).
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
    /// file system still has 5% of its size (at most 4 GiB) free
    /// (`REPRISE_RECORD_MAX_DISK`).
    #[arg(long, value_name = "SIZE", value_parser = disk_size)]
    pub max_disk: Option<u64>,
    /// Hash the snapshots' store chunks on the device and copy to the host
    /// only those neither the last capture nor the store has, so recording
    /// traffic follows what changed (`REPRISE_RECORD_DEVICE_HASHING`). The
    /// captures are the same. Store format only, and not with
    /// `--reachable` (both refused before the program runs); a launch
    /// whose device copy does not fit in device memory is recorded the
    /// ordinary way, with one warning.
    #[arg(long)]
    pub device_hashing: bool,
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

/// The interposer: `REPRISE_INTERPOSER`, else the one embedded in this
/// executable, written to the cache directory on first use.
pub(crate) fn interposer() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os(INTERPOSER_VARIABLE) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(CliError::Usage(format!(
                "{INTERPOSER_VARIABLE}={}: no such file",
                p.display()
            )))
        };
    }
    let dir = cache_dir()?;
    install(&dir, EMBEDDED, EMBEDDED_HASH)
}

/// reprise's directory in the user's cache directory: `$XDG_CACHE_HOME/reprise`,
/// else `$HOME/.cache/reprise` (the XDG base directory specification's
/// default).
fn cache_dir() -> Result<PathBuf> {
    let nonempty = |v: &str| {
        std::env::var_os(v)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
    };
    nonempty("XDG_CACHE_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| nonempty("HOME").map(|h| h.join(".cache")))
        .map(|d| d.join("reprise"))
        .ok_or_else(|| {
            CliError::Lacking(format!(
                "no cache directory to write the interposer to: neither XDG_CACHE_HOME nor HOME \
                 is set (set one, or name the interposer with {INTERPOSER_VARIABLE}=PATH)"
            ))
        })
}

/// `bytes` as `dir/libreprise_interposer-HASH.so`, mode 0755: the file when
/// it is already there with these bytes, else written to a fresh temporary
/// file in `dir` and renamed into place, so that processes writing it at the
/// same time each rename a whole file and none loads a part of one.
fn install(dir: &Path, bytes: &[u8], hash: &str) -> Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(format!("libreprise_interposer-{hash}.so"));
    if holds(&path, bytes) {
        return Ok(path);
    }
    let fail = |what: &str, p: &Path, e: std::io::Error| {
        CliError::Lacking(format!(
            "{what} {}: {e} (the interposer embedded in reprise is written there on first use; \
             or name one with {INTERPOSER_VARIABLE}=PATH)",
            p.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(|e| fail("creating", dir, e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{hash}."))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o755))
        .tempfile_in(dir)
        .map_err(|e| fail("creating a temporary file in", dir, e))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| fail("writing", tmp.path(), e))?;
    // The temporary file is removed when this fails.
    tmp.persist(&path)
        .map_err(|e| fail("writing", &path, e.error))?;
    Ok(path)
}

/// Whether `path` is a regular file holding exactly `bytes`. It is opened
/// without following a link or waiting, and read no further than `bytes`
/// is long, so that nothing planted there (a FIFO, a huge file) can hang
/// or exhaust `record`: anything else is replaced.
fn holds(path: &Path, bytes: &[u8]) -> bool {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
    else {
        return false;
    };
    let len = bytes.len() as u64;
    if !file.metadata().is_ok_and(|m| m.is_file() && m.len() == len) {
        return false;
    }
    let mut found = Vec::new();
    file.take(len + 1).read_to_end(&mut found).is_ok() && found == bytes
}

/// The descriptors in `dir`, sorted.
pub(crate) fn descriptors(dir: &Path) -> Vec<PathBuf> {
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
/// (never one already there), removed when dropped.
fn summary_file() -> Result<tempfile::TempPath> {
    let dir = std::env::temp_dir();
    tempfile::Builder::new()
        .prefix(&format!("reprise-record-{}-", std::process::id()))
        .suffix(".summary")
        .tempfile_in(&dir)
        .map(tempfile::NamedTempFile::into_temp_path)
        .map_err(|e| CliError::io("creating a summary file in", &dir, e))
}

pub fn run(a: RecordArgs) -> Result<ExitCode> {
    if let Some(why) = device_hashing_refusal(&a) {
        return Err(CliError::Usage(why));
    }
    let lib = interposer()?;
    std::fs::create_dir_all(&a.dir).map_err(|e| CliError::io("creating", &a.dir, e))?;
    let before = descriptors(&a.dir);
    let (program, args) = a.program.split_first().expect("clap requires PROGRAM");
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    let mut preload = lib.into_os_string();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|old| !old.is_empty()) {
        preload.push(":");
        preload.push(old);
    }
    // Each process of the program appends its counts here at exit.
    let summary = summary_file()?;
    cmd.env("LD_PRELOAD", preload)
        .env("REPRISE_RECORD", "1")
        .env("REPRISE_RECORD_DIR", &a.dir)
        .env("REPRISE_RECORD_SUMMARY", &summary);
    let flag = |on: bool| on.then(|| "1".to_string());
    let text = |n: Option<u64>| n.map(|n| n.to_string());
    let mode = a.mode.map(|m| match m {
        ModeArg::Async => "async",
        ModeArg::Sync => "sync",
    });
    let format = a.format.map(|f| reprise::CaptureFormat::from(f).as_str());
    for (var, value) in [
        ("REPRISE_RECORD_FILTER", a.filter.clone()),
        ("REPRISE_RECORD_SKIP", text(a.skip)),
        ("REPRISE_RECORD_MAX", text(a.max)),
        ("REPRISE_RECORD_MODE", mode.map(String::from)),
        ("REPRISE_RECORD_MEMSIZE", text(a.region_size)),
        ("REPRISE_RECORD_REACHABLE", flag(a.reachable)),
        ("REPRISE_RECORD_MAX_DISK", text(a.max_disk)),
        ("REPRISE_RECORD_DEVICE_HASHING", flag(a.device_hashing)),
        ("REPRISE_RECORD_FORMAT", format.map(String::from)),
    ] {
        if let Some(value) = value {
            cmd.env(var, value);
        }
    }
    let status = cmd
        .status()
        .map_err(|e| CliError::io("running", program, e))?;
    let new: Vec<PathBuf> = descriptors(&a.dir)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    let text = crate::side_files::read_text(&summary, "recording summary").unwrap_or_default();
    let counts = Summary::parse(&text);
    // The program's own count and captures, from its interposer's summary:
    // other programs may record into the same directory at once (an MPI
    // job's ranks, each under a `reprise record` of its own). The captures
    // new in the directory stand in when the program wrote no summary (it
    // never loaded the interposer), or one that names no capture although
    // it recorded (an interposer older than this command).
    let recorded = if text.trim().is_empty() {
        new.len() as u64
    } else {
        counts.recorded
    };
    let named = summary::written(&text);
    let new: Vec<PathBuf> = if named.is_empty() && (text.trim().is_empty() || recorded > 0) {
        new
    } else {
        new.into_iter()
            .filter(|p| p.file_name().is_some_and(|n| named.iter().any(|w| w == n)))
            .collect()
    };
    // What `list` would call broken is not recorded.
    let failed = not_whole(&new);
    let recorded = recorded.saturating_sub(failed.len() as u64);
    note!(
        "reprise record: {} recorded in {}{}",
        summary::launches(recorded),
        a.dir.display(),
        new.iter()
            .find(|p| !failed.iter().any(|(f, _)| f == *p))
            .map(|p| format!(
                " (replay one: {} replay --verify {})",
                crate::ui::invocation(),
                p.display()
            ))
            .unwrap_or_default()
    );
    // No summary: no process of the program started recording.
    if text.trim().is_empty() && new.is_empty() {
        note!(
            "reprise record: the program never used the CUDA driver as reprise sees it (no \
             driver call with a context): it does not use CUDA, or it cannot load the \
             interposer (linked statically, or set-user-ID)"
        );
    }
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
    if !failed.is_empty() {
        let (n, them) = match failed.len() {
            1 => ("1 capture".to_string(), "it"),
            n => (format!("{n} captures"), "them"),
        };
        note!(
            "reprise record: {n} not stored whole, so not recorded (reprise list calls {them} BROKEN):"
        );
        for (path, why) in &failed {
            note!("  {}: {why}", path.display());
        }
    }
    use std::os::unix::process::ExitStatusExt;
    let code = match (status.code(), status.signal()) {
        (Some(0), _) if !failed.is_empty() => 1,
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        _ => 1,
    };
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

/// The captures among `new` (descriptors) whose files do not assess whole
/// as `reprise list` judges them, without hashing the snapshots: every
/// chunk a manifest names a regular file of a length a file of it may
/// have, every manifest well formed, every file there and regular (the
/// globals and the image are read back). Each with what is wrong.
fn not_whole(new: &[PathBuf]) -> Vec<(PathBuf, String)> {
    use reprise::CaptureProblem as P;
    let of_files = |e: &reprise::Error| {
        crate::list::is_store_damage(e)
            || e.store_problem().is_some()
            || matches!(
                e.capture_problem(),
                Some(
                    P::MissingSnapshot | P::NotRegular { .. } | P::Unreadable { .. } | P::Vanished
                )
            )
    };
    new.iter()
        .filter_map(|d| match reprise::list::describe(d, false) {
            Err(e) => Some((d.clone(), e.named(crate::error::FLAGS).to_string())),
            Ok(desc) => {
                let wrong: Vec<String> = desc
                    .findings
                    .iter()
                    .filter(|f| f.incomplete && of_files(&f.error))
                    .map(|f| f.error.named(crate::error::FLAGS).to_string())
                    .collect();
                (!wrong.is_empty()).then(|| (d.clone(), wrong.join("; ")))
            }
        })
        .collect()
}

/// Why `--device-hashing` (or `REPRISE_RECORD_DEVICE_HASHING=1`) cannot
/// be had for this recording, if it is asked for: the raw format keeps no
/// store to look chunks up in, and reachable-only recording changes the
/// snapshots after they were hashed (the recorder would refuse both in the
/// program, after it started).
fn device_hashing_refusal(a: &RecordArgs) -> Option<String> {
    let from_env = env_on("REPRISE_RECORD_DEVICE_HASHING", |c| c.device_hashing);
    let asked = match (a.device_hashing, from_env) {
        (true, _) => "--device-hashing".to_string(),
        (false, Some(v)) => format!("REPRISE_RECORD_DEVICE_HASHING={v}"),
        (false, None) => return None,
    };
    let raw = match a.format {
        Some(f) => f == FormatArg::Raw,
        None => {
            std::env::var("REPRISE_RECORD_FORMAT")
                .ok()
                .and_then(|v| reprise::CaptureFormat::parse(&v))
                == Some(reprise::CaptureFormat::Raw)
        }
    };
    let reachable = a.reachable || env_on("REPRISE_RECORD_REACHABLE", |c| c.reachable).is_some();
    if raw {
        Some(format!(
            "{asked}: device hashing copies only the chunks the store lacks, and the raw \
             format keeps no store (record in the store format, or without it)"
        ))
    } else if reachable {
        Some(format!(
            "{asked}: device hashing hashes the region as it is, and reachable-only \
             recording poisons what a launch cannot reach: use one or the other"
        ))
    } else {
        None
    }
}

/// The value of the variable `var`, when the recorder reads it as turning
/// on the setting `on` picks.
fn env_on(var: &str, on: fn(&reprise::RecordConfig) -> bool) -> Option<String> {
    let v = std::env::var(var).ok()?;
    let config = reprise::RecordConfig::from_vars(|k| (k == var).then(|| v.clone()));
    config.is_ok_and(|c| on(&c)).then_some(v)
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

#[cfg(test)]
mod tests;
