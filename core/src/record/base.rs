//! Where a capture's region was, when its descriptor does not say: LLVM 16
//! writes no `BumpAllocVAStart`.
//!
//! What LLVM 16's runtime does (seen on its host plugin, and in its
//! sources): the region is one `malloc` per process, glibc's `mmap`'d
//! chunk, so its base is a page plus 16 bytes (the chunk header); every
//! allocation is bumped contiguously from the base in 16-byte steps, so
//! each snapshot starts at the base and `DeviceMemorySize` is everything
//! allocated so far. A pointer argument's `ArgPtrs` entry is the
//! allocation LLVM made (a mapped section's `ArgOffsets` then takes the
//! kernel's pointer below it, so the offset is left out here); a scalar
//! passed by value (a trip count, a `float`'s bits, a 64-bit integer)
//! stands in `ArgPtrs` as it is.
//!
//! The evidence, in order:
//! 1. **Containment.** A base `B` (a page + 0x10, at or above Linux's
//!    lowest mappable address, its region below the top of x86-64 user
//!    space) is possible when at least one argument lies in
//!    `[B, B + DeviceMemorySize)`; those arguments are its pointers, the
//!    others scalars. Pointers cluster within the snapshot's length of
//!    each other; scalars mostly do not, and the doubles' bits lie above
//!    user space.
//! 2. **Siblings.** The captures of one process share their base, so the
//!    sibling descriptors without a base (of the same directory: the std
//!    adapter reads them) narrow the possible bases to those all of them
//!    allow (when a sibling allows none in common, it came from another
//!    process, and is left out).
//! 3. When one base remains among those that hold the most arguments, it
//!    is the base ([`Evidence::Only`]): any other would take a value
//!    within the snapshot's length of the other pointers for a scalar.
//! 4. When several remain, the base is one at which an argument's
//!    allocation starts, of this capture or an agreeing sibling, whose
//!    pointers are the most: LLVM's first allocation lies at the base, so
//!    the process's first kernel has one ([`Evidence::FirstAllocation`]).
//!    This is evidence, not proof: a later kernel whose earlier buffers
//!    were whole pages also has one, and then a replay that faults or
//!    differs says that the base may be wrong and names the others.
//! 5. Otherwise nothing tells the bases apart: the capture is refused as
//!    [`BaseOrigin::Ambiguous`], with the candidates, for `--region-base`.
//!
//! Where several remain, what the snapshots hold can tell more: a capture
//! whose input holds a sibling's recorded output at the same offsets was
//! recorded after it by the same process, and shares its base
//! ([`by_sibling_output`], [`Evidence::SiblingOutput`]; the std adapter
//! reads the bytes). A replay can try the bases still possible, in the
//! order [`ordered`] gives.

//!
//! Everything here is arithmetic on records: [`derive()`] takes the record
//! and its siblings' records, never a path, and needs `alloc`.
//!
//! ```
//! use reprise_core::record::base::{self, BaseOrigin, Derivation, Evidence};
//! use reprise_core::record::{Generation, KernelRecord};
//! // A trip count and two 4000-byte buffers, the first at the base.
//! let mut r = KernelRecord::new("k").unwrap();
//! r.generation = Generation::LlvmLegacy;
//! let at: i64 = 0x7fe7_e2ff_f010;
//! for p in [1000, at, at + 4000] {
//!     r.arg_ptrs.push(p).unwrap();
//!     r.arg_offsets.push(0).unwrap();
//! }
//! r.memory_size = Some(8000);
//! assert!(base::derivable(&r));
//! let Derivation::Base(b, origin) = base::derive(&r, []) else { panic!() };
//! assert_eq!(b, at as u64);
//! assert!(matches!(origin, BaseOrigin::Derived { evidence: Evidence::Only, .. }));
//! ```

use alloc::vec::Vec;
use core::fmt;

use super::{Generation, KernelRecord};

/// The page size the rule assumes (glibc's `mmap` granularity on x86-64).
const PAGE: u64 = 4096;
/// glibc's chunk header before a `malloc`ed block.
const CHUNK_HEADER: u64 = 0x10;
/// The lowest base: Linux maps nothing below `vm.mmap_min_addr` (64 KiB by
/// default), and the chunk's header comes first.
const LOWEST: u64 = 0x1_0000 + CHUNK_HEADER;
/// The end of x86-64 user space (47-bit addresses).
const TOP: u64 = 1 << 47;
/// Candidates kept to be named.
pub const NAMED: usize = 8;

/// Bases that remain possible, as named to people: the first [`NAMED`] in
/// order of likelihood, and how many in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidates {
    first: [u64; NAMED],
    len: usize,
    /// How many bases remain possible in all.
    pub total: u64,
}

impl Candidates {
    /// The candidates named, most likely first.
    pub fn named(&self) -> &[u64] {
        &self.first[..self.len]
    }
}

impl fmt::Display for Candidates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_addresses(f, self.named(), self.total)
    }
}

/// Why a derived base was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// No other base puts the pointer arguments inside the snapshot.
    Only,
    /// Several do; at this one an argument's allocation starts (LLVM's
    /// first allocation is at the base). The others stay possible.
    FirstAllocation {
        /// The other bases possible.
        others: Candidates,
    },
    /// A sibling capture's recorded output lies in this capture's input
    /// snapshot at the same offsets: the memory a later kernel of the same
    /// process found, so the sibling's base, which this capture allows, is
    /// this one's too.
    SiblingOutput {
        /// The other bases this capture alone leaves possible.
        others: Candidates,
    },
}

/// Where a capture's region base came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseOrigin {
    /// The descriptor records it.
    Recorded,
    /// The caller gave it (reprise-std's `OpenOptions::region_base`).
    Given,
    /// Derived by the rule in this module's documentation.
    Derived {
        /// Why this base.
        evidence: Evidence,
        /// Sibling captures without a base whose allowed bases narrowed
        /// this one's.
        agreeing: usize,
        /// Sibling captures without a base that allow none of this one's
        /// (recorded by another process).
        disagreeing: usize,
    },
    /// No base: several remain possible and nothing tells them apart
    /// (`record.region_base` stays `None`).
    Ambiguous {
        /// The bases possible.
        candidates: Candidates,
    },
}

/// A capture's region base as settled for a replay, beside the record,
/// which keeps what was recorded: the address (none when several are
/// possible, [`BaseOrigin::Ambiguous`]) and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolvedBase {
    /// The base address.
    pub addr: Option<u64>,
    /// Where it came from.
    pub origin: BaseOrigin,
}

impl BaseOrigin {
    /// The other bases a derived one was chosen among, if any.
    pub fn alternatives(&self) -> Option<&Candidates> {
        match self {
            BaseOrigin::Derived {
                evidence: Evidence::FirstAllocation { others } | Evidence::SiblingOutput { others },
                ..
            } => Some(others),
            BaseOrigin::Ambiguous { candidates } => Some(candidates),
            _ => None,
        }
    }
}

impl fmt::Display for BaseOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (evidence, agreeing, disagreeing) = match *self {
            BaseOrigin::Recorded => return f.write_str("recorded"),
            BaseOrigin::Given => return f.write_str("given"),
            BaseOrigin::Ambiguous { candidates } => {
                return write!(
                    f,
                    "ambiguous: {} page + 0x10 addresses put the pointer arguments inside the \
                     snapshot, and nothing tells them apart: {candidates}",
                    candidates.total
                );
            }
            BaseOrigin::Derived {
                evidence,
                agreeing,
                disagreeing,
            } => (evidence, agreeing, disagreeing),
        };
        f.write_str("derived: the descriptor records none; ")?;
        match evidence {
            Evidence::Only => f.write_str(
                "the only page + 0x10 address that puts the pointer arguments inside the \
                 DeviceMemorySize-byte snapshot",
            )?,
            Evidence::FirstAllocation { others } => write!(
                f,
                "of the page + 0x10 addresses that put the pointer arguments inside the \
                 snapshot, the one where an argument's buffer starts (LLVM allocates its \
                 first buffer at the base); {} other(s) are possible, and a replay that \
                 faults or differs names them",
                others.total
            )?,
            Evidence::SiblingOutput { others } => write!(
                f,
                "the base of a sibling capture whose recorded output this capture's input \
                 snapshot holds at the same offsets (a later kernel of the same process); {} \
                 other(s) put the pointer arguments inside the snapshot, and a replay that \
                 faults or differs names them",
                others.total
            )?,
        }
        if agreeing > 0 {
            write!(
                f,
                ", narrowed by {agreeing} sibling capture(s) of the directory"
            )?;
        }
        if disagreeing > 0 {
            write!(
                f,
                "; {disagreeing} sibling capture(s) allow no base in common with it \
                 (recorded by another process?) and were left out"
            )?;
        }
        Ok(())
    }
}

/// A run of bases `(lo, hi]` that hold the same arguments.
#[derive(Debug, Clone, Copy)]
struct Span {
    lo: u64,
    hi: u64,
    /// How many of the capture's arguments lie inside the snapshot.
    members: usize,
}

/// The page + 0x10 addresses in `(lo, hi]`: the first and how many.
fn points(lo: u64, hi: u64) -> Option<(u64, u64)> {
    let first = (lo.saturating_sub(CHUNK_HEADER) / PAGE + 1)
        .checked_mul(PAGE)?
        .checked_add(CHUNK_HEADER)?;
    (first <= hi).then(|| (first, (hi - first) / PAGE + 1))
}

/// The argument values that may be pointers into the region of `record`.
fn values(record: &KernelRecord) -> Vec<u64> {
    let mut v: Vec<u64> = record
        .arg_ptrs
        .iter()
        .map(|&p| p as u64)
        .filter(|&p| (LOWEST..TOP).contains(&p))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The bases `record` allows, as disjoint spans in order, with their
/// members; empty when it allows none (no `DeviceMemorySize`, no
/// argument that can be a pointer).
fn spans(record: &KernelRecord) -> Vec<Span> {
    let Some(size) = record.memory_size.filter(|&s| s > 0 && s < TOP) else {
        return Vec::new();
    };
    let values = values(record);
    // Argument v is inside for B in (v - size, v]: the members change
    // only at these ends.
    let mut ends: Vec<u64> = values
        .iter()
        .flat_map(|&v| [v.saturating_sub(size), v])
        .collect();
    ends.sort_unstable();
    ends.dedup();
    let top = TOP - size;
    let mut out: Vec<Span> = Vec::new();
    for w in ends.windows(2) {
        let (lo, hi) = (w[0].max(LOWEST - 1), w[1].min(top));
        if hi <= lo || points(lo, hi).is_none() {
            continue;
        }
        // Every base in (lo, hi] holds the same arguments: those of hi.
        let members = values.iter().filter(|&&v| v >= hi && v - hi < size).count();
        if members > 0 {
            out.push(Span { lo, hi, members });
        }
    }
    out
}

/// `ours` narrowed to the bases `theirs` allows too.
fn intersect(ours: &[Span], theirs: &[Span]) -> Vec<Span> {
    let mut out = Vec::new();
    for a in ours {
        for b in theirs {
            let (lo, hi) = (a.lo.max(b.lo), a.hi.min(b.hi));
            if hi > lo && points(lo, hi).is_some() {
                out.push(Span { lo, hi, ..*a });
            }
        }
    }
    out
}

/// What the rule of this module makes of a record without a base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Derivation {
    /// No base is possible.
    None,
    /// This base, for this reason.
    Base(u64, BaseOrigin),
    /// Several, and nothing tells them apart.
    Ambiguous(Candidates),
}

/// Whether the rule of this module applies to `record`: an LLVM 16 (legacy)
/// descriptor that records no base. Only such siblings narrow a base.
pub fn derivable(record: &KernelRecord) -> bool {
    record.region_base.is_none() && record.generation == Generation::LlvmLegacy
}

/// The base of `record`, which records none, derived by the rule of this
/// module with its `siblings`: the other captures of the same directory
/// (the record itself left out), in a stable order. Siblings the rule does
/// not apply to ([`derivable`]) are passed over; [`Derivation::None`] when
/// it does not apply to `record`.
pub fn derive<'a, I>(record: &KernelRecord, siblings: I) -> Derivation
where
    I: IntoIterator<Item = &'a KernelRecord>,
{
    if !derivable(record) {
        return Derivation::None;
    }
    let Some(Narrowed {
        spans,
        evidence,
        agreeing,
        disagreeing,
    }) = narrowed(record, siblings)
    else {
        return Derivation::None;
    };
    let total = count(&spans);
    // Where an allocation starts, with the span's members.
    let starts = starts(&spans, &evidence);
    // The bases that hold the most arguments: any other takes one of the
    // pointers these hold for a scalar.
    let most = spans.iter().map(|s| s.members).max().unwrap_or(0);
    let mut best = spans
        .iter()
        .filter(|s| s.members == most)
        .filter_map(|s| points(s.lo, s.hi));
    let only = match (best.next(), best.next()) {
        (Some((b, 1)), None) => Some(b),
        _ => None,
    };
    let chosen = if let Some(b) = only {
        Some((b, Evidence::Only))
    } else {
        match starts.as_slice() {
            [(b, _)] => Some(*b),
            [(b, m), (_, n), ..] if m > n => Some(*b),
            _ => None,
        }
        .map(|b| {
            (
                b,
                Evidence::FirstAllocation {
                    others: candidates(&spans, &starts, Some(b), total - 1),
                },
            )
        })
    };
    match chosen {
        Some((b, evidence)) => Derivation::Base(
            b,
            BaseOrigin::Derived {
                evidence,
                agreeing,
                disagreeing,
            },
        ),
        None => Derivation::Ambiguous(candidates(&spans, &starts, None, total)),
    }
}

/// Whether `b` is one of the bases [`derive()`] leaves possible for
/// `record` with its `siblings`.
pub fn allows<'a, I>(record: &KernelRecord, siblings: I, b: u64) -> bool
where
    I: IntoIterator<Item = &'a KernelRecord>,
{
    derivable(record)
        && b % PAGE == CHUNK_HEADER
        && narrowed(record, siblings).is_some_and(|n| n.spans.iter().any(|s| s.lo < b && b <= s.hi))
}

/// `record`'s base settled as `b`, the base of a sibling whose recorded
/// output `record`'s input snapshot holds ([`Evidence::SiblingOutput`]);
/// `None` when `b` is not one of the bases `record` allows with its
/// `siblings` (then the content matched by chance, or the sibling's base
/// is wrong, and it is no evidence).
pub fn by_sibling_output<'a, I>(record: &KernelRecord, siblings: I, b: u64) -> Option<Derivation>
where
    I: IntoIterator<Item = &'a KernelRecord> + Clone,
{
    if !allows(record, siblings.clone(), b) {
        return None;
    }
    let n = narrowed(record, siblings)?;
    let total = count(&n.spans);
    let starts = starts(&n.spans, &n.evidence);
    Some(Derivation::Base(
        b,
        BaseOrigin::Derived {
            evidence: Evidence::SiblingOutput {
                others: candidates(&n.spans, &starts, Some(b), total.saturating_sub(1)),
            },
            agreeing: n.agreeing,
            disagreeing: n.disagreeing,
        },
    ))
}

/// The bases [`derive()`] leaves possible for `record` with its
/// `siblings`, most likely first (`first`, when possible, before all), at
/// most `limit` of them, and how many there are in all: the bases a
/// replay that tries them tries, in order.
pub fn ordered<'a, I>(
    record: &KernelRecord,
    siblings: I,
    first: Option<u64>,
    limit: usize,
) -> (Vec<u64>, u64)
where
    I: IntoIterator<Item = &'a KernelRecord>,
{
    let Some(n) = narrowed(record, siblings).filter(|_| derivable(record)) else {
        return (Vec::new(), 0);
    };
    let total = count(&n.spans);
    let starts = starts(&n.spans, &n.evidence);
    let first = first
        .filter(|&b| b % PAGE == CHUNK_HEADER && n.spans.iter().any(|s| s.lo < b && b <= s.hi));
    let mut out: Vec<u64> = Vec::new();
    for b in first
        .into_iter()
        .chain(in_order(&n.spans, &starts, limit as u64))
    {
        if out.len() >= limit {
            break;
        }
        if !out.contains(&b) {
            out.push(b);
        }
    }
    (out, total)
}

/// How many bases the spans hold.
fn count(spans: &[Span]) -> u64 {
    spans
        .iter()
        .filter_map(|s| points(s.lo, s.hi).map(|(_, n)| n))
        .fold(0u64, u64::saturating_add)
}

/// Where an allocation starts inside `spans`, with the span's members,
/// the most members first.
fn starts(spans: &[Span], evidence: &[u64]) -> Vec<(u64, usize)> {
    let mut starts: Vec<(u64, usize)> = evidence
        .iter()
        .filter(|&&v| v % PAGE == CHUNK_HEADER)
        .filter_map(|&v| {
            spans
                .iter()
                .find(|s| s.lo < v && v <= s.hi)
                .map(|s| (v, s.members))
        })
        .collect();
    starts.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    starts.dedup();
    starts
}

/// The bases `record` allows, narrowed by its siblings, and what weighed.
struct Narrowed {
    spans: Vec<Span>,
    /// The argument values of the record and of the siblings that agree.
    evidence: Vec<u64>,
    agreeing: usize,
    disagreeing: usize,
}

/// The bases `record` allows (none: `None`), narrowed to those each
/// sibling allows too, a sibling that allows none of them left out.
fn narrowed<'a, I>(record: &KernelRecord, siblings: I) -> Option<Narrowed>
where
    I: IntoIterator<Item = &'a KernelRecord>,
{
    let mut spans = spans(record);
    if spans.is_empty() {
        return None;
    }
    let mut evidence = values(record);
    let (mut agreeing, mut disagreeing) = (0, 0);
    for other in siblings.into_iter().filter(|r| derivable(r)) {
        let theirs = self::spans(other);
        if theirs.is_empty() {
            continue;
        }
        let narrowed = intersect(&spans, &theirs);
        if narrowed.is_empty() {
            disagreeing += 1;
        } else {
            spans = narrowed;
            agreeing += 1;
            evidence.extend(values(other));
        }
    }
    Some(Narrowed {
        spans,
        evidence,
        agreeing,
        disagreeing,
    })
}

/// Of the bases [`derive()`] leaves possible for `record` with its
/// `siblings`, those whose snapshot holds `addr` (`addr` in
/// `[B, B + DeviceMemorySize)`), `except` left out: the bases under which
/// a kernel's access at `addr` would land in the region. A kernel that
/// faulted at `addr` under one base could have run under these, and under
/// no other; none at all says that no base the rule allows avoids the
/// fault. `None` when the rule does not apply to `record`.
pub fn holding<'a, I>(
    record: &KernelRecord,
    siblings: I,
    addr: u64,
    except: Option<u64>,
) -> Option<Candidates>
where
    I: IntoIterator<Item = &'a KernelRecord>,
{
    if !derivable(record) {
        return None;
    }
    let size = record.memory_size?;
    let all = narrowed(record, siblings)?;
    // `addr` is inside for B in (addr - size, addr].
    let (lo, hi) = (addr.saturating_sub(size), addr);
    let inside: Vec<Span> = all
        .spans
        .iter()
        .map(|s| Span {
            lo: s.lo.max(lo),
            hi: s.hi.min(hi),
            ..*s
        })
        .filter(|s| s.hi > s.lo && points(s.lo, s.hi).is_some())
        .collect();
    let mut total: u64 = inside
        .iter()
        .filter_map(|s| points(s.lo, s.hi).map(|(_, n)| n))
        .fold(0u64, u64::saturating_add);
    if let Some(b) = except
        && b % PAGE == CHUNK_HEADER
        && inside.iter().any(|s| s.lo < b && b <= s.hi)
    {
        total -= 1;
    }
    Some(candidates(&inside, &[], except, total))
}

/// The candidates to name: the spans with the most pointers first, in
/// each its allocation starts, then its bases nearest its pointers;
/// `except` left out.
fn candidates(
    spans: &[Span],
    starts: &[(u64, usize)],
    except: Option<u64>,
    total: u64,
) -> Candidates {
    let mut c = Candidates {
        first: [0; NAMED],
        len: 0,
        total,
    };
    for b in in_order(spans, starts, NAMED as u64) {
        if c.len == NAMED {
            break;
        }
        if Some(b) != except && !c.first[..c.len].contains(&b) {
            c.first[c.len] = b;
            c.len += 1;
        }
    }
    c
}

/// The bases of `spans` in order of likelihood: the spans with the most
/// pointers first, in each its allocation starts, then its bases nearest
/// its pointers (at most `per_span` of each span's; repeats left in).
fn in_order<'s>(
    spans: &'s [Span],
    starts: &'s [(u64, usize)],
    per_span: u64,
) -> impl Iterator<Item = u64> + 's {
    let mut by_members: Vec<&Span> = spans.iter().collect();
    by_members.sort_by(|a, b| b.members.cmp(&a.members).then(b.hi.cmp(&a.hi)));
    by_members.into_iter().flat_map(move |s| {
        let (first, n) = points(s.lo, s.hi).unwrap_or((0, 0));
        let last = first + (n.saturating_sub(1)) * PAGE;
        let inside = starts
            .iter()
            .map(|t| t.0)
            .filter(move |&b| s.lo < b && b <= s.hi);
        inside.chain((0..n.min(per_span)).map(move |i| last - i * PAGE))
    })
}

/// Writes `named` addresses, comma-separated, and how many more of `total`
/// there are (`0x10, 0x1010 (and 3 more)`), as [`Candidates`] shows them.
pub fn write_addresses<W: fmt::Write + ?Sized>(
    w: &mut W,
    named: &[u64],
    total: u64,
) -> fmt::Result {
    for (i, b) in named.iter().enumerate() {
        write!(w, "{}{b:#x}", if i == 0 { "" } else { ", " })?;
    }
    if total > named.len() as u64 {
        write!(w, " (and {} more)", total - named.len() as u64)?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "base_tests.rs"]
mod tests;
