//! Replaying a capture on any executor: reserve the recorded region at its
//! recorded address, load the image, restore globals and memory, launch,
//! and compare or save the output ([`replay_on`]); the set-up made once and
//! run many times ([`Session`], which [`crate::tune`] sweeps with).

mod extra;
mod geometry;
mod session;
mod verify;

use std::path::PathBuf;
use std::time::Duration;

use reprise_core::exec::{Executor, LaunchConfig};

use crate::capture::Capture;
use crate::error::{Error, Result};
use crate::store::write_atomically;

pub use crate::capture::Streamed;
pub use extra::ExtraOutput;
pub(crate) use geometry::outside;
pub use geometry::{launch_config, launch_config_for};
pub use session::{RestoreWay, Run, Session};
pub use verify::{
    ArgBound, ArgSpan, CompareSpec, OutputRange, Verification, arg_spans, compare_files,
    resolve_ranges, verify,
};

/// How to replay.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOptions {
    /// Teams (grid x) instead of the recorded number.
    pub num_teams: Option<u32>,
    /// Threads per team (block x) instead of the recorded number.
    pub num_threads: Option<u32>,
    /// Compare the output with the recorded one.
    pub verify: bool,
    /// How to compare (byte for byte over the whole region by default).
    pub compare: CompareSpec,
    /// Write the output next to the capture.
    pub save_output: bool,
    /// How many times to replay (each restores memory and globals first;
    /// the last one's output is the one verified and saved).
    pub repetitions: u32,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            num_teams: None,
            num_threads: None,
            verify: false,
            compare: CompareSpec::default(),
            save_output: false,
            repetitions: 1,
        }
    }
}

/// What a replay did.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The comparison with the recorded output, when asked for.
    pub verification: Option<Verification>,
    /// Wall time of each repetition (restore, launch, wait; the last one
    /// also copies the output back when it is verified or saved).
    pub times: Vec<Duration>,
    /// Device time of each repetition's kernel, where the executor measures it.
    pub kernel_times: Vec<Option<Duration>>,
    /// Where the output was saved.
    pub output_path: Option<PathBuf>,
    /// The geometry launched.
    pub config: LaunchConfig,
    /// How repetitions after the first restored the region.
    pub restore: RestoreWay,
    /// Where memory beyond the region was placed, one line per span.
    pub beyond_region: Vec<String>,
}

/// Replays `capture` on `exec`. `on_repetition` is called after each
/// repetition with its index (for progress display).
pub async fn replay_on<E>(
    exec: &E,
    capture: &Capture,
    options: &ReplayOptions,
    on_repetition: &mut (dyn FnMut(u32) + Send),
) -> Result<Outcome>
where
    E: Executor,
{
    let record = &capture.record;
    let config = launch_config_for(exec.launch_geometry(), record, options)
        .map_err(|e| e.in_file(&capture.paths.descriptor))?;
    if options.verify
        && let Some(e) = capture.output_problem()
    {
        return Err(e);
    }
    let ranges = compared_ranges(capture, &options.compare, options.verify)?;
    let repetitions = options.repetitions.max(1);
    let mut session = Session::new(exec, capture, repetitions).await?;
    let want_output = options.verify || options.save_output;
    let mut outcome = Outcome {
        verification: None,
        times: Vec::new(),
        kernel_times: Vec::new(),
        output_path: None,
        config,
        restore: session.restore_way(),
        beyond_region: session.extra_placements().to_vec(),
    };
    for rep in 0..repetitions {
        let last = rep + 1 == repetitions;
        let run = session.run(config, want_output && last).await?;
        outcome.times.push(run.time);
        outcome.kernel_times.push(run.kernel_time);
        on_repetition(rep);
    }
    if let Some(out) = session.output() {
        if options.verify {
            let tolerance = options.compare.tolerance;
            let mut v = verify_output(capture, out, tolerance, ranges)?;
            // The whole output is compared unless parts of the region
            // were chosen: then the memory beyond it too.
            if options.compare.ranges.is_empty()
                && let Some(x) = session.extra_output()
                && let Some(recorded) = x.recorded
            {
                let base = capture.region_base()?;
                add_extra(&mut v, base, x, recorded);
            }
            outcome.verification = Some(v);
        }
        if options.save_output {
            write_atomically(&capture.paths.replay_output, out, false)?;
            outcome.output_path = Some(capture.paths.replay_output.clone());
        }
    }
    Ok(outcome)
}

/// The ranges `spec` compares of `capture`'s region when `verifying`, none
/// otherwise (see [`resolve_ranges`]).
pub(crate) fn compared_ranges(
    capture: &Capture,
    spec: &CompareSpec,
    verifying: bool,
) -> Result<Vec<(u64, u64)>> {
    if !verifying {
        return Ok(Vec::new());
    }
    let base = capture.region_base()?;
    resolve_ranges(spec, &capture.record, base, capture.snapshot_len())
}

/// Adds the comparison of the extra ranges' bytes after the run (`x`)
/// with the `recorded` ones to `v`, under `v`'s tolerance: each range that
/// differs is named in the log, and its differences count as the region's
/// do (listed by their offset from the region's `base` where they lie
/// above it).
fn add_extra(v: &mut Verification, base: u64, x: ExtraOutput<'_>, recorded: &[u8]) {
    use reprise_core::compare::Comparer;
    let mut at = 0usize;
    for r in x.ranges {
        let len = r.size as usize;
        let mut c = Comparer::new(v.tolerance);
        let above = r.addr.checked_sub(base);
        c.range(above.unwrap_or(0));
        c.feed(&recorded[at..at + len], &x.replayed[at..at + len]);
        let got = c.finish();
        at += len;
        if !got.is_match() {
            log::warn!(
                "{} at {:#x}: {} of {} {} differ from the recording's",
                r.class.describe(),
                r.addr,
                got.mismatches,
                got.elements,
                if got.dtype.is_some() {
                    "elements"
                } else {
                    "bytes"
                }
            );
        }
        let all = &mut v.comparison;
        all.mismatches += got.mismatches;
        all.elements += got.elements;
        all.bytes += got.bytes;
        all.max_abs = all.max_abs.max(got.max_abs);
        all.max_rel = all.max_rel.max(got.max_rel);
        if above.is_some() {
            for m in got.first {
                let _ = all.first.push(m);
            }
        }
    }
}

/// Compares a run's output `out` with `capture`'s recorded output (which
/// the caller checked is there) over `ranges`.
pub(crate) fn verify_output(
    capture: &Capture,
    out: &[u8],
    tolerance: reprise_core::compare::Tolerance,
    ranges: Vec<(u64, u64)>,
) -> Result<Verification> {
    let recorded = capture
        .output
        .as_ref()
        .ok_or(Error::Internal("the recorded output went missing"))?;
    verify(
        out,
        recorded,
        capture.expected_output_checksum(),
        tolerance,
        ranges,
    )
}
