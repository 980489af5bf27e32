//! Memory beyond the recording region that a capture holds
//! ([`KernelRecord::extra_ranges`]): the bytes a recorder took of it
//! before and after the kernel, handed to the writer of the capture by the
//! launch's sequence number, and written beside the other snapshots as
//! `STEM.extra_input` and `STEM.extra_output` (or their manifests).
//!
//! A recorder stages the parts for the launch it is recording
//! ([`stage_extra`]) before the launch's sequence number is drawn (the
//! next one, [`peek_launch_seq`]); the writer of that launch's capture
//! takes them. Parts staged for a launch that drew no capture are dropped
//! by the next capture written, or taken back with [`unstage_extra`].

use std::collections::BTreeMap;
use std::sync::Mutex;

use reprise_core::record::KernelRecord;

use super::LAUNCH_SEQ;
use crate::capture::{ExtraParts, checksum};

fn staged() -> std::sync::MutexGuard<'static, BTreeMap<u64, ExtraParts>> {
    static STAGED: Mutex<BTreeMap<u64, ExtraParts>> = Mutex::new(BTreeMap::new());
    STAGED.lock().unwrap_or_else(|e| e.into_inner())
}

/// The sequence number the next launch of this process draws.
pub fn peek_launch_seq() -> u64 {
    LAUNCH_SEQ.load(std::sync::atomic::Ordering::Relaxed)
}

/// Hands `parts` to the writer of the capture of launch `seq`.
pub fn stage_extra(seq: u64, parts: ExtraParts) {
    staged().insert(seq, parts);
}

/// Takes back the parts staged for launch `seq`, when its capture did not
/// take them.
pub fn unstage_extra(seq: u64) -> Option<ExtraParts> {
    staged().remove(&seq)
}

/// The parts staged for `record`'s launch, with the record's
/// `ExtraRanges` and their checksums filled in; parts staged for earlier
/// launches, which drew no capture, are dropped. `None` when there are
/// none (or they do not fit a descriptor).
pub(super) fn take_staged(record: &mut KernelRecord) -> Option<ExtraParts> {
    let seq = record.launch_seq?;
    let parts = {
        let mut s = staged();
        let later = s.split_off(&seq);
        *s = later;
        s.remove(&seq)?
    };
    if !parts.whole() {
        return None;
    }
    record.extra_ranges.clear();
    for r in &parts.ranges {
        record.extra_ranges.push(*r).ok()?;
    }
    record.checksums.extra_input = Some(checksum(&parts.input));
    record.checksums.extra_output = parts.output.as_deref().map(checksum);
    Some(parts)
}
