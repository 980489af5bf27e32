//! Who writes a capture's files, and in what format.

/// Who writes capture files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriterKind {
    /// The launching thread, before the launch call returns (LLVM's way).
    Inline,
    /// A background thread fed by a bounded queue of this depth; the
    /// launching thread blocks only when the queue is full.
    Background {
        /// Captures that may wait to be written.
        depth: usize,
    },
}

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
