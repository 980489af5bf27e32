//! What the workers share: how they are started ([`Workers`]), the
//! suite's private directory they write outputs into ([`Scratch`]), and
//! the process helpers that end them. Captures are replayed in child
//! processes (this executable, `check --worker-serve`: see the serve
//! module, which runs them), so that a kernel that faults, hangs or kills
//! its process is that capture's result and the suite goes on. Host
//! captures run `jobs` at a time, each in a process of its own; GPU
//! captures one at a time per visible device. The verdict is the suite's
//! (the verdict module). A worker runs in a process group of its own,
//! which is killed when it passes the timeout (and once it has ended, so
//! that nothing it started lingers), and it dies with the suite
//! (`PR_SET_PDEATHSIG`).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use super::results::Status;
use crate::compare_args::CompareArgs;
use crate::error::Result;

/// How workers are started.
pub struct Workers {
    /// This executable.
    pub exe: PathBuf,
    /// The arguments of this `reprise check` after `check`, handed to each
    /// worker (which reads the comparison and opening options from them).
    pub args: Vec<OsString>,
    /// How long one capture may take.
    pub timeout: Option<Duration>,
    /// Host captures at once.
    pub jobs: usize,
    /// GPU devices: one worker each.
    pub devices: usize,
    /// How the suite opens a capture to judge its output.
    pub options: reprise::OpenOptions,
    /// How the suite compares.
    pub compare: CompareArgs,
    /// Where workers write their outputs.
    pub scratch: Scratch,
}

/// The suite's private directory (mode 0700, removed when dropped), where
/// each worker writes the output of the capture it replayed, for the
/// suite to compare.
pub struct Scratch {
    dir: tempfile::TempDir,
    next: std::sync::atomic::AtomicU64,
}

impl Scratch {
    /// A fresh directory under the system's temporary directory.
    pub fn new() -> Result<Scratch> {
        let dir = tempfile::Builder::new()
            .prefix("reprise-check.")
            .tempdir()
            .map_err(|e| reprise::Error::io(std::env::temp_dir(), "create a directory in", e))?;
        Ok(Scratch {
            dir,
            next: Default::default(),
        })
    }

    /// A path no other capture's output has.
    pub fn output_path(&self) -> PathBuf {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.dir.path().join(format!("output-{n}"))
    }
}

/// The exit status a worker ends with for `status`.
pub fn expected_code(status: Status) -> i32 {
    match status {
        Status::Passed => 0,
        Status::Differs => 1,
        _ => 2,
    }
}
