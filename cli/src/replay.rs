//! `reprise replay`: run a capture again, verify it, time it, tune it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use clap::Args;
use reprise::Capture;

use crate::backend::{BackendArg, given};
use crate::compare_args::CompareArgs;
use crate::error::Result;
use crate::isolate;
use crate::open_args::OpenArgs;
use crate::tune::report::dims;
use crate::ui::{LazyProgress, human_bytes, human_time};

/// Replay a recorded kernel launch.
///
/// Restores the recorded device memory (at its recorded address) and
/// globals, launches the kernel with the recorded arguments and geometry,
/// and optionally compares the output with the recorded one. The option
/// names are those of LLVM's kernel replay tool; both `--opt=N` and
/// `--opt N` work.
///
/// On the host executor the image is loaded and run in a child process, so
/// that an image that crashes while it is loaded (a corrupted capture) is an
/// error naming it, not the end of reprise.
#[derive(Args, Debug)]
#[command(mut_args(crate::ui::short_help(&[
    "file", "verify", "num_teams", "num_threads", "repetitions", "backend", "image", "from_ir",
    "dtype", "rtol", "arg",
])))]
pub struct ReplayArgs {
    /// The capture's descriptor (`NAME.json`); its other files are found
    /// beside it.
    pub file: PathBuf,
    /// Compare the output with the recorded output (exit 1 on a
    /// difference): byte for byte, or as the comparison options below say
    /// (which imply it). `--verify=false` is accepted, as LLVM's tool does.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value_t = false, action = clap::ArgAction::Set)]
    pub verify: bool,
    /// Save the output next to the capture (`.replay_output`, or
    /// `.replay.output` for LLVM legacy captures).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value_t = false, action = clap::ArgAction::Set)]
    pub save_output: bool,
    /// Launch with this many teams (grid x) instead of the recorded number.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub num_teams: Option<u32>,
    /// Launch with this many threads per team (block x).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub num_threads: Option<u32>,
    /// Run on this device (GPU executors); default: the recorded device.
    /// The host executor has no devices to choose from.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(0..))]
    pub device_id: Option<i32>,
    /// Replay N times, restoring memory and globals before each, and print
    /// each time; the last repetition's output is the one verified and
    /// saved. On a GPU the region is restored from a copy of the snapshot
    /// kept on the device (a device-to-device copy instead of an upload).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
    /// The executor to use.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Replay a capture that has no globals file (recorded before LLVM saved
    /// globals); globals then keep the values the image gives them.
    #[arg(long)]
    pub allow_missing_globals: bool,
    /// Skip checking the checksums a reprise capture carries.
    #[arg(long)]
    pub no_checksums: bool,
    #[command(flatten)]
    pub open: OpenArgs,
    #[command(flatten)]
    pub compare: CompareArgs,
    #[command(flatten)]
    pub ir: crate::from_ir::IrArgs,
    #[command(flatten)]
    pub jit: crate::tune::jit::JitArgs,
    #[command(flatten)]
    pub base_tries: isolate::BaseTryArgs,
}

pub fn run(a: ReplayArgs) -> Result<ExitCode> {
    if a.file.is_dir() {
        return Err(not_a_descriptor(&a.file));
    }
    let mut options = a
        .open
        .options(a.backend.kind())
        .allow_missing_globals(a.allow_missing_globals)
        .verify_checksums(!a.no_checksums);
    if a.ir.wanted() {
        // Compiled (or found in the cache) here and again, from the
        // cache, by the child that runs a host replay: said once.
        let quiet = std::env::var_os(isolate::CHILD).is_some();
        let compiled =
            crate::from_ir::prepare(&a.file, &a.ir, a.backend.kind(), a.device_id, quiet)?;
        options = options.compiled_image(compiled.path);
    }
    // A base the capture does not record, and the rule did not settle
    // alone: the verdict is the one the possible bases give together.
    if (a.verify || a.compare.given())
        && let Some(t) = isolate::trials(&a.file, &options, a.base_tries)
    {
        return isolate::try_bases(&a.file, &t);
    }
    if isolate::wanted(&a.file, &options) {
        return isolate::replay_in_child(&a.file, &options);
    }
    isolate::child_start();
    let ran = here(a, options);
    isolate::child_done();
    ran
}

/// The replay, in this process.
fn here(a: ReplayArgs, options: reprise::OpenOptions) -> Result<ExitCode> {
    let jit = a.jit.single()?;
    let capture = Capture::open_with(&a.file, options)?;
    let rec = &capture.record;
    let verify = a.verify || a.compare.given();
    let options = reprise::replayer::ReplayOptions {
        num_teams: a.num_teams,
        num_threads: a.num_threads,
        verify,
        compare: a.compare.spec(),
        save_output: a.save_output,
        repetitions: a.repetitions,
    };
    let builder = reprise::replay(&capture).options(options);
    let builder = given(builder, a.backend.kind(), |b, k| b.backend(k));
    let mut builder = given(builder, a.device_id, |b, d| b.device_id(d));
    let backend = builder.resolved_backend()?;
    if let Some(jit) = jit {
        crate::tune::jit::check(&a.file, backend, Some(&capture))?;
        out!("PTX JIT options: {jit}");
        builder = builder.cuda(reprise::CudaOptions::new().jit(jit));
    }
    for m in reprise::list::marked_args(rec) {
        note!("warning: {}: {m}", a.file.display());
    }
    if let Some(d) = a.device_id
        && !reprise::executors::capabilities(backend).has_devices
    {
        note!(
            "warning: --device-id {d} is ignored: the {backend} executor has no devices to choose from"
        );
    }
    out!(
        "replaying {} ({} capture, {} executor): {} of memory at {:#x}, {} globals",
        rec.name,
        rec.generation,
        backend,
        human_bytes(capture.snapshot_len()),
        capture.region_base().unwrap_or(0),
        capture.globals().count()
    );
    if let Some(o) = &capture.image_origin {
        out!("image: {}", origin_text(o));
    }
    if let Some(b @ reprise::capture::BaseOrigin::Derived { .. }) = capture.base_origin() {
        out!("region base {:#x}: {b}", capture.region_base().unwrap_or(0));
    }
    let progress = Arc::new(Mutex::new(LazyProgress::new(
        u64::from(a.repetitions),
        "replaying",
    )));
    let p = progress.clone();
    let outcome = reprise::block_on(
        builder
            .on_repetition(move |i| {
                p.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .set(u64::from(i) + 1)
            })
            .into_future(),
    );
    drop(progress);
    let derived = match capture.base_origin() {
        Some(b @ reprise::capture::BaseOrigin::Derived { .. }) => Some(b),
        _ => None,
    };
    let outcome = match outcome {
        Ok(o) => o,
        // A fault with a derived base: the base may be the cause.
        Err(e) if e.kernel_faulted() && derived.is_some() => {
            let hint = derived
                .map(|b| {
                    isolate::fault_hint(
                        capture.region_base().unwrap_or(0),
                        &b,
                        &capture.record,
                        &a.file,
                        isolate::fault_address(&e),
                    )
                })
                .unwrap_or_default();
            return Err(crate::error::CliError::Hinted(Box::new(e), hint));
        }
        Err(e) => return Err(e.into()),
    };
    let c = outcome.config;
    out!(
        "geometry: grid {}, block {}, {} bytes dynamic shared memory",
        dims(c.grid),
        dims(c.block),
        c.shared_mem
    );
    for line in &outcome.beyond_region {
        out!("beyond the region: {line}");
    }
    for (i, (t, k)) in outcome.times.iter().zip(&outcome.kernel_times).enumerate() {
        match k {
            Some(k) => out!(
                "replay {}: {} (kernel {})",
                i + 1,
                human_time(*t),
                human_time(*k)
            ),
            None => out!("replay {}: {}", i + 1, human_time(*t)),
        }
    }
    if let Some(p) = &outcome.output_path {
        out!("output saved to {}", p.display());
    }
    if a.repetitions > 1 && outcome.restore == reprise::replayer::RestoreWay::DeviceCopy {
        out!("repetitions after the first restored the region from a copy kept on the device");
    }
    match &outcome.verification {
        None => Ok(ExitCode::SUCCESS),
        Some(v) => {
            if let Ok(base) = capture.region_base() {
                for line in a
                    .compare
                    .arg_lines(&capture.record, base, capture.snapshot_len())
                {
                    out!("{line}");
                }
            }
            for line in a.compare.report(
                "verification",
                &v.comparison,
                &v.ranges,
                capture.region_base().ok(),
            ) {
                out!("{line}");
            }
            if v.is_match() {
                return Ok(ExitCode::SUCCESS);
            }
            // A difference with a base chosen among several is no answer:
            // the base may be what differs (unless this replay is one try
            // of several, whose verdicts are weighed together).
            if let Some(b) = derived.filter(|b| b.alternatives().is_some())
                && std::env::var_os(isolate::TRIAL).is_none()
            {
                let hint = isolate::derived_hint(capture.region_base().unwrap_or(0), &b);
                let why = format!("the output differs, but{}", hint.trim_start_matches(';'));
                return Err(crate::error::CliError::file(&a.file, why));
            }
            Ok(ExitCode::from(1))
        }
    }
}

use std::future::IntoFuture;

/// Where an image came from, for people.
pub fn origin_text(o: &reprise::offload::ImageOrigin) -> String {
    match &o.entry {
        None => o.path.display().to_string(),
        Some((index, triple, arch)) => {
            let arch = if arch.is_empty() {
                String::new()
            } else {
                format!(" {arch}")
            };
            format!(
                "entry #{index} ({triple}{arch}) of the offload binary in {}",
                o.path.display()
            )
        }
    }
}

/// The error for a directory given where one capture's descriptor goes:
/// which descriptors it holds, and the command that takes a directory.
fn not_a_descriptor(dir: &std::path::Path) -> crate::error::CliError {
    let names = crate::record::descriptors(dir);
    let shown: Vec<String> = names
        .iter()
        .take(3)
        .map(|p| p.display().to_string())
        .collect();
    let more = names.len().saturating_sub(shown.len());
    let which = match (shown.is_empty(), more) {
        (true, _) => " (it holds none)".to_string(),
        (false, 0) => format!(", e.g. {}", shown.join(", ")),
        (false, n) => format!(", e.g. {} ({n} more)", shown.join(", ")),
    };
    crate::error::CliError::file(
        dir,
        format!(
            "is a directory: replay takes one capture's descriptor (NAME.json){which}; \
             `reprise check {0}` replays and verifies every capture in it, \
             `reprise list {0}` lists them",
            dir.display()
        ),
    )
}
