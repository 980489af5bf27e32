//! Device-side hashing ([`RecordConfig::device_hashing`]): a recorded
//! launch copies the region on the device and hashes its store chunks
//! there, and the capture writer copies to the host only the chunks it has
//! nowhere else.
//!
//! The launching thread's schedule ([`record`]) is the ordinary one with
//! each snapshot's download replaced by a device-to-device copy of the
//! region and the hashing kernel on that copy, and the hashes downloaded
//! (32 bytes a chunk). The writer ([`fill`]) then fills each snapshot's host
//! buffer from the last capture it wrote and the chunk store (by hash) and,
//! for the rest only, the device copy, on a queue of its own; the capture
//! is written from those bytes as any other, so it is the same capture.
//!
//! The recorder needs the core contract ([`Executor::copies_on_device`])
//! and a hashing kernel for the executor's kind
//! ([`crate::executors::chunk_hash_kernel`]). A copy that cannot be
//! reserved leaves that launch to the ordinary schedule, with a warning.
//!
//! [`RecordConfig::device_hashing`]: crate::RecordConfig::device_hashing

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use reprise_core::exec::{
    DeviceRegion, Executor, KernelArgs, Launch, LaunchConfig, Queue, RegionRequest, Segment, Ticket,
};
use reprise_core::schedule::{self, LaunchPlan, ScheduleError, SnapshotStep, Upload};

use crate::config::{CaptureFormat, RecordConfig, bad};
use crate::error::{Error, Result};
use crate::exec::{ErrorContext, lock};
use crate::executors::{ChunkHashKernel, chunk_hash_kernel};
use crate::layout::from_start;
use crate::pool::take_smallest;
use crate::store::{CaptureWriter, ChunkHash};

mod fill;

pub use fill::Traffic;
pub(super) use fill::{Filled, Pending, Reader};

/// Device copies kept idle for later launches, at most.
const KEEP_IDLE: usize = 2;

/// Where things lie in a device copy: the region's bytes, their hashes
/// (and the kernel's scratch) for the input and, when saved, the output.
#[derive(Debug, Clone, Copy)]
struct Layout {
    input: u64,
    input_hashes: u64,
    output: Option<(u64, u64)>,
    size: u64,
}

/// Rounds `n` up to a multiple of 256 (the alignment the kernel's words
/// and the copies like).
fn align(n: u64) -> u64 {
    n.div_ceil(256) * 256
}

impl Layout {
    fn new(len: usize, chunk_size: u32, output: bool, spec: &ChunkHashKernel) -> Layout {
        let len = len as u64;
        let hashes = (spec.out_bytes)(len, chunk_size);
        let input_hashes = align(len);
        let end = align(input_hashes + hashes);
        let (output, size) = if output {
            let h = align(end + len);
            (Some((end, h)), align(h + hashes))
        } else {
            (None, end)
        };
        Layout {
            input: 0,
            input_hashes,
            output,
            size,
        }
    }
}

/// A recorder's device hashing: the kernel, the device copies, and what
/// its writer shares with it.
pub(super) struct DeviceHashing<E: Executor> {
    // Declared before the image: dropped before it.
    kernel: E::Kernel,
    _image: E::Image,
    spec: ChunkHashKernel,
    chunk_size: u32,
    /// Device copies no capture uses, for the next launches.
    idle: Arc<Mutex<Vec<E::Region>>>,
    /// The copy of a launch whose schedule has not completed (its future
    /// may have been dropped): the queue may still write it, so it is kept
    /// until a synchronize covers it.
    in_flight: Vec<E::Region>,
    reader: Arc<Mutex<Reader<E>>>,
    /// Set when the device's hashes disagreed with the bytes: device
    /// hashing is off for good.
    distrusted: Arc<AtomicBool>,
    /// A copy could not be reserved already (said once as a warning).
    warned: bool,
}

impl<E: Executor> DeviceHashing<E> {
    /// Device hashing on `exec` as `config` asks (`None` when it does not),
    /// or why it cannot be had.
    pub(super) fn new(
        exec: &E,
        config: &RecordConfig,
        writer: Option<&dyn CaptureWriter>,
    ) -> Result<Option<Self>> {
        if !config.enabled || !config.device_hashing {
            return Ok(None);
        }
        let var = "RecordConfig::device_hashing (REPRISE_RECORD_DEVICE_HASHING)";
        let refuse = |problem: String| bad(var, "on", problem);
        if config.format != CaptureFormat::Store {
            return Err(refuse(format!(
                "device hashing copies only the chunks the store lacks; the {} format keeps \
                 no store (record in the store format, or without device hashing)",
                config.format.as_str()
            )));
        }
        if config.reachable {
            return Err(refuse(
                "device hashing hashes the region as it is, and reachable-only recording \
                 poisons what a launch cannot reach: use one or the other"
                    .into(),
            ));
        }
        let feature = "device-side hashing (reprise has no hashing kernel for it; record \
                       without REPRISE_RECORD_DEVICE_HASHING)";
        let Some(spec) = chunk_hash_kernel(E::KIND) else {
            return Err(Error::Unsupported {
                backend: E::KIND,
                feature,
            });
        };
        if !exec.copies_on_device() {
            return Err(Error::Unsupported {
                backend: E::KIND,
                feature: "device-side hashing (its queues do not copy on the device)",
            });
        }
        let doing = |what: &str| {
            format!(
                "{what} for device hashing (REPRISE_RECORD_DEVICE_HASHING; this executor may \
                 not run reprise's own kernels: record without it)"
            )
        };
        let image = exec
            .load_image(spec.image)
            .context(doing("loading the chunk-hashing kernel"))?;
        let kernel = exec
            .kernel(&image, spec.name)
            .context(doing("finding the chunk-hashing kernel"))?;
        let queue = exec.queue().context(doing("creating the writer's queue"))?;
        // The store's chunk size decides the chunks hashed.
        let known = writer
            .ok_or(Error::Internal("device hashing without a writer"))?
            .known_chunks()?
            .ok_or(Error::Internal(
                "device hashing in a format that keeps no chunks",
            ))?;
        Ok(Some(DeviceHashing {
            kernel,
            _image: image,
            spec,
            chunk_size: known.chunk_size(),
            idle: Arc::new(Mutex::new(Vec::new())),
            in_flight: Vec::new(),
            reader: Arc::new(Mutex::new(Reader::new(queue, known))),
            distrusted: Arc::new(AtomicBool::new(false)),
            warned: false,
        }))
    }

    /// The bytes the writer filled snapshots with so far, by source.
    pub(super) fn traffic(&self) -> Traffic {
        lock(&self.reader).traffic()
    }

    /// The hashing side of [`record`]: the snapshots of the region at
    /// `region` copied into `copy`.
    pub(super) fn plan<'a>(&'a self, region: u64, copy: &'a Copy) -> Plan<'a, E::Kernel> {
        Plan {
            hash_kernel: &self.kernel,
            threads: self.spec.threads,
            chunk_size: self.chunk_size,
            region,
            copy,
        }
    }

    /// A device copy for a snapshot of `len` bytes (and its output, when
    /// saved), placed in flight: `None` when this launch takes the ordinary
    /// path (nothing to hash, device hashing given up, or no device memory
    /// for the copy: a warning says so, once).
    pub(super) fn take_copy(&mut self, exec: &E, len: usize, output: bool) -> Option<Copy> {
        if len == 0 || self.distrusted.load(Ordering::Relaxed) {
            return None;
        }
        let layout = Layout::new(len, self.chunk_size, output, &self.spec);
        let chunks = (len as u64).div_ceil(u64::from(self.chunk_size));
        if chunks > u64::from(i32::MAX as u32) {
            return None;
        }
        let fits = |capacity| capacity >= layout.size;
        let idle = take_smallest(&mut lock(&self.idle), |r| r.capacity(), fits);
        let region = match idle {
            Some(r) => r,
            None => {
                // Room to grow, as the host's staging buffers have.
                let size = crate::pool::rounded_len(layout.size as usize)
                    .map_or(layout.size, |n| n as u64);
                match exec.reserve(RegionRequest::new(None, size)) {
                    Ok(r) => r,
                    Err(e) => {
                        let text = format!(
                            "device hashing: no device memory for a {size}-byte copy of the \
                             region ({e}); this launch's snapshots are copied to the host whole"
                        );
                        if self.warned {
                            log::debug!("{text}");
                        } else {
                            log::warn!("{text}");
                            self.warned = true;
                        }
                        return None;
                    }
                }
            }
        };
        let base = region.base();
        self.in_flight.push(region);
        Some(Copy {
            base,
            layout,
            len,
            chunks: chunks as usize,
        })
    }

    /// The copy `copy` named, once its schedule completed: out of flight,
    /// for the writer to read and give back.
    pub(super) fn complete(&mut self, copy: &Copy) -> Option<E::Region> {
        let i = self.in_flight.iter().position(|r| r.base() == copy.base)?;
        Some(self.in_flight.swap_remove(i))
    }

    /// After a synchronize: copies of schedules that never completed (their
    /// futures dropped) are idle again.
    pub(super) fn settle(&mut self) {
        let mut idle = lock(&self.idle);
        idle.append(&mut self.in_flight);
        idle.truncate(KEEP_IDLE.max(1));
    }

    /// What the writer needs to fill the snapshots of a launch recorded
    /// with `copy` (in `region`), whose hashes are `hashes`.
    pub(super) fn pending(
        &self,
        copy: &Copy,
        region: E::Region,
        hashes: &[u8],
    ) -> Result<Pending<E>> {
        let n = copy.chunks;
        let parse = |bytes: &[u8]| -> Vec<ChunkHash> {
            bytes
                .chunks_exact(32)
                .map(|h| ChunkHash(h.try_into().unwrap_or([0; 32])))
                .collect()
        };
        if hashes.len() < copy.hash_bytes() {
            return Err(Error::Internal("the hashes' buffer is too short"));
        }
        Ok(Pending {
            region,
            len: copy.len,
            chunk_size: self.chunk_size,
            input: (copy.base + copy.layout.input, parse(&hashes[..32 * n])),
            output: copy
                .layout
                .output
                .map(|(o, _)| (copy.base + o, parse(&hashes[32 * n..64 * n]))),
            reader: self.reader.clone(),
            idle: self.idle.clone(),
            keep_idle: KEEP_IDLE,
            distrusted: self.distrusted.clone(),
        })
    }
}

/// A launch's device copy: where it is and how it is laid out.
#[derive(Debug, Clone)]
pub(super) struct Copy {
    base: u64,
    layout: Layout,
    len: usize,
    chunks: usize,
}

impl Copy {
    /// Bytes of device memory it holds.
    pub(super) fn bytes(&self) -> u64 {
        self.layout.size
    }

    /// Bytes of hashes its schedule downloads.
    pub(super) fn hash_bytes(&self) -> usize {
        32 * self.chunks * (1 + usize::from(self.layout.output.is_some()))
    }
}

/// How [`record`] takes the snapshots: the hashing kernel and the copy.
pub(super) struct Plan<'a, K> {
    pub hash_kernel: &'a K,
    pub threads: u32,
    pub chunk_size: u32,
    /// The region's base.
    pub region: u64,
    pub copy: &'a Copy,
}

/// What [`record`] hands back: the globals' snapshot and the hashes.
pub(super) struct Recorded<B> {
    pub globals: Option<B>,
    pub hashes: B,
}

/// Records `launch` with device hashing (see the module docs) through
/// [`schedule::record_with`] and [`Hashing`], the hashes downloaded into
/// `hashes` (at least [`Copy::hash_bytes`]). Buffers that are not the
/// globals' or the hashes' go to `recycle`.
///
/// Cancel safety as [`reprise_core::schedule::record`]: every buffer is
/// the queue's until a synchronize, and the device copy is kept in flight
/// by the caller until one covers it.
pub(super) async fn record<Q: Queue>(
    queue: &mut Q,
    uploads: impl IntoIterator<Item = Upload<Q::Buffer>>,
    launch: LaunchPlan<'_, Q::Kernel>,
    plan: Plan<'_, Q::Kernel>,
    globals: Option<Q::Buffer>,
    hashes: Q::Buffer,
    mut recycle: impl FnMut(Q::Buffer),
) -> std::result::Result<Recorded<Q::Buffer>, ScheduleError<Q::Error>>
where
    Q::Buffer: AsRef<[u8]>,
{
    let no_globals = launch.globals.is_empty();
    let step = Hashing {
        plan: &plan,
        hashes: Some(hashes),
        ticket: None,
        got: None,
    };
    let (hashes, globals) =
        schedule::record_with(queue, uploads, launch, globals, step, &mut recycle).await?;
    // A globals buffer given for no globals was never enqueued.
    let globals = match globals {
        Some(g) if no_globals => {
            recycle(g);
            None
        }
        other => other,
    };
    Ok(Recorded { globals, hashes })
}

/// The snapshot step of device hashing: the region copied on the device
/// and hashed there, before the kernel and (when saved) after it; then
/// the hashes downloaded, 32 bytes a chunk.
struct Hashing<'p, 'a, K, B> {
    plan: &'p Plan<'a, K>,
    hashes: Option<B>,
    ticket: Option<Ticket>,
    got: Option<B>,
}

impl<K, B> Hashing<'_, '_, K, B> {
    /// Copies the region as it is now into the copy at `at`, and hashes it
    /// into `hashes_at`.
    fn snapshot<Q: Queue<Kernel = K>>(
        &self,
        queue: &mut Q,
        at: u64,
        hashes_at: u64,
    ) -> std::result::Result<(), ScheduleError<Q::Error>> {
        let plan = self.plan;
        let len = plan.copy.len;
        if !queue.copy_on_device(plan.copy.base + at, plan.region, len)? {
            return Err(ScheduleError::NoDeviceCopy);
        }
        let values = [
            plan.copy.base + at,
            len as u64,
            plan.copy.base + hashes_at,
            u64::from(plan.chunk_size),
        ];
        let launch = Launch {
            config: LaunchConfig {
                grid: [plan.copy.chunks as u32, 1, 1],
                block: [plan.threads.max(1), 1, 1],
                shared_mem: 0,
            },
            args: KernelArgs {
                values: &values,
                sizes: &[8, 8, 8, 4],
                data: &[],
            },
        };
        queue.launch(plan.hash_kernel, &launch)?;
        Ok(())
    }
}

impl<Q: Queue> SnapshotStep<Q> for Hashing<'_, '_, Q::Kernel, Q::Buffer>
where
    Q::Buffer: AsRef<[u8]>,
{
    type Taken = Q::Buffer;

    fn check(&self) -> std::result::Result<(), ScheduleError<Q::Error>> {
        match &self.hashes {
            Some(h) if h.as_ref().len() >= self.plan.copy.hash_bytes() => Ok(()),
            _ => Err(ScheduleError::MissingBuffer("hashes")),
        }
    }

    fn before(&mut self, queue: &mut Q) -> std::result::Result<(), ScheduleError<Q::Error>> {
        let layout = self.plan.copy.layout;
        self.snapshot(queue, layout.input, layout.input_hashes)
    }

    fn saves_output(&self) -> bool {
        self.plan.copy.layout.output.is_some()
    }

    fn after(&mut self, queue: &mut Q) -> std::result::Result<(), ScheduleError<Q::Error>> {
        match self.plan.copy.layout.output {
            Some((o, h)) => self.snapshot(queue, o, h),
            None => Ok(()),
        }
    }

    fn last(&mut self, queue: &mut Q) -> std::result::Result<(), ScheduleError<Q::Error>> {
        let copy = self.plan.copy;
        let n = 32 * copy.chunks;
        let mut segs = vec![from_start(copy.base + copy.layout.input_hashes, n)];
        if let Some((_, h)) = copy.layout.output {
            segs.push(Segment {
                device: copy.base + h,
                host_offset: n,
                len: n,
            });
        }
        let hashes = self
            .hashes
            .take()
            .ok_or(ScheduleError::MissingBuffer("hashes"))?;
        self.ticket = Some(queue.download(hashes, &segs)?);
        Ok(())
    }

    fn take(&mut self, ticket: Ticket, buffer: Q::Buffer) -> Option<Q::Buffer> {
        if Some(ticket) == self.ticket {
            self.got = Some(buffer);
            None
        } else {
            Some(buffer)
        }
    }

    fn finish(self) -> std::result::Result<Q::Buffer, ScheduleError<Q::Error>> {
        self.got.ok_or(ScheduleError::LostBuffer("hashes"))
    }
}
