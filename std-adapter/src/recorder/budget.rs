//! The recorder's side of the disk budget ([`crate::store::DiskBudget`]):
//! a launch is recorded only once its capture's largest size is reserved.

use reprise_core::exec::Executor;

use super::{Kernel, Recorder};
use crate::store::estimate;

impl<E> Recorder<E>
where
    E: Executor,
    E::Buffer: Send + 'static,
{
    /// Reserves the disk a capture of a launch of `kernel` can take, now:
    /// `false` when the budget refuses it (recording has stopped, and
    /// [`Recorder::disk_stop`] says why).
    pub(super) fn reserve_disk(&self, kernel: &Kernel<E>) -> bool {
        let Some(budget) = self.store.as_ref().and_then(|s| s.budget()) else {
            return true;
        };
        let used = self.bump.used();
        let (globals, image) = self.images.get(kernel.image).map_or((0, 0), |i| {
            (
                i.globals.iter().map(|g| g.2).sum::<u64>(),
                i.bytes.len() as u64,
            )
        });
        let output = if self.config.save_output { used } else { 0 };
        let bytes = estimate(used, output, globals, image);
        let mut why = match budget.try_reserve(bytes) {
            Ok(()) => return true,
            Err(why) => why,
        };
        // Captures still queued were reserved at their largest (their
        // chunks may be stored already): once they are written, what they
        // really took is known, and may leave room. Only near the budget
        // does the launching thread wait for the writer.
        if budget.pending() > 0
            && let Some(w) = &self.writer
        {
            w.wait_idle();
            match budget.try_reserve(bytes) {
                Ok(()) => return true,
                Err(again) => why = again,
            }
        }
        budget.stop(why);
        false
    }

    /// Why recording stopped for the disk budget or the free space
    /// ([`RecordConfig::max_disk`](crate::RecordConfig::max_disk)), once it
    /// has: later launches run unrecorded.
    pub fn disk_stop(&self) -> Option<&str> {
        self.store.as_ref()?.budget()?.stopped()
    }
}
