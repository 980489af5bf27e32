//! [`RecordConfig`]: what is recorded, where, and how (who writes the
//! files: [`WriterKind`]); its builder and the launch selection.

use std::path::PathBuf;

use reprise_core::schedule::Mode;

use super::CaptureFormat;
use super::parse::glob_match;

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
    /// A background thread fed by a bounded queue, which alone flushes
    /// files to disk; the launching thread blocks only when the queue is
    /// full: when `depth` captures wait, or when the next would take the
    /// bytes they hold past [`RecordConfig::queue_bytes`].
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

/// Size of the recording region where none was chosen and the executor
/// cannot tell its device's memory size: 1 GiB. (Where it can, a region is
/// as large as the device's memory; see [`RecordConfig::region_capacity`].)
pub const DEFAULT_REGION_SIZE: u64 = 1 << 30;

/// How launches are recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordConfig {
    /// Record at all.
    pub enabled: bool,
    /// Where captures go.
    pub dir: PathBuf,
    /// Save the post-kernel snapshot.
    pub save_output: bool,
    /// Bytes of address space the recording region reserves, when chosen
    /// (with [`RecordConfig::region_size`], `REPRISE_RECORD_MEMSIZE`, or
    /// any value other than [`DEFAULT_REGION_SIZE`]): a cap the region
    /// never grows past. See [`RecordConfig::region_capacity`].
    pub region_size: u64,
    /// Glob over kernel names; `None` records every kernel.
    pub filter: Option<String>,
    /// Matching launches to skip before recording. A launch counts once it
    /// has been queued; one that fails before that does not. (An unrecorded
    /// launch is not waited for: a fault it causes surfaces at the next
    /// synchronize, after it has counted.)
    pub skip: u64,
    /// Most launches to record. Only launches whose snapshots were taken
    /// count: a launch that fails while being recorded does not.
    pub max: Option<u64>,
    /// One synchronize, or one per step.
    pub mode: Mode,
    /// Who writes the files.
    pub writer: WriterKind,
    /// Bytes of snapshots that may wait for the background writer
    /// ([`DEFAULT_QUEUE_BYTES`]); a launch that would pass it waits for
    /// room (one capture larger than it alone is still taken).
    pub queue_bytes: u64,
    /// Flush every file to disk before renaming it into place.
    pub fsync: bool,
    /// How the data files are written: plain files, or chunks in the
    /// directory's store.
    pub format: CaptureFormat,
    /// Record only the first launch of each (kernel, grid, block, shared
    /// memory); later ones are counted (in the record report), not
    /// recorded. Deduplicated launches count toward
    /// [`RecordConfig::skip`] like any other matching launch.
    pub dedup: bool,
    /// Write a record report beside the captures; `None`: when
    /// [`RecordConfig::dedup`] is on.
    pub report: Option<bool>,
    /// Snapshot only what the launch can reach: the allocations its
    /// pointer arguments (and the pointers found inside them, as a
    /// conservative garbage collector scans) point into. Everything else of
    /// the region is poison in both snapshots: a replay of a kernel that
    /// reaches past the closure shows a difference (see
    /// [`reprise_core::record::reachable`]).
    pub reachable: bool,
    /// Stop recording before the bytes the captures take on disk (files,
    /// and the store's chunk files new since recording began) could pass
    /// this; `None`: no limit but the free space always kept
    /// ([`MIN_FREE_PERCENT`](crate::store::MIN_FREE_PERCENT)). Stopping is
    /// for good, says why once ([`Recorder::disk_stop`](crate::Recorder::disk_stop)),
    /// and the program's launches run on unrecorded.
    pub max_disk: Option<u64>,
    /// Hash the snapshots' store chunks on the device, and copy to the
    /// host only the chunks the host does not have already: recording
    /// traffic follows what changed, not the region's size. Needs
    /// [`CaptureFormat::Store`] and an executor with reprise's hashing
    /// kernel, and excludes [`RecordConfig::reachable`]: [`Recorder::new`]
    /// refuses it otherwise. See docs/store.md, "Device-side hashing".
    ///
    /// [`Recorder::new`]: crate::Recorder::new
    pub device_hashing: bool,
    /// The `REPRISE_RECORD_MEMSIZE` value `region_size` was read from, so
    /// that a region that cannot be reserved is reported against it.
    pub(super) memsize_var: MemsizeOrigin,
    /// Whether `region_size` was chosen (the builder, the environment)
    /// rather than left at its default.
    pub(super) region_chosen: bool,
}

/// Where `region_size` came from: `Some((size, value))` when it was parsed
/// from `REPRISE_RECORD_MEMSIZE=value` (and is still `size`). Configurations
/// that differ only in it compare equal.
#[derive(Debug, Clone, Default, Eq)]
pub(super) struct MemsizeOrigin(pub(super) Option<(u64, String)>);

impl PartialEq for MemsizeOrigin {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Default for RecordConfig {
    fn default() -> Self {
        RecordConfig {
            enabled: false,
            dir: PathBuf::from("."),
            save_output: true,
            region_size: DEFAULT_REGION_SIZE,
            filter: None,
            skip: 0,
            max: None,
            mode: Mode::Async,
            writer: WriterKind::BACKGROUND,
            queue_bytes: DEFAULT_QUEUE_BYTES,
            fsync: true,
            format: CaptureFormat::default(),
            dedup: false,
            report: None,
            reachable: false,
            max_disk: None,
            device_hashing: false,
            memsize_var: MemsizeOrigin::default(),
            region_chosen: false,
        }
    }
}

/// Builder methods that set a field to the value given (wrapped in `Some`
/// for the optional ones).
macro_rules! setters {
    ($($(#[$doc:meta])* $field:ident: $ty:ty $(=> $wrap:ident)?;)*) => {$(
        $(#[$doc])*
        pub fn $field(mut self, value: $ty) -> Self {
            self.$field = $($wrap)?(value);
            self
        }
    )*};
}

impl RecordConfig {
    setters! {
        /// Turns recording on.
        enabled: bool;
        /// Saves (or not) the post-kernel snapshot.
        save_output: bool;
        /// Skips this many matching launches first.
        skip: u64;
        /// Records at most this many launches.
        max: u64 => Some;
        /// Sets the schedule mode.
        mode: Mode;
        /// Sets who writes the files.
        writer: WriterKind;
        /// Bounds the bytes of snapshots waiting for the background writer
        /// (see [`RecordConfig::queue_bytes`](Self::queue_bytes)).
        queue_bytes: u64;
        /// Flushes files to disk (or not) before renaming them.
        fsync: bool;
        /// Sets how the data files are written (see [`CaptureFormat`]).
        format: CaptureFormat;
        /// Records only the first launch of each (kernel, grid, block, shared
        /// memory), and counts the rest.
        dedup: bool;
        /// Snapshots only the memory a launch can reach (see
        /// [`RecordConfig::reachable`](Self::reachable)).
        reachable: bool;
        /// Writes (or not) a record report beside the captures.
        report: bool => Some;
        /// Stops recording before the captures could take more than this
        /// many bytes of disk (see [`RecordConfig::max_disk`](Self::max_disk)).
        max_disk: u64 => Some;
        /// Hashes the snapshots on the device and copies back only what
        /// changed (see [`RecordConfig::device_hashing`](Self::device_hashing)).
        device_hashing: bool;
    }

    /// Sets the capture directory.
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = dir.into();
        self
    }
    /// Sets the region size in bytes (more than 0: [`Recorder::new`]
    /// refuses an empty region): the address space reserved, which the
    /// region never grows past, whatever the device's memory size.
    ///
    /// [`Recorder::new`]: crate::Recorder::new
    pub fn region_size(mut self, bytes: u64) -> Self {
        self.region_size = bytes;
        self.region_chosen = true;
        self
    }
    /// Records only kernels whose names match `glob`.
    pub fn filter(mut self, glob: impl Into<String>) -> Self {
        self.filter = Some(glob.into());
        self
    }
    /// Whether a record report is written.
    pub fn writes_report(&self) -> bool {
        self.enabled && self.report.unwrap_or(self.dedup)
    }

    /// The `REPRISE_RECORD_MEMSIZE` value the region size was read from,
    /// when it was (and has not been changed since).
    pub fn region_size_var(&self) -> Option<&str> {
        match &self.memsize_var.0 {
            Some((size, value)) if *size == self.region_size => Some(value),
            _ => None,
        }
    }

    /// Whether the region size was chosen (see [`RecordConfig::region_size`])
    /// rather than left at its default.
    pub fn region_size_chosen(&self) -> bool {
        self.region_chosen || self.region_size != DEFAULT_REGION_SIZE
    }

    /// Bytes of address space a fresh recording reserves on a device with
    /// `device_memory` bytes of memory (`None`: the executor cannot tell):
    /// the chosen region size, else the device's memory size, else
    /// [`DEFAULT_REGION_SIZE`]. Memory is put behind the region as
    /// allocations reach it, so a large reservation costs address space
    /// only.
    ///
    /// ```
    /// use reprise_std::RecordConfig;
    /// let c = RecordConfig::default();
    /// assert_eq!(c.region_capacity(Some(80 << 30)), 80 << 30);
    /// assert_eq!(c.region_capacity(None), 1 << 30);
    /// assert_eq!(c.region_size(4 << 30).region_capacity(Some(80 << 30)), 4 << 30);
    /// ```
    pub fn region_capacity(&self, device_memory: Option<u64>) -> u64 {
        match device_memory {
            Some(m) if m > 0 && !self.region_size_chosen() => m,
            _ => self.region_size,
        }
    }

    /// Whether kernel `name` passes the name filter.
    pub fn matches(&self, name: &str) -> bool {
        self.filter.as_deref().is_none_or(|p| glob_match(p, name))
    }

    /// Whether the `index`-th matching launch (from 0), with `recorded`
    /// launches recorded so far, should be recorded.
    pub fn selects(&self, index: u64, recorded: u64) -> bool {
        self.enabled && index >= self.skip && self.max.is_none_or(|m| recorded < m)
    }
}

#[cfg(test)]
mod tests;
