//! `reprise demo`: record one launch of a built-in kernel and replay it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use reprise::{
    Args as KernelArgs, BackendKind, Capture, HostExecutor, LaunchConfig, RecordConfig, Recorder,
};
use reprise_std::config::parse_size;

use super::{human_bytes, human_time};

/// Record a kernel launch on the host CPU and replay it: the whole round
/// trip in one command.
///
/// Builds in a sample kernel (a stencil over a float array that reads a
/// device global), records one launch whose recording region holds about
/// SIZE bytes, writes the capture to DIR, then replays it on a fresh executor
/// at the recorded address and verifies the output byte for byte.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Where to write the capture.
    #[arg(long, default_value = "reprise-demo")]
    pub dir: PathBuf,
    /// Bytes the kernel's input and output arrays occupy together (e.g.
    /// 4M, 256M).
    #[arg(long, default_value = "4M", value_parser = |s: &str| parse_size("--size", s).map_err(|e| e.to_string()))]
    pub size: u64,
}

fn step(n: u32, text: impl std::fmt::Display) {
    out!("[{n}/4] {text}");
}

pub fn run(a: DemoArgs) -> reprise::Result<ExitCode> {
    let n = (a.size / 8).max(1) as usize;
    let bytes = n * 4;
    let region_size = (2 * bytes as u64 + (64 << 20)).next_power_of_two();

    step(
        1,
        format!(
            "recording demo_stencil over {n} floats ({} in + out)",
            human_bytes(2 * bytes as u64)
        ),
    );
    let exec = HostExecutor::new()
        .map_err(|e| reprise::Error::executor("starting the host executor", e))?;
    let config = RecordConfig::default()
        .enabled(true)
        .dir(&a.dir)
        .region_size(region_size)
        .save_output(true);
    let mut rec = Recorder::new(exec, BackendKind::Host, 0, config)?;
    let input = rec.alloc(bytes as u64, 64)?;
    let output = rec.alloc(bytes as u64, 64)?;
    let data: Vec<u8> = (0..n)
        .flat_map(|i| ((i as f32 * 0.01).sin() * 100.0).to_le_bytes())
        .collect();
    rec.upload(input, &data)?;
    let image = rec.load_image(reprise::DEMO_IMAGE)?;
    let kernel = rec.kernel(image, "demo_stencil")?;
    let geometry = LaunchConfig {
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared_mem: 0,
    };
    let args = KernelArgs::new().ptr(input).ptr(output).scalar(n as u64);
    let start = Instant::now();
    let written = reprise::block_on(async {
        rec.launch(&kernel, geometry, &args).await?;
        rec.finish().await
    })?;
    let recorded_in = start.elapsed();
    let region_base = rec.region().base();
    drop(rec); // unmaps the recording region, so the replay can take its address
    let descriptor = written
        .into_iter()
        .next()
        .ok_or_else(|| reprise::Error::Invalid("the launch was not recorded".into()))?;
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
        let len = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
        out!("      {:>10}  {}", human_bytes(len), f.display());
    }

    step(
        3,
        "replaying on a fresh host executor at the recorded address",
    );
    let outcome = reprise::block_on(std::future::IntoFuture::into_future(
        reprise::replay(&capture).verify(true),
    ))?;
    let t = outcome.times[0];
    let k = outcome.kernel_times[0]
        .map(|k| format!(", kernel {}", human_time(k)))
        .unwrap_or_default();
    out!("      replayed in {}{k}", human_time(t));

    match outcome.verification {
        Some(v) if v.is_match() => {
            step(
                4,
                "verified: the replay's output equals the recorded output byte for byte",
            );
            out!(
                "\nreplay it yourself:  reprise replay --verify {}",
                descriptor.display()
            );
            out!(
                "look inside:         reprise inspect {}",
                descriptor.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        other => {
            step(4, format!("verification FAILED: {other:?}"));
            Ok(ExitCode::from(1))
        }
    }
}
