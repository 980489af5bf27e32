//! `reprise tune`: sweep a capture's launch geometry, verify and time each
//! configuration, and report the fastest.

pub(crate) mod jit;
mod lists;
mod opt_levels;
mod plot;
pub(crate) mod report;
mod sampler;
mod shard;
mod slurm;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use clap::Args;
use reprise::tune::TuneOptions;
use reprise::tune::space::{Dimension, Setting, Space};
use reprise::{Capture, LaunchConfig};

use crate::backend::{BackendArg, given};
use crate::compare_args::CompareArgs;
use crate::error::{CliError, Result};
use crate::open_args::OpenArgs;

/// Sweep a capture's launch geometry and find the fastest configuration.
///
/// Every combination of the team counts (grid), thread counts (block) and
/// dynamic shared memory sizes given is replayed on one set-up (region,
/// image and queue are made once; between runs only the region and globals
/// are restored, on a GPU from a copy kept on the device), verified
/// against the recorded output (the comparison options apply), then run
/// `--warmup` times untimed and `--repetitions` times timed. Times are the
/// device's own (events) on GPU executors. The recorded configuration is
/// always measured; speed-ups are over it. The result is a table sorted by
/// median time; configurations whose output differs, refused launches
/// (beyond the kernel's or the device's limits, or outside the capture's
/// recorded limits without --force) and failures are marked. Ctrl-C stops
/// the sweep and reports what was measured.
///
/// LIST: `a,b,c`; `a..b` (a, 2a, 4a, ... up to b: `32..1024` are the powers
/// of two); `a..b:step`; grid and block items may be 3-D (`64x4`,
/// `8x8x2`). The host executor's kernels take no geometry: tuning there is
/// refused, with the reason.
///
/// Exits 0 when at least one configuration verified (or ran, without a
/// recorded output to verify against), 1 when configurations ran but every
/// output differs, 2 when none ran (each refused or failed, the recorded
/// one included) or the sweep stopped on an error, 130 when interrupted.
#[derive(Args, Debug)]
#[command(mut_args(crate::ui::short_help(&[
    "file", "num_teams", "num_threads", "shared_mem", "repetitions", "json", "csv", "plot",
    "backend", "opt_level", "max_registers", "sampler", "trials", "time_budget", "resume",
    "workers", "shard", "merge", "slurm",
])))]
pub struct TuneArgs {
    /// The capture's descriptor.
    pub file: PathBuf,
    /// Team counts (grid) to try: `a,b,c`, `a..b` (doubling: 32..1024),
    /// `a..b:step`, 3-D items `64x4` [default: the recorded one].
    #[arg(long, value_name = "LIST", value_parser = lists::dim_list)]
    pub num_teams: Option<lists::DimList>,
    /// Threads per team (block) to try, a LIST as --num-teams [default:
    /// the recorded one].
    #[arg(long, value_name = "LIST", value_parser = lists::dim_list)]
    pub num_threads: Option<lists::DimList>,
    /// Dynamic shared memory sizes (bytes, K/M suffixes) to try: `a,b`,
    /// `a..b`, `a..b:step` [default: the recorded one].
    #[arg(long, value_name = "LIST", value_parser = lists::value_list)]
    pub shared_mem: Option<lists::ValueList>,
    /// Timed runs per configuration.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub repetitions: u32,
    /// Untimed runs per configuration, after the verified one.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    pub warmup: u32,
    /// Measure configurations outside the capture's recorded limits
    /// (TeamsLimits/ThreadsLimits) instead of refusing them.
    #[arg(long)]
    pub force: bool,
    /// Also write every configuration as a CSV row to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Print one JSON object instead of the table (times in seconds).
    #[arg(long)]
    pub json: bool,
    /// Also plot each configuration's median time as SVG to FILE.svg.
    ///
    /// Bars go from the shortest to the longest time; the recorded
    /// configuration is drawn in its own colour.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// The executor to use.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Run on this device; default: the recorded device.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(0..))]
    pub device_id: Option<i32>,
    /// Sweep a capture that has no globals file.
    #[arg(long)]
    pub allow_missing_globals: bool,
    /// Skip checking the checksums a reprise capture carries.
    #[arg(long)]
    pub no_checksums: bool,
    #[command(flatten)]
    pub open: OpenArgs,
    #[command(flatten)]
    pub compare: CompareArgs,
    /// Sweep only shard K of N of the configurations, its rows to --rows.
    ///
    /// K runs from 0 to N-1, as SLURM_ARRAY_TASK_ID; the recorded
    /// configuration counts as one of them. `--merge` joins the shards'
    /// rows into the one ranking of the whole sweep.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<crate::jobs::shard::Shard>,
    /// With --shard, the rows file [default: reprise-tune-K-of-N.jsonl];
    /// without it, the study's results file, a row written as each
    /// configuration is measured (see --resume);
    /// with --slurm, the job directory is NAME.slurm beside it [default:
    /// reprise-tune.slurm].
    #[arg(long, value_name = "F.jsonl")]
    pub rows: Option<std::path::PathBuf>,
    /// Sweep nothing: merge the shards' rows files (*.jsonl) in DIR.
    ///
    /// The rows become one ranking; give the same lists as the shards
    /// were given, for the order of ties.
    #[arg(long, value_name = "DIR", conflicts_with = "shard")]
    pub merge: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub slurm: crate::jobs::slurm::SlurmArgs,
    #[command(flatten)]
    pub ir: opt_levels::IrSweepArgs,
    #[command(flatten)]
    pub search: sampler::SearchArgs,
    #[command(flatten)]
    pub jit: jit::JitArgs,
    #[command(flatten)]
    pub base_tries: crate::isolate::BaseTryArgs,
}

/// Set by Ctrl-C: the sweep stops after the configuration under way.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

pub fn run(mut a: TuneArgs) -> Result<ExitCode> {
    // Files are checked before anything is measured.
    for (path, ext) in [(&a.plot, Some("svg")), (&a.csv, None)] {
        if let Some(p) = path {
            crate::ui::check_output_file(p, ext)?;
        }
    }
    if a.open.region_base.is_none() {
        a.open.region_base = settled_base(&a)?;
    }
    if !a.ir.opt_level.is_empty() && !sampled(&a) {
        return opt_levels::run(&a);
    }
    let capture = Capture::open_with(&a.file, open_options(&a))?;
    let recorded = recorded_config(&capture);
    let backend = tuner(&a, &capture).resolved_backend()?;
    if a.merge.is_some() || a.slurm.slurm {
        return slurm::run(&a, &capture, recorded, backend);
    }
    if a.jit.given() {
        // From IR, the image the options load is the compiled one, checked
        // as it is made.
        let recorded_image = a.ir.opt_level.is_empty().then_some(&capture);
        jit::check(&a.file, backend, recorded_image)?;
    }
    // A search over --opt-level on an executor without a launch geometry
    // (the host's) searches the levels alone.
    if !reprise::executors::capabilities(backend).launch_geometry && a.ir.opt_level.is_empty() {
        return Err(reprise::Error::NoGeometry.into());
    }
    // A sweep is the search whose grid sampler takes every configuration
    // in order.
    sampler::run(&a, &capture, recorded, backend)
}

/// The region base to tune under when the capture records none and several
/// are possible (LLVM 16's): the one under which a verifying replay, in a
/// child that tries them as `replay --verify` does, passes. `None` when
/// the base is not in doubt; an error naming what the tries found when
/// none verifies, since a sweep under a wrong base measures nothing real.
fn settled_base(a: &TuneArgs) -> Result<Option<u64>> {
    let options = open_options(a);
    let Some(t) = crate::isolate::trials(&a.file, &options, a.base_tries) else {
        return Ok(None);
    };
    let exe = crate::ui::exe()?;
    let mut cmd = crate::isolate::trying_command(&exe, &a.file, &options, a.base_tries);
    if let Some(b) = a.backend.kind() {
        cmd.arg(format!("--backend={b}"));
    }
    if let Some(d) = a.device_id {
        cmd.arg(format!("--device-id={d}"));
    }
    note!(
        "tune: the region base of {} is not recorded and {} are possible: settling it by \
         replaying under them",
        a.file.display(),
        t.total
    );
    let out = cmd
        .output()
        .map_err(|e| reprise::Error::io(&exe, "run", e))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() {
        // "region base 0x...: derived by trying ...", or nothing when the
        // rule's own base verified first.
        let tried = stdout.lines().find_map(|l| {
            let rest = l.strip_prefix("region base ")?;
            crate::open_args::number(rest.split(':').next()?)
        });
        let base = tried.or(t.derived);
        if let Some(b) = base {
            note!("tune: region base {b:#x}: the output verifies under it");
        }
        return Ok(base);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let why = stdout
        .lines()
        .chain(stderr.lines())
        .filter(|l| l.contains("FAIL") || l.starts_with("error: "))
        .map(|l| l.trim_start_matches("error: "))
        .collect::<Vec<_>>()
        .join("; ");
    Err(CliError::file(
        &a.file,
        format!(
            "the region base is not recorded, and a verifying replay settled none of the {} \
             possible, so nothing is tuned ({}); pass --region-base ADDR",
            t.total,
            if why.is_empty() {
                "no verdict"
            } else {
                why.as_str()
            }
        ),
    ))
}

/// How the capture `a.file` is opened (`--open` options, globals,
/// checksums); an image compiled from IR is set on it by the caller.
pub(crate) fn open_options(a: &TuneArgs) -> reprise::OpenOptions {
    a.open
        .options(a.backend.kind())
        .allow_missing_globals(a.allow_missing_globals)
        .verify_checksums(!a.no_checksums)
}

/// The configuration the capture was recorded with.
pub(crate) fn recorded_config(capture: &Capture) -> LaunchConfig {
    let rec = &capture.record;
    LaunchConfig {
        grid: rec.grid,
        block: rec.block,
        shared_mem: rec.shared_mem,
    }
}

/// The tuner of `capture` on the executor and device `a` names.
pub(crate) fn tuner<'c>(a: &TuneArgs, capture: &'c Capture) -> reprise::TuneBuilder<'c> {
    let builder = given(reprise::tune(capture), a.backend.kind(), |b, k| {
        b.backend(k)
    });
    given(builder, a.device_id, |b, d| b.device_id(d))
}

/// How each of `configs` is measured: verified, then `--warmup` untimed
/// and `--repetitions` timed runs, with the comparison options.
pub(crate) fn tune_options(a: &TuneArgs, configs: Vec<LaunchConfig>) -> TuneOptions {
    TuneOptions {
        configs,
        repetitions: a.repetitions,
        warmup: a.warmup,
        verify: true,
        compare: a.compare.spec(),
        force: a.force,
    }
}

/// Whether a sweep over `--opt-level` runs as the search ([`sampler`])
/// rather than as [`opt_levels`]' own sweep: any search option, a compile
/// dimension it crosses with the levels (JIT options), or what that sweep
/// does not do (shards, their merge, a Slurm job, the CSV, JSON and plot).
fn sampled(a: &TuneArgs) -> bool {
    let spread = a.shard.is_some() || a.merge.is_some() || a.slurm.slurm;
    let written = a.csv.is_some() || a.plot.is_some() || a.json;
    a.search.active(a) || a.jit.given() || spread || written
}

/// The search space of the team counts, thread counts and shared memory
/// sizes to try, after `dims`: each list given, else the recorded value.
/// A capture that records no team or thread count (LLVM recorded none)
/// needs its list.
pub(crate) fn geometry_space(
    a: &TuneArgs,
    recorded: LaunchConfig,
    mut dims: Vec<Dimension>,
) -> Result<Space> {
    for (d, list, flag, dim) in [
        (recorded.grid, &a.num_teams, "--num-teams", "team count"),
        (
            recorded.block,
            &a.num_threads,
            "--num-threads",
            "thread count",
        ),
    ] {
        if list.is_none() && d[0] == 0 {
            return Err(CliError::Usage(format!(
                "the capture records no {dim} (LLVM recorded none), so the search needs \
                 {flag} LIST"
            )));
        }
    }
    let list = |l: &Option<lists::DimList>, v| l.as_ref().map_or_else(|| vec![v], |l| l.0.clone());
    let teams = list(&a.num_teams, recorded.grid).into_iter();
    let threads = list(&a.num_threads, recorded.block).into_iter();
    let shared = a
        .shared_mem
        .as_ref()
        .map_or_else(|| vec![recorded.shared_mem], |l| l.0.clone());
    dims.extend([
        Dimension::new("--num-teams", teams.map(Setting::Grid)),
        Dimension::new("--num-threads", threads.map(Setting::Block)),
        Dimension::new("--shared-mem", shared.into_iter().map(Setting::SharedMem)),
    ]);
    Ok(Space { dims })
}
