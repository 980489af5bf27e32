//! Replaying a capture on any executor: reserve the recorded region at its
//! recorded address, load the image, restore globals and memory, launch,
//! and compare or save the output.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use reprise_core::exec::{Executor, KernelArgs, Launch, LaunchConfig, RegionRequest, Segment};
use reprise_core::record::KernelRecord;
use reprise_core::schedule::{self, Buffers, ReplayPlan};

use crate::capture::{Capture, SnapshotFile, checksum_mismatch};
use crate::error::{Error, Result, Setting, UnknownGeometry};
use crate::layout::globals_segments;
use crate::store::write_atomically;

/// Reservations start on a page boundary.
const PAGE: u64 = 4096;

/// How to replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayOptions {
    /// Teams (grid x) instead of the recorded number.
    pub num_teams: Option<u32>,
    /// Threads per team (block x) instead of the recorded number.
    pub num_threads: Option<u32>,
    /// Compare the output with the recorded one.
    pub verify: bool,
    /// Write the output next to the capture.
    pub save_output: bool,
    /// How many times to replay (each restores memory and globals first).
    pub repetitions: u32,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            num_teams: None,
            num_threads: None,
            verify: false,
            save_output: false,
            repetitions: 1,
        }
    }
}

/// The result of comparing a replay's output with the recorded output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// Every byte matches.
    Match {
        /// Bytes compared.
        bytes: u64,
    },
    /// Some bytes differ.
    Mismatch {
        /// Offset (from the region base) of the first differing byte.
        first_offset: u64,
        /// How many bytes differ.
        differing: u64,
        /// Bytes compared.
        bytes: u64,
    },
}

impl Verification {
    /// Whether the output matched.
    pub fn is_match(&self) -> bool {
        matches!(self, Verification::Match { .. })
    }
}

/// What a replay did.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The comparison with the recorded output, when asked for.
    pub verification: Option<Verification>,
    /// Wall time of each repetition (restore, launch, output copy, wait).
    pub times: Vec<Duration>,
    /// Device time of each repetition's kernel, where the executor measures it.
    pub kernel_times: Vec<Option<Duration>>,
    /// Where the output was saved.
    pub output_path: Option<PathBuf>,
    /// The geometry launched.
    pub config: LaunchConfig,
}

/// The launch geometry a replay uses: the recorded one, with overrides
/// checked against the recorded limits (rejected when the lower limit is
/// above zero and the value falls outside, as LLVM's replay tool does).
/// A count the record leaves unknown (0) must be given by an override
/// ([`Error::UnknownGeometry`] says which otherwise).
pub fn launch_config(record: &KernelRecord, options: &ReplayOptions) -> Result<LaunchConfig> {
    if let Some(geometry) = UnknownGeometry::of(record, options.num_teams, options.num_threads) {
        return Err(Error::UnknownGeometry {
            path: None,
            geometry,
        });
    }
    let mut grid = record.grid;
    let mut block = record.block;
    let check = |setting: Setting, v: u32, limits: Option<[u32; 2]>| -> Result<()> {
        if v == 0 {
            return Err(Error::BadOption {
                setting,
                value: v.to_string(),
                problem: "must be at least 1".into(),
            });
        }
        if let Some([lo, hi]) = limits
            && lo > 0
            && (v < lo || v > hi)
        {
            return Err(Error::OutsideLimits {
                path: None,
                setting,
                value: v,
                limits: [lo, hi],
            });
        }
        Ok(())
    };
    if let Some(t) = options.num_teams {
        check(Setting::NumTeams, t, record.teams_limits)?;
        grid[0] = t;
    }
    if let Some(t) = options.num_threads {
        check(Setting::NumThreads, t, record.threads_limits)?;
        block[0] = t;
    }
    Ok(LaunchConfig {
        grid,
        block,
        shared_mem: record.shared_mem,
    })
}

/// Compares `replayed` with the recorded output file, streaming the file
/// (and checking its checksum on the way, when `checksum` is given).
pub fn compare(
    replayed: &[u8],
    recorded: &SnapshotFile,
    checksum: Option<u64>,
) -> Result<Verification> {
    let bytes = recorded.len;
    if replayed.len() as u64 != bytes {
        return Err(Error::capture(
            &recorded.path,
            format!(
                "recorded output is {bytes} bytes, the replay produced {}",
                replayed.len()
            ),
        ));
    }
    let mut at = 0usize;
    let mut first = None;
    let mut differing = 0u64;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    recorded.for_each_chunk(1 << 20, |chunk| {
        if checksum.is_some() {
            hasher.update(chunk);
        }
        let mine = &replayed[at..at + chunk.len()];
        if mine != chunk {
            for (i, (a, b)) in mine.iter().zip(chunk).enumerate() {
                if a != b {
                    first.get_or_insert((at + i) as u64);
                    differing += 1;
                }
            }
        }
        at += chunk.len();
    })?;
    if let Some(want) = checksum {
        let got = hasher.digest();
        if got != want {
            return Err(checksum_mismatch(&recorded.path, want, got));
        }
    }
    Ok(match first {
        None => Verification::Match { bytes },
        Some(first_offset) => Verification::Mismatch {
            first_offset,
            differing,
            bytes,
        },
    })
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
    let name = record.name.as_str();
    let config = if exec.launch_geometry() {
        launch_config(record, options)
    } else {
        // The geometry is not the kernel's to see: counts the record
        // leaves unknown (0) are launched as 1.
        let mut known = (**record).clone();
        for d in known.grid.iter_mut().chain(known.block.iter_mut()) {
            *d = (*d).max(1);
        }
        launch_config(&known, options)
    }
    .map_err(|e| e.in_file(&capture.paths.descriptor))?;
    if options.verify
        && let Some(e) = capture.output_problem()
    {
        return Err(e);
    }
    let base = capture.region_base()?;
    let len = usize::try_from(capture.snapshot_len()).map_err(|_| {
        Error::capture(
            &capture.input.path,
            "snapshot larger than the address space",
        )
    })?;

    // Reserve the address space the recording reserved, where known (a
    // driver that places reservations itself then most likely repeats the
    // recording's address), with memory behind the snapshot only (LLVM
    // records 64 GiB regions); and just the snapshot when that much address
    // space cannot be had.
    //
    // A base that is not page-aligned (LLVM 16's region is a `malloc`: a
    // page + 16 bytes) is reserved from its page, and the snapshot lands at
    // the recorded byte address.
    let start = base / PAGE * PAGE;
    let lead = base - start;
    let snapshot_request = RegionRequest::new(Some(start), (lead + len as u64).max(PAGE));
    let recorded_request = record
        .region_size
        .map(|size| size.saturating_add(lead))
        .filter(|&size| size > snapshot_request.capacity)
        .map(|capacity| {
            RegionRequest::new(Some(start), capacity).backed(snapshot_request.capacity)
        });
    let reserve_error = |e| {
        Error::executor(
            format!("reserving the recorded region at {base:#x} ({len} bytes)"),
            e,
        )
    };
    let mut reserved = None;
    for request in recorded_request.into_iter().chain([snapshot_request]) {
        // Where the executor can map the snapshot as the region, the first
        // repetition needs no copy at all.
        // (A file maps only from a page boundary.)
        if let Some(r) = (lead == 0)
            .then(|| exec.reserve_mapped(request, capture.input.map(len as u64)))
            .transpose()
            .map(Option::flatten)
            .map_err(|e| {
                Error::executor(
                    format!("mapping {} as the region", capture.input.path.display()),
                    e,
                )
            })?
        {
            reserved = Some((r, true));
            break;
        }
        match exec.reserve(request) {
            Ok(r) => {
                reserved = Some((r, false));
                break;
            }
            Err(e) if request == snapshot_request => return Err(reserve_error(e)),
            Err(e) => log::debug!(
                "reserving the recorded {} bytes failed ({e}); trying the snapshot's",
                request.capacity
            ),
        }
    }
    let (region, preloaded) = reserved.ok_or(Error::Internal("no region was reserved"))?;
    let image = exec
        .load_image(&capture.image)
        .map_err(|e| Error::executor(format!("loading {}", capture.image_path().display()), e))?;
    let kernel = exec.kernel(&image, name).map_err(|e| {
        Error::executor(
            format!(
                "finding kernel {name} in {}",
                capture.image_path().display()
            ),
            e,
        )
    })?;

    // Globals: each recorded one must exist in the image with the same size.
    let mut recorded = Vec::new();
    for g in capture.globals() {
        let info = exec
            .global(&image, g.name)
            .map_err(|e| Error::executor(format!("looking up global {}", g.name), e))?
            .ok_or_else(|| {
                Error::capture(
                    &capture.paths.globals,
                    format!("recorded global `{}` is absent from the image", g.name),
                )
            })?;
        if info.size != g.bytes.len() as u64 {
            return Err(Error::capture(
                &capture.paths.globals,
                format!(
                    "recorded global `{}` has {} bytes, the image's has {}",
                    g.name,
                    g.bytes.len(),
                    info.size
                ),
            ));
        }
        recorded.push((info.addr, g.bytes));
    }
    let (global_segs, globals_len) =
        globals_segments(recorded.iter().map(|(a, b)| (*a, b.len() as u64)))?;
    let globals_buf = if global_segs.is_empty() {
        None
    } else {
        let mut b = exec
            .buffer(globals_len)
            .map_err(|e| Error::executor("allocating the globals buffer", e))?;
        for (seg, (_, bytes)) in global_segs.iter().zip(&recorded) {
            b.as_mut()[seg.host_offset..seg.host_offset + seg.len].copy_from_slice(bytes);
        }
        Some(b)
    };

    let input = capture.input.read_into(exec, len)?;
    capture.check_input(&input.as_ref()[..len])?;
    let want_output = options.verify || options.save_output;
    let output = if want_output {
        Some(
            exec.buffer(len)
                .map_err(|e| Error::executor("allocating the output buffer", e))?,
        )
    } else {
        None
    };

    let values = record.arg_values();
    let args = KernelArgs {
        values: &values,
        sizes: &record.arg_sizes,
        data: &record.arg_data,
    };
    let plan = ReplayPlan {
        kernel: &kernel,
        launch: Launch { config, args },
        memory: Segment {
            device: base,
            host_offset: 0,
            len,
        },
        globals: &global_segs,
        save_output: want_output,
        restore_memory: true,
    };
    let mut queue = exec
        .queue()
        .map_err(|e| Error::executor("creating a queue", e))?;
    let mut buffers = Buffers {
        input,
        globals: globals_buf,
        output,
    };
    let mut times = Vec::new();
    let mut kernel_times = Vec::new();
    for rep in 0..options.repetitions.max(1) {
        let start = Instant::now();
        let plan = ReplayPlan {
            restore_memory: !(preloaded && rep == 0),
            ..plan
        };
        buffers = schedule::replay(&mut queue, plan, buffers, drop)
            .await
            .map_err(|e| Error::schedule(format!("replaying {name}"), e))?;
        times.push(start.elapsed());
        kernel_times.push(reprise_core::exec::Queue::last_kernel_time(&queue));
        on_repetition(rep);
    }

    let mut outcome = Outcome {
        verification: None,
        times,
        kernel_times,
        output_path: None,
        config,
    };
    if let Some(out) = &buffers.output {
        let out = &out.as_ref()[..len];
        if options.verify {
            // Checked above: the recorded output exists.
            let recorded = capture
                .output
                .as_ref()
                .ok_or(Error::Internal("the recorded output went missing"))?;
            outcome.verification =
                Some(compare(out, recorded, capture.expected_output_checksum())?);
        }
        if options.save_output {
            write_atomically(&capture.paths.replay_output, out, false)?;
            outcome.output_path = Some(capture.paths.replay_output.clone());
        }
    }
    drop(queue);
    drop(region);
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Names;

    fn record(json: &str) -> KernelRecord {
        KernelRecord::from_json(json.as_bytes()).unwrap()
    }

    /// Names as a command line gives them.
    const FLAGS: Names = Names {
        verb: "pass",
        name: |s| match s {
            Setting::NumTeams => "--num-teams",
            Setting::NumThreads => "--num-threads",
            other => other.library_name(),
        },
        given: |s| match s {
            Setting::NumTeams => "--num-teams N",
            Setting::NumThreads => "--num-threads N",
            other => other.library_name(),
        },
    };

    fn unknown(record: &KernelRecord, options: &ReplayOptions) -> Option<UnknownGeometry> {
        UnknownGeometry::of(record, options.num_teams, options.num_threads)
    }

    #[test]
    fn unknown_counts_need_overrides() {
        let legacy = record(
            r#"{"ArgOffsets":[],"ArgPtrs":[],"DeviceMemorySize":0,"Name":"k","NumArgs":0,"NumTeamsClause":0,"ThreadLimitClause":0}"#,
        );
        let none = ReplayOptions::default();
        let err = launch_config(&legacy, &none).unwrap_err();
        assert_eq!(
            err.named(FLAGS).to_string(),
            "NumTeamsClause is 0 and ThreadLimitClause is 0: LLVM recorded no num_teams or \
             thread_limit clause, so the launch's team count and threads per team are unknown; \
             pass --num-teams N and --num-threads N"
        );
        // The library names its own settings.
        assert!(
            err.to_string().ends_with(
                "are unknown; set ReplayOptions::num_teams and ReplayOptions::num_threads"
            ),
            "{err}"
        );
        let teams_only = ReplayOptions {
            num_teams: Some(4),
            ..ReplayOptions::default()
        };
        assert_eq!(
            unknown(&legacy, &teams_only)
                .unwrap()
                .named(FLAGS)
                .to_string(),
            "ThreadLimitClause is 0: LLVM recorded no thread_limit clause, so the launch's \
             threads per team are unknown; pass --num-threads N"
        );
        let both = ReplayOptions {
            num_teams: Some(4),
            num_threads: Some(64),
            ..ReplayOptions::default()
        };
        let c = launch_config(&legacy, &both).unwrap();
        assert_eq!((c.grid, c.block), ([4, 1, 1], [64, 1, 1]));

        let current = record(
            r#"{"ArgOffsets":[],"ArgPtrs":[],"Name":"k","NumArgs":0,"NumTeams":0,"NumThreads":32,"VAllocAddr":4096}"#,
        );
        assert_eq!(
            unknown(&current, &none).unwrap().named(FLAGS).to_string(),
            "NumTeams is 0: LLVM recorded no value for it, so the launch's team count is \
             unknown; pass --num-teams N"
        );
        assert_eq!(unknown(&current, &teams_only), None);
        // A zero override is still the option's fault.
        let zero = ReplayOptions {
            num_teams: Some(0),
            ..ReplayOptions::default()
        };
        let err = launch_config(&current, &zero).unwrap_err();
        assert_eq!(
            err.named(FLAGS).to_string(),
            "--num-teams 0: must be at least 1"
        );
        assert_eq!(
            err.to_string(),
            "ReplayOptions::num_teams 0: must be at least 1"
        );
    }
}
