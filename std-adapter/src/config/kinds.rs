//! Who writes a capture's files, and in what format.

/// Captures that may wait for the background writer by default: enough
/// that the bytes they hold ([`DEFAULT_QUEUE_BYTES`]), not their number,
/// bound the queue.
pub const DEFAULT_QUEUE_DEPTH: usize = 4096;

/// Bytes of snapshots that may wait for the background writer by default:
/// 512 MiB.
pub const DEFAULT_QUEUE_BYTES: u64 = 512 << 20;

/// Who writes capture files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriterKind {
    /// The launching thread, before the launch call returns (LLVM's way).
    Inline,
    /// A background thread fed by a bounded queue; the launching thread
    /// blocks only when the queue is full: when `depth` captures wait, or
    /// when the next would take the bytes they hold past
    /// [`RecordConfig::queue_bytes`](crate::RecordConfig::queue_bytes).
    /// The writer alone flushes files to disk; the launching thread never
    /// waits for that unless the queue is full.
    Background {
        /// Captures that may wait to be written
        /// ([`DEFAULT_QUEUE_DEPTH`] by default: the bytes bound it).
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

impl WriterKind {
    /// The background writer with the default queue depth.
    pub const BACKGROUND: WriterKind = WriterKind::Background {
        depth: DEFAULT_QUEUE_DEPTH,
    };
}
