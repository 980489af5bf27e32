//! The launch schedules: recording and replaying one kernel launch on a queue.
//!
//! Recording ([`record`]) drives a [`Queue`] through
//!
//! 1. **H2D**: the application's pending host-to-device copies;
//! 2. **D2H info**: the region snapshot `[base, base + used)` and every global;
//! 3. **kernel**: the launch itself;
//! 4. **D2H output**: the region after the kernel (when asked);
//!
//! then **one synchronize** ([`Mode::Async`]). [`Mode::Sync`] synchronizes after
//! every step instead, as LLVM's recorder does, so that the two can be measured
//! against each other.
//!
//! Replaying ([`replay`]) restores the globals and the memory snapshot,
//! launches, copies the output back (when asked) and synchronizes once.
//!
//! ## Cancellation
//!
//! These futures never own memory the device touches: every buffer is moved
//! into the queue when its copy is enqueued and stays there until a
//! synchronize has completed it (see [`crate::exec`]). Dropping a future
//! mid-flight is therefore safe at any await point; the enqueued work runs to
//! completion and its buffers come back from the queue's next synchronize
//! (which hands stale buffers to the `recycle` callback) or are freed by the
//! queue's `Drop` after it has waited for the device. The futures do not wait
//! in `Drop`.

use core::fmt;

use crate::exec::{Launch, Queue, Segment, Ticket};

mod step;

pub use step::{Download, SnapshotStep};

/// Whether to synchronize once or after every step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// One synchronize at the end (reprise's way).
    Async,
    /// A synchronize after every step (LLVM's way).
    Sync,
}

/// A pending host-to-device copy of the application.
#[derive(Debug)]
pub struct Upload<B> {
    /// The bytes to copy.
    pub buffer: B,
    /// Where they go.
    pub segment: Segment,
}

/// What to record.
#[derive(Debug)]
pub struct RecordPlan<'a, K> {
    /// The kernel to launch.
    pub kernel: &'a K,
    /// Its geometry and arguments.
    pub launch: Launch<'a>,
    /// The region's used prefix: `device` = base, `len` = used bytes,
    /// `host_offset` into the input (and output) buffer.
    pub snapshot: Segment,
    /// One segment per global, into the globals buffer.
    pub globals: &'a [Segment],
    /// Whether to copy the region back after the kernel.
    pub save_output: bool,
    /// Synchronize once or after every step.
    pub mode: Mode,
}

/// What to launch while recording, whatever takes the snapshots
/// ([`record_with`]).
#[derive(Debug)]
pub struct LaunchPlan<'a, K> {
    /// The kernel to launch.
    pub kernel: &'a K,
    /// Its geometry and arguments.
    pub launch: Launch<'a>,
    /// One segment per global, into the globals buffer.
    pub globals: &'a [Segment],
    /// Synchronize once or after every step.
    pub mode: Mode,
}

/// What to replay.
#[derive(Debug)]
pub struct ReplayPlan<'a, K> {
    /// The kernel to launch.
    pub kernel: &'a K,
    /// Its geometry and arguments.
    pub launch: Launch<'a>,
    /// Where the memory snapshot goes (`device` = region base).
    pub memory: Segment,
    /// One segment per global, from the globals buffer.
    pub globals: &'a [Segment],
    /// Whether to copy the region back after the kernel.
    pub save_output: bool,
    /// How the region gets the memory snapshot before the kernel.
    pub restore: Restore,
}

/// How a replay restores the region before its kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restore {
    /// Upload the snapshot from the input buffer.
    Upload,
    /// Copy it on the device from a pristine copy at this address
    /// ([`Queue::copy_on_device`]): a repeated replay's restore, which on a
    /// GPU takes a fraction of an upload's time.
    FromDevice(u64),
    /// Nothing: the region holds the snapshot already (an executor that
    /// maps the snapshot file as the region, before the first kernel).
    Nothing,
}

// Manual impls: the plans hold `&K`, which is `Copy` whatever `K` is.
impl<K> Clone for RecordPlan<'_, K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K> Copy for RecordPlan<'_, K> {}
impl<K> Clone for ReplayPlan<'_, K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K> Copy for ReplayPlan<'_, K> {}

/// The host buffers of a schedule: handed in empty (record) or filled
/// (replay), handed back when the schedule completes.
#[derive(Debug)]
pub struct Buffers<B> {
    /// The pre-kernel memory snapshot (a replay reads it only when it
    /// restores by [`Restore::Upload`]).
    pub input: B,
    /// The globals' contents, laid out as the plan's global segments say.
    pub globals: Option<B>,
    /// The post-kernel memory snapshot.
    pub output: Option<B>,
}

/// Why a schedule failed.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScheduleError<E> {
    /// The executor reported an error.
    Executor(E),
    /// A segment does not fit its host buffer.
    SegmentOutOfBounds {
        /// Offset plus length of the segment.
        end: usize,
        /// The buffer's length.
        buffer: usize,
    },
    /// The plan saves output (or globals) but no buffer was given for it.
    MissingBuffer(&'static str),
    /// The queue did not hand back a buffer after synchronizing (an executor
    /// bug).
    LostBuffer(&'static str),
    /// The plan restores from a device copy, which the queue cannot make.
    NoDeviceCopy,
}

impl<E: fmt::Display> fmt::Display for ScheduleError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::Executor(e) => e.fmt(f),
            ScheduleError::SegmentOutOfBounds { end, buffer } => write!(
                f,
                "a copy reaches byte {end} of a host buffer of {buffer} bytes"
            ),
            ScheduleError::MissingBuffer(which) => write!(f, "no {which} buffer was provided"),
            ScheduleError::NoDeviceCopy => {
                f.write_str("the plan restores memory on the device, which this queue cannot copy")
            }
            ScheduleError::LostBuffer(which) => {
                write!(
                    f,
                    "the executor did not return the {which} buffer after synchronizing"
                )
            }
        }
    }
}

impl<E: core::error::Error + 'static> core::error::Error for ScheduleError<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            ScheduleError::Executor(e) => e.source(),
            _ => None,
        }
    }
}

impl<E> From<E> for ScheduleError<E> {
    fn from(e: E) -> Self {
        ScheduleError::Executor(e)
    }
}

pub(crate) fn check<B: AsRef<[u8]>, E>(
    buf: &B,
    segments: &[Segment],
) -> Result<(), ScheduleError<E>> {
    Segment::check_all(segments, buf.as_ref().len()).map_err(|e| {
        ScheduleError::SegmentOutOfBounds {
            end: e.end(),
            buffer: e.buffer,
        }
    })
}

/// Checks that every buffer the plan uses is there and large enough, before
/// anything is enqueued (the input buffer only when `input` says the plan
/// copies through it).
fn check_buffers<B: AsRef<[u8]>, E>(
    buffers: &Buffers<B>,
    input: bool,
    memory: &[Segment],
    globals: &[Segment],
    save_output: bool,
) -> Result<(), ScheduleError<E>> {
    if input {
        check(&buffers.input, memory)?;
    }
    if !globals.is_empty() {
        check(
            buffers
                .globals
                .as_ref()
                .ok_or(ScheduleError::MissingBuffer("globals"))?,
            globals,
        )?;
    }
    if save_output {
        check(
            buffers
                .output
                .as_ref()
                .ok_or(ScheduleError::MissingBuffer("output"))?,
            memory,
        )?;
    }
    Ok(())
}

/// A zero-length snapshot copies nothing (LLVM failed on those).
pub(crate) fn nonempty(seg: &Segment) -> &[Segment] {
    if seg.len == 0 {
        &[]
    } else {
        core::slice::from_ref(seg)
    }
}

async fn synchronize<Q: Queue>(queue: &mut Q) -> Result<(), ScheduleError<Q::Error>> {
    Ok(crate::exec::synchronize(queue).await?)
}

/// An optional buffer: either handed to the queue under a ticket, or kept
/// back because the plan does not use it.
pub(crate) enum Slot<B> {
    Enqueued(Ticket),
    Kept(Option<B>),
}

impl<B> Slot<B> {
    /// Enqueues `buffer` with `op` when `used`, else keeps it.
    pub(crate) fn new<E>(
        buffer: Option<B>,
        used: bool,
        op: impl FnOnce(B) -> Result<Ticket, E>,
    ) -> Result<Self, E> {
        match buffer {
            Some(b) if used => Ok(Slot::Enqueued(op(b)?)),
            other => Ok(Slot::Kept(other)),
        }
    }

    pub(crate) fn ticket(&self) -> Option<Ticket> {
        match self {
            Slot::Enqueued(t) => Some(*t),
            Slot::Kept(_) => None,
        }
    }

    pub(crate) fn resolve<E>(
        self,
        reclaimed: Option<B>,
        which: &'static str,
    ) -> Result<Option<B>, ScheduleError<E>> {
        match self {
            Slot::Enqueued(_) => reclaimed.map(Some).ok_or(ScheduleError::LostBuffer(which)),
            Slot::Kept(b) => Ok(b),
        }
    }
}

/// Takes back every reclaimable buffer after the final synchronize: ours are
/// matched by ticket, any other (an application upload, or one left by an
/// earlier, cancelled schedule) goes to `recycle`.
fn finish<Q: Queue>(
    queue: &mut Q,
    input: Slot<Q::Buffer>,
    globals: Slot<Q::Buffer>,
    output: Slot<Q::Buffer>,
    recycle: &mut dyn FnMut(Q::Buffer),
) -> Result<Buffers<Q::Buffer>, ScheduleError<Q::Error>> {
    let tickets = [input.ticket(), globals.ticket(), output.ticket()];
    let mut got: [Option<Q::Buffer>; 3] = [None, None, None];
    while let Some((ticket, buf)) = queue.reclaim() {
        match tickets.iter().position(|t| *t == Some(ticket)) {
            Some(i) => got[i] = Some(buf),
            None => recycle(buf),
        }
    }
    let [i, g, o] = got;
    Ok(Buffers {
        input: input
            .resolve(i, "input")?
            .ok_or(ScheduleError::LostBuffer("input"))?,
        globals: globals.resolve(g, "globals")?,
        output: output.resolve(o, "output")?,
    })
}

/// Records one launch. See the module docs for the steps and the
/// cancellation rule.
///
/// `buffers.input` receives the snapshot at `plan.snapshot.host_offset`;
/// `buffers.globals` (required when `plan.globals` is not empty) receives the
/// globals; `buffers.output` (required when `plan.save_output`) receives the
/// post-kernel snapshot at the same offset as the input. Buffers of the
/// application's uploads, and any stale ones, go to `recycle` once complete.
///
/// This is [`record_with`] with the snapshots downloaded ([`Download`]).
pub async fn record<Q: Queue>(
    queue: &mut Q,
    uploads: impl IntoIterator<Item = Upload<Q::Buffer>>,
    plan: RecordPlan<'_, Q::Kernel>,
    buffers: Buffers<Q::Buffer>,
    recycle: impl FnMut(Q::Buffer),
) -> Result<Buffers<Q::Buffer>, ScheduleError<Q::Error>>
where
    Q::Buffer: AsRef<[u8]>,
{
    let step = Download::new(
        nonempty(&plan.snapshot),
        buffers.input,
        buffers.output,
        plan.save_output,
    );
    let launch = LaunchPlan {
        kernel: plan.kernel,
        launch: plan.launch,
        globals: plan.globals,
        mode: plan.mode,
    };
    let ((input, output), globals) =
        record_with(queue, uploads, launch, buffers.globals, step, recycle).await?;
    Ok(Buffers {
        input,
        globals,
        output,
    })
}

/// Records one launch, taking its snapshots as `step` does (see
/// [`SnapshotStep`]): the application's uploads; `step`'s snapshot before
/// the kernel and the globals' download; the kernel; `step`'s snapshot
/// after it (when it saves one) and its last copies; one synchronize (one
/// after every step in [`Mode::Sync`]). Then every buffer the queue gives
/// back goes to `step`, the globals' buffer, or `recycle`.
///
/// Returns what `step` took and the globals' buffer (`globals`, filled
/// when `plan.globals` names any, else as it was given). Cancellation as
/// for [`record`].
pub async fn record_with<Q, S>(
    queue: &mut Q,
    uploads: impl IntoIterator<Item = Upload<Q::Buffer>>,
    plan: LaunchPlan<'_, Q::Kernel>,
    globals: Option<Q::Buffer>,
    mut step: S,
    mut recycle: impl FnMut(Q::Buffer),
) -> Result<(S::Taken, Option<Q::Buffer>), ScheduleError<Q::Error>>
where
    Q: Queue,
    Q::Buffer: AsRef<[u8]>,
    S: SnapshotStep<Q>,
{
    let sync = plan.mode == Mode::Sync;
    step.check()?;
    if !plan.globals.is_empty() {
        check(
            globals
                .as_ref()
                .ok_or(ScheduleError::MissingBuffer("globals"))?,
            plan.globals,
        )?;
    }

    // 1. H2D: the application's pending copies.
    for up in uploads {
        check(&up.buffer, nonempty(&up.segment))?;
        queue.upload(up.buffer, nonempty(&up.segment))?;
    }
    if sync {
        synchronize(queue).await?;
    }

    // 2. D2H info: memory snapshot and globals.
    step.before(queue)?;
    let globals = Slot::new(globals, !plan.globals.is_empty(), |g| {
        queue.download(g, plan.globals)
    })?;
    if sync {
        synchronize(queue).await?;
    }

    // 3. The kernel (without an output step, the final synchronize is this
    // step's).
    queue.launch(plan.kernel, &plan.launch)?;
    let output = step.saves_output();
    if sync && output {
        synchronize(queue).await?;
    }

    // 4. D2H output.
    if output {
        step.after(queue)?;
    }
    step.last(queue)?;

    // The one synchronize (or the last step's, in Sync mode).
    let ticket = globals.ticket();
    let mut back = None;
    crate::exec::settle(queue, |t, b| {
        if Some(t) == ticket {
            back = Some(b);
        } else if let Some(b) = step.take(t, b) {
            recycle(b);
        }
    })
    .await?;
    Ok((step.finish()?, globals.resolve(back, "globals")?))
}

/// Replays one launch: restores globals and memory, launches, copies the
/// output back when asked, and synchronizes once.
///
/// `buffers.input` holds the snapshot at `plan.memory.host_offset` when
/// the plan restores by [`Restore::Upload`]; with any other restore it is
/// never read nor checked, and may be any buffer (a GPU replay that
/// streamed the snapshot from a chunk store into the device holds none of
/// the snapshot's size). `buffers.globals` (required when `plan.globals` is not empty) the globals,
/// `buffers.output` (required when `plan.save_output`) receives the result.
/// All buffers come back, unchanged except `output`.
pub async fn replay<Q: Queue>(
    queue: &mut Q,
    plan: ReplayPlan<'_, Q::Kernel>,
    buffers: Buffers<Q::Buffer>,
    mut recycle: impl FnMut(Q::Buffer),
) -> Result<Buffers<Q::Buffer>, ScheduleError<Q::Error>>
where
    Q::Buffer: AsRef<[u8]>,
{
    let memory = nonempty(&plan.memory);
    check_buffers(
        &buffers,
        plan.restore == Restore::Upload,
        memory,
        plan.globals,
        plan.save_output,
    )?;

    let globals = Slot::new(buffers.globals, !plan.globals.is_empty(), |g| {
        queue.upload(g, plan.globals)
    })?;
    let input = Slot::new(Some(buffers.input), plan.restore == Restore::Upload, |b| {
        queue.upload(b, memory)
    })?;
    if let Restore::FromDevice(src) = plan.restore {
        for s in memory {
            let from = src + s.host_offset as u64;
            if !queue.copy_on_device(s.device, from, s.len)? {
                return Err(ScheduleError::NoDeviceCopy);
            }
        }
    }
    queue.launch(plan.kernel, &plan.launch)?;
    let output = Slot::new(buffers.output, plan.save_output, |o| {
        queue.download(o, memory)
    })?;
    synchronize(queue).await?;
    finish(queue, input, globals, output, &mut recycle)
}
