//! The disk budget of a recording: `RecordConfig::max_disk` and the free
//! space its file system keeps.
//!
//! The launching thread *reserves* a capture's largest possible size
//! ([`estimate`]) before it takes the snapshots; the writer, once the
//! capture is written, gives the reservation back and charges what it
//! really wrote (the files, and in the store format the chunk files new
//! since the recording began). A reservation that would take the recording
//! past its budget, or leave its file system with less than
//! [`MIN_FREE_PERCENT`] of its size free (at most [`MAX_FREE_KEPT`]), is
//! refused: recording stops for
//! good ([`DiskBudget::stopped`] says why), before a byte of that capture
//! is written, so the budget is never passed and no capture is left half
//! written. The free space is read (`statvfs`) when the budget is made and
//! after each capture is written, on the writer's thread: the launching
//! thread's check is arithmetic on atomics.
//!

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

use crate::chunks::{ChunkStore, Manifest};

/// Recording stops while the file system still has this share of its size
/// free (percent), budget or not, up to [`MAX_FREE_KEPT`].
pub const MIN_FREE_PERCENT: u64 = 5;

/// The most free space recording keeps: on a large shared file system
/// (a cluster's scratch, often over 95% full with terabytes free) a share
/// of its size alone would refuse every capture.
pub const MAX_FREE_KEPT: u64 = 4 << 30;

/// What a capture may need beyond its data: the descriptor, the manifests,
/// file system blocks partly used.
pub const CAPTURE_OVERHEAD: u64 = 64 << 10;

/// The most a capture of these data lengths can take on disk: the raw
/// files, plus [`CAPTURE_OVERHEAD`] (compressed chunks are at most a little
/// over their raw size, which the overhead covers).
pub fn estimate(input: u64, output: u64, globals: u64, image: u64) -> u64 {
    [input, output, globals, image]
        .iter()
        .fold(CAPTURE_OVERHEAD, |a, &b| a.saturating_add(b))
        // zstd's worst case on data it cannot compress: 1/256th over.
        .saturating_add((input.saturating_add(output)) / 256)
}

/// `bytes` in the largest binary unit below it, one decimal.
fn human(bytes: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift {
            return format!("{:.1} {unit}", bytes as f64 / (1u64 << shift) as f64);
        }
    }
    format!("{bytes} bytes")
}

/// The free space recording keeps on a file system of `total` bytes.
fn kept_free(total: u64) -> u64 {
    (total / 100 * MIN_FREE_PERCENT).min(MAX_FREE_KEPT)
}

/// A file system's free bytes (for unprivileged writers) and the floor
/// recording keeps free; `None` where the file system does not say.
fn free_space(dir: &Path) -> Option<(u64, u64)> {
    let s = rustix::fs::statvfs(dir).ok()?;
    let unit = Some(s.f_frsize).filter(|&u| u > 0).unwrap_or(s.f_bsize);
    let total = s.f_blocks.saturating_mul(unit);
    (total > 0).then(|| (s.f_bavail.saturating_mul(unit), kept_free(total)))
}

/// A recording's disk budget. See the module docs.
#[derive(Debug)]
pub struct DiskBudget {
    dir: PathBuf,
    max: Option<u64>,
    /// When the recording began: chunk files older than this were there
    /// before and cost it nothing.
    start: SystemTime,
    used: AtomicU64,
    /// Bytes reserved for captures not yet written.
    reserved: AtomicU64,
    /// Free bytes of the file system at the last look (`u64::MAX` where it
    /// does not say), and the floor to keep.
    free: AtomicU64,
    floor: u64,
    /// Chunks already charged.
    charged: Mutex<HashSet<[u8; 32]>>,
    stopped: OnceLock<String>,
}

impl DiskBudget {
    /// The budget of a recording into `dir`: at most `max` bytes written
    /// (`None`: no limit but the free space).
    pub fn new(dir: impl Into<PathBuf>, max: Option<u64>) -> Self {
        let dir = dir.into();
        let (free, floor) = free_space(&dir).unwrap_or((u64::MAX, 0));
        DiskBudget {
            dir,
            max,
            start: SystemTime::now(),
            used: AtomicU64::new(0),
            reserved: AtomicU64::new(0),
            free: AtomicU64::new(free),
            floor,
            charged: Mutex::new(HashSet::new()),
            stopped: OnceLock::new(),
        }
    }

    /// Reserves `bytes` for a capture (see [`estimate`]): `false`, and
    /// recording stopped for good, when that could pass the budget or eat
    /// into the free space kept ([`DiskBudget::try_reserve`], then
    /// [`DiskBudget::stop`]).
    pub fn reserve(&self, bytes: u64) -> bool {
        match self.try_reserve(bytes) {
            Ok(()) => true,
            Err(why) => {
                self.stop(why);
                false
            }
        }
    }

    /// Reserves `bytes` for a capture, or says why that could pass the
    /// budget or eat into the free space kept (and reserves nothing; the
    /// recording goes on). Once recording has stopped, refuses everything.
    pub fn try_reserve(&self, bytes: u64) -> Result<(), String> {
        if let Some(why) = self.stopped.get() {
            return Err(why.clone());
        }
        let reserved = self.reserved.fetch_add(bytes, Ordering::AcqRel) + bytes;
        let used = self.used.load(Ordering::Acquire);
        let free = self.free.load(Ordering::Acquire);
        let why = if let Some(max) = self.max.filter(|&m| used.saturating_add(reserved) > m) {
            format!(
                "the next capture (up to {}) could take the captures past the disk budget of {} \
                 (--max-disk, REPRISE_RECORD_MAX_DISK); {} written",
                human(bytes),
                human(max),
                human(used)
            )
        } else if free != u64::MAX && free.saturating_sub(reserved) < self.floor {
            format!(
                "the next capture (up to {}) could leave the file system of {} with less than \
                 {} free ({MIN_FREE_PERCENT}% of its size, at most {}; {} free); {} written \
                 (set a budget with --max-disk)",
                human(bytes),
                self.dir.display(),
                human(self.floor),
                human(MAX_FREE_KEPT),
                human(free),
                human(used)
            )
        } else {
            return Ok(());
        };
        self.reserved.fetch_sub(bytes, Ordering::AcqRel);
        Err(why)
    }

    /// Stops recording for good, for `why` (said once, as a warning).
    pub fn stop(&self, why: String) {
        if self.stopped.set(why).is_ok() {
            log::warn!("recording stopped: {}", self.stopped().unwrap_or_default());
        }
    }

    /// Bytes reserved by captures not yet written: what a refused
    /// reservation may be waiting on (their sizes are upper bounds).
    pub fn pending(&self) -> u64 {
        self.reserved.load(Ordering::Acquire)
    }

    /// Gives back a reservation of `reserved` bytes, charges `written`, and
    /// looks at the free space again (the writer's thread, after a capture).
    pub fn settle(&self, reserved: u64, written: u64) {
        let _ = self
            .reserved
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| {
                Some(r.saturating_sub(reserved))
            });
        self.used.fetch_add(written, Ordering::AcqRel);
        if let Some((free, _)) = free_space(&self.dir) {
            self.free.store(free, Ordering::Release);
        }
    }

    /// Why recording stopped, once it has.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.get().map(String::as_str)
    }

    /// Bytes the recording wrote, as charged so far.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// The bytes of the chunk files `manifest` names that this recording
    /// has not charged yet and that were made since it began.
    pub fn new_chunk_bytes(&self, store: &ChunkStore, manifest: &Manifest) -> u64 {
        let mut charged = crate::threads::lock(&self.charged);
        let mut bytes = 0;
        for c in manifest.chunks() {
            if !charged.insert(c.hash.0) {
                continue;
            }
            if let Ok(m) = std::fs::metadata(store.chunk_file(&c.hash))
                && m.modified().map_or(true, |t| t >= self.start)
            {
                bytes += m.len();
            }
        }
        bytes
    }
}

#[cfg(test)]
mod tests;
