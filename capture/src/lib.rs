//! Every byte reprise keeps on disk: capture descriptors and the files
//! beside them (read in all three generations, written crash-safely in
//! reprise's own), the content-addressed chunk store and its manifests,
//! import and export, judging whether a capture is whole (`assess`),
//! listing, the store's usage and garbage collection, and the one set of
//! safe file primitives all of them use.
//!
//! Whether a capture's data is raw files or chunks in the store is decided
//! here alone: the rest of reprise hands a capture's parts to a
//! [`CaptureWriter`] (a [`CaptureStore`]) and reads snapshots through a
//! [`SnapshotSource`] (a [`SnapshotFile`]). Which executor runs an image,
//! and what each would refuse of it, is [`images`]: judging a capture
//! before anything runs needs it.

pub mod capture;
pub mod chunks;
pub mod error;
mod fs;
pub mod images;
pub mod list;
pub mod report;
pub mod store;
mod threads;
pub mod transfer;

pub use capture::{Capture, CapturePaths, OpenOptions, SnapshotFile, SnapshotSource, offload};
pub use error::{CaptureProblem, Error, Result};
pub use store::{CaptureData, CaptureStore, CaptureWriter};

/// How a capture's data files (snapshots, globals, image) are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CaptureFormat {
    /// One plain file each, `STEM.record_input` and the like (what LLVM's
    /// replay tool reads).
    Raw,
    /// Chunks in the capture directory's content-addressed, compressed
    /// store (`D/.reprise-store`, see [`crate::chunks`]), and a manifest
    /// each in the directory, `STEM.record_input.chunks` and the like:
    /// chunks that earlier captures (or the same capture's input) hold
    /// already cost nothing. The default.
    #[default]
    Store,
}

impl CaptureFormat {
    /// Parses `raw` or `store` (any case); `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "raw" => Some(CaptureFormat::Raw),
            "store" => Some(CaptureFormat::Store),
            _ => None,
        }
    }

    /// Its name: `raw` or `store`.
    pub fn as_str(self) -> &'static str {
        match self {
            CaptureFormat::Raw => "raw",
            CaptureFormat::Store => "store",
        }
    }
}

impl std::fmt::Display for CaptureFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
