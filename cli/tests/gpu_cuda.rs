//! CUDA end to end: record through the library -> files -> `reprise replay
//! --verify` in a second process (so at the recorded address in a fresh
//! process), geometry overrides, native parameter sizes, a 2-D grid, many
//! launches. On a real GPU with `REPRISE_GPU_TESTS=1`; elsewhere on the
//! simulated driver (`backends/cuda/tests/sim`), which the replaying process
//! finds through `LD_LIBRARY_PATH`, plus tests that change the simulated
//! driver's behaviour: no device, no virtual memory management, address hints
//! ignored, a faulting kernel, no stream callbacks, no parameter info.
//! `REPRISE_GPU_TESTS=0` skips them all.

mod common;

use std::path::PathBuf;

use common::*;
use reprise::{Args, BackendKind, CudaExecutor, LaunchConfig, RecordConfig, Recorder};

const SAXPY: &[u8] = include_bytes!("../../backends/cuda/fixtures/saxpy.ptx");
const MIXED: &[u8] = include_bytes!("../../backends/cuda/fixtures/mixed.ptx");
const GRID2D: &[u8] = include_bytes!("../../backends/cuda/fixtures/grid2d.ptx");
const SHARED_REVERSE: &[u8] = include_bytes!("../../backends/cuda/fixtures/shared_reverse.ptx");

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

#[test]
fn saxpy_records_many_launches_and_each_replays_in_another_process() {
    let Some(gpu) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let n = 100_000usize;
    let written: Vec<PathBuf> = {
        let mut rec = Recorder::new(gpu, BackendKind::Cuda, 0, config(dir.path())).unwrap();
        let x = rec.alloc((n * 4) as u64, 256).unwrap();
        let y = rec.alloc((n * 4) as u64, 256).unwrap();
        rec.upload(x, &floats(&(0..n).map(|i| i as f32).collect::<Vec<_>>()))
            .unwrap();
        rec.upload(y, &floats(&vec![1.0; n])).unwrap();
        let image = rec.load_image(SAXPY).unwrap();
        let (bias, size) = rec
            .global(image, "bias")
            .unwrap()
            .expect("saxpy.ptx defines bias");
        assert_eq!(size, 4);
        rec.upload(bias, &2.0f32.to_le_bytes()).unwrap();
        let k = rec.kernel(image, "saxpy").unwrap();
        let args = Args::new().f32(3.0).ptr(x).ptr(y).i32(n as i32);
        let geometry = LaunchConfig {
            grid: [(n as u32).div_ceil(256), 1, 1],
            block: [256, 1, 1],
            shared_mem: 0,
        };
        reprise::block_on(async {
            for _ in 0..3 {
                rec.launch(&k, geometry, &args).await.unwrap();
            }
            let out = rec.download(y + 4 * 10, 4).await.unwrap();
            // y = 1 + 3 * (3 * 10 + 2) after three launches with bias 2.
            assert_eq!(
                f32::from_le_bytes(out[..4].try_into().unwrap()),
                1.0 + 3.0 * 32.0
            );
            rec.finish().await.unwrap()
        })
    };
    assert_eq!(written.len(), 3, "every launch kept");
    for w in &written {
        let c = reprise::Capture::open(w).unwrap();
        assert_eq!(c.record.backend, Some(BackendKind::Cuda));
        assert_eq!(c.record.arg_sizes.as_slice(), &[4, 8, 8, 4]);
        replay_ok(w, &[]);
    }
    // Tuning: other geometries that still cover n elements give the same output.
    replay_ok(&written[0], &["--num-threads=128", "--num-teams", "800"]);
    replay_ok(
        &written[1],
        &["--num-threads", "1024", "--num-teams=98", "--repetitions=3"],
    );
    let out = reprise(&["inspect", s(&written[2])]);
    assert_exit(&out, 0);
    assert!(
        text(&out).0.contains("image     PTX for sm_80 (ISA 7.0)"),
        "{}",
        text(&out).0
    );
}

#[test]
fn native_parameter_sizes_are_recorded_and_replayed() {
    let Some(gpu) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let written = {
        let mut rec = Recorder::new(gpu, BackendKind::Cuda, 0, config(dir.path())).unwrap();
        let out = rec.alloc(4 * 512, 256).unwrap();
        let image = rec.load_image(MIXED).unwrap();
        let (table, size) = rec
            .global(image, "table")
            .unwrap()
            .expect("mixed.ptx defines table");
        assert_eq!(size, 64);
        let t: Vec<u8> = (0..16i32).flat_map(|v| (v * 7).to_le_bytes()).collect();
        rec.upload(table, &t).unwrap();
        let k = rec.kernel(image, "mixed").unwrap();
        let params: Vec<u8> = [
            1.5f32.to_le_bytes(),
            2.25f32.to_le_bytes(),
            0.125f32.to_le_bytes(),
            9i32.to_le_bytes(),
        ]
        .concat();
        let args = Args::new().i32(3).f32(0.5).bytes(&params).ptr(out);
        let geometry = LaunchConfig {
            grid: [2, 1, 1],
            block: [256, 1, 1],
            shared_mem: 0,
        };
        reprise::block_on(async {
            rec.launch(&k, geometry, &args).await.unwrap();
            let o = rec.download(out + 4 * 17, 4).await.unwrap();
            let want = (17 * 3) as f32 + 0.5 + 1.5 + 2.25 + 0.125 + 9.0 + 7.0 * (17 % 16) as f32;
            assert_eq!(f32::from_le_bytes(o[..4].try_into().unwrap()), want);
            rec.finish().await.unwrap()
        })
    };
    let c = reprise::Capture::open(&written[0]).unwrap();
    assert_eq!(c.record.arg_sizes.as_slice(), &[4, 4, 16, 8]);
    replay_ok(&written[0], &[]);
}

#[test]
fn two_dimensional_grid_replays() {
    let Some(gpu) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (64u32, 24u32);
    let written = {
        let mut rec = Recorder::new(gpu, BackendKind::Cuda, 0, config(dir.path())).unwrap();
        let out = rec.alloc(u64::from(w * h) * 4, 256).unwrap();
        let image = rec.load_image(GRID2D).unwrap();
        let k = rec.kernel(image, "grid2d").unwrap();
        let geometry = LaunchConfig {
            grid: [4, 3, 1],
            block: [16, 8, 1],
            shared_mem: 0,
        };
        reprise::block_on(async {
            rec.launch(
                &k,
                geometry,
                &Args::new().ptr(out).i32(w as i32).i32(h as i32),
            )
            .await
            .unwrap();
            let o = rec
                .download(out + u64::from(5 * w + 7) * 4, 4)
                .await
                .unwrap();
            assert_eq!(u32::from_le_bytes(o[..4].try_into().unwrap()), 7 * 1000 + 5);
            rec.finish().await.unwrap()
        })
    };
    let c = reprise::Capture::open(&written[0]).unwrap();
    assert_eq!((c.record.grid, c.record.block), ([4, 3, 1], [16, 8, 1]));
    replay_ok(&written[0], &[]);
}

/// Records one launch of the shared_reverse fixture (each block reverses
/// its slice of `per_block` words through dynamic shared memory of that
/// size) over a 3-D grid of 3-D blocks; checks the kernel ran and returns
/// the capture.
fn record_shared_reverse(
    gpu: CudaExecutor,
    dir: &std::path::Path,
    grid: [u32; 3],
    block: [u32; 3],
    per_block: u32,
) -> PathBuf {
    let blocks = grid.iter().product::<u32>();
    // The last slice is short.
    let n = blocks * per_block - 3;
    let mut rec = Recorder::new(gpu, BackendKind::Cuda, 0, config(dir)).unwrap();
    let data = rec.alloc(u64::from(n) * 4, 256).unwrap();
    let values: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    rec.upload(data, &bytes).unwrap();
    let image = rec.load_image(SHARED_REVERSE).unwrap();
    let k = rec.kernel(image, "shared_reverse").unwrap();
    let geometry = LaunchConfig {
        grid,
        block,
        shared_mem: 4 * per_block,
    };
    let args = Args::new().ptr(data).i32(per_block as i32).i32(n as i32);
    let written = reprise::block_on(async {
        rec.launch(&k, geometry, &args).await.unwrap();
        let out = rec.download(data, bytes.len()).await.unwrap();
        let want: Vec<u8> = values
            .chunks(per_block as usize)
            .flat_map(|c| c.iter().rev().flat_map(|v| v.to_le_bytes()))
            .collect();
        assert!(out == want, "the kernel did not reverse the slices");
        rec.finish().await.unwrap()
    });
    written.into_iter().next().expect("one capture")
}

#[test]
fn dynamic_shared_memory_and_three_dimensional_geometry_replay() {
    let Some(gpu) = gpu() else { return };
    // 4 KiB of shared memory; up to 64 KiB, more than a kernel gets without
    // opting in (48 KiB), which the replaying process must opt in to again,
    // within what this device allows (64 KiB on sm_75, 99 KiB on sm_86/89).
    let most = gpu.launch_limits().shared_optin / 4;
    let mut cases = vec![([3, 2, 2], [8, 8, 4], 1024)];
    if most > (48 << 10) / 4 {
        cases.push(([2, 2, 2], [8, 4, 2], most.min(16 << 10)));
    } else {
        eprintln!("this device cannot opt in to more than 48 KiB: not tried");
    }
    for (grid, block, per_block) in cases {
        let dir = tempfile::tempdir().unwrap();
        let capture = record_shared_reverse(gpu.clone(), dir.path(), grid, block, per_block);
        let c = reprise::Capture::open(&capture).unwrap();
        assert_eq!((c.record.grid, c.record.block), (grid, block));
        assert_eq!(c.record.shared_mem, 4 * per_block);
        replay_ok(&capture, &[]);
        let out = reprise(&["inspect", s(&capture)]);
        assert_exit(&out, 0);
        let want = format!("block {}x{}x{}", block[0], block[1], block[2]);
        assert!(text(&out).0.contains(&want), "{}", text(&out).0);
    }
}

#[test]
fn static_shared_memory_of_the_replayed_kernel_counts_against_the_limits() {
    // The simulator gives the replaying process's kernels 16 KiB of static
    // shared memory (as OpenMP kernels always have some).
    let Some(gpu) = simulated() else { return };
    let static_shared = [("REPRISE_SIM_CUDA_STATIC_SHARED", "16384")];
    // 40 KiB of dynamic shared memory: under the device's 48 KiB, but over
    // the 32 KiB left beside the static 16 KiB, so the replay must opt in.
    let dir = tempfile::tempdir().unwrap();
    let capture = record_shared_reverse(gpu.clone(), dir.path(), [2, 1, 2], [8, 4, 2], 10 << 10);
    let out = replay_with(&capture, &static_shared);
    let (stdout, stderr) = text(&out);
    assert_exit(&out, 0);
    assert!(stdout.contains("verification: PASS"), "{stdout}{stderr}");
    // 220 KiB fits the opt-in limit (227 KiB) alone, not beside 16 KiB:
    // an error naming both, not the driver's bare answer.
    let dir = tempfile::tempdir().unwrap();
    let capture = record_shared_reverse(gpu, dir.path(), [1, 1, 1], [4, 4, 4], 55 << 10);
    let out = replay_with(&capture, &static_shared);
    assert_error(
        &out,
        &[
            "225280 bytes of dynamic shared memory",
            "16384 bytes of static shared memory",
            "232448 bytes per block",
            s(&capture),
        ],
    );
    assert!(
        !text(&out).1.contains("CUDA_ERROR_INVALID_VALUE"),
        "{}",
        text(&out).1
    );
}

#[test]
fn a_block_beyond_the_device_limit_is_named_with_the_limit() {
    let Some(gpu) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let capture = record_saxpy(gpu, dir.path());
    let out = reprise(&[
        "replay",
        "--backend",
        "cuda",
        "--num-threads",
        "2048",
        s(&capture),
    ]);
    assert_error(
        &out,
        &[
            "block 2048x1x1 (2048 threads) exceeds this device's limit of 1024 threads per block",
            s(&capture),
        ],
    );
    // Not the driver's bare answer.
    assert!(
        !text(&out).1.contains("CUDA_ERROR_INVALID_VALUE"),
        "{}",
        text(&out).1
    );
}

#[test]
fn sync_and_async_schedules_write_the_same_capture() {
    let Some(gpu) = gpu() else { return };
    use reprise::core::schedule::Mode;
    use reprise_std::WriterKind;
    let mut sums = Vec::new();
    for (mode, writer, staging) in [
        (Mode::Sync, WriterKind::Inline, None),
        (Mode::Async, WriterKind::Background { depth: 2 }, None),
        // Device-side staging of the snapshot before the kernel.
        (Mode::Async, WriterKind::Background { depth: 2 }, Some(0)),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut rec = Recorder::new(
            gpu.clone().with_device_staging(staging),
            BackendKind::Cuda,
            0,
            config(dir.path()).mode(mode).writer(writer),
        )
        .unwrap();
        let x = rec.alloc(4096, 256).unwrap();
        rec.upload(x, &floats(&vec![2.0; 1024])).unwrap();
        let image = rec.load_image(SAXPY).unwrap();
        let k = rec.kernel(image, "saxpy").unwrap();
        let args = Args::new().f32(2.0).ptr(x).ptr(x).i32(1024);
        let geometry = LaunchConfig {
            grid: [4, 1, 1],
            block: [256, 1, 1],
            shared_mem: 0,
        };
        let written = reprise::block_on(async {
            rec.launch(&k, geometry, &args).await.unwrap();
            rec.finish().await.unwrap()
        });
        drop(rec);
        let c = reprise::Capture::open(&written[0]).unwrap();
        sums.push((c.record.checksums.input, c.record.checksums.output));
    }
    assert_eq!(sums[0], sums[1]);
    assert_eq!(sums[0], sums[2]);
}

/// The simulated driver, or `None` after saying why (these tests change the
/// driver's behaviour, which only the simulator allows).
fn simulated() -> Option<CudaExecutor> {
    match sim::driver() {
        Ok(sim::Driver::Simulated) => gpu(),
        Ok(sim::Driver::Real) => {
            eprintln!("skipped: needs the simulated CUDA driver (REPRISE_GPU_TESTS is 1)");
            None
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            None
        }
    }
}

/// Records one saxpy launch over 4096 elements into `dir`.
fn record_saxpy(gpu: CudaExecutor, dir: &std::path::Path) -> PathBuf {
    let n = 4096usize;
    let mut rec = Recorder::new(gpu, BackendKind::Cuda, 0, config(dir)).unwrap();
    let x = rec.alloc((n * 4) as u64, 256).unwrap();
    let y = rec.alloc((n * 4) as u64, 256).unwrap();
    rec.upload(x, &floats(&vec![1.0; n])).unwrap();
    rec.upload(y, &floats(&vec![2.0; n])).unwrap();
    let image = rec.load_image(SAXPY).unwrap();
    let k = rec.kernel(image, "saxpy").unwrap();
    let args = Args::new().f32(3.0).ptr(x).ptr(y).i32(n as i32);
    let geometry = LaunchConfig {
        grid: [(n as u32).div_ceil(256), 1, 1],
        block: [256, 1, 1],
        shared_mem: 0,
    };
    let written = reprise::block_on(async {
        rec.launch(&k, geometry, &args).await.unwrap();
        rec.finish().await.unwrap()
    });
    written.into_iter().next().expect("one capture")
}

/// `reprise replay --verify FILE` with the driver changed by `env`.
fn replay_with(descriptor: &std::path::Path, env: &[(&str, &str)]) -> std::process::Output {
    reprise_env(&["replay", "--verify", s(descriptor)], env)
}

/// Records a saxpy capture, then replays it on the simulated driver changed
/// by `env`: exit 2, with the capture and each of `needles` (given the
/// recorded base address) in the message.
fn replay_fails_with(env: (&str, &str), needles: impl Fn(u64) -> Vec<String>) {
    let Some(gpu) = simulated() else { return };
    let dir = tempfile::tempdir().unwrap();
    let capture = record_saxpy(gpu, dir.path());
    let base = reprise::Capture::open(&capture)
        .unwrap()
        .record
        .region_base
        .unwrap();
    let out = replay_with(&capture, &[env]);
    let mut needles = needles(base);
    needles.push(s(&capture).to_owned());
    let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
    assert_error(&out, &needles);
}

#[test]
fn a_driver_without_devices_is_a_clean_error() {
    replay_fails_with(("REPRISE_SIM_CUDA_DEVICES", "0"), |_| {
        vec!["no CUDA device".into()]
    });
}

#[test]
fn a_driver_without_virtual_memory_management_is_a_clean_error() {
    replay_fails_with(("REPRISE_SIM_CUDA_VMM", "0"), |_| {
        vec!["virtual memory".into()]
    });
}

#[test]
fn a_recorded_address_the_driver_will_not_give_is_named() {
    replay_fails_with(("REPRISE_SIM_CUDA_HINTS", "ignore"), |base| {
        vec![
            format!("{base:#x}"),
            "offered".into(),
            // Not only "in use": this driver ignores hints.
            "some drivers ignore address hints".into(),
        ]
    });
}

/// Rewrites argument `index` of the capture's `ArgPtrs` to `value`.
fn set_arg(descriptor: &std::path::Path, index: usize, value: u64) {
    let json = std::fs::read_to_string(descriptor).unwrap();
    let start = json.find("\"ArgPtrs\":[").expect("ArgPtrs") + "\"ArgPtrs\":[".len();
    let end = start + json[start..].find(']').unwrap();
    let mut values: Vec<String> = json[start..end].split(',').map(str::to_owned).collect();
    values[index] = value.to_string();
    let json = format!("{}{}{}", &json[..start], values.join(","), &json[end..]);
    std::fs::write(descriptor, json).unwrap();
}

#[test]
fn a_kernel_that_faults_during_replay_is_an_error_not_a_hang() {
    let Some(gpu) = simulated() else { return };
    let dir = tempfile::tempdir().unwrap();
    let capture = record_saxpy(gpu, dir.path());
    // `y` points at an address no allocation covers.
    set_arg(&capture, 2, 0x10);
    let no_callback = sim::variant_dir(&["-DSIM_NO_STREAM_CALLBACK"]).unwrap();
    for lib in [None, Some(&no_callback)] {
        // The kernel waits before it runs, so the fault comes while the
        // synchronize waits (without stream callbacks, on a host function
        // that will never run).
        let mut env = vec![("REPRISE_SIM_CUDA_KERNEL_DELAY_US", "50000")];
        env.extend(lib.iter().map(|d| ("LD_LIBRARY_PATH", d.to_str().unwrap())));
        let out = replay_with(&capture, &env);
        eprintln!("{}", text(&out).1);
        // The kernel is named; the call that found the fault is the cause.
        assert_error(
            &out,
            &[
                "the kernel `saxpy` faulted: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory \
                 access was encountered); the device context is unusable until the process \
                 restarts",
                "caused by: cuStreamQuery failed: CUDA_ERROR_ILLEGAL_ADDRESS",
                s(&capture),
            ],
        );
    }
}

/// Set in the environment of the child process that
/// [`a_kernel_that_faults_while_recording_is_named_and_spoils_later_calls`]
/// runs itself in: a fault spoils the context of the whole process, which
/// the other tests of this one share.
const FAULT_CHILD: &str = "REPRISE_TEST_CUDA_FAULT_CHILD";

#[test]
fn a_kernel_that_faults_while_recording_is_named_and_spoils_later_calls() {
    const NAME: &str = "a_kernel_that_faults_while_recording_is_named_and_spoils_later_calls";
    if std::env::var_os(FAULT_CHILD).is_some() {
        record_a_fault();
        println!("{FAULT_CHILD}: done");
        return;
    }
    let Some(_gpu) = simulated() else { return };
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child
        .args([NAME, "--exact", "--nocapture", "--test-threads=1"])
        .env(FAULT_CHILD, "1")
        .env("RUST_BACKTRACE", "0");
    let out = output_within(&mut child, RUN_LIMIT);
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success() && stdout.contains(&format!("{FAULT_CHILD}: done")),
        "the child failed:\n{stdout}{stderr}"
    );
}

/// Records a saxpy launch whose `y` points nowhere, then asks for more, of
/// that recorder and of another one on the same device that recorded a
/// good grid2d launch before: what
/// [`a_kernel_that_faults_while_recording_is_named_and_spoils_later_calls`]
/// runs in its child process.
fn record_a_fault() {
    let gpu = simulated().expect("the parent checked");
    // The kernel waits before it runs, so its launch returns and the
    // synchronize that waits for it finds the fault.
    sim::set_kernel_delay_us(50_000);
    let dir = tempfile::tempdir().unwrap();
    let n = 4096usize;
    // Another recorder, with its own executor of the device (so the same
    // context), records a good launch first.
    let other_dir = tempfile::tempdir().unwrap();
    let other = CudaExecutor::new(0).unwrap();
    let mut good = Recorder::new(other, BackendKind::Cuda, 0, config(other_dir.path())).unwrap();
    let out = good.alloc(64 * 64 * 4, 256).unwrap();
    let grid2d_image = good.load_image(GRID2D).unwrap();
    let grid2d = good.kernel(grid2d_image, "grid2d").unwrap();
    let grid2d_args = Args::new().ptr(out).i32(64).i32(64);
    let grid2d_geometry = LaunchConfig {
        grid: [8, 8, 1],
        block: [8, 8, 1],
        shared_mem: 0,
    };
    reprise::block_on(good.launch(&grid2d, grid2d_geometry, &grid2d_args)).unwrap();
    let mut rec = Recorder::new(gpu, BackendKind::Cuda, 0, config(dir.path())).unwrap();
    let x = rec.alloc((n * 4) as u64, 256).unwrap();
    rec.upload(x, &floats(&vec![1.0; n])).unwrap();
    let image = rec.load_image(SAXPY).unwrap();
    let k = rec.kernel(image, "saxpy").unwrap();
    let args = Args::new().f32(3.0).ptr(x).ptr(0x10).i32(n as i32);
    let geometry = LaunchConfig {
        grid: [(n as u32).div_ceil(256), 1, 1],
        block: [256, 1, 1],
        shared_mem: 0,
    };
    let err = reprise::block_on(rec.launch(&k, geometry, &args)).expect_err("the kernel faults");
    println!("launch: {err}");
    let fault = "the kernel `saxpy` faulted: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory \
                 access was encountered); the device context is unusable until the process \
                 restarts";
    assert!(err.to_string().contains(fault), "{err}");
    // A typed error, the driver's underneath.
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    let mut found = None;
    while let Some(e) = source {
        if let Some(reprise::CudaError::KernelFault { kernels, source }) = e.downcast_ref() {
            found = Some((kernels.clone(), source.code));
        }
        source = e.source();
    }
    assert_eq!(found, Some((vec!["saxpy".to_owned()], 700)), "{err:?}");
    // Every later call fails with the same code: its error says why.
    let later = reprise::block_on(rec.download(x, 16)).expect_err("the context is lost");
    println!("later: {later}");
    assert!(
        later.to_string().ends_with(
            "CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered \
             (the context was lost to an earlier kernel fault; restart the process)"
        ),
        "{later}"
    );
    // The other recorder meets the fault too: it names the kernel that
    // faulted, not its own, which completed.
    let theirs = reprise::block_on(good.launch(&grid2d, grid2d_geometry, &grid2d_args))
        .expect_err("the context is lost");
    println!("the other recorder: {theirs}");
    assert!(theirs.to_string().contains(fault), "{theirs}");
    assert!(!theirs.to_string().contains("`grid2d`"), "{theirs}");
}

#[test]
fn a_grid_or_block_dimension_of_zero_is_named() {
    let Some(gpu) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Recorder::new(gpu, BackendKind::Cuda, 0, config(dir.path())).unwrap();
    let x = rec.alloc(4096, 256).unwrap();
    let image = rec.load_image(SAXPY).unwrap();
    let k = rec.kernel(image, "saxpy").unwrap();
    let args = Args::new().f32(2.0).ptr(x).ptr(x).i32(1024);
    for (grid, block, want) in [
        (
            [0, 1, 1],
            [256, 1, 1],
            "grid 0x1x1: every dimension must be at least 1",
        ),
        (
            [4, 1, 1],
            [256, 0, 1],
            "block 256x0x1: every dimension must be at least 1",
        ),
    ] {
        let geometry = LaunchConfig {
            grid,
            block,
            shared_mem: 0,
        };
        let err = reprise::block_on(rec.launch(&k, geometry, &args)).expect_err(want);
        assert!(err.to_string().contains(want), "{err}");
        // Not the driver's bare answer.
        assert!(
            !err.to_string().contains("CUDA_ERROR_INVALID_VALUE"),
            "{err}"
        );
    }
}

#[test]
fn drivers_without_stream_callbacks_or_parameter_info_still_replay() {
    let Some(gpu) = simulated() else { return };
    let dir = tempfile::tempdir().unwrap();
    let capture = record_saxpy(gpu, dir.path());
    for define in ["-DSIM_NO_STREAM_CALLBACK", "-DSIM_NO_PARAM_INFO"] {
        let lib = sim::variant_dir(&[define]).unwrap();
        let out = replay_with(&capture, &[("LD_LIBRARY_PATH", lib.to_str().unwrap())]);
        assert_exit(&out, 0);
        assert!(text(&out).0.contains("verification: PASS"), "{define}");
    }
}

#[test]
fn llvm_captures_of_a_cuda_kernel_replay_and_verify() {
    let Some(_gpu) = gpu() else { return };
    use reprise::core::record::Generation;
    const FATBIN: &[u8] = include_bytes!("../../backends/cuda/fixtures/saxpy.sm_90.fatbin");
    for (generation, image, base) in [
        (Generation::LlvmLegacy, SAXPY, 0x1539_4000_0000u64),
        (Generation::LlvmCurrent, FATBIN, 0x1539_8000_0000u64),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (descriptor, expected) =
            llvm_saxpy_capture(dir.path(), generation, image, base, 5000, 128);
        if generation == Generation::LlvmCurrent {
            let out = reprise(&["inspect", s(&descriptor)]);
            let want = "image     CUDA fat binary: cubin sm_90, PTX sm_80";
            assert!(text(&out).0.contains(want), "{}", text(&out).0);
        }
        // The image alone tells the executor: no --backend needed.
        let out = reprise(&["replay", "--verify", "--save-output", s(&descriptor)]);
        let (stdout, stderr) = text(&out);
        if out.status.code() == Some(2)
            && stderr.contains("offered")
            && sim::driver() == Ok(sim::Driver::Real)
        {
            // Drivers that keep their own address pools never give LLVM's
            // suggested addresses: the clean error is the right answer.
            eprintln!("{generation}: this driver does not give {base:#x}: {stderr}");
            continue;
        }
        assert_exit(&out, 0);
        assert!(stdout.contains("cuda executor"), "{stdout}");
        assert!(stdout.contains("verification: PASS"), "{stdout}");
        let saved = match generation {
            Generation::LlvmLegacy => dir.path().join("saxpy.replay.output"),
            _ => dir.path().join("1234_5678.replay_output"),
        };
        assert_eq!(std::fs::read(saved).unwrap(), expected, "{generation}");
    }
}

#[test]
fn llvm_captures_without_teams_or_threads_need_them_on_a_gpu() {
    // LLVM 16/17 saved the num_teams/thread_limit clauses, 0 for a construct
    // without them; a GPU launch needs the counts, so replay asks for them
    // (the host does not: llvm_formats.rs).
    let Some(_gpu) = gpu() else { return };
    use reprise::core::record::Generation;
    for (generation, teams_key, threads_key, why) in [
        (
            Generation::LlvmLegacy,
            "NumTeamsClause",
            "ThreadLimitClause",
            "LLVM recorded no num_teams or thread_limit clause",
        ),
        (
            Generation::LlvmCurrent,
            "NumTeams",
            "NumThreads",
            "LLVM recorded no values for them",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (descriptor, _) =
            llvm_saxpy_capture(dir.path(), generation, SAXPY, 0x1539_4000_0000, 5000, 128);
        edit_descriptor(&descriptor, |r| {
            r.grid[0] = 0;
            r.block[0] = 0;
        });
        // Without overrides the geometry is unknown: say so, and how to fix it.
        let name = descriptor.display().to_string();
        assert_error(
            &reprise(&["replay", "--verify", s(&descriptor)]),
            &[&format!(
                "{name}: {teams_key} is 0 and {threads_key} is 0: {why}, so the launch's team \
                 count and threads per team are unknown; pass --num-teams N and --num-threads N"
            )],
        );
        let out = reprise(&["replay", "--num-teams", "40", s(&descriptor)]);
        assert_error(
            &out,
            &[
                &format!("{name}: {threads_key} is 0"),
                "pass --num-threads N",
            ],
        );
        assert!(!text(&out).1.contains("--num-teams N"), "{}", text(&out).1);
        // The library says the same, naming the descriptor.
        let capture = reprise::Capture::open(&descriptor).unwrap();
        let err = reprise::block_on(std::future::IntoFuture::into_future(reprise::replay(
            &capture,
        )))
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("{name}: {teams_key} is 0")),
            "{err}"
        );
        // With both given it replays and verifies.
        replay_ok(&descriptor, &["--num-teams", "40", "--num-threads", "128"]);
        // inspect and list say what a replay will need.
        let out = reprise(&["inspect", s(&descriptor)]);
        assert_exit(&out, 0);
        let (stdout, _) = text(&out);
        let note = stdout.lines().find(|l| l.starts_with("note")).unwrap_or("");
        assert!(
            note.contains("pass --num-teams N and --num-threads N"),
            "{stdout}"
        );
        let out = reprise(&["list", s(dir.path())]);
        assert_exit(&out, 0);
        let (stdout, _) = text(&out);
        assert!(
            stdout.contains("NOTE: ") && stdout.contains("--num-teams N"),
            "{stdout}"
        );
    }
}

#[test]
fn the_demo_records_and_replays_on_the_cuda_executor() {
    let Some(_gpu) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let args = ["demo", "--backend", "cuda", "--size", "1M", "--dir"];
    let mut args = args.to_vec();
    args.push(s(dir.path()));
    let out = reprise(&args);
    let (stdout, _) = text(&out);
    assert_exit(&out, 0);
    assert!(stdout.contains("on the cuda executor"), "{stdout}");
    assert!(stdout.contains("[4/4] verified"), "{stdout}");
    // And its capture replays in yet another process.
    let descriptor = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("the demo's capture");
    replay_ok(&descriptor, &[]);
    // Without a device it is a clean error.
    if sim::driver() == Ok(sim::Driver::Simulated) {
        let out = reprise_env(&args, &[("REPRISE_SIM_CUDA_DEVICES", "0")]);
        assert_error(&out, &["opening CUDA device 0", "no CUDA device"]);
    }
}

#[test]
fn a_driver_with_its_own_address_pool_replays_in_a_fresh_process() {
    // Driver 580 was seen to place every reservation in its own address
    // pool, honouring hints only inside it: the simulator's `pool` policy.
    let Some(_gpu) = simulated() else { return };
    let pool = [("REPRISE_SIM_CUDA_HINTS", "pool")];
    let dir = tempfile::tempdir().unwrap();
    let out = reprise_env(
        &[
            "demo",
            "--backend",
            "cuda",
            "--size",
            "1M",
            "--dir",
            s(dir.path()),
        ],
        &pool,
    );
    assert_exit(&out, 0);
    let descriptor = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("the demo's capture");
    // LLVM's suggested address is outside the pool: the recording went to
    // the pool's first 2 GiB-aligned address instead ...
    let base = reprise::Capture::open(&descriptor)
        .unwrap()
        .record
        .region_base
        .unwrap();
    assert_eq!(base, 0x3_8000_0000);
    // ... which a fresh process on the same driver gets back.
    let out = replay_with(&descriptor, &pool);
    assert_exit(&out, 0);
    assert!(text(&out).0.contains("verification: PASS"));
}

#[test]
fn the_cuda_benchmark_runs_and_reports_staging() {
    let Some(_gpu) = gpu() else { return };
    let out = reprise(&[
        "bench",
        "--backend",
        "cuda",
        "--quick",
        "--json",
        "--sizes",
        "64K,2M",
    ]);
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_str(&text(&out).0).expect("JSON");
    assert_eq!(v["backend"], "cuda");
    let sizes = v["sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), 2);
    for (r, want) in sizes.iter().zip([64u64 << 10, 2 << 20]) {
        assert_eq!(r["size_bytes"].as_u64(), Some(want));
        for key in [
            "plain_launch_s",
            "sync_inline_s",
            "async_background_s",
            "async_background_staged_s",
            "replay_s",
        ] {
            let t = r[key].as_f64().unwrap_or_else(|| panic!("{key}: {r}"));
            assert!(t.is_finite() && t >= 0.0, "{key}: {t}");
        }
        assert!(r["plain_launch_s"].as_f64().unwrap() > 0.0, "{r}");
    }
}

#[test]
fn an_image_with_no_code_for_the_device_says_what_it_holds() {
    // The saxpy fixture is PTX for sm_80; the simulated device is sm_75.
    replay_fails_with(("REPRISE_SIM_CUDA_CC", "75"), |_| {
        vec![
            "the device is sm_75".into(),
            "PTX sm_80 (ISA 7.0)".into(),
            "CUDA_ERROR_INVALID_PTX".into(),
        ]
    });
}
