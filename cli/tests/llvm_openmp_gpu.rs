//! Captures of clang's own OpenMP kernels as LLVM 18's GPU plugins write
//! them, replayed by `reprise` on the CUDA executor. The kernels are the
//! PTX fixtures `omp_saxpy.ptx` and `omp_sum.ptx` (clang-19, linked with
//! LLVM's OpenMP device runtime), whose first parameter is the implicit
//! kernel launch environment. The captures follow LLVM 18.1.8's
//! `RecordReplayTy` (`openmp/libomptarget/plugins-nextgen/common/src/
//! PluginInterface.cpp`): `saveKernelDescr` (lines 272-303) writes LLVM 16's nine
//! keys plus `BumpAllocVAStart`, with `NumArgs` and `ArgPtrs` counting the
//! environment first (`prepareArgs`, lines 578-603) and the computed block
//! and thread counts under the clause names (lines 556-567);
//! `dumpGlobals` (lines 222-270) writes only globals with a size, none
//! here. A replay passes the environment back unchanged: `~0` for a kernel
//! without reductions, else its address in the region, where the snapshot
//! holds it. On a real GPU with `REPRISE_GPU_TESTS=1`, else on the
//! simulated driver, which faults where a device would.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use reprise::core::record::{Generation, KernelRecord};

const OMP_SAXPY: &[u8] = include_bytes!("../../backends/cuda/fixtures/omp_saxpy.ptx");
const OMP_SUM: &[u8] = include_bytes!("../../backends/cuda/fixtures/omp_sum.ptx");
const SAXPY: &str = "__omp_offloading_fe00_1_omp_saxpy_l6";
const SUM: &str = "__omp_offloading_fe00_1_omp_sum_l8";
const BASE: u64 = 0x1541_0000_0000;
/// The default OpenMP thread limit clang compiles into the kernels.
const THREADS: u32 = 128;

/// One launch as LLVM 18 records it.
struct Launch<'a> {
    kernel: &'a str,
    image: &'a [u8],
    /// Every argument, the environment first.
    args: &'a [u64],
    teams: u32,
    trip_count: u64,
    /// The region's bytes before and after the kernel.
    memory: &'a [u8],
    expected: &'a [u8],
}

/// Writes `<kernel>.{json,memory,original.output,image,globals}` into
/// `dir`; returns the descriptor.
fn write_llvm18(dir: &Path, l: &Launch) -> PathBuf {
    let mut rec = KernelRecord::new(l.kernel).unwrap();
    rec.generation = Generation::LlvmLegacy;
    rec.format_version = None;
    for &v in l.args {
        rec.push_arg(v).unwrap();
    }
    rec.grid = [l.teams, 1, 1];
    rec.block = [THREADS, 1, 1];
    rec.loop_trip_count = l.trip_count;
    rec.region_base = Some(BASE);
    rec.memory_size = Some(l.memory.len() as u64);
    let path = |ext: &str| dir.join(format!("{}.{ext}", l.kernel));
    let json = rec.to_json_string(Generation::LlvmLegacy).unwrap();
    assert!(json.contains("\"BumpAllocVAStart\":") && json.contains("\"NumTeamsClause\":"));
    std::fs::write(path("json"), json).unwrap();
    std::fs::write(path("memory"), l.memory).unwrap();
    std::fs::write(path("original.output"), l.expected).unwrap();
    std::fs::write(path("image"), l.image).unwrap();
    std::fs::write(path("globals"), b"").unwrap();
    path("json")
}

/// Where team `team` of `teams` works: chunks of 128 iterations at
/// `team * 128`, then every `teams * 128` further on (clang's `distribute`
/// schedule with the default thread limit).
fn iterations(team: u32, teams: u32, n: usize) -> impl Iterator<Item = usize> {
    let stride = teams as usize * 128;
    (team as usize * 128..n)
        .step_by(stride)
        .flat_map(move |c| c..(c + 128).min(n))
}

/// A capture of the summing kernel over `n` doubles by `teams` teams: the
/// bump allocator's order (16-byte steps, 18.1.8 lines 319-330) puts `x`,
/// then `sum`, then the launch environment and its 1024-slot reduction
/// buffer. Returns the descriptor, the environment's address and the
/// region after the kernel.
fn sum_capture(dir: &Path, n: usize, teams: u32) -> (PathBuf, u64, Vec<u8>) {
    let x_at = BASE;
    let sum_at = x_at + (8 * n as u64).next_multiple_of(16);
    let env_at = sum_at + 16;
    let buffer_at = env_at + 16;
    let used = (buffer_at + 8 * 1024 - BASE) as usize;
    let off = |a: u64| (a - BASE) as usize;
    let xs: Vec<f64> = (0..n).map(|i| (i % 10) as f64).collect();
    let mut memory = vec![0xa5u8; used];
    for (i, x) in xs.iter().enumerate() {
        memory[8 * i..8 * i + 8].copy_from_slice(&x.to_le_bytes());
    }
    memory[off(sum_at)..off(sum_at) + 8].copy_from_slice(&0.25f64.to_le_bytes());
    // {ReductionCnt 0, ReductionIterCnt 0, ReductionBuffer}.
    memory[off(env_at)..off(env_at) + 8].fill(0);
    memory[off(env_at) + 8..off(env_at) + 16].copy_from_slice(&buffer_at.to_le_bytes());
    let mut expected = memory.clone();
    let mut total = 0.0;
    for team in 0..teams {
        let partial: f64 = iterations(team, teams, n).map(|i| xs[i]).sum();
        let slot = off(buffer_at) + 8 * team as usize;
        expected[slot..slot + 8].copy_from_slice(&partial.to_le_bytes());
        total += partial;
    }
    assert_eq!(
        total,
        xs.iter().sum::<f64>(),
        "the schedule covers every iteration"
    );
    expected[off(sum_at)..off(sum_at) + 8].copy_from_slice(&(0.25 + total).to_le_bytes());
    let descriptor = write_llvm18(
        dir,
        &Launch {
            kernel: SUM,
            image: OMP_SUM,
            args: &[env_at, n as u64, sum_at, x_at],
            teams,
            trip_count: n as u64,
            memory: &memory,
            expected: &expected,
        },
    );
    (descriptor, env_at, expected)
}

fn replay_verifies(descriptor: &Path) -> std::process::Output {
    let out = reprise(&["replay", "--verify", "--save-output", s(descriptor)]);
    let (stdout, stderr) = text(&out);
    eprintln!("{stdout}{stderr}");
    out
}

/// Whether the driver refused LLVM's recorded address (drivers that keep
/// their own address pools do; the clean error is the right answer there).
fn address_refused(out: &std::process::Output) -> bool {
    out.status.code() == Some(2)
        && text(out).1.contains("offered")
        && sim::driver() == Ok(sim::Driver::Real)
}

#[test]
fn a_kernel_without_reductions_gets_its_unused_environment_back() {
    let Some(_gpu) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let n = 5000usize;
    let xs: Vec<f32> = (0..n).map(|i| (i % 31) as f32).collect();
    let ys: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
    let y_off = (4 * n).next_multiple_of(16);
    let mut memory = vec![0u8; y_off + 4 * n];
    memory[..4 * n].copy_from_slice(&floats(&xs));
    memory[y_off..].copy_from_slice(&floats(&ys));
    let mut expected = memory.clone();
    let y_new: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| 2.0 * x + y).collect();
    expected[y_off..].copy_from_slice(&floats(&y_new));
    let teams = (n as u32).div_ceil(THREADS);
    // 18.1.8 line 480: `reinterpret_cast<KernelLaunchEnvironmentTy *>(~0)`.
    let descriptor = write_llvm18(
        dir.path(),
        &Launch {
            kernel: SAXPY,
            image: OMP_SAXPY,
            args: &[u64::MAX, n as u64, BASE, BASE + y_off as u64],
            teams,
            trip_count: n as u64,
            memory: &memory,
            expected: &expected,
        },
    );
    let json = std::fs::read_to_string(&descriptor).unwrap();
    assert!(json.contains("\"ArgPtrs\":[-1,"), "{json}");
    assert!(json.contains("\"NumArgs\":4"), "{json}");
    let out = replay_verifies(&descriptor);
    if address_refused(&out) {
        return;
    }
    assert_exit(&out, 0);
    let stdout = text(&out).0;
    assert!(stdout.contains("cuda executor"), "{stdout}");
    assert!(
        stdout.contains(&format!("grid {teams}x1x1, block 128x1x1")),
        "{stdout}"
    );
    assert!(stdout.contains("verification: PASS"), "{stdout}");
    let saved = std::fs::read(dir.path().join(format!("{SAXPY}.replay.output"))).unwrap();
    assert_eq!(saved, expected);
    // The kernel's own limit (.maxntid 128) is named when a replay asks for
    // more threads than it allows.
    let out = reprise(&["replay", "--num-threads", "256", s(&descriptor)]);
    assert_error(
        &out,
        &[&format!(
            "exceeds kernel {SAXPY}'s limit of 128 threads per block"
        )],
    );
}

#[test]
fn a_reduction_finds_its_environment_in_the_replayed_region() {
    let Some(_gpu) = gpu() else { return };
    for (n, teams) in [(100_000usize, 40u32), (3000, 1)] {
        let dir = tempfile::tempdir().unwrap();
        let (descriptor, _, expected) = sum_capture(dir.path(), n, teams);
        let out = replay_verifies(&descriptor);
        if address_refused(&out) {
            return;
        }
        assert_exit(&out, 0);
        assert!(
            text(&out).0.contains("verification: PASS"),
            "{}",
            text(&out).0
        );
        let saved = std::fs::read(dir.path().join(format!("{SUM}.replay.output"))).unwrap();
        assert_eq!(saved, expected, "{n} over {teams} teams");
    }
}

#[test]
fn a_reduction_given_no_environment_faults_as_on_a_device() {
    // What a replay that re-created or dropped the environment would meet
    // (LLVM's replay tool keeps it too: 18.1.8 line 475 returns no new one
    // while replaying).
    let Some(_gpu) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (descriptor, _, _) = sum_capture(dir.path(), 3000, 4);
    edit_descriptor(&descriptor, |r| r.arg_ptrs[0] = -1);
    let out = replay_verifies(&descriptor);
    if address_refused(&out) {
        return;
    }
    assert_error(&out, &[&format!("the kernel `{SUM}` faulted")]);
}
