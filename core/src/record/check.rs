//! The checks a record's fields must pass, whether read from a descriptor
//! or about to be written: both sides call the same functions.

use super::{ArgSizeProblem, KernelRecord, MAX_ARG_DATA, MAX_REGION_SIZE, RecordError};

/// What a region's keys must satisfy, reading or writing: a base other
/// than 0, a size of at most [`MAX_REGION_SIZE`] that does not run past the
/// end of the address space from the base, and no smaller than the snapshot.
pub(super) fn check_region(
    base: Option<u64>,
    base_key: &'static str,
    size: Option<u64>,
    snapshot: Option<u64>,
) -> Result<(), RecordError> {
    use RecordError::*;
    if base == Some(0) {
        return Err(NullRegionBase(base_key));
    }
    if let Some(size) = size {
        if size > MAX_REGION_SIZE {
            return Err(RegionTooLarge {
                size,
                max: MAX_REGION_SIZE,
            });
        }
        if let Some(base) = base
            && base.checked_add(size).is_none()
        {
            return Err(RegionWraps { base, size });
        }
        if let Some(snapshot) = snapshot
            && snapshot > size
        {
            return Err(SnapshotExceedsRegion {
                snapshot,
                region: size,
            });
        }
    }
    Ok(())
}

/// `ArgAllocations`, reading or writing: each entry names an argument, in
/// increasing order, and a nonempty allocation inside the snapshot (when
/// its length is known). Whether the argument still points into it is
/// [`KernelRecord::arg_allocation`]'s to judge: a descriptor whose argument
/// was changed by hand stays readable.
pub(super) fn check_arg_allocations(r: &KernelRecord) -> Result<(), RecordError> {
    let bad = RecordError::BadValue("ArgAllocations");
    let mut last = None;
    for &[index, offset, len] in &r.arg_allocations {
        if index >= r.num_args() as u64 || last.is_some_and(|l| index <= l) || len == 0 {
            return Err(bad);
        }
        last = Some(index);
        let Some(end) = offset.checked_add(len) else {
            return Err(bad);
        };
        if r.memory_size.is_some_and(|m| end > m) {
            return Err(bad);
        }
    }
    Ok(())
}

/// Each `ArgSizes` entry must be at least 1 byte, at most [`MAX_ARG_DATA`],
/// and, above 8 bytes, name a slice of `ArgData` (at offset `ArgPtrs[i]`).
pub(super) fn check_arg_sizes(
    sizes: &[u32],
    ptrs: &[i64],
    data_len: usize,
) -> Result<(), RecordError> {
    for (index, &size) in sizes.iter().enumerate() {
        let bad = |problem| RecordError::BadArgSize {
            index,
            size,
            problem,
        };
        if size == 0 {
            return Err(bad(ArgSizeProblem::Zero));
        }
        if size as usize > MAX_ARG_DATA {
            return Err(bad(ArgSizeProblem::TooLarge { max: MAX_ARG_DATA }));
        }
        if size > 8 {
            let at = ptrs[index];
            let fits = at >= 0
                && (at as u64)
                    .checked_add(size as u64)
                    .is_some_and(|end| end <= data_len as u64);
            if !fits {
                return Err(bad(ArgSizeProblem::OutsideArgData {
                    offset: at,
                    data_len,
                }));
            }
        }
    }
    Ok(())
}
