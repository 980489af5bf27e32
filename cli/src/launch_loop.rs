//! `reprise __launch-loop` (hidden): the benchmark harness's launch loop
//! ([`reprise_bench::launch_loop`]: the saxpy launched the way an
//! unmodified CUDA program does), for `reprise bench` to time the same
//! launch with and without the interposer preloaded.

use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use crate::error::{CliError, Result};

/// Launch the CUDA benchmark's saxpy N times through `libcuda.so.1`,
/// timing each launch and synchronize (used by `reprise bench`).
#[derive(Args, Debug)]
pub struct LaunchLoopArgs {
    /// Timed launches.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub launches: u32,
    /// Elements of x and y.
    #[arg(long, default_value_t = 8192, value_parser = clap::value_parser!(u32).range(1..=i32::MAX as i64))]
    pub elements: u32,
    /// Untimed launches before the timed ones.
    #[arg(long, default_value_t = 5)]
    pub warmup: u32,
    /// Print one JSON object (times in seconds).
    #[arg(long)]
    pub json: bool,
}

/// Runs the loop: prints the per-launch times, or fails naming the driver
/// call that failed (or a kernel that did not run every launch).
pub fn run(a: LaunchLoopArgs) -> Result<ExitCode> {
    let t = reprise_bench::launch_loop::run(a.launches, a.elements, a.warmup)
        .map_err(CliError::LaunchLoop)?;
    if a.json {
        out!(
            "{}",
            json!({
                "launches": a.launches,
                "warmup": a.warmup,
                "elements": a.elements,
                "min_s": t.min,
                "median_s": t.median,
                "mean_s": t.mean,
                "max_s": t.max,
            })
        );
    } else {
        out!(
            "{} launches of saxpy over {} elements (launch + synchronize): min {:.1} us, median {:.1} us, mean {:.1} us, max {:.1} us",
            a.launches,
            a.elements,
            t.min * 1e6,
            t.median * 1e6,
            t.mean * 1e6,
            t.max * 1e6
        );
    }
    Ok(ExitCode::SUCCESS)
}
