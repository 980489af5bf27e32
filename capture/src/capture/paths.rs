//! Where a capture's files are: siblings of the descriptor, named by its
//! stem and the generation's extensions (the core's
//! [`Generation::file_names`]).

use std::path::{Path, PathBuf};

use reprise_core::record::Generation;

/// The files of one capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturePaths {
    /// `STEM.json`.
    pub descriptor: PathBuf,
    /// Memory snapshot before the kernel.
    pub input: PathBuf,
    /// Memory snapshot after the kernel, as recorded.
    pub output: PathBuf,
    /// Where a replay saves its output.
    pub replay_output: PathBuf,
    /// Globals.
    pub globals: PathBuf,
    /// Device image.
    pub image: PathBuf,
}

pub use reprise_core::record::KNOWN_EXTENSIONS;

impl CapturePaths {
    /// The sibling files of `descriptor` for a capture of `generation`.
    pub fn new(descriptor: &Path, generation: Generation) -> Self {
        let names = generation.file_names();
        let with = |ext| sibling(descriptor, ext);
        CapturePaths {
            descriptor: descriptor.to_path_buf(),
            input: with(names.input),
            output: with(names.output),
            replay_output: with(names.replay_output),
            globals: with(names.globals),
            image: with(names.image),
        }
    }
}

/// `dir/STEM.EXT` for the descriptor `dir/STEM.json`.
pub(crate) fn sibling(descriptor: &Path, ext: &str) -> PathBuf {
    let mut s = stem_of(descriptor).into_os_string();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

/// `dir/STEM.json` -> `dir/STEM`, byte for byte (a name need not be
/// UTF-8).
pub fn stem_of(descriptor: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt as _;
    match descriptor.as_os_str().as_bytes().strip_suffix(b".json") {
        Some(stem) => PathBuf::from(std::ffi::OsStr::from_bytes(stem)),
        None => descriptor.to_path_buf(),
    }
}
