//! The command line's errors: the library's, shown with the flags that set
//! its settings, and the command line's own.

use std::fmt;

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

/// Why a command failed.
#[derive(Debug)]
pub enum CliError {
    /// The library failed.
    Reprise(reprise::Error),
    /// A problem the command found itself (options that do not go
    /// together, a demo larger than memory, a replay in a child process
    /// that failed): the whole message.
    Command(String),
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

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Reprise(e) if let Some(path) = missing_file(e) => {
                write!(f, "{}: no such file", path.display())
            }
            CliError::Reprise(e) => e.named(FLAGS).fmt(f),
            CliError::Command(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // The system's wording of a missing file is not repeated.
            CliError::Reprise(e) if missing_file(e).is_some() => None,
            CliError::Reprise(e) => std::error::Error::source(e),
            CliError::Command(_) => None,
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
