//! The command line's errors: the library's, shown with the flags that set
//! its settings, and the command line's own.

use std::fmt;
use std::path::PathBuf;

use reprise::{Names, Setting};

/// How the command line names the library's settings: by their flags.
pub const FLAGS: Names = Names {
    verb: "pass",
    name: flag,
    given: flag_with_value,
};

/// The flag that sets `s`.
fn flag(s: Setting) -> &'static str {
    match s {
        Setting::NumTeams => "--num-teams",
        Setting::NumThreads => "--num-threads",
        Setting::AllowMissingGlobals => "--allow-missing-globals",
        Setting::VerifyChecksums => "--no-checksums",
        Setting::Image => "--image",
        Setting::RegionBase => "--region-base",
        Setting::Backend => "--backend",
        Setting::CompareRange => "--range",
        Setting::CompareArg => "--arg",
        other => other.library_name(),
    }
}

/// The flag that sets `s`, as given with its value.
fn flag_with_value(s: Setting) -> &'static str {
    match s {
        Setting::NumTeams => "--num-teams N",
        Setting::NumThreads => "--num-threads N",
        Setting::Image => "--image PATH",
        Setting::RegionBase => "--region-base ADDR",
        Setting::Backend => "--backend EXECUTOR",
        other => flag(other),
    }
}

/// Why a command failed. Each kind is a variant; its text is a message
/// for people. Every one exits with status 2.
#[derive(Debug)]
pub enum CliError {
    /// The library failed.
    Reprise(reprise::Error),
    /// The library failed, and the command knows a likely cause: the
    /// error, then the hint.
    Hinted(Box<reprise::Error>, String),
    /// Compiling the capture's IR failed.
    Compile(reprise::compile::CompileError),
    /// A file or directory that the command was given, found or writes is
    /// not what it needs: `PATH: why`.
    File { path: PathBuf, why: String },
    /// Creating, writing or running `path` failed: `verb PATH: error`.
    Io {
        verb: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
    /// Options that do not go together, a value beyond what the command
    /// takes, or an option that needs another: why, naming the options.
    Usage(String),
    /// A program the command runs (Slurm's commands, a replay in a child
    /// process) could not run or failed: what happened, naming it.
    Program(String),
    /// The machine lacks what the command needs (memory, a free file name,
    /// a cache directory): what, and what to do.
    Lacking(String),
    /// Nothing to check was found in the paths searched.
    NoCaptures(Vec<PathBuf>),
    /// The benchmark's launch loop failed: the driver call, or a kernel
    /// that did not run every launch.
    LaunchLoop(reprise_bench::launch_loop::LoopError),
}

impl CliError {
    /// A [`CliError::File`]: `path` is not what the command needs.
    pub fn file(path: impl AsRef<std::path::Path>, why: impl Into<String>) -> CliError {
        CliError::File {
            path: path.as_ref().to_path_buf(),
            why: why.into(),
        }
    }

    /// A [`CliError::Io`]: `verb`ing `path` failed.
    pub fn io(verb: &'static str, path: impl Into<PathBuf>, error: std::io::Error) -> CliError {
        CliError::Io {
            verb,
            path: path.into(),
            error,
        }
    }
}

/// The file `e` found missing, when that is all it says: every command
/// says so in one wording, `FILE: no such file`, whatever it was doing
/// (opening, reading, listing, stat-ing) and however the system put it.
fn missing_file(e: &reprise::Error) -> Option<&std::path::Path> {
    match e {
        reprise::Error::Io { path, source, .. }
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            Some(path)
        }
        _ => None,
    }
}

/// The library's error `e`, settings named by their flags.
fn library(e: &reprise::Error, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match missing_file(e) {
        Some(path) => write!(f, "{}: no such file", path.display()),
        None => fmt::Display::fmt(&e.named(FLAGS), f),
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Reprise(e) => library(e, f),
            CliError::Hinted(e, hint) => library(e, f).and_then(|()| f.write_str(hint)),
            CliError::Compile(e) => e.fmt(f),
            CliError::File { path, why } => write!(f, "{}: {why}", path.display()),
            CliError::Io { verb, path, error } => write!(f, "{verb} {}: {error}", path.display()),
            CliError::LaunchLoop(e) => e.fmt(f),
            CliError::Usage(why) | CliError::Program(why) | CliError::Lacking(why) => {
                f.write_str(why)
            }
            CliError::NoCaptures(paths) => {
                let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                write!(f, "no captures found in {}", paths.join(", "))
            }
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // The system's wording of a missing file is not repeated.
            CliError::Reprise(e) if missing_file(e).is_some() => None,
            CliError::Reprise(e) => std::error::Error::source(e),
            // The others' messages say all there is.
            _ => None,
        }
    }
}

impl From<reprise::Error> for CliError {
    fn from(e: reprise::Error) -> Self {
        CliError::Reprise(e)
    }
}

/// Results of the commands.
pub type Result<T> = std::result::Result<T, CliError>;
