//! How a recording takes its snapshots of the region: the step that
//! [`record_with`](super::record_with) runs before the kernel and after it.
//! The ordinary step downloads the region ([`Download`]); another (the std
//! adapter's device-side hashing) copies it on the device and hashes it
//! there, and the schedule around it is the same.

use super::{ScheduleError, Slot, check};
use crate::exec::{Queue, Segment, Ticket};

/// What a recording does for its snapshots, on the schedule's queue.
///
/// The schedule calls [`check`](SnapshotStep::check) before it enqueues
/// anything, [`before`](SnapshotStep::before) in step 2,
/// [`after`](SnapshotStep::after) in step 4 when
/// [`saves_output`](SnapshotStep::saves_output), and
/// [`last`](SnapshotStep::last) just before the final synchronize; then it
/// offers the step each buffer the queue gives back
/// ([`take`](SnapshotStep::take)) and asks for what it took
/// ([`finish`](SnapshotStep::finish)). Every buffer a step enqueues is the
/// queue's until that synchronize (the cancellation rule of
/// [`crate::exec`]).
pub trait SnapshotStep<Q: Queue> {
    /// What the step hands back once the launch is recorded.
    type Taken;

    /// Refuses, before anything is enqueued, what cannot work (a buffer
    /// too small for its segments, one missing).
    fn check(&self) -> Result<(), ScheduleError<Q::Error>>;

    /// Step 2: the region before the kernel.
    fn before(&mut self, queue: &mut Q) -> Result<(), ScheduleError<Q::Error>>;

    /// Whether there is a step 4 (the region after the kernel).
    fn saves_output(&self) -> bool;

    /// Step 4: the region after the kernel (only when
    /// [`saves_output`](SnapshotStep::saves_output)).
    fn after(&mut self, queue: &mut Q) -> Result<(), ScheduleError<Q::Error>>;

    /// Copies that follow step 4, before the final synchronize.
    fn last(&mut self, queue: &mut Q) -> Result<(), ScheduleError<Q::Error>> {
        let _ = queue;
        Ok(())
    }

    /// A buffer the queue gave back, with its copy's ticket: `None` when it
    /// is the step's (kept for [`finish`](SnapshotStep::finish)), else the
    /// buffer, which goes to the schedule's `recycle`.
    fn take(&mut self, ticket: Ticket, buffer: Q::Buffer) -> Option<Q::Buffer>;

    /// What the step took (a buffer it enqueued and never got back is
    /// [`ScheduleError::LostBuffer`]).
    fn finish(self) -> Result<Self::Taken, ScheduleError<Q::Error>>;
}

/// The ordinary step: the region downloaded into the input buffer before
/// the kernel, and into the output buffer after it when saved. It takes
/// back `(input, output)`; an output buffer given but not used comes back
/// as it was.
pub struct Download<'a, B> {
    snapshot: &'a [Segment],
    save_output: bool,
    input: Slot<B>,
    output: Slot<B>,
    got: [Option<B>; 2],
}

impl<'a, B> Download<'a, B> {
    /// Downloads `snapshot` (no segment, or one) into `input`, and into
    /// `output` when `save_output`.
    pub fn new(snapshot: &'a [Segment], input: B, output: Option<B>, save_output: bool) -> Self {
        Download {
            snapshot,
            save_output,
            input: Slot::Kept(Some(input)),
            output: Slot::Kept(output),
            got: [None, None],
        }
    }
}

/// Enqueues the buffer kept in `slot` with `op`.
fn enqueue<B, E>(
    slot: &mut Slot<B>,
    which: &'static str,
    op: impl FnOnce(B) -> Result<Ticket, E>,
) -> Result<(), ScheduleError<E>> {
    let Slot::Kept(buffer) = slot else {
        return Err(ScheduleError::MissingBuffer(which));
    };
    let buffer = buffer.take().ok_or(ScheduleError::MissingBuffer(which))?;
    *slot = Slot::Enqueued(op(buffer)?);
    Ok(())
}

impl<Q: Queue> SnapshotStep<Q> for Download<'_, Q::Buffer>
where
    Q::Buffer: AsRef<[u8]>,
{
    type Taken = (Q::Buffer, Option<Q::Buffer>);

    fn check(&self) -> Result<(), ScheduleError<Q::Error>> {
        if let Slot::Kept(Some(input)) = &self.input {
            check(input, self.snapshot)?;
        }
        if self.save_output {
            match &self.output {
                Slot::Kept(Some(output)) => check(output, self.snapshot)?,
                _ => return Err(ScheduleError::MissingBuffer("output")),
            }
        }
        Ok(())
    }

    fn before(&mut self, queue: &mut Q) -> Result<(), ScheduleError<Q::Error>> {
        let snapshot = self.snapshot;
        enqueue(&mut self.input, "input", |b| queue.download(b, snapshot))
    }

    fn saves_output(&self) -> bool {
        self.save_output
    }

    fn after(&mut self, queue: &mut Q) -> Result<(), ScheduleError<Q::Error>> {
        let snapshot = self.snapshot;
        enqueue(&mut self.output, "output", |b| queue.download(b, snapshot))
    }

    fn take(&mut self, ticket: Ticket, buffer: Q::Buffer) -> Option<Q::Buffer> {
        let mine = [self.input.ticket(), self.output.ticket()];
        match mine.iter().position(|t| *t == Some(ticket)) {
            Some(i) => {
                self.got[i] = Some(buffer);
                None
            }
            None => Some(buffer),
        }
    }

    fn finish(self) -> Result<Self::Taken, ScheduleError<Q::Error>> {
        let [i, o] = self.got;
        Ok((
            self.input
                .resolve(i, "input")?
                .ok_or(ScheduleError::LostBuffer("input"))?,
            self.output.resolve(o, "output")?,
        ))
    }
}
