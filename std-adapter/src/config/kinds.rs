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

impl WriterKind {
    /// The background writer with the default queue depth.
    pub const BACKGROUND: WriterKind = WriterKind::Background {
        depth: DEFAULT_QUEUE_DEPTH,
    };
}
