//! The one way a capture's file is opened for reading: without blocking
//! (so a FIFO or a device opens at once instead of waiting for a writer),
//! checked with `fstat` on the open descriptor (so what is checked is what
//! is read, even if the path is swapped meanwhile) to be a regular file
//! outside the kernel's pseudo filesystems, and read no further than its
//! role allows: a larger file is an error naming the bound before a byte is
//! read, and an allocation that fails is an error, not an abort.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use rustix::fs::FileType;

use crate::error::{CaptureProblem, Error, Result};

/// Largest descriptor accepted (any real one is a few KiB).
pub const DESCRIPTOR_LIMIT: u64 = 1 << 20;

/// Largest device image accepted: 1 GiB (fat binaries of large HPC codes
/// reach hundreds of MiB; no kernel's image is larger).
pub const IMAGE_LIMIT: u64 = 1 << 30;

/// Largest globals file accepted: 1 GiB (the globals of an image are a
/// small part of it).
pub const GLOBALS_LIMIT: u64 = 1 << 30;

/// What is at a path, found without opening it (so without blocking).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// Nothing.
    Missing,
    /// A regular file of this many bytes.
    Regular(u64),
    /// Something else: `"a directory"`, `"a FIFO"`, `"a character device"`,
    /// `"a block device"`, `"a socket"`.
    Special(&'static str),
    /// It could not be looked at (permissions, say): the system's message.
    Unreadable(String),
    /// A manifest of the directory's chunk store, standing for a file of
    /// `len` bytes in `chunks` chunks (a capture of the store format).
    Chunked {
        /// The bytes it stands for.
        len: u64,
        /// Its chunks.
        chunks: u64,
    },
}

impl FileState {
    /// What is at `path` (symbolic links followed).
    pub fn of(path: &Path) -> FileState {
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => match rustix::fs::statfs(path).ok().and_then(pseudo) {
                Some(fs) => FileState::Special(fs),
                None => FileState::Regular(m.len()),
            },
            Ok(m) => FileState::Special(kind(&m)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => FileState::Missing,
            Err(e) => FileState::Unreadable(e.to_string()),
        }
    }

    /// The length of a regular file, or of the file a manifest stands
    /// for: the length of the bytes a capture's file holds.
    pub fn regular_len(&self) -> Option<u64> {
        match self {
            FileState::Regular(n) => Some(*n),
            FileState::Chunked { len, .. } => Some(*len),
            _ => None,
        }
    }

    /// Whether something is there (a regular file or not).
    pub fn exists(&self) -> bool {
        !matches!(self, FileState::Missing)
    }
}

fn kind(m: &std::fs::Metadata) -> &'static str {
    match FileType::from_raw_mode(m.mode()) {
        FileType::Directory => "a directory",
        FileType::Fifo => "a FIFO",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Socket => "a socket",
        _ => "not a regular file",
    }
}

/// The error for a path that is `kind` where a regular file must be.
pub(crate) fn not_regular(path: &Path, kind: &'static str) -> Error {
    Error::capture(path, CaptureProblem::NotRegular { kind })
}

/// The error for nothing at `path`, met while `action` ("read", say).
pub(crate) fn not_found(path: &Path, action: &'static str) -> Error {
    Error::io(path, action, std::io::ErrorKind::NotFound.into())
}

/// Opens `path` for reading without blocking, and checks on the open file
/// that it is a regular file; its length comes with it. `Ok(None)` when
/// there is nothing at `path`.
pub fn open_regular(path: &Path) -> Result<Option<(File, u64)>> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, "open", e)),
    };
    let meta = file.metadata().map_err(|e| Error::io(path, "stat", e))?;
    if !meta.is_file() {
        return Err(not_regular(path, kind(&meta)));
    }
    if let Some(fs) = rustix::fs::fstatfs(&file).ok().and_then(pseudo) {
        return Err(not_regular(path, fs));
    }
    Ok(Some((file, meta.len())))
}

/// What a file on the kernel's pseudo filesystem `fs` is, if it is on one:
/// its length says nothing of what reading it gives (`/proc`'s `pagemap`
/// is a regular file of length 0 that reads on for hundreds of GiB).
/// Magic numbers from Linux's `include/uapi/linux/magic.h`.
fn pseudo(fs: rustix::fs::StatFs) -> Option<&'static str> {
    Some(match fs.f_type as u64 {
        0x9fa0 => "a file of procfs",
        0x6265_6572 => "a file of sysfs",
        0x6462_6720 => "a file of debugfs",
        0x7472_6163 => "a file of tracefs",
        0x7363_6673 => "a file of securityfs",
        0x0027_e0eb | 0x6367_7270 => "a file of cgroupfs",
        0xcafe_4a11 => "a file of bpffs",
        0xde5e_81e4 => "a file of efivarfs",
        0x6265_6570 => "a file of configfs",
        _ => return None,
    })
}

/// The bytes of the regular file at `path` (its `role`, "device image" say,
/// for messages), at most `limit` of them: a larger file is an error naming
/// the bound before anything is read. `Ok(None)` when there is nothing at
/// `path`.
pub fn read_bounded(path: &Path, role: &str, limit: u64) -> Result<Option<Vec<u8>>> {
    let Some((file, _)) = open_regular(path)? else {
        return Ok(None);
    };
    read_open(file, path, role, limit).map(Some)
}

/// [`read_bounded`] of `file`, open at `path`.
pub(crate) fn read_open(file: File, path: &Path, role: &str, limit: u64) -> Result<Vec<u8>> {
    // The one bounded read: a file larger than the bound is refused before
    // a byte is read, and one that grew past it since is still refused.
    crate::fs::read_file_bounded(file, limit, path, "read", |len| {
        too_large(path, role, len, limit)
    })
}

/// The error for the file of `role` at `path`, of `len` bytes, more than
/// `limit`.
pub(crate) fn too_large(path: &Path, role: &str, len: u64, limit: u64) -> Error {
    let role = role.to_string();
    Error::capture(path, CaptureProblem::TooLarge { role, len, limit })
}
