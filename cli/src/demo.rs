//! `reprise demo`: record one launch of a built-in kernel and replay it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use reprise::config::parse_size;
use reprise::executors::{AnyExecutor, ExecutorJob, ExecutorSpec, Executors, with_executor};
use reprise::samples::{BuiltinKernel, demo_kernel};
use reprise::{BackendKind, Capture, RecordConfig, Recorder};

use crate::backend::BackendArg;
use crate::error::{CliError, Result};
use crate::jobs::slurm::script::quoted;
use crate::ui::{human_bytes, human_time};

/// Record a built-in kernel's launch and replay it: the round trip in one
/// command.
///
/// On the host CPU (the default, `--backend host`), an NVIDIA GPU
/// (`--backend cuda`) or an AMD GPU (`--backend amdgpu`).
///
/// Builds in a sample kernel (on the host, a stencil over a float array
/// that reads a device global; on a GPU, a saxpy that reads one), records
/// one launch whose recording region holds about SIZE bytes, writes the
/// capture to DIR, then replays it in a new process (`reprise replay
/// --verify`) at the recorded address and verifies the output byte for
/// byte.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Where to write the capture.
    #[arg(long, default_value = "reprise-demo")]
    pub dir: PathBuf,
    /// Bytes the kernel's input and output arrays occupy together (e.g.
    /// 4M, 256M).
    /// From 8 bytes (one float each) to 16 GiB (the CUDA kernel counts
    /// elements in an `int`); the demo needs about 5 times SIZE of memory.
    #[arg(long, default_value = "4M", value_parser = parse_demo_size)]
    pub size: u64,
    /// The executor to record and replay on: host, cuda or amdgpu.
    #[arg(long, default_value = "host", value_parser = BackendArg::builtin_kernels())]
    pub backend: BackendArg,
    /// The CUDA device (with `--backend cuda`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(0..))]
    pub device_id: Option<i32>,
    /// How the capture's data files are written: raw or store (see
    /// `reprise record --format`).
    #[arg(long, value_enum, default_value = "store", value_name = "FORMAT")]
    pub format: crate::record::FormatArg,
}

fn step(n: u32, text: impl std::fmt::Display) {
    out!("[{n}/4] {text}");
}

/// The largest `--size`: the CUDA kernel counts elements in an `int`.
const MAX_SIZE: u64 = 8 * i32::MAX as u64;

/// `--size`: within 8 bytes ..= [`MAX_SIZE`].
fn parse_demo_size(s: &str) -> std::result::Result<u64, String> {
    let n = parse_size("--size", s).map_err(|e| e.to_string())?;
    if n < 8 {
        return Err(format!(
            "{n} bytes is too small: the input and output need at least 4 bytes each"
        ));
    }
    if n > MAX_SIZE {
        return Err(format!(
            "{} is too large: at most {} ({} floats in and out)",
            human_bytes(n),
            human_bytes(MAX_SIZE),
            i32::MAX
        ));
    }
    Ok(n)
}

pub fn run(a: DemoArgs) -> Result<ExitCode> {
    // The region, the recorded snapshots, the files in the page cache and
    // the replay's copies: about five times SIZE at the peak.
    let need = a.size.saturating_mul(5);
    if let Some(avail) = crate::ui::available_memory().filter(|&avail| need > avail) {
        return Err(CliError::Lacking(format!(
            "demo --size {} needs about {} of memory; {} is available",
            human_bytes(a.size),
            human_bytes(need),
            human_bytes(avail)
        )));
    }
    let kind = a.backend.kind().unwrap_or(BackendKind::Host);
    if let Some(d) = a.device_id
        && !reprise::executors::capabilities(kind).has_devices
    {
        return Err(CliError::Usage(format!(
            "--device-id {d} chooses a GPU: use it with --backend cuda or amdgpu"
        )));
    }
    let spec = ExecutorSpec::new(kind).device(a.device_id.unwrap_or(0));
    let n = (a.size / 8) as usize;
    with_executor(spec, DemoJob { args: &a, n })?
}

/// The demo on whatever executor [`with_executor`] opens.
struct DemoJob<'a> {
    args: &'a DemoArgs,
    /// Floats in (and out).
    n: usize,
}

impl ExecutorJob for DemoJob<'_> {
    type Output = Result<ExitCode>;

    fn run<E: AnyExecutor>(self, executors: Executors<E>) -> reprise::Result<Result<ExitCode>> {
        let spec = executors.spec();
        let kernel = demo_kernel(spec.kind).ok_or(reprise::Error::Unsupported {
            backend: spec.kind,
            feature: "a built-in demo kernel",
        })?;
        Ok(demo(executors.open()?, spec, &kernel, self.n, self.args))
    }
}

/// An empty vector with room for `bytes`: an error, not an abort, when the
/// system will not give that much.
fn host_buffer(bytes: usize) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(bytes).map_err(|_| {
        CliError::Lacking(format!(
            "the demo's input of {} cannot be allocated: not enough memory (try a smaller --size)",
            human_bytes(bytes as u64)
        ))
    })?;
    Ok(v)
}

fn demo<E: AnyExecutor>(
    exec: E,
    spec: ExecutorSpec,
    k: &BuiltinKernel,
    n: usize,
    a: &DemoArgs,
) -> Result<ExitCode> {
    let (backend, device) = (spec.kind, spec.device);
    let bytes = n * 4;
    let region_size = (2 * bytes as u64 + (64 << 20)).next_power_of_two();

    step(
        1,
        format!(
            "recording {} over {n} floats on the {backend} executor ({} in + out)",
            k.name,
            human_bytes(2 * bytes as u64)
        ),
    );
    let config = RecordConfig::default()
        .enabled(true)
        .dir(&a.dir)
        .region_size(region_size)
        .format(a.format.into())
        .save_output(true);
    let mut rec = Recorder::new(exec, device, config)?;
    let input = rec.alloc(bytes as u64, 256)?;
    let output = rec.alloc(bytes as u64, 256)?;
    // Large sizes take seconds: say what is happening meanwhile (on stderr,
    // so the steps on stdout stay as they are).
    let say = |what: &str| {
        if bytes >= 16 << 20 {
            note!("      {what}");
        }
    };
    say(&format!(
        "filling {} of input...",
        human_bytes(bytes as u64)
    ));
    let mut data = host_buffer(bytes)?;
    data.extend((0..n).flat_map(|i| ((i as f32 * 0.01).sin() * 100.0).to_le_bytes()));
    rec.upload(input, &data)?;
    data.clear();
    data.resize(bytes, 0);
    rec.upload(output, &data)?;
    drop(data);
    let image = rec.load_image(k.image)?;
    let kernel = rec.kernel(image, k.name)?;
    let geometry = (k.geometry)(n as u64);
    let args = (k.args)(input, output, n as u64);
    say("launching, snapshotting and writing the capture files...");
    let start = Instant::now();
    let written = reprise::block_on(async {
        rec.launch(&kernel, geometry, &args).await?;
        rec.finish().await
    })?;
    let recorded_in = start.elapsed();
    let region_base = rec.region().base();
    drop(rec); // unmaps the recording region, so the replay can take its address
    let descriptor = written.into_iter().next().ok_or(reprise::Error::Internal(
        "the demo's launch was not recorded",
    ))?;
    step(
        2,
        format!(
            "recorded in {}: region at {region_base:#x}, capture {}",
            human_time(recorded_in),
            descriptor.display()
        ),
    );
    let capture = Capture::open(&descriptor)?;
    for f in [
        &capture.paths.descriptor,
        &capture.paths.input,
        &capture.paths.output,
        &capture.paths.globals,
        &capture.paths.image,
    ] {
        // A file of the store format is its manifest.
        let f = reprise::capture::data_file(f);
        let len = std::fs::metadata(&f).map(|m| m.len()).unwrap_or(0);
        out!("      {:>10}  {}", human_bytes(len), f.display());
    }

    // The replay runs as a user would run it: in a new process, which must
    // get the recorded address from the executor afresh.
    step(
        3,
        format!(
            "replaying in a new process on the {backend} executor at the recorded address: \
             {} replay --verify {}",
            crate::ui::invocation(),
            descriptor.display()
        ),
    );
    let exe = crate::ui::exe()?;
    let child = std::process::Command::new(&exe)
        .arg("replay")
        .arg("--verify")
        .arg(&descriptor)
        .output()
        .map_err(|e| reprise::Error::io(&exe, "run", e))?;
    for line in String::from_utf8_lossy(&child.stdout).lines() {
        out!("      {line}");
    }
    let stderr = String::from_utf8_lossy(&child.stderr);
    match child.status.code() {
        Some(0) => {
            step(
                4,
                "verified: the replay's output equals the recorded output byte for byte",
            );
            let me = crate::ui::invocation();
            let on_path = me == "reprise";
            // The environment that found the runtime (REPRISE_HSA_LIBRARY
            // naming the simulated one; for a driver the loader finds, as
            // CUDA's, LD_LIBRARY_PATH) is part of the replay that works,
            // in a new shell too; `inspect` loads no runtime.
            let caps = reprise::executors::capabilities(backend);
            let vars = caps
                .library_var
                .into_iter()
                .chain(caps.device_memory.then_some("LD_LIBRARY_PATH"));
            let mut runs = String::new();
            for var in vars {
                if let Some(value) = std::env::var_os(var) {
                    runs += &format!("{var}={} ", quoted(&value.to_string_lossy()));
                }
            }
            runs += &me;
            out!();
            out!(
                "replay it yourself:  {runs} replay --verify {}",
                descriptor.display()
            );
            out!("look inside:         {me} inspect {}", descriptor.display());
            if !on_path {
                out!("(to call it `reprise`: cargo install --path cli, from reprise's sources)");
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(1) => {
            step(4, "verification FAILED: the replay's output differs");
            Ok(ExitCode::from(1))
        }
        status => Err(CliError::Program(format!(
            "the replay of {} in a new process failed ({}):\n{}",
            descriptor.display(),
            status.map_or_else(|| "killed by a signal".into(), |c| format!("exit {c}")),
            stderr.trim_end()
        ))),
    }
}
