//! Reachable-only recording ([`RecordConfig::reachable`](crate::RecordConfig::reachable)):
//! the allocations a recorder has handed out, and the selection of what a
//! launch's snapshots hold, made by the writer (off the launching thread)
//! with the core's closure ([`reprise_core::record::reachable`]).

use std::collections::BTreeMap;
use std::sync::Mutex;

use reprise_core::exec::{Executor, Segment};
use reprise_core::record::KernelRecord;
use reprise_core::record::reachable::{self, Ranges};

use super::Recorder;
use crate::error::{Error, Result};
use crate::exec::lock;

/// Allocations closer than this are one range of a capture (the padding
/// between them held too): the interposer aligns every allocation to 256
/// bytes, and a capture keeps few ranges.
const MERGE_GAP: u64 = 256;

/// Every allocation a recorder made, as `(address, size)`: what
/// [`Recorder::free`] finds a block's size in, what a reachable-only launch
/// is closed over, and where each pointer argument's allocation lies
/// (`ArgAllocations`, which `--arg N` compares).
#[derive(Debug, Default)]
pub(super) struct Allocations {
    /// Whether recording reachable-only.
    reachable: bool,
    /// By address; a later allocation at the same address (a block handed
    /// out again) replaces the earlier.
    map: Mutex<BTreeMap<u64, u64>>,
}

impl Allocations {
    /// An empty list; `reachable`: the launches are closed over it.
    pub(super) fn new(reachable: bool) -> Self {
        Allocations {
            reachable,
            map: Mutex::new(BTreeMap::new()),
        }
    }

    /// The recorder handed out `[addr, addr + size)`.
    pub(super) fn add(&self, addr: u64, size: u64) {
        if size > 0 {
            lock(&self.map).insert(addr, size);
        }
    }

    /// The block at `addr` was freed: its size, if it was an allocation.
    pub(super) fn remove(&self, addr: u64) -> Option<u64> {
        lock(&self.map).remove(&addr)
    }

    /// The allocations so far, sorted by address (`None` when not
    /// recording reachable-only).
    pub(super) fn sorted(&self) -> Option<Vec<(u64, u64)>> {
        if !self.reachable {
            return None;
        }
        Some(lock(&self.map).iter().map(|(&a, &n)| (a, n)).collect())
    }

    /// The allocation holding `addr`, as `(address, size)`.
    pub(super) fn containing(&self, addr: u64) -> Option<(u64, u64)> {
        let map = lock(&self.map);
        let (&a, &n) = map.range(..=addr).next_back()?;
        (addr - a < n).then_some((a, n))
    }
}

impl<E: Executor> Recorder<E> {
    /// Replaces the allocations a reachable-only launch is closed over with
    /// `live` (`(address, size)`, disjoint, in the recording region): for a
    /// caller that frees memory of the region and hands it out again, as
    /// the interposer does, so that a stale pointer into a freed block
    /// does not hold it. Until it is called, every allocation
    /// [`Recorder::alloc`] made counts as live. Does nothing unless
    /// recording reachable-only.
    pub fn set_live_allocations(&self, live: impl IntoIterator<Item = (u64, u64)>) {
        if self.allocations.reachable {
            let mut map = lock(&self.allocations.map);
            map.clear();
            map.extend(live.into_iter().filter(|a| a.1 > 0));
        }
    }
}

/// The roots of a launch's closure: its argument values, the words of its
/// by-value arguments larger than 8 bytes, and the words of each global
/// (`globals` holds the segments `global_segs` describe).
fn roots(record: &KernelRecord, globals: &[u8], global_segs: &[Segment]) -> Vec<u64> {
    let mut out = Vec::new();
    let mut scratch = [0u8; 8];
    for i in 0..record.num_args() {
        if record.arg_size(i) > 8 {
            out.extend(reachable::words(record.arg_bytes(i, &mut scratch)));
        } else {
            out.push(record.arg_value(i));
        }
    }
    for seg in global_segs {
        if let Some(bytes) = globals.get(seg.host_offset..seg.host_offset + seg.len) {
            out.extend(reachable::words(bytes));
        }
    }
    out
}

/// Selects what a reachable-only capture holds: the closure of `record`'s
/// roots over `allocs` in the input snapshot `input` (taken at `base`),
/// written into `record` (`Reachable`), and poison in `input` and `output`
/// everywhere else.
pub(super) fn select(
    record: &mut KernelRecord,
    allocs: &[(u64, u64)],
    base: u64,
    globals: (&[u8], &[Segment]),
    input: &mut [u8],
    output: Option<&mut [u8]>,
) -> Result<()> {
    let roots = roots(record, globals.0, globals.1);
    let mut marks = vec![false; allocs.len()];
    let mut stack = vec![0u32; allocs.len()];
    reachable::close(allocs, base, input, roots, &mut marks, &mut stack)
        .map_err(|_| Error::Internal("the recorder's allocations overlap"))?;
    let mut ranges = Ranges::new();
    reachable::ranges(allocs, &marks, base, MERGE_GAP, &mut ranges);
    reachable::poison_outside(input, &ranges);
    if let Some(output) = output {
        reachable::poison_outside(output, &ranges);
    }
    log::debug!(
        "{}: {} of {} allocations reachable, {} of {} bytes held in {} ranges",
        record.name,
        marks.iter().filter(|&&m| m).count(),
        allocs.len(),
        reachable::held(&ranges),
        input.len(),
        ranges.len()
    );
    record.reachable = Some(ranges);
    Ok(())
}
