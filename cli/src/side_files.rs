//! The command line's own files beside the captures: results files,
//! baselines, worker plans, job records, plots and reports. Each is read
//! through the library's one way to open a file (a regular file only,
//! never blocking on a FIFO, read no further than [`LIMIT`]), and written
//! through its one staged write (a fresh temporary file, `O_EXCL` and
//! `O_NOFOLLOW` in the destination's directory, flushed, then renamed over
//! the name), so that a planted link or special file at any of these names
//! is neither followed nor waited on.

use std::path::Path;

use crate::error::Result;

/// The longest side file read: a results file of a million captures is a
/// few hundred MiB.
pub const LIMIT: u64 = 1 << 30;

/// The bytes of the side file `path` (its `role`, for messages: "results
/// file", "worker plan"), or `None` when there is nothing at `path`.
pub fn read(path: &Path, role: &str) -> Result<Option<Vec<u8>>> {
    Ok(reprise::capture::read_bounded(path, role, LIMIT)?)
}

/// [`read`], as text (what is not UTF-8 replaced), and a file that is not
/// there an error naming it.
pub fn read_text(path: &Path, role: &str) -> Result<String> {
    match read(path, role)? {
        Some(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        None => Err(reprise::Error::io(
            path,
            "read",
            std::io::Error::from(std::io::ErrorKind::NotFound),
        )
        .into()),
    }
}

/// Opens the side file `path` to append to, created when missing (with
/// `create`): never through a link, never waiting on a FIFO, a regular
/// file only.
pub fn open_append(path: &Path, create: bool) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(create)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| reprise::Error::io(path, "open", e))?;
    let meta = file
        .metadata()
        .map_err(|e| reprise::Error::io(path, "look at", e))?;
    if !meta.is_file() {
        return Err(crate::error::CliError::file(path, "not a regular file"));
    }
    Ok(file)
}

/// Writes `bytes` to `path`: whole and flushed, or not at all.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(reprise::store::write_atomically(path, bytes, true)?)
}
