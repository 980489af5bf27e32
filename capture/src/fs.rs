//! The one set of safe file primitives, each relative to an open directory
//! and never through a symbolic link: directories opened `O_NOFOLLOW` one
//! level at a time, files created `O_EXCL | O_NOFOLLOW` under fresh random
//! names ([`create_fresh`]: the store's chunks, the staged writes of
//! captures and exports) and placed under their final name by `linkat`,
//! which never replaces what is there, and reads bounded by what the caller
//! expects ([`read_file_bounded`]).

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags, Timestamps};
use rustix::io::Errno;

use crate::error::{CaptureProblem, Error, Result};

/// Opens the directory `name` in `at`, refusing a link there.
pub(super) fn open_dir(at: impl AsFd, name: impl rustix::path::Arg) -> io::Result<OwnedFd> {
    let flags = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC;
    Ok(rustix::fs::openat(at, name, flags, Mode::empty())?)
}

/// Opens the directory `name` in `at`, making it first if it is missing.
pub(super) fn open_or_make_dir(at: impl AsFd, name: &str) -> io::Result<OwnedFd> {
    match rustix::fs::mkdirat(&at, name, Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(e.into()),
    }
    open_dir(at, name)
}

/// Opens the file `name` in `at` for reading, refusing a link, and
/// without waiting (`O_NONBLOCK`: a FIFO or a device planted there opens
/// at once, and its `fstat` then says it is no regular file; a regular
/// file reads as ever). The caller checks what it opened.
pub(super) fn open_file(at: impl AsFd, name: impl rustix::path::Arg) -> io::Result<File> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    Ok(File::from(rustix::fs::openat(
        at,
        name,
        flags,
        Mode::empty(),
    )?))
}

/// The contents of `file`, a regular file of at most `limit` bytes: the
/// one bounded read of the capture crate (a buffer that cannot be had is an
/// error, not an abort). Errors name `path`: `too_large` makes the one for
/// a file of that many bytes.
pub(crate) fn read_file_bounded(
    mut file: File,
    limit: u64,
    path: &Path,
    action: &'static str,
    too_large: impl Fn(u64) -> Error,
) -> Result<Vec<u8>> {
    let failed = |e| Error::io(path, action, e);
    let meta = file.metadata().map_err(failed)?;
    if !meta.is_file() {
        let e = io::Error::new(io::ErrorKind::InvalidInput, "not a regular file");
        return Err(failed(e));
    }
    if meta.len() > limit {
        return Err(too_large(meta.len()));
    }
    let mut out = Vec::new();
    out.try_reserve_exact(meta.len() as usize)
        .map_err(|_| too_large(meta.len()))?;
    // A file that grew since it was looked at is read to the limit and
    // one byte more, so that it is still refused.
    (&mut file)
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(failed)?;
    if out.len() as u64 > limit {
        return Err(too_large(out.len() as u64));
    }
    Ok(out)
}

/// A file created in `dir` under a fresh name `PREFIX` + 16 random
/// hexadecimal digits (`O_CREAT | O_EXCL | O_NOFOLLOW`, so nothing that is
/// there, a planted link included, is written through), with its name:
/// the one way reprise makes a file it will rename or link into place.
pub(crate) fn create_fresh(dir: impl AsFd, prefix: &str, mode: u32) -> io::Result<(String, File)> {
    let flags = OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::WRONLY | OFlags::CLOEXEC;
    let mut attempt = 0;
    loop {
        let name = format!("{prefix}{:016x}", fastrand::u64(..));
        match rustix::fs::openat(&dir, name.as_str(), flags, Mode::from_raw_mode(mode)) {
            Ok(fd) => return Ok((name, File::from(fd))),
            Err(Errno::EXIST) if attempt < 16 => attempt += 1,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Gives the file `from` in `from_dir` the name `to` in `to_dir` too, unless
/// something has that name already: `true` when it was placed, `false`
/// when the name was taken (by another writer of the same content, for a
/// chunk). File systems without hard links get an exclusive rename
/// (`RENAME_NOREPLACE`), which moves `from` instead.
pub(crate) fn place(
    from_dir: impl AsFd,
    from: &str,
    to_dir: impl AsFd,
    to: &str,
) -> io::Result<bool> {
    match rustix::fs::linkat(&from_dir, from, &to_dir, to, AtFlags::empty()) {
        Ok(()) => Ok(true),
        Err(Errno::EXIST) => Ok(false),
        Err(Errno::PERM | Errno::OPNOTSUPP | Errno::MLINK) => {
            match rustix::fs::renameat_with(&from_dir, from, &to_dir, to, RenameFlags::NOREPLACE) {
                Ok(()) => Ok(true),
                Err(Errno::EXIST) => Ok(false),
                Err(e) => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Removes `name` from `dir`; one already gone is fine.
pub(crate) fn remove(dir: impl AsFd, name: &str) -> io::Result<()> {
    match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Removes `name` from `dir` whatever it is: a file, a link (not what it
/// points at), or a directory with everything in it, each level opened
/// `O_NOFOLLOW` relative to the one above, at most `depth` levels deep
/// (deeper is an error, and what was above it stays). One already gone
/// is fine.
pub(super) fn remove_all(dir: impl AsFd, name: &OsStr, depth: u32) -> io::Result<()> {
    match rustix::fs::unlinkat(&dir, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => return Ok(()),
        Err(Errno::ISDIR) => {}
        Err(e) => return Err(e.into()),
    }
    if depth == 0 {
        return Err(io::Error::other("nested too deep to remove"));
    }
    let inner = match open_dir(&dir, name) {
        Ok(fd) => fd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for (entry, _) in names(&inner)? {
        remove_all(&inner, OsStr::from_bytes(&entry), depth - 1)?;
    }
    match rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Sets the open file `file`'s modification time to now.
pub(super) fn touch_open(file: impl AsFd) -> io::Result<()> {
    let now = rustix::fs::Timespec {
        tv_sec: 0,
        tv_nsec: rustix::fs::UTIME_NOW,
    };
    let times = Timestamps {
        last_access: now,
        last_modification: now,
    };
    Ok(rustix::fs::futimens(file, &times)?)
}

/// A file's modification time, as a length of time since the epoch
/// (before it: zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Mtime(pub Duration);

impl Mtime {
    pub fn of(stat: &rustix::fs::Stat) -> Self {
        let secs = u64::try_from(stat.st_mtime).unwrap_or(0);
        let nanos = u32::try_from(stat.st_mtime_nsec)
            .unwrap_or(0)
            .min(999_999_999);
        Mtime(Duration::new(secs, nanos))
    }

    /// This time less `d` (at the epoch at the earliest).
    pub fn minus(self, d: Duration) -> Self {
        Mtime(self.0.saturating_sub(d))
    }
}

/// What `name` in `dir` is (not following a link), with its length and
/// modification time; `None` when nothing is there.
pub(super) fn stat(dir: impl AsFd, name: &str) -> io::Result<Option<(FileType, u64, Mtime)>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some((
            FileType::from_raw_mode(st.st_mode),
            st.st_size as u64,
            Mtime::of(&st),
        ))),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The names in the directory `dir` (`.` and `..` left out), with what
/// each is where the file system says so without a look.
pub(super) fn names(dir: impl AsFd) -> io::Result<Vec<(Vec<u8>, FileType)>> {
    let mut out = Vec::new();
    let list = rustix::fs::Dir::read_from(dir)?;
    for entry in list {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        out.push((name.to_vec(), entry.file_type()));
    }
    Ok(out)
}

/// Flushes the directory `dir`'s entries to disk; an error names `path`.
pub(crate) fn sync_dir(dir: impl AsFd, path: &Path) -> Result<()> {
    rustix::fs::fsync(dir).map_err(|e| Error::io(path, "sync directory", e.into()))
}

/// The directory at `dir`, open (following a link to it: that is the
/// caller's choice of directory); an error names it. The one way reprise
/// opens a directory by path.
pub(crate) fn open_dir_fd(dir: &Path) -> Result<OwnedFd> {
    let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC;
    rustix::fs::open(dir, flags, Mode::empty())
        .map_err(|e| Error::io(dir, "open directory", e.into()))
}

/// The last part of `path`, the name a file is written under; an error
/// naming `path` when it has none.
pub(crate) fn file_name(path: &Path) -> Result<&OsStr> {
    path.file_name()
        .ok_or_else(|| Error::capture(path, CaptureProblem::NoFileName))
}

/// The directory `path` is in (`.` for a bare file name).
pub(crate) fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}
