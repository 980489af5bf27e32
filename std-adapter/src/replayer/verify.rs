//! Verifying a replay: its output against the recorded output, byte for
//! byte or within a tolerance ([`reprise_core::compare`]), over the whole
//! region or the ranges that matter; and the same comparison between any
//! two output files ([`compare_files`]).

use std::io::ErrorKind;
use std::path::Path;

use reprise_core::compare::{Comparer, Comparison, Tolerance};
use reprise_core::record::KernelRecord;

use crate::capture::{SnapshotFile, SnapshotSource, checksum_mismatch};
use crate::error::{CaptureProblem, Error, Result, Setting};

/// Which bytes of an output a verification compares, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareSpec {
    /// What counts as equal (byte for byte by default).
    pub tolerance: Tolerance,
    /// The parts of the region compared; empty: all of it.
    pub ranges: Vec<OutputRange>,
}

impl Default for CompareSpec {
    fn default() -> Self {
        CompareSpec {
            tolerance: Tolerance::EXACT,
            ranges: Vec::new(),
        }
    }
}

/// A part of the region to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputRange {
    /// `len` bytes from `offset` (from the region base).
    Bytes {
        /// Where it starts, from the region base.
        offset: u64,
        /// How long it is.
        len: u64,
    },
    /// The buffer argument `index` points to ([`arg_spans`] says which
    /// bytes that is).
    Arg(usize),
}

/// What `OutputRange::Arg` compared of one argument: `len` bytes from
/// `offset` (from the region base), and what bounded them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArgSpan {
    /// The argument.
    pub index: usize,
    /// Where the bytes start, from the region base.
    pub offset: u64,
    /// How many.
    pub len: u64,
    /// What bounded them.
    pub bound: ArgBound,
}

/// What bounded the bytes an [`ArgSpan`] compared.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgBound {
    /// The allocation the argument points into, as the recorder made it
    /// (`ArgAllocations`): all of it, wherever in it the argument points.
    Allocation,
    /// The capture records no allocations: from the argument up to the
    /// buffer argument `.0` points to, the next one above it.
    NextArg(usize),
    /// The capture records no allocations: from the argument to the end
    /// of the range of a reachable-only capture that holds it.
    Reachable,
    /// The capture records no allocations: from the argument to the end
    /// of the snapshot, no other argument pointing above it.
    SnapshotEnd,
}

impl std::fmt::Display for ArgBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArgBound::Allocation => f.write_str("its allocation, as recorded"),
            ArgBound::NextArg(j) => write!(
                f,
                "up to argument {j}'s buffer (the capture records no allocations)"
            ),
            ArgBound::Reachable => f.write_str(
                "up to the end of the recorded range holding it (the capture records no \
                 allocations)",
            ),
            ArgBound::SnapshotEnd => f.write_str(
                "up to the end of the snapshot, no other argument pointing above it (the \
                 capture records no allocations)",
            ),
        }
    }
}

/// The bytes each `OutputRange::Arg` of `spec` compares in a region at
/// `base` whose snapshot is `len` bytes, in the order `spec` names them,
/// bounded as [`ArgBound`] says: LLVM's captures record no allocations,
/// and their buffers are bump-allocated one after another. An argument
/// the kernel does not have, one that points nowhere into the snapshot,
/// or a span that is no whole number of the elements `spec` compares, is
/// an error naming it.
pub fn arg_spans(
    spec: &CompareSpec,
    record: &KernelRecord,
    base: u64,
    len: u64,
) -> Result<Vec<ArgSpan>> {
    let inside = |v: u64| v.checked_sub(base).filter(|&o| o < len);
    let values = record.arg_values();
    let mut out = Vec::new();
    for r in &spec.ranges {
        let OutputRange::Arg(i) = *r else { continue };
        let bad = |problem: String| Error::BadOption {
            setting: Setting::CompareArg,
            value: i.to_string(),
            problem,
        };
        let Some(&v) = values.get(i) else {
            return Err(bad(format!("the kernel has {} arguments", values.len())));
        };
        let Some(start) = inside(v) else {
            // Memory beyond the region the capture holds: compared with
            // the whole output, not by argument.
            if let Some(e) = record
                .extra_ranges
                .iter()
                .find(|e| v >= e.addr && v < e.end())
            {
                return Err(bad(format!(
                    "argument {i} is {v:#x}, in {} at {:#x} beyond the region: --arg compares \
                     the region's memory; without it, verification covers that range too",
                    e.class.describe(),
                    e.addr
                )));
            }
            return Err(bad(format!(
                "argument {i} is {v:#x}, which points nowhere into the region ({base:#x}, \
                 {len} bytes)"
            )));
        };
        let span = match record
            .arg_allocation(i)
            .filter(|&(o, n)| o.checked_add(n).is_some_and(|end| end <= len))
        {
            Some((offset, n)) => ArgSpan {
                index: i,
                offset,
                len: n,
                bound: ArgBound::Allocation,
            },
            None => {
                let next = values
                    .iter()
                    .enumerate()
                    .filter_map(|(j, &w)| Some((inside(w)?, j)))
                    .filter(|&(p, _)| p > start)
                    .min();
                let reachable_end = record.reachable.as_ref().and_then(|ranges| {
                    ranges
                        .iter()
                        .find(|&&[o, n]| start >= o && start - o < n)
                        .map(|&[o, n]| o + n)
                });
                let (end, bound) = match (next, reachable_end) {
                    (Some((p, _)), Some(e)) if e < p => (e, ArgBound::Reachable),
                    (Some((p, j)), _) => (p, ArgBound::NextArg(j)),
                    (None, Some(e)) => (e.min(len), ArgBound::Reachable),
                    (None, None) => (len, ArgBound::SnapshotEnd),
                };
                ArgSpan {
                    index: i,
                    offset: start,
                    len: end - start,
                    bound,
                }
            }
        };
        whole_elements(spec, Setting::CompareArg, i.to_string(), span.len)?;
        out.push(span);
    }
    Ok(out)
}

/// An error naming `setting`'s `value` when `n` bytes are no whole number of
/// the elements `spec` compares.
fn whole_elements(spec: &CompareSpec, setting: Setting, value: String, n: u64) -> Result<()> {
    match spec.tolerance.dtype.map(|t| (t, t.size() as u64)) {
        Some((t, size)) if !n.is_multiple_of(size) => Err(Error::BadOption {
            setting,
            value,
            problem: format!("{n} bytes is no whole number of {t} elements ({size} bytes each)"),
        }),
        _ => Ok(()),
    }
}

/// The result of comparing a replay's output with the recorded output.
#[derive(Debug, Clone, PartialEq)]
pub struct Verification {
    /// What the comparison found (offsets from the region base).
    pub comparison: Comparison,
    /// What counted as equal.
    pub tolerance: Tolerance,
    /// The ranges compared, `(offset, len)` from the region base, in order.
    pub ranges: Vec<(u64, u64)>,
}

impl Verification {
    /// Whether the output matched.
    pub fn is_match(&self) -> bool {
        self.comparison.is_match()
    }
}

/// `all 32768 bytes equal`, `3 of 8192 f32 elements differ beyond the
/// tolerance, the first at offset 0x40`.
impl std::fmt::Display for Verification {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.comparison;
        let what = match c.dtype {
            None => "bytes".to_string(),
            Some(t) => format!("{t} elements"),
        };
        let how = if self.tolerance.is_exact() {
            ""
        } else {
            " within the tolerance"
        };
        match c.first.first() {
            None if c.is_match() => write!(f, "all {} {what} equal{how}", c.elements),
            first => {
                write!(f, "{} of {} {what} differ", c.mismatches, c.elements)?;
                if !self.tolerance.is_exact() {
                    f.write_str(" beyond the tolerance")?;
                }
                if let Some(m) = first {
                    write!(f, ", the first at offset {:#x}", m.offset)?;
                }
                Ok(())
            }
        }
    }
}

/// The byte ranges `spec` names in a region at `base` whose snapshot is
/// `len` bytes, as `(offset, len)` pairs, sorted and merged; the whole
/// snapshot when it names none. A range outside the snapshot or no whole
/// number of the elements `spec` compares is an error naming it, as are
/// the arguments [`arg_spans`] refuses.
pub fn resolve_ranges(
    spec: &CompareSpec,
    record: &KernelRecord,
    base: u64,
    len: u64,
) -> Result<Vec<(u64, u64)>> {
    let ranges = &spec.ranges;
    if ranges.is_empty() {
        return Ok(vec![(0, len)]);
    }
    let mut out = Vec::new();
    for r in ranges {
        if let OutputRange::Bytes { offset, len: n } = *r {
            if n == 0 || offset.checked_add(n).is_none_or(|end| end > len) {
                return Err(Error::BadOption {
                    setting: Setting::CompareRange,
                    value: format!("{offset}:{n}"),
                    problem: format!("must be a nonempty range inside the {len}-byte snapshot"),
                });
            }
            whole_elements(spec, Setting::CompareRange, format!("{offset}:{n}"), n)?;
            out.push((offset, n));
        }
    }
    out.extend(
        arg_spans(spec, record, base, len)?
            .into_iter()
            .map(|s| (s.offset, s.len)),
    );
    out.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (o, n) in out {
        match merged.last_mut() {
            Some((mo, mn)) if o <= *mo + *mn => *mn = (*mn).max(o + n - *mo),
            _ => merged.push((o, n)),
        }
    }
    Ok(merged)
}

/// Compares `replayed` (the region's bytes from its base) with the
/// recorded output file over `ranges` (from [`resolve_ranges`]), streaming
/// the file, and checking its checksum on the way when `checksum` is given.
pub fn verify(
    replayed: &[u8],
    recorded: &SnapshotFile,
    checksum: Option<u64>,
    tolerance: Tolerance,
    ranges: Vec<(u64, u64)>,
) -> Result<Verification> {
    if replayed.len() as u64 != recorded.len {
        return Err(Error::capture(
            &recorded.path,
            CaptureProblem::ReplayedSize {
                recorded: recorded.len,
                replayed: replayed.len(),
            },
        ));
    }
    let mut hasher = reprise_core::record::Checksummer::new();
    let mut feeder = RangeFeeder::new(tolerance, &ranges);
    let mut at = 0u64;
    recorded.for_each_chunk(1 << 20, |chunk| {
        if checksum.is_some() {
            hasher.update(chunk);
        }
        let mine = &replayed[at as usize..at as usize + chunk.len()];
        feeder.feed(at, chunk, mine);
        at += chunk.len() as u64;
    })?;
    if let Some(want) = checksum {
        let got = hasher.finish();
        if got != want {
            return Err(checksum_mismatch(&recorded.path, want, got));
        }
    }
    let v = Verification {
        comparison: feeder.finish(),
        tolerance,
        ranges,
    };
    log::info!(
        "verification against {}: {}",
        recorded.path.display(),
        if v.is_match() { "PASS" } else { "FAIL" }
    );
    Ok(v)
}

/// Compares the file `actual` with the file `expected` (two outputs) over
/// `ranges` (`(offset, len)`, sorted; empty: all of them), streaming both.
/// Files of different lengths are an error naming both.
pub fn compare_files(
    expected: &Path,
    actual: &Path,
    tolerance: Tolerance,
    ranges: &[(u64, u64)],
) -> Result<Comparison> {
    let open = |p: &Path| {
        SnapshotFile::open(p)?.ok_or_else(|| Error::io(p, "open", ErrorKind::NotFound.into()))
    };
    let (e, a) = (open(expected)?, open(actual)?);
    if e.len != a.len {
        return Err(Error::capture(
            actual,
            CaptureProblem::OutputsDiffer {
                len: a.len,
                expected: expected.to_path_buf(),
                expected_len: e.len,
            },
        ));
    }
    let whole = [(0, e.len)];
    let ranges = if ranges.is_empty() {
        &whole[..]
    } else {
        ranges
    };
    if let Some(&(o, n)) = ranges
        .iter()
        .find(|(o, n)| o.checked_add(*n).is_none_or(|end| end > e.len))
    {
        return Err(Error::BadOption {
            setting: Setting::CompareRange,
            value: format!("{o}:{n}"),
            problem: format!("must lie inside the {}-byte files", e.len),
        });
    }
    let mut feeder = RangeFeeder::new(tolerance, ranges);
    e.for_each_pair(&a, 1 << 20, |at, mine, theirs| {
        feeder.feed(at, mine, theirs)
    })?;
    Ok(feeder.finish())
}

/// Feeds a [`Comparer`] the parts of a stream that lie in sorted ranges.
struct RangeFeeder<'r> {
    comparer: Comparer,
    ranges: &'r [(u64, u64)],
    /// The range being fed, when one has begun.
    current: Option<usize>,
}

impl<'r> RangeFeeder<'r> {
    fn new(tolerance: Tolerance, ranges: &'r [(u64, u64)]) -> Self {
        RangeFeeder {
            comparer: Comparer::new(tolerance),
            ranges,
            current: None,
        }
    }

    /// The stream's bytes `at..at + expected.len()`.
    fn feed(&mut self, at: u64, expected: &[u8], actual: &[u8]) {
        let end = at + expected.len() as u64;
        for (i, &(o, n)) in self.ranges.iter().enumerate() {
            let (from, to) = (o.max(at), (o + n).min(end));
            if from >= to {
                continue;
            }
            if self.current != Some(i) {
                self.comparer.range(o);
                self.current = Some(i);
            }
            let (f, t) = ((from - at) as usize, (to - at) as usize);
            self.comparer.feed(&expected[f..t], &actual[f..t]);
        }
    }

    fn finish(self) -> Comparison {
        self.comparer.finish()
    }
}
