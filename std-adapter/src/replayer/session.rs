//! A replay's set-up, made once and run many times: the region at its
//! recorded address, the image and kernel, the globals and the snapshot
//! in host buffers, a queue. Each [`Session::run`] then restores the region
//! and globals, launches with a geometry of its own and waits once, so a
//! repetition costs the kernel and the restore, not the set-up.
//!
//! The restore is as cheap as the executor allows: on the host the region
//! is a mapping of the snapshot file (later restores copy from the mapped
//! file); on a GPU a session that will run more than once restores from a
//! pristine copy of the snapshot on the device ([`Restore::FromDevice`]),
//! and uploads where that second copy cannot be had.
//!
//! A snapshot that streams is streamed on a GPU
//! ([`SnapshotSource::stream_into`]) into the pristine copy, or into the
//! region when a single run is expected: no host buffer of the snapshot's
//! size is made. Only a session that runs more than once with no room for
//! the pristine copy decompresses the snapshot whole into a host buffer.

use std::time::{Duration, Instant};

use reprise_core::exec::{
    DeviceRegion, Executor, KernelArgs, Launch, LaunchConfig, Queue, RegionRequest, Segment, settle,
};
use reprise_core::schedule::{self, Buffers, ReplayPlan, Restore};

use super::extra::{ExtraOutput, Extras, settle_one};
use crate::capture::{Capture, Gaps, SnapshotSource, Streamed, checksum_mismatch, global_problem};
use crate::error::{CaptureProblem, Error, Result};
use crate::exec::ErrorContext;
use crate::layout::{from_start, globals_segments};

/// Reservations start on a page boundary.
const PAGE: u64 = 4096;

/// How a session restores the region before each kernel after the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestoreWay {
    /// Uploads the snapshot from a host buffer (on the host: from the mapped
    /// snapshot file).
    Upload,
    /// Copies a pristine copy of the snapshot on the device.
    DeviceCopy,
}

/// One run of a [`Session`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Wall time: restore, launch, output copy (when asked), wait.
    pub time: Duration,
    /// Device time of the kernel, where the executor measures it.
    pub kernel_time: Option<Duration>,
}

/// A capture set up on an executor, ready to run again and again.
pub struct Session<'c, E: Executor> {
    exec: &'c E,
    capture: &'c Capture,
    // Dropped after the queue (fields drop in order): nothing in flight may
    // outlive the region, the pristine copy or the image.
    queue: E::Queue,
    kernel: E::Kernel,
    image: E::Image,
    pristine: Option<E::Region>,
    _region: E::Region,
    /// Memory beyond the region, at its addresses.
    extras: Option<Extras<E>>,
    global_segs: Vec<Segment>,
    buffers: Option<Buffers<E::Buffer>>,
    values: Vec<u64>,
    base: u64,
    len: usize,
    /// The region holds the snapshot and no kernel has run on it yet.
    fresh: bool,
    /// How the snapshot was streamed from the store, when it was: then
    /// `buffers.input` is a staging buffer, not the snapshot.
    streamed: Option<Streamed>,
    /// Whether the last run copied the output back.
    has_output: bool,
}

impl<'c, E: Executor> Session<'c, E> {
    /// Sets `capture` up on `exec` (see the module's documentation). `runs`
    /// says how many runs are expected: more than one, on an executor that
    /// copies on the device, makes the pristine device copy.
    pub async fn new(exec: &'c E, capture: &'c Capture, runs: u32) -> Result<Self> {
        let record = &capture.record;
        let name = record.name.as_str();
        let image_path = capture.image_path().display();
        let base = capture.region_base()?;
        let len = usize::try_from(capture.snapshot_len()).map_err(|_| {
            Error::capture(
                &capture.input.path,
                CaptureProblem::SnapshotBeyondAddressSpace {
                    len: capture.snapshot_len(),
                },
            )
        })?;
        log::info!(
            "replaying {name} of {}: snapshot {}, image {image_path}",
            capture.paths.descriptor.display(),
            capture.input.path.display(),
        );
        let (region, fresh, gaps) = reserve_region(exec, capture, base, len)?;
        log::info!("region placed at {base:#x}: {len} bytes of snapshot");
        let extras = Extras::place(exec, capture)?;
        // The pristine copy, then the queue: dropped in the other order, so
        // that nothing in flight outlives the memory it copies into.
        let pristine = (runs > 1 && exec.copies_on_device() && len > 0)
            .then(|| exec.reserve(RegionRequest::new(None, len as u64)))
            .and_then(|p| {
                p.inspect_err(|e| {
                    log::info!(
                        "no room for a second copy of the {len}-byte snapshot on the device \
                         ({e}); each repetition uploads it"
                    )
                })
                .ok()
            });
        let mut queue = exec.queue().context("creating a queue")?;
        // Every check that needs no run comes before the image is loaded
        // (its constructors run then): the snapshot's checksum here, the
        // image's kernel and globals when the capture was opened.
        let stream_it = !fresh
            && len > 0
            && capture.input.streams()
            && exec.copies_on_device()
            && (runs <= 1 || pristine.is_some());
        let (input, streamed, fresh) = if stream_it {
            let target = pristine.as_ref().map_or(base, |p| p.base());
            let (streamed, mut staging, sum) = capture
                .input
                .stream_into(exec, &mut queue, target, len)
                .await?;
            check_input_sum(capture, sum)?;
            log::info!(
                "streamed {} chunks of {} into the device in {} copies through {} staging \
                 buffers of {} bytes",
                streamed.chunks,
                capture.input.path.display(),
                streamed.batches,
                streamed.buffers,
                streamed.buffer_len
            );
            // A staging buffer stands in for the snapshot, which no restore
            // uploads from.
            let placeholder = staging
                .pop()
                .ok_or(Error::Internal("no staging buffer came back"))?;
            // Streamed into the region itself: it holds the snapshot.
            (placeholder, Some(streamed), pristine.is_none())
        } else {
            let mut input = capture.read_input(exec, len)?;
            if !gaps.is_empty() {
                // The region's bytes that no chunk file was mapped as.
                input = fill_gaps::<E>(&mut queue, input, base, &gaps).await?;
            }
            (input, None, fresh)
        };
        let image = exec
            .load_image(&capture.image)
            .context(format!("loading {image_path}"))?;
        log::info!("image loaded: {image_path}");
        let kernel = exec
            .kernel(&image, name)
            .context(format!("finding kernel {name} in {image_path}"))?;
        let (global_segs, globals) = stage_globals(exec, capture, &image)?;
        let mut buffers = Buffers {
            input,
            globals,
            output: None,
        };
        if let (Some(p), None) = (&pristine, streamed) {
            let what = "copying the snapshot to the device";
            queue
                .upload(buffers.input, &[from_start(p.base(), len)])
                .context(what)?;
            buffers.input = settle_one(&mut queue, what).await?;
        }
        Ok(Session {
            exec,
            capture,
            queue,
            kernel,
            image,
            pristine,
            _region: region,
            extras,
            global_segs,
            buffers: Some(buffers),
            values: record.arg_values().to_vec(),
            base,
            len,
            fresh,
            streamed,
            has_output: false,
        })
    }

    /// How the snapshot was streamed from the chunk store into the device,
    /// when it was (a chunked snapshot on a GPU); `None` when it was read
    /// into a host buffer (or mapped).
    pub fn streamed(&self) -> Option<Streamed> {
        self.streamed
    }

    /// How runs after the first restore the region.
    pub fn restore_way(&self) -> RestoreWay {
        if self.pristine.is_some() {
            RestoreWay::DeviceCopy
        } else {
            RestoreWay::Upload
        }
    }

    /// Restores the region and globals, launches with `config`, copies the
    /// region back when `output` says, and waits once.
    pub async fn run(&mut self, config: LaunchConfig, output: bool) -> Result<Run> {
        if self.buffers.is_none() {
            // A failed run lost them.
            self.recover().await?;
        }
        if self.streamed.is_some() && self.pristine.is_none() && !self.fresh {
            // Streamed into the region for one run, and run again: the
            // snapshot is in no host buffer to upload from, so it is
            // streamed again.
            self.restream().await?;
        }
        let record = &self.capture.record;
        let args = KernelArgs {
            values: &self.values,
            sizes: &record.arg_sizes,
            data: &record.arg_data,
        };
        let restore = match (&self.pristine, self.fresh) {
            (_, true) => Restore::Nothing,
            (Some(p), false) => Restore::FromDevice(p.base()),
            (None, false) => Restore::Upload,
        };
        let plan = ReplayPlan {
            kernel: &self.kernel,
            launch: Launch { config, args },
            memory: from_start(self.base, self.len),
            globals: &self.global_segs,
            save_output: output,
            restore,
        };
        if output
            && let Some(b) = &mut self.buffers
            && b.output.is_none()
        {
            b.output = Some(
                self.exec
                    .buffer(self.len)
                    .context("allocating the output buffer")?,
            );
        }
        if let Some(x) = &mut self.extras {
            x.restore(&mut self.queue, self.exec).await?;
        }
        let buffers = self
            .buffers
            .take()
            .ok_or(Error::Internal("a failed run lost the session's buffers"))?;
        let start = Instant::now();
        // Whatever happens now, the region no longer holds the snapshot.
        self.fresh = false;
        self.has_output = false;
        // On an error the schedule's buffers went into the queue or with it:
        // a session that goes on (a sweep's next configuration) gets new
        // ones at its next run.
        let buffers = schedule::replay(&mut self.queue, plan, buffers, drop)
            .await
            .map_err(|e| Error::schedule(format!("replaying {}", record.name), e))?;
        let time = start.elapsed();
        log::info!(
            "kernel {} launched and done: grid {:?}, block {:?}, in {time:?}",
            record.name,
            config.grid,
            config.block
        );
        self.buffers = Some(buffers);
        if output && let Some(x) = &mut self.extras {
            x.read_back(&mut self.queue, self.exec).await?;
        }
        self.has_output = output;
        Ok(Run {
            time,
            kernel_time: self.queue.last_kernel_time(),
        })
    }

    /// After a failed run: waits for what was queued (an error it reports is
    /// the failure's own), drops the buffers that come back, and stages the
    /// snapshot and globals in new ones.
    async fn recover(&mut self) -> Result<()> {
        let _ = settle(&mut self.queue, |_, _| {}).await;
        let input = if self.streamed.is_some() {
            // A stand-in, as after streaming (see `new`); `run` streams the
            // snapshot again when there is no pristine copy to restore from.
            self.exec
                .buffer(PAGE as usize)
                .context("allocating a staging buffer")?
        } else {
            self.capture.input.read_into(self.exec, self.len)?
        };
        let (_, globals) = stage_globals(self.exec, self.capture, &self.image)?;
        self.buffers = Some(Buffers {
            input,
            globals,
            output: None,
        });
        Ok(())
    }

    /// Streams the snapshot from the store into the region again (a
    /// session streamed for one run that runs again); the region then
    /// holds it, as after `new`.
    async fn restream(&mut self) -> Result<()> {
        let (_, _, sum) = self
            .capture
            .input
            .stream_into(self.exec, &mut self.queue, self.base, self.len)
            .await?;
        check_input_sum(self.capture, sum)?;
        self.fresh = true;
        Ok(())
    }

    /// Where the capture's memory beyond the region was placed (which
    /// route ran), one line per span; empty when it has none.
    pub fn extra_placements(&self) -> &[String] {
        self.extras.as_ref().map_or(&[], |x| x.placements())
    }

    /// The bytes of the capture's extra ranges after the last run, when it
    /// copied them back, with the recorded ones and the ranges.
    pub fn extra_output(&self) -> Option<ExtraOutput<'_>> {
        if !self.has_output {
            return None;
        }
        self.extras.as_ref()?.outputs()
    }

    /// The region's bytes after the last run, when it copied them back.
    pub fn output(&self) -> Option<&[u8]> {
        if !self.has_output {
            return None;
        }
        let out = self.buffers.as_ref()?.output.as_ref()?;
        Some(&out.as_ref()[..self.len])
    }
}

/// Checks the checksum of the snapshot's bytes as streamed against the
/// descriptor's, as [`Capture::check_input`] checks bytes read whole.
fn check_input_sum(capture: &Capture, got: u64) -> Result<()> {
    match capture.record.checksums.input {
        Some(want) if capture.verify_snapshots && got != want => {
            Err(checksum_mismatch(&capture.input.path, want, got))
        }
        _ => Ok(()),
    }
}

/// Reserves the address space the recording reserved, where known (a
/// driver that places reservations itself then most likely repeats the
/// recording's address), with memory behind the snapshot only (LLVM records
/// 64 GiB regions); just the snapshot where that much cannot be had. The
/// snapshot file is mapped as the region where the executor can (`true`).
///
/// A base that is not page-aligned (LLVM 16's region is a `malloc`: a
/// page and 16 bytes) is reserved from its page, and the snapshot lands at
/// the recorded byte address.
fn reserve_region<E: Executor>(
    exec: &E,
    capture: &Capture,
    base: u64,
    len: usize,
) -> Result<(E::Region, bool, Gaps)> {
    let start = base / PAGE * PAGE;
    let lead = base - start;
    let snapshot_request = RegionRequest::new(Some(start), (lead + len as u64).max(PAGE));
    let recorded_request = capture
        .record
        .region_size
        .map(|size| size.saturating_add(lead))
        .filter(|&size| size > snapshot_request.capacity)
        .map(|capacity| {
            RegionRequest::new(Some(start), capacity).backed(snapshot_request.capacity)
        });
    for request in recorded_request.into_iter().chain([snapshot_request]) {
        // (A file maps only from a page boundary.)
        if let Some(r) = capture
            .input
            .map(len as u64)
            .filter(|_| lead == 0)
            .map(|file| exec.reserve_mapped(request, file))
            .transpose()
            .map(Option::flatten)
            .context(format!(
                "mapping {} as the region",
                capture.input.path.display()
            ))?
        {
            return Ok((r, true, Vec::new()));
        }
        // A store snapshot: its plain chunk files mapped as the region, the
        // gaps filled once the snapshot is read and checked.
        if lead == 0
            && let Some((r, gaps)) = capture.input.reserve_mapped(exec, request)?
        {
            return Ok((r, true, gaps));
        }
        match exec.reserve(request) {
            Ok(r) => return Ok((r, false, Vec::new())),
            Err(e) if request == snapshot_request => {
                return Err(Error::executor(
                    format!("reserving the recorded region at {base:#x} ({len} bytes)"),
                    e,
                ));
            }
            Err(e) => log::debug!(
                "reserving the recorded {} bytes failed ({e}); trying the snapshot's",
                request.capacity
            ),
        }
    }
    Err(Error::Internal("no region was reserved"))
}

/// Uploads the ranges `gaps` (`(offset, len)` from `base`) of the snapshot
/// in `input` into the region, and waits: the region then holds the
/// snapshot whole, around the chunk files mapped as it.
async fn fill_gaps<E: Executor>(
    queue: &mut E::Queue,
    input: E::Buffer,
    base: u64,
    gaps: &[(u64, u64)],
) -> Result<E::Buffer> {
    let segs: Vec<Segment> = gaps
        .iter()
        .map(|&(offset, len)| Segment {
            device: base + offset,
            host_offset: offset as usize,
            len: len as usize,
        })
        .collect();
    let what = "copying the snapshot's compressed chunks into the region";
    queue.upload(input, &segs).context(what)?;
    settle_one(queue, what).await
}

/// The recorded globals, each checked against the image's (present, same
/// size), laid out in one host buffer: its segments and the buffer (none
/// without globals).
fn stage_globals<E: Executor>(
    exec: &E,
    capture: &Capture,
    image: &E::Image,
) -> Result<(Vec<Segment>, Option<E::Buffer>)> {
    let mut recorded = Vec::new();
    for g in capture.globals() {
        let info = exec
            .global(image, g.name)
            .context(format!("looking up global {}", g.name))?;
        if let Some(e) = global_problem(
            &capture.paths.globals,
            capture.image_path(),
            g.name,
            g.bytes.len(),
            info.as_ref().map(|i| i.size),
        ) {
            return Err(e);
        }
        let Some(info) = info else {
            return Err(Error::Internal("a global checked present went missing"));
        };
        recorded.push((info.addr, g.bytes));
    }
    let (segs, len) = globals_segments(recorded.iter().map(|(a, b)| (*a, b.len() as u64)))?;
    if segs.is_empty() {
        return Ok((segs, None));
    }
    let mut b = exec.buffer(len).context("allocating the globals buffer")?;
    for (seg, (_, bytes)) in segs.iter().zip(&recorded) {
        b.as_mut()[seg.host_offset..seg.host_offset + seg.len].copy_from_slice(bytes);
    }
    Ok((segs, Some(b)))
}
