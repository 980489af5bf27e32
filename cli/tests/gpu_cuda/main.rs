//! CUDA end to end: record through the library -> files -> `reprise replay
//! --verify` in a second process (so at the recorded address in a fresh
//! process), geometry overrides, native parameter sizes, a 2-D grid, many
//! launches. On a real GPU with `REPRISE_GPU_TESTS=1`; elsewhere on the
//! simulated driver (`test-support/src/cuda_driver`), which the replaying process
//! finds through `LD_LIBRARY_PATH`, plus tests that change the simulated
//! driver's behaviour: no device, no virtual memory management, address hints
//! ignored, a faulting kernel, no stream callbacks, no parameter info.
//! `REPRISE_GPU_TESTS=0` skips them all.
//!
//! The fixtures and helpers the tests share are here, the tests by subject
//! in the modules.

#[path = "../common/mod.rs"]
mod common;

mod commands;
mod drivers;
mod faults;
mod launches;
mod limits;

use std::path::PathBuf;

use common::*;
use reprise::{CudaExecutor, RecordConfig};

const SAXPY: &[u8] = include_bytes!("../../../backends/cuda/fixtures/saxpy.ptx");
const MIXED: &[u8] = include_bytes!("../../../backends/cuda/fixtures/mixed.ptx");
const GRID2D: &[u8] = include_bytes!("../../../backends/cuda/fixtures/grid2d.ptx");
const SHARED_REVERSE: &[u8] = include_bytes!("../../../backends/cuda/fixtures/shared_reverse.ptx");

fn config(dir: &std::path::Path) -> RecordConfig {
    RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(256 << 20)
        .fsync(false)
}

fn replay_ok(descriptor: &std::path::Path, extra: &[&str]) {
    let mut args = vec!["replay", "--verify"];
    args.extend_from_slice(extra);
    args.push(s(descriptor));
    let out = reprise(&args);
    let (stdout, stderr) = text(&out);
    eprintln!("{stdout}{stderr}");
    assert_exit(&out, 0);
    assert!(stdout.contains("verification: PASS"), "{stdout}");
}

/// The simulated driver, or `None` after saying why (these tests change the
/// driver's behaviour, which only the simulator allows).
fn simulated() -> Option<CudaExecutor> {
    match sim::driver() {
        Ok(sim::Driver::Simulated) => gpu(),
        Ok(sim::Driver::Real) => {
            crate::common::skip(
                "needs the simulated CUDA driver (REPRISE_GPU_TESTS is 1)",
                None,
            );
            None
        }
        Err(why) => {
            crate::common::skip(&why.to_string(), None);
            None
        }
    }
}

/// Records one saxpy launch over 4096 elements into `dir`.
fn record_saxpy(gpu: CudaExecutor, dir: &std::path::Path) -> PathBuf {
    let written = record_gpu_saxpy(gpu, config(dir), SAXPY, 4096, 1);
    written.into_iter().next().expect("one capture")
}

/// `reprise replay --verify FILE` with the driver changed by `env`.
fn replay_with(descriptor: &std::path::Path, env: &[(&str, &str)]) -> std::process::Output {
    reprise_env(&["replay", "--verify", s(descriptor)], env)
}
