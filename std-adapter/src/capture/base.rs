//! Where a capture's region was, when its descriptor does not say: LLVM 16
//! writes no `BumpAllocVAStart`.
//!
//! What LLVM 16's runtime does (seen on its host plugin, and in its
//! sources): the region is one `malloc` per process, glibc's `mmap`'d
//! chunk, so its base is a page plus 16 bytes (the chunk header); every
//! allocation is bumped contiguously from the base in 16-byte steps, so
//! each snapshot starts at the base and `DeviceMemorySize` is everything
//! allocated so far; and the kernel's pointer arguments point into it. The
//! rule: **the base is the highest address of the form page + 0x10 at or
//! below the lowest pointer argument** (an argument of at least 64 KiB: the
//! first argument is often a scalar), among those for which that argument
//! lies inside `[base, base + DeviceMemorySize)`. A later kernel's
//! arguments point past the earlier kernels' buffers, so one capture alone
//! may allow several bases: the captures of one process share theirs, so
//! sibling descriptors in the same directory without a base narrow it to
//! the bases all of them allow (and when they allow none in common, they
//! came from different processes, which [`BaseOrigin::Derived`] says).

use std::path::Path;

use reprise_core::record::{Generation, KernelRecord};

use super::read_descriptor;

/// The page size the rule assumes (glibc's `mmap` granularity on x86-64).
const PAGE: u64 = 4096;
/// glibc's chunk header before a `malloc`ed block.
const CHUNK_HEADER: u64 = 0x10;
/// Arguments below this are taken for scalars.
const POINTER_FROM: u64 = 1 << 16;
/// Siblings looked at, at most.
const MAX_SIBLINGS: usize = 256;

/// Where a capture's region base came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseOrigin {
    /// The descriptor records it.
    Recorded,
    /// The caller gave it ([`super::OpenOptions::region_base`]).
    Given,
    /// Derived by the rule in this module's documentation.
    Derived {
        /// Sibling captures without a base whose allowed bases narrowed
        /// this one's.
        agreeing: usize,
        /// Sibling captures without a base that allow none of this one's
        /// (recorded by another process).
        disagreeing: usize,
    },
}

impl std::fmt::Display for BaseOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            BaseOrigin::Recorded => f.write_str("recorded"),
            BaseOrigin::Given => f.write_str("given"),
            BaseOrigin::Derived {
                agreeing,
                disagreeing,
            } => {
                f.write_str(
                    "derived: the descriptor records none; the highest page + 0x10 address at \
                     or below the lowest pointer argument that puts it inside DeviceMemorySize \
                     bytes",
                )?;
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
    }
}

/// The bases `record` allows: the addresses page + 0x10 in `(low, high]`,
/// as `(low, high)`; `None` when it allows none (no pointer argument, or no
/// `DeviceMemorySize`).
fn allowed(record: &KernelRecord) -> Option<(u64, u64)> {
    let size = record.memory_size.filter(|&s| s > 0)?;
    let lowest = (0..record.num_args())
        .map(|i| record.arg_value(i))
        .filter(|&v| v >= POINTER_FROM)
        .min()?;
    let high = (lowest - CHUNK_HEADER) / PAGE * PAGE + CHUNK_HEADER;
    let low = lowest.saturating_sub(size);
    (high > low).then_some((low, high))
}

/// The base of a record that has none, derived by the rule of this module,
/// with its siblings in the descriptor's directory; `None` when the rule
/// gives none.
pub fn derive(record: &KernelRecord, descriptor: &Path) -> Option<(u64, BaseOrigin)> {
    if record.region_base.is_some() || record.generation != Generation::LlvmLegacy {
        return None;
    }
    let (mut low, mut high) = allowed(record)?;
    let (mut agreeing, mut disagreeing) = (0, 0);
    if let Some(dir) = descriptor.parent().and_then(|d| std::fs::read_dir(d).ok()) {
        for path in dir
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json") && p != descriptor)
            .take(MAX_SIBLINGS)
        {
            let Ok(other) = read_descriptor(&path) else {
                continue;
            };
            if other.region_base.is_some() || other.generation != Generation::LlvmLegacy {
                continue;
            }
            let Some((l, h)) = allowed(&other) else {
                continue;
            };
            let (nl, nh) = (low.max(l), high.min(h));
            if nh > nl {
                (low, high) = (nl, nh);
                agreeing += 1;
            } else {
                disagreeing += 1;
            }
        }
    }
    Some((
        high,
        BaseOrigin::Derived {
            agreeing,
            disagreeing,
        },
    ))
}
