//! The adapter's error type: every error names the file or variable at fault.

use std::path::PathBuf;

use reprise_core::globals::DecodeError;
use reprise_core::record::RecordError;

/// An executor's error, boxed so that code above the backends can carry any.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Errors of capture files, configuration, recording and replay.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read, written or renamed.
    #[error("{path}: {action} failed: {source}")]
    Io {
        /// The file at fault.
        path: PathBuf,
        /// What was being done ("read", "write", "rename", ...).
        action: &'static str,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A descriptor could not be parsed or written.
    #[error("{path}: {source}")]
    Descriptor {
        /// The descriptor.
        path: PathBuf,
        /// What is wrong with it.
        source: RecordError,
    },
    /// A globals file is malformed.
    #[error("{path}: {source}")]
    Globals {
        /// The globals file.
        path: PathBuf,
        /// What is wrong with it.
        source: DecodeError,
    },
    /// A capture file is inconsistent with its descriptor or siblings.
    #[error("{path}: {problem}")]
    Capture {
        /// The file at fault.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A configuration variable has a value that cannot be used.
    #[error("{var}={value:?}: {problem}")]
    Config {
        /// The variable (or builder setting).
        var: &'static str,
        /// Its value.
        value: String,
        /// Why it cannot be used.
        problem: String,
    },
    /// The executor failed.
    #[error("{context}: {source}")]
    Executor {
        /// What was being done.
        context: String,
        /// The executor's error.
        source: BoxError,
    },
    /// A request that cannot be honoured (e.g. an override outside the
    /// recorded limits).
    #[error("{0}")]
    Invalid(String),
    /// An option (a command-line flag or its builder setting) has a value
    /// that no capture accepts. A problem of the request, not of any file:
    /// [`Error::in_file`] leaves it as it is.
    #[error("{option} {value}: {problem}")]
    BadOption {
        /// The option, as spelled on the command line (`--num-teams`).
        option: &'static str,
        /// Its value.
        value: String,
        /// Why it cannot be used.
        problem: String,
    },
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, action: &'static str, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            action,
            source,
        }
    }

    /// A capture problem in `path`.
    pub fn capture(path: impl Into<PathBuf>, problem: impl Into<String>) -> Self {
        Error::Capture {
            path: path.into(),
            problem: problem.into(),
        }
    }

    /// An executor error with context; the original error stays reachable
    /// through `source()` (and can be downcast).
    pub fn executor<E: std::error::Error + Send + Sync + 'static>(
        context: impl Into<String>,
        e: E,
    ) -> Self {
        Error::Executor {
            context: context.into(),
            source: Box::new(e),
        }
    }

    /// The error as met while working on `file`: an executor failure or an
    /// invalid request gets the file's name in front; errors that already
    /// name a file, and bad options (which concern no file), are kept as
    /// they are.
    pub fn in_file(self, file: &std::path::Path) -> Self {
        match self {
            Error::Executor { context, source } => Error::Executor {
                context: format!("{}: {context}", file.display()),
                source,
            },
            Error::Invalid(problem) => Error::Invalid(format!("{}: {problem}", file.display())),
            other => other,
        }
    }

    /// A schedule error with context: an executor error is kept as it is,
    /// others become text.
    pub fn schedule<E: std::error::Error + Send + Sync + 'static>(
        context: impl Into<String>,
        e: reprise_core::schedule::ScheduleError<E>,
    ) -> Self {
        match e {
            reprise_core::schedule::ScheduleError::Executor(e) => Error::executor(context, e),
            other => Error::Executor {
                context: context.into(),
                source: other.to_string().into(),
            },
        }
    }
}

/// Results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
