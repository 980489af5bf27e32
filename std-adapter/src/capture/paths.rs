//! Where a capture's files are: siblings of the descriptor, named by its
//! stem and the generation's extensions.

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

/// The extensions of data files, by generation: (input, output, replay output).
fn extensions(generation: Generation) -> (&'static str, &'static str, &'static str) {
    match generation {
        Generation::LlvmLegacy => ("memory", "original.output", "replay.output"),
        Generation::LlvmCurrent | Generation::Reprise => {
            ("record_input", "record_output", "replay_output")
        }
    }
}

/// Every extension a capture's files may carry (for listing and orphans).
pub const KNOWN_EXTENSIONS: &[&str] = &[
    "json",
    "memory",
    "original.output",
    "replay.output",
    "record_input",
    "record_output",
    "replay_output",
    "globals",
    "image",
    "bc",
];

impl CapturePaths {
    /// The sibling files of `descriptor` for a capture of `generation`.
    pub fn new(descriptor: &Path, generation: Generation) -> Self {
        let stem = stem_of(descriptor);
        let (input, output, replay) = extensions(generation);
        let with = |ext: &str| {
            let mut s = stem.clone().into_os_string();
            s.push(".");
            s.push(ext);
            PathBuf::from(s)
        };
        CapturePaths {
            descriptor: descriptor.to_path_buf(),
            input: with(input),
            output: with(output),
            replay_output: with(replay),
            globals: with("globals"),
            image: with("image"),
        }
    }
}

/// `dir/STEM.json` -> `dir/STEM`.
pub fn stem_of(descriptor: &Path) -> PathBuf {
    let s = descriptor.as_os_str().to_string_lossy();
    match s.strip_suffix(".json") {
        Some(stem) => PathBuf::from(stem),
        None => descriptor.to_path_buf(),
    }
}
