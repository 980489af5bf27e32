//! Recording from a Rust application: allocate in the recording region, copy
//! in, load an image, launch — and every selected launch becomes a capture.
//!
//! ```no_run
//! # async fn demo<E>(exec: E) -> reprise_std::Result<()>
//! # where E: reprise_core::Executor + 'static, E::Buffer: Send + 'static,
//! #     E::Queue: Send, E::Region: Send {
//! use reprise_core::LaunchConfig;
//! use reprise_std::{Args, RecordConfig, Recorder};
//! let config = RecordConfig::from_env()?.enabled(true).dir("captures");
//! let mut rec = Recorder::new(exec, 0, config)?;
//! let x = rec.alloc(4096, 64)?;
//! rec.upload(x, &[1u8; 4096])?;
//! let image = rec.load_image(&std::fs::read("kernel.so").unwrap())?;
//! let k = rec.kernel(image, "scale")?;
//! let geometry = LaunchConfig { grid: [1, 1, 1], block: [1, 1, 1], shared_mem: 0 };
//! rec.launch(&k, geometry, &Args::new().ptr(x).scalar(4096)).await?;
//! let written = rec.finish().await?;
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use reprise_core::exec::{DeviceRegion, Executor, Queue, RegionRequest, Segment, settle};
use reprise_core::region::{AllocError, BumpRegion};
use reprise_core::schedule::Upload;

use crate::background::{BackgroundWriter, QueueLimit};
use crate::config::{self, RecordConfig, WriterKind};
use crate::error::{CopyKind, Error, Handle, Result};
use crate::exec::{ErrorContext, lock};
use crate::layout::from_start;
use crate::pool::{self, BufferPool};
use crate::store::{CaptureStore, CaptureWriter, DiskBudget, TEMP_PREFIX};

mod args;
mod budget;
mod capture_job;
mod handles;
mod hashing;
mod launch;
mod reachable;
pub use reprise_capture::report;

/// Bytes a fresh recording's region has memory behind from the start; it
/// grows from there as allocations reach past it.
pub const FIRST_BACKED: u64 = 64 << 20;

pub use args::Args;
pub use handles::{ImageId, Kernel, LaunchReport};
use handles::{LoadedImage, NEXT_RECORDER_ID};
pub use hashing::Traffic;

/// Records launches on an executor. See the module docs.
///
/// Copies ([`Recorder::upload`], [`Recorder::download`]) must lie within the
/// recording region or within a global of a loaded image (one the image
/// lists, or one looked up with [`Recorder::global`]); others are refused up
/// front. With recording off ([`RecordConfig::enabled`] false) a recorder
/// launches without recording and touches no file.
pub struct Recorder<E: Executor> {
    id: u64,
    exec: E,
    config: RecordConfig,
    device_id: i32,
    bump: BumpRegion,
    pool: Arc<BufferPool<E::Buffer>>,
    pending: Vec<Upload<E::Buffer>>,
    images: Vec<LoadedImage<E>>,
    allocations: reachable::Allocations,
    /// Device ranges (address, size) of the globals copies may touch.
    globals: Mutex<Vec<(u64, u64)>>,
    /// `None` when recording is off.
    store: Option<Arc<dyn CaptureWriter>>,
    writer: Option<BackgroundWriter>,
    written: Vec<PathBuf>,
    matched: u64,
    recorded: u64,
    /// Each (kernel, geometry)'s launches, for deduplication and the report.
    occurrences: report::Occurrences,
    // Dropped last: in-flight work in `queue` may still use the region.
    queue: E::Queue,
    /// Device-side hashing, when on; dropped after the queue and the
    /// writer, whose work may still use its kernel and device copies.
    hashing: Option<hashing::DeviceHashing<E>>,
    // Kept alive for the recorder's lifetime: the bump allocator hands out
    // its addresses; grown as allocations reach past its usable bytes.
    region: E::Region,
}

impl<E> Recorder<E>
where
    E: Executor,
    E::Buffer: Send + 'static,
{
    /// A recorder on `exec` (its device `device_id`), reserving
    /// [`RecordConfig::region_capacity`] bytes of address space, with
    /// memory put behind it as allocations reach it.
    ///
    /// With recording on, the capture directory is created when missing and
    /// checked to be writable, so that a directory captures cannot go to is
    /// an error here, naming it, rather than at the first capture. With
    /// recording off, nothing on the file system is touched.
    ///
    /// A region size of 0 is an [`Error::Config`]; a region the executor
    /// cannot reserve is an error that gives the size and where it came from.
    pub fn new(exec: E, device_id: i32, config: RecordConfig) -> Result<Self> {
        let id = NEXT_RECORDER_ID.fetch_add(1, Ordering::Relaxed);
        if config.region_size == 0 {
            return Err(config::bad(
                "RecordConfig::region_size",
                "0",
                "the recording region cannot be empty (by default it is as large as the \
                 device's memory)",
            ));
        }
        let store = if config.enabled {
            let store = CaptureStore::with_format(&config.dir, config.fsync, config.format)?;
            check_writable(store.dir(), id)?;
            let store = store.with_budget(DiskBudget::new(&config.dir, config.max_disk));
            Some(Arc::new(store) as Arc<dyn CaptureWriter>)
        } else {
            None
        };
        let capacity = config.region_capacity(exec.memory_size());
        let request = |size: u64| RegionRequest::new(None, size).backed(size.min(FIRST_BACKED));
        let region = match exec.reserve(request(capacity)) {
            Ok(region) => region,
            // A default as large as the device is address space a system
            // may not give (strict overcommit, a limit on address space):
            // the size a region had before it followed the device.
            Err(e) if !config.region_size_chosen() && capacity > config.region_size => {
                log::info!(
                    "no recording region of {} ({e}); reserving {}",
                    size_text(capacity),
                    size_text(config.region_size)
                );
                exec.reserve(request(config.region_size))
                    .context(reserve_context(&config, config.region_size))?
            }
            Err(e) => return Err(Error::executor(reserve_context(&config, capacity), e)),
        };
        let queue = exec.queue().context("creating a queue")?;
        let hashing = hashing::DeviceHashing::new(&exec, &config, store.as_deref())?;
        let writer = match config.writer {
            WriterKind::Background { depth } if config.enabled => {
                let limit = QueueLimit {
                    jobs: depth,
                    bytes: config.queue_bytes,
                };
                // Degraded, not failed: the captures are written on the
                // launching thread, as the synchronous writer does.
                BackgroundWriter::new(limit)
                    .inspect_err(|e| {
                        log::warn!(
                            "no thread for the capture writer ({e}): captures are written \
                             on the launching thread"
                        )
                    })
                    .ok()
            }
            _ => None,
        };
        let captures = if config.enabled {
            format!("captures in {}", config.dir.display())
        } else {
            "recording off".into()
        };
        log::info!(
            "recording region at {:#x} ({} bytes), {captures}",
            region.base(),
            region.reserved()
        );
        Ok(Recorder {
            id,
            bump: BumpRegion::new(region.base(), region.reserved()),
            pool: Arc::new(BufferPool::new(8)),
            pending: Vec::new(),
            images: Vec::new(),
            globals: Mutex::new(Vec::new()),
            allocations: reachable::Allocations::new(config.enabled && config.reachable),
            store,
            writer,
            written: Vec::new(),
            matched: 0,
            recorded: 0,
            occurrences: report::Occurrences::default(),
            exec,
            config,
            device_id,
            queue,
            hashing,
            region,
        })
    }

    /// The executor.
    pub fn executor(&self) -> &E {
        &self.exec
    }

    /// The recording region's allocator.
    pub fn region(&self) -> &BumpRegion {
        &self.bump
    }

    /// The configuration.
    pub fn config(&self) -> &RecordConfig {
        &self.config
    }

    /// Allocates `size` bytes in the recording region (see
    /// [`BumpRegion::alloc`]), with device memory put behind them when they
    /// reach past what the region has (a failure to do so is the executor's
    /// error, and nothing is allocated).
    pub fn alloc(&self, size: u64, align: u64) -> Result<u64> {
        let addr = self.bump.alloc(size, align).map_err(|e| match e {
            AllocError::OutOfSpace { .. } => Error::RegionFull {
                error: e,
                size: match self.config.region_size_var() {
                    Some(v) => format!("REPRISE_RECORD_MEMSIZE={v}"),
                    None => size_text(self.bump.capacity()),
                },
            },
            _ => Error::Alloc(e),
        })?;
        // Rounded as the allocator rounds; cannot overflow, the block fits.
        let end = addr - self.bump.base() + size.next_multiple_of(16);
        if end > self.region.capacity() {
            self.grow(end).inspect_err(|_| {
                let _ = self.bump.free(addr, size);
            })?;
        }
        self.allocations.add(addr, size);
        Ok(addr)
    }

    /// Puts device memory behind the region's first `end` bytes:
    /// geometrically (twice what it has, at least [`FIRST_BACKED`]), so
    /// that many small allocations grow it a few times; just `end` where
    /// the device has no room for more.
    fn grow(&self, end: u64) -> Result<()> {
        let reserved = self.region.reserved();
        let doubled = self
            .region
            .capacity()
            .saturating_mul(2)
            .max(FIRST_BACKED)
            .max(end)
            .min(reserved);
        if self.exec.grow_region(&self.region, doubled).is_ok() && self.region.capacity() >= end {
            return Ok(());
        }
        self.exec
            .grow_region(&self.region, end)
            .context(format!("growing the recording region to {end} bytes"))
    }

    /// Gives back the block at `addr` that [`Recorder::alloc`] returned,
    /// for later allocations to take again (see [`BumpRegion::free`]).
    ///
    /// The recorder's queue runs in order, so work queued before the free
    /// is done with the block before work queued after it reuses it; the
    /// caller promises that nothing else (another queue of the executor,
    /// a download not awaited) still uses it, as with the driver's free.
    /// An address that is not an allocation of this recorder (or was freed
    /// already) is [`Error::Alloc`], and nothing changes.
    pub fn free(&self, addr: u64) -> Result<()> {
        let Some(size) = self.allocations.remove(addr) else {
            return Err(Error::Alloc(AllocError::NotAllocated { addr, size: 0 }));
        };
        self.bump.free(addr, size).map_err(|e| {
            self.allocations.add(addr, size);
            Error::Alloc(e)
        })
    }

    /// Checks that a copy of `len` bytes at `addr` lies within the region or
    /// a known global.
    fn check_copy(&self, copy: CopyKind, addr: u64, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let base = self.bump.base();
        // Copies reach the bytes with memory behind them; `BumpRegion`
        // keeps `base + capacity` within 64 bits.
        let region_end = base + self.region.capacity().min(self.bump.capacity());
        let refused = Error::CopyOutOfRange {
            copy,
            addr,
            len,
            region: [base, region_end],
        };
        let Some(end) = u64::try_from(len).ok().and_then(|l| addr.checked_add(l)) else {
            return Err(refused);
        };
        if addr >= base && end <= region_end {
            return Ok(());
        }
        let globals = lock(&self.globals);
        if globals
            .iter()
            .any(|&(g, size)| addr >= g && end <= g.saturating_add(size))
        {
            return Ok(());
        }
        Err(refused)
    }

    fn staging(&self, len: usize) -> Result<E::Buffer> {
        if pool::rounded_len(len).is_none() {
            return Err(Error::TooLarge {
                what: "a staging buffer",
                bytes: len as u64,
            });
        }
        self.pool
            .get(len, |n| self.exec.buffer(n))
            .map_err(|e| Error::executor(format!("allocating a {len}-byte staging buffer"), e))
    }

    /// Queues a copy of `data` to device address `addr`. It runs before the
    /// next launch (as the first step of a recorded one). A range a copy
    /// may not touch (see [`Recorder`]) is an [`Error::CopyOutOfRange`],
    /// and nothing is queued.
    pub fn upload(&mut self, addr: u64, data: &[u8]) -> Result<()> {
        self.check_copy(CopyKind::Upload, addr, data.len())?;
        let mut buf = self.staging(data.len())?;
        buf.as_mut()[..data.len()].copy_from_slice(data);
        self.pending.push(Upload {
            buffer: buf,
            segment: from_start(addr, data.len()),
        });
        Ok(())
    }

    fn flush_uploads(&mut self) -> Result<()> {
        for up in std::mem::take(&mut self.pending) {
            self.queue
                .upload(up.buffer, nonempty(&up.segment))
                .context("queueing a copy to the device")?;
        }
        Ok(())
    }

    /// Waits for all queued work; returns buffers to the pool.
    ///
    /// Cancel safety: dropped before it completes, it loses nothing; the
    /// next synchronize waits for the same work.
    pub async fn synchronize(&mut self) -> Result<()> {
        self.flush_uploads()?;
        let pool = &mut self.pool;
        settle(&mut self.queue, |_, b| pool.put(b))
            .await
            .context("synchronizing")?;
        if let Some(h) = &mut self.hashing {
            h.settle();
        }
        Ok(())
    }

    /// With device hashing on ([`RecordConfig::device_hashing`]), the bytes
    /// of snapshots its writer has filled so far, by source; `None` when it
    /// is off. Captures still waiting for the writer are not counted yet
    /// ([`Recorder::finish`] waits for them).
    pub fn device_hashing(&self) -> Option<Traffic> {
        self.hashing.as_ref().map(|h| h.traffic())
    }

    /// Copies `len` bytes at device address `addr` back to the host (after
    /// everything queued before), the range checked as for
    /// [`Recorder::upload`].
    ///
    /// Cancel safety: dropped before it completes, the copy may still run
    /// into a buffer the recorder's queue owns (never into freed memory);
    /// the bytes are lost, and the buffer comes back at the next
    /// synchronize.
    pub async fn download(&mut self, addr: u64, len: usize) -> Result<Vec<u8>> {
        self.check_copy(CopyKind::Download, addr, len)?;
        self.flush_uploads()?;
        let buf = self.staging(len)?;
        let seg = from_start(addr, len);
        let ticket = self
            .queue
            .download(buf, nonempty(&seg))
            .context("queueing a copy from the device")?;
        let mut out = None;
        let pool = &mut self.pool;
        settle(&mut self.queue, |t, b| {
            if t == ticket {
                out = Some(b.as_ref()[..len].to_vec());
            }
            pool.put(b);
        })
        .await
        .context("synchronizing")?;
        out.ok_or(Error::Internal("the executor lost a download buffer"))
    }

    /// Loads a device image; its bytes are kept for the captures.
    pub fn load_image(&mut self, bytes: &[u8]) -> Result<ImageId> {
        let image = self.exec.load_image(bytes).context("loading the image")?;
        let mut globals = Vec::new();
        self.exec
            .for_each_global(&image, &mut |g| {
                if g.size > 0 {
                    globals.push((g.name.to_string(), g.addr, g.size));
                }
            })
            .context("listing the image's globals")?;
        lock(&self.globals).extend(globals.iter().map(|g| (g.1, g.2)));
        self.images.push(LoadedImage {
            image,
            bytes: Arc::new(bytes.to_vec()),
            globals,
            ir: None,
        });
        Ok(ImageId {
            recorder: self.id,
            index: self.images.len() - 1,
        })
    }

    /// Keeps the LLVM bitcode `ir` that the loaded `image` was compiled
    /// from: each capture of its kernels then has it beside its image, as
    /// `STEM.bc` (LLVM's recorder's name for it), which `replay --from-ir`
    /// compiles again. Anything but LLVM bitcode (NVVM IR given to
    /// `cuLink*`, say) is an [`Error::NotBitcode`]. The file is written
    /// after the capture, so a capture that lost it still replays from
    /// its image.
    pub fn attach_ir(&mut self, image: ImageId, ir: &[u8]) -> Result<()> {
        let kind = reprise_core::image::sniff(ir);
        if kind != reprise_core::image::ImageKind::Bitcode {
            return Err(Error::NotBitcode {
                kind,
                len: ir.len(),
            });
        }
        self.loaded(image)?;
        self.images[image.index].ir = Some(Arc::new(ir.to_vec()));
        Ok(())
    }

    /// The image `image` names, when this recorder loaded it.
    fn loaded(&self, image: ImageId) -> Result<&LoadedImage<E>> {
        if image.recorder != self.id {
            return Err(Error::ForeignHandle {
                handle: Handle::Image,
            });
        }
        self.images.get(image.index).ok_or(Error::Internal(
            "an image id of this recorder names no image",
        ))
    }

    /// Finds kernel `name` in a loaded image.
    pub fn kernel(&self, image: ImageId, name: &str) -> Result<Kernel<E>> {
        let loaded = self.loaded(image)?;
        let kernel = self
            .exec
            .kernel(&loaded.image, name)
            .context(format!("finding kernel {name}"))?;
        Ok(Kernel {
            kernel,
            recorder: self.id,
            image: image.index,
            name: name.to_string(),
        })
    }

    /// The device address and size of global `name` of a loaded image (to
    /// set it with [`Recorder::upload`], as `omp target update` would).
    pub fn global(&self, image: ImageId, name: &str) -> Result<Option<(u64, u64)>> {
        let loaded = self.loaded(image)?;
        let g = self
            .exec
            .global(&loaded.image, name)
            .context(format!("looking up global {name}"))?;
        let g = g.map(|g| (g.addr, g.size));
        if let Some(range) = g {
            let mut globals = lock(&self.globals);
            if !globals.contains(&range) {
                globals.push(range);
            }
        }
        Ok(g)
    }

    /// Waits for every queued launch and capture write; returns the
    /// descriptors written since the last call.
    ///
    /// Cancel safety: dropping the future while it waits for the device
    /// loses nothing: the captures are written all the same, and the next
    /// call returns their descriptors. (Waiting for the background writer
    /// blocks the calling thread, once the device is done.)
    pub async fn finish(&mut self) -> Result<Vec<PathBuf>> {
        self.synchronize().await?;
        let mut written = std::mem::take(&mut self.written);
        if let Some(w) = &self.writer {
            written.extend(w.flush()?);
        }
        self.write_report()?;
        Ok(written)
    }

    /// Writes the record report, when the configuration asks for one, as
    /// `reprise-PID-N.report.txt` and `.report.json`, `N` this recorder's
    /// number in its process.
    fn write_report(&mut self) -> Result<()> {
        if !self.config.writes_report() {
            return Ok(());
        }
        let Some(store) = &self.store else {
            return Ok(());
        };
        let stem = format!("reprise-{}-{}", std::process::id(), self.id);
        self.occurrences.write(store.dir(), &stem)
    }
}

/// Checks that files can be created in the capture directory `dir`, by
/// creating one under a temporary name and removing it.
fn check_writable(dir: &Path, recorder: u64) -> Result<()> {
    // A probe left by a crash (PIDs repeat, in containers especially) or
    // made by another process sharing the directory takes its name: try
    // the next one.
    let mut attempt = 0u32;
    loop {
        let probe = dir.join(format!(
            "{TEMP_PREFIX}probe.{}.{recorder}.{attempt}",
            std::process::id()
        ));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&probe)
        {
            Ok(_) => {
                return std::fs::remove_file(&probe).map_err(|e| Error::io(&probe, "remove", e));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 64 => {
                attempt += 1;
            }
            Err(e) => {
                return Err(Error::io(dir, "create a file in the capture directory", e));
            }
        }
    }
}

/// What the recorder was doing when the region of `size` bytes could not
/// be reserved: the size, and where it came from.
fn reserve_context(config: &RecordConfig, size: u64) -> String {
    let origin = match config.region_size_var() {
        Some(v) => format!("size from REPRISE_RECORD_MEMSIZE={v}; lower it"),
        None if !config.region_size_chosen() => {
            "the default size (the device's memory, or 1 GiB where unknown); lower it with \
             RecordConfig::region_size or REPRISE_RECORD_MEMSIZE"
                .into()
        }
        None => "size from RecordConfig::region_size; lower it".into(),
    };
    format!(
        "reserving a recording region of {} ({origin})",
        size_text(size)
    )
}

/// `seg` alone, or no copy at all when it has no bytes.
fn nonempty(seg: &Segment) -> &[Segment] {
    if seg.len == 0 {
        &[]
    } else {
        std::slice::from_ref(seg)
    }
}

/// `bytes` in bytes, and in the largest binary unit that divides it.
fn size_text(bytes: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{} {unit} ({bytes} bytes)", bytes >> shift);
        }
    }
    format!("{bytes} bytes")
}
