//! Memory beyond the region that a capture holds (managed, page-locked
//! and registered host memory, each range at its own address): placed at
//! its recorded addresses before the image is loaded, filled before every
//! run, and read back after the run whose output is kept, so that
//! verification covers it too.
//!
//! A range is placed through the executor's exact-address reservation,
//! whichever route the executor has (it says which ran). Where none places
//! a range, the replay is refused naming its class and address before
//! anything runs: a kernel that would read it elsewhere is never launched.

use reprise_core::exec::{DeviceRegion, Executor, Queue, RegionRequest, Segment, settle};
use reprise_core::record::ExtraRange;

use crate::capture::Capture;
use crate::error::{Error, Result};
use crate::exec::ErrorContext;
use crate::store::ExtraParts;

/// The bytes of a capture's extra ranges after a run.
#[derive(Debug, Clone, Copy)]
pub struct ExtraOutput<'a> {
    /// As the run left them, the ranges' bytes one after the other.
    pub replayed: &'a [u8],
    /// As the recording left them, when it kept them.
    pub recorded: Option<&'a [u8]>,
    /// The ranges, in the order of their bytes.
    pub ranges: &'a [ExtraRange],
}

/// Waits for what `queue` holds (the one copy just queued), and gives back
/// the buffer that copy used.
pub(super) async fn settle_one<Q: Queue>(queue: &mut Q, what: &str) -> Result<Q::Buffer> {
    let mut back = None;
    settle(queue, |_, b| back = Some(b)).await.context(what)?;
    back.ok_or(Error::Internal("a copy's buffer did not come back"))
}

/// Placements are made in whole pages.
const PAGE: u64 = 4096;

/// The extra ranges of a session: where they were placed, and their bytes.
pub(super) struct Extras<E: Executor> {
    /// The recorded bytes (input, and output when recorded).
    parts: ExtraParts,
    /// One copy per range, from (into) the bytes in order.
    segs: Vec<Segment>,
    /// The input bytes staged in a buffer of the executor's (`None` while
    /// a restore holds it).
    input: Option<E::Buffer>,
    /// The bytes after the last run that read them back.
    output: Option<Vec<u8>>,
    /// Where each span was placed, for people.
    placements: Vec<String>,
    // Dropped last: the copies above go into these.
    _placed: Vec<E::Region>,
}

/// The page-rounded spans `ranges` need, each with the first range in it
/// (by address), overlapping or touching spans merged.
fn spans(ranges: &[ExtraRange]) -> Vec<(u64, u64, ExtraRange)> {
    let mut sorted: Vec<ExtraRange> = ranges.to_vec();
    sorted.sort_by_key(|r| r.addr);
    let mut out: Vec<(u64, u64, ExtraRange)> = Vec::new();
    for r in sorted {
        let start = r.addr - r.addr % PAGE;
        let end = r.end().saturating_add(PAGE - 1) / PAGE * PAGE;
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end, r)),
        }
    }
    out
}

impl<E: Executor> Extras<E> {
    /// Places `capture`'s extra ranges at their addresses on `exec` and
    /// stages their input bytes; `None` when the capture has none.
    pub(super) fn place(exec: &E, capture: &Capture) -> Result<Option<Self>> {
        let Some(parts) = capture.extra_parts()? else {
            return Ok(None);
        };
        let mut placed = Vec::new();
        let mut placements = Vec::new();
        for (start, end, first) in spans(&parts.ranges) {
            let what = format!("{} at {:#x}", first.class.describe(), first.addr);
            let refused = format!("{what}: no route places it at its address on this machine");
            let len = end - start;
            let region = exec
                .reserve(RegionRequest::new(Some(start), len).backed(0))
                .context(refused.clone())?;
            exec.grow_region(&region, len).context(refused)?;
            placements.push(format!(
                "{what}: {len} bytes from {start:#x} placed at their address as {}",
                if region.on_host() {
                    "page-locked host memory the device reads over the bus (timings differ)"
                } else {
                    "device memory"
                }
            ));
            placed.push(region);
        }
        let mut segs = Vec::with_capacity(parts.ranges.len());
        let mut at = 0usize;
        for r in &parts.ranges {
            let len = r.size as usize;
            segs.push(Segment {
                device: r.addr,
                host_offset: at,
                len,
            });
            at += len;
        }
        let mut input = exec
            .buffer(at)
            .context("allocating a buffer for memory beyond the region")?;
        input.as_mut()[..at].copy_from_slice(&parts.input);
        Ok(Some(Extras {
            parts,
            segs,
            input: Some(input),
            output: None,
            placements,
            _placed: placed,
        }))
    }

    /// Puts the recorded bytes back into every range (before a run), and
    /// waits for the copies.
    pub(super) async fn restore(&mut self, queue: &mut E::Queue, exec: &E) -> Result<()> {
        const WHAT: &str = "copying memory beyond the region to its addresses";
        let input = match self.input.take() {
            Some(b) => b,
            // A failed restore lost it.
            None => {
                let mut b = exec.buffer(self.parts.input.len()).context(WHAT)?;
                b.as_mut()[..self.parts.input.len()].copy_from_slice(&self.parts.input);
                b
            }
        };
        queue.upload(input, &self.segs).context(WHAT)?;
        self.input = Some(settle_one(queue, WHAT).await?);
        Ok(())
    }

    /// Reads every range back (after a run whose output is kept).
    pub(super) async fn read_back(&mut self, queue: &mut E::Queue, exec: &E) -> Result<()> {
        const WHAT: &str = "copying memory beyond the region back";
        let len = self.parts.input.len();
        let buffer = exec.buffer(len).context(WHAT)?;
        queue.download(buffer, &self.segs).context(WHAT)?;
        let back = settle_one(queue, WHAT).await?;
        self.output = Some(back.as_ref()[..len].to_vec());
        Ok(())
    }

    /// Where each span of the ranges was placed, one line each.
    pub(super) fn placements(&self) -> &[String] {
        &self.placements
    }

    /// The ranges' bytes after the last run that read them back, with the
    /// recorded ones (when the capture holds them).
    pub(super) fn outputs(&self) -> Option<ExtraOutput<'_>> {
        Some(ExtraOutput {
            replayed: self.output.as_deref()?,
            recorded: self.parts.output.as_deref(),
            ranges: &self.parts.ranges,
        })
    }
}

#[cfg(test)]
mod tests;
