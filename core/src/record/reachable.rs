//! Reachable-only snapshots: the allocations a launch can reach, found as a
//! conservative garbage collector finds live objects, and the `Reachable`
//! key that says which ranges of a snapshot hold recorded memory.
//!
//! The roots are the launch's argument values (and any other words the
//! caller knows may hold pointers: by-value argument bytes, the globals).
//! A root that falls inside an allocation marks it; every aligned 8-byte
//! word of a marked allocation that falls inside an allocation marks that
//! one too, until nothing new is marked. A word is a pointer when its value
//! lies in `[start, start + len)` of an allocation: a pointer one past the
//! end of an allocation (a C `end` pointer) reaches nothing, as a
//! collector's scan of it would not.
//!
//! The scan is conservative: every allocation reachable through any chain
//! of such words is marked (an integer that happens to look like an
//! address marks one too, which costs bytes, never correctness). It is
//! deterministic (a function of the allocations, the roots and the
//! snapshot's bytes), and bounded: each allocation is scanned at most once,
//! so a cycle of pointers ends, in `O(words * log(allocations))` time.
//! Nothing allocates: the caller lends the marks and the work stack.
//!
//! What a reachable-only capture holds outside the closure is [`POISON`]
//! in both snapshots, input and output ([`poison_outside`]). A replay restores
//! the input as it is, so memory outside the closure holds poison while the
//! kernel runs: a kernel that reads it computes from `0x7b` bytes (a huge
//! float, a large integer, a non-canonical address as a pointer) and its
//! output differs from the recorded one, and a kernel that writes there
//! leaves something other than the poison the recorded output holds. Either
//! way the verification shows a difference, never a silent pass.
//!
//! ```
//! use reprise_core::record::reachable::{close, ranges, Ranges};
//! // Three allocations in a snapshot at 0x1000: a holds a pointer to c.
//! let base = 0x1000u64;
//! let mut mem = [0u8; 0x300];
//! mem[..8].copy_from_slice(&(base + 0x200).to_le_bytes());
//! let allocs = [(base, 0x100), (base + 0x100, 0x100), (base + 0x200, 0x100)];
//! let (mut marks, mut stack) = ([false; 3], [0u32; 3]);
//! close(&allocs, base, &mem, [base + 8], &mut marks, &mut stack).unwrap();
//! assert_eq!(marks, [true, false, true]);
//! let mut out = Ranges::new();
//! ranges(&allocs, &marks, base, 0, &mut out);
//! assert_eq!(out.as_slice(), &[[0, 0x100], [0x200, 0x100]]);
//! ```

use core::fmt;

use heapless::Vec;

use super::RecordError;

/// Most ranges a descriptor's `Reachable` key holds; [`ranges`] merges the
/// closest ones (holding the gap between them) to stay within it.
pub const MAX_REACHABLE_RANGES: usize = 64;

/// The byte memory outside the closure holds in a reachable-only snapshot:
/// `0x7b`. Repeated, it is a finite number of large magnitude in every
/// float type a comparison reads (f16 61280, bf16 and f32 about 1.3e36,
/// f64 about 1e286), so a value comparison with any tolerance finds poison
/// equal to poison (a NaN would not be, without `--nan-equal`). It is a
/// large positive integer, and as a pointer (`0x7b7b7b7b7b7b7b7b`) it is a
/// non-canonical x86-64 address, which faults.
pub const POISON: u8 = 0x7b;

/// The ranges a reachable-only snapshot holds: `[offset, len]` from the
/// region's base, sorted, disjoint, none empty.
pub type Ranges = Vec<[u64; 2], MAX_REACHABLE_RANGES>;

/// Why [`close`] could not run.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReachError {
    /// Allocation `index` starts before the end of the one before it, or
    /// runs past the end of the address space: the list must be sorted and
    /// disjoint.
    Unsorted {
        /// The allocation out of order.
        index: usize,
    },
    /// The marks or the stack lent are shorter than the allocation list.
    ScratchTooSmall {
        /// How many allocations there are.
        allocations: usize,
    },
}

impl fmt::Display for ReachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ReachError::Unsorted { index } => write!(
                f,
                "allocation {index} overlaps the one before it or is out of order: \
                 the allocations must be sorted and disjoint"
            ),
            ReachError::ScratchTooSmall { allocations } => write!(
                f,
                "the marks and the stack must each hold {allocations} entries"
            ),
        }
    }
}

impl core::error::Error for ReachError {}

/// The allocation of `allocs` (sorted, disjoint `(start, len)`) that holds
/// `addr`.
pub fn containing(allocs: &[(u64, u64)], addr: u64) -> Option<usize> {
    let i = allocs.partition_point(|&(start, _)| start <= addr);
    let i = i.checked_sub(1)?;
    let (start, len) = allocs[i];
    (addr - start < len).then_some(i)
}

/// Marks in `marks` every allocation reachable from `roots`: see the module
/// docs. `allocs` are `(start, len)`, sorted and disjoint; `snapshot` holds
/// the memory from address `base` (an allocation's bytes past its end are
/// not scanned, being unknown). `marks` and `stack` need one entry per
/// allocation; marks already set are kept, and their allocations are not
/// scanned again. Returns how many allocations are marked.
pub fn close(
    allocs: &[(u64, u64)],
    base: u64,
    snapshot: &[u8],
    roots: impl IntoIterator<Item = u64>,
    marks: &mut [bool],
    stack: &mut [u32],
) -> Result<usize, ReachError> {
    let n = allocs.len();
    if marks.len() < n || stack.len() < n || u32::try_from(n).is_err() {
        return Err(ReachError::ScratchTooSmall { allocations: n });
    }
    let mut end = 0u64;
    for (index, &(start, len)) in allocs.iter().enumerate() {
        if (index > 0 && start < end) || start.checked_add(len).is_none() {
            return Err(ReachError::Unsorted { index });
        }
        end = start + len;
    }
    let (lo, hi) = match (allocs.first(), allocs.last()) {
        (Some(&(lo, _)), Some(&(s, l))) => (lo, s + l),
        _ => return Ok(0),
    };
    // Each allocation is pushed once, when it is first marked: the stack
    // never holds more than `n`.
    let mut top = 0usize;
    let mark = |v: u64, marks: &mut [bool], stack: &mut [u32], top: &mut usize| {
        if v < lo || v >= hi {
            return;
        }
        if let Some(i) = containing(allocs, v)
            && !marks[i]
        {
            marks[i] = true;
            stack[*top] = i as u32;
            *top += 1;
        }
    };
    for r in roots {
        mark(r, marks, stack, &mut top);
    }
    while top > 0 {
        top -= 1;
        let (start, len) = allocs[stack[top] as usize];
        // The allocation's aligned words inside the snapshot.
        let first = start.div_ceil(8) * 8;
        let mut at = first;
        while at.checked_add(8).is_some_and(|e| e <= start + len) {
            let Some(off) = at.checked_sub(base).and_then(|o| usize::try_from(o).ok()) else {
                at += 8;
                continue;
            };
            let Some(word) = snapshot.get(off..off.saturating_add(8)) else {
                break;
            };
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            mark(u64::from_le_bytes(w), marks, stack, &mut top);
            at += 8;
        }
    }
    Ok(marks[..n].iter().filter(|&&m| m).count())
}

/// The aligned 8-byte words of `bytes` (a by-value argument, a globals
/// snapshot), as roots for [`close`].
pub fn words(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes.chunks_exact(8).map(|c| {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        u64::from_le_bytes(w)
    })
}

/// The marked allocations as ranges from `base` into `out` (cleared
/// first): allocations closer than `merge_gap` bytes are one range
/// (holding the gap), and past [`MAX_REACHABLE_RANGES`] the two closest
/// ranges are merged, so `out` holds every marked byte and possibly some
/// gaps. Deterministic.
pub fn ranges(allocs: &[(u64, u64)], marks: &[bool], base: u64, merge_gap: u64, out: &mut Ranges) {
    out.clear();
    for (&(start, len), _) in allocs.iter().zip(marks).filter(|(a, m)| **m && a.1 > 0) {
        let off = start.saturating_sub(base);
        if let Some(last) = out.last_mut() {
            let end = last[0] + last[1];
            if off <= end.saturating_add(merge_gap) {
                last[1] = (off + len).max(end) - last[0];
                continue;
            }
        }
        if out.is_full() {
            merge_closest(out);
        }
        // Room was made just above.
        let _ = out.push([off, len]);
    }
}

/// Merges the two adjacent ranges of `out` with the smallest gap between
/// them (the first such pair on a tie).
fn merge_closest(out: &mut Ranges) {
    let Some(i) = (1..out.len()).min_by_key(|&i| out[i][0] - (out[i - 1][0] + out[i - 1][1]))
    else {
        return;
    };
    let end = out[i][0] + out[i][1];
    out[i - 1][1] = end - out[i - 1][0];
    out.remove(i);
}

/// Bytes the ranges hold.
pub fn held(ranges: &[[u64; 2]]) -> u64 {
    ranges.iter().map(|r| r[1]).sum()
}

/// Fills every byte of `snapshot` outside `ranges` with [`POISON`].
pub fn poison_outside(snapshot: &mut [u8], ranges: &[[u64; 2]]) {
    let mut at = 0usize;
    let len = snapshot.len();
    for r in ranges {
        let start = usize::try_from(r[0]).unwrap_or(len).min(len);
        let end = usize::try_from(r[0].saturating_add(r[1]))
            .unwrap_or(len)
            .min(len);
        if start > at {
            snapshot[at..start].fill(POISON);
        }
        at = at.max(end);
    }
    if at < len {
        snapshot[at..].fill(POISON);
    }
}

/// What is wrong with a `Reachable` range.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeProblem {
    /// Its length is 0.
    Empty,
    /// It starts before the end of the range before it.
    Overlaps,
    /// Its end is past the end of the address space.
    Wraps,
    /// It ends past the snapshot (`DeviceMemorySize`).
    PastSnapshot {
        /// The snapshot's length.
        snapshot: u64,
    },
}

/// The checks a descriptor's `Reachable` ranges must pass, reading or
/// writing: each non-empty, sorted and disjoint, and within the snapshot
/// when its length is known.
pub fn check_ranges(ranges: &[[u64; 2]], snapshot: Option<u64>) -> Result<(), RecordError> {
    let mut end = 0u64;
    for (index, &[off, len]) in ranges.iter().enumerate() {
        let bad = |problem| Err(RecordError::BadReachable { index, problem });
        if len == 0 {
            return bad(RangeProblem::Empty);
        }
        if index > 0 && off < end {
            return bad(RangeProblem::Overlaps);
        }
        let Some(e) = off.checked_add(len) else {
            return bad(RangeProblem::Wraps);
        };
        if let Some(snapshot) = snapshot
            && e > snapshot
        {
            return bad(RangeProblem::PastSnapshot { snapshot });
        }
        end = e;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
