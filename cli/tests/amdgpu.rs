//! AMD captures at the command line: what `inspect` reads from a code
//! object without a GPU, and what `replay --backend amdgpu` says on a
//! machine without the HSA runtime or without an AMD GPU (with the
//! installed runtime library, whose `hsa_init` fails here); and, on the
//! simulated HSA runtime (`test-support/src/hsa_runtime`), recordings through
//! the library and LLVM captures replayed with `reprise replay` in another
//! process, and the runtime misbehaving.

mod common;
use reprise_test_support::hsa_runtime as sim;

use std::path::{Path, PathBuf};

use common::*;
use reprise::core::record::Generation;

const GFX90A: &[u8] = include_bytes!("../../backends/amdgpu/fixtures/saxpy_mixed.gfx90a.hsaco");

/// An LLVM (current format) capture of `saxpy(2, x, y, n)` of the gfx90a
/// code object at `base`, as LLVM's AMDGPU plugin records one: every
/// argument in an 8-byte slot, teams as work-groups, threads as the
/// work-group size (256). Returns the descriptor and the expected output.
fn amd_saxpy_capture(dir: &Path, base: u64, n: usize) -> (PathBuf, Vec<u8>) {
    llvm_saxpy_capture(dir, Generation::LlvmCurrent, GFX90A, base, n, 256)
}

#[test]
fn inspect_reads_the_target_and_kernels_of_a_code_object_without_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let (capture, _) = amd_saxpy_capture(dir.path(), 0x1534_f7e0_0000, 1000);
    let out = reprise(&["inspect", s(&capture)]);
    let stdout = text(&out).0;
    assert!(stdout.contains("amdgpu (from the image)"), "{stdout}");
    assert!(
        stdout.contains(
            "image     AMD GPU code object (ELF) for gfx90a (code object v5): saxpy (288 kernarg bytes), mixed (288 kernarg bytes)"
        ),
        "{stdout}"
    );
    let out = reprise(&["inspect", "--json", s(&capture)]);
    let json = text(&out).0;
    assert!(
        json.contains("amdgpu gfx90a (code object v5): saxpy"),
        "{json}"
    );
}

#[test]
fn without_the_runtime_or_a_gpu_replay_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let (capture, _) = amd_saxpy_capture(dir.path(), 0x1534_f7e0_0000, 1000);
    // A runtime library that is not there: named, with the loader's reason.
    let missing = dir.path().join("libhsa-runtime64.so.1");
    let out = reprise_env(
        &["replay", "--backend", "amdgpu", s(&capture)],
        &[("REPRISE_HSA_LIBRARY", s(&missing))],
    );
    assert_exit(&out, 2);
    let stderr = text(&out).1;
    assert!(
        stderr.contains(&format!("HSA runtime not found ({}: ", missing.display())),
        "{stderr}"
    );
    assert!(stderr.contains(s(&capture)), "{stderr}");
    // The installed runtime: hsa_init fails on a machine without an AMD
    // GPU (Debian's ROCm 5.2 says HSA_STATUS_ERROR_OUT_OF_RESOURCES).
    if Path::new("/dev/kfd").exists() {
        return crate::common::skip("the no-GPU half: this machine has /dev/kfd", None);
    }
    let out = reprise(&["replay", s(&capture)]);
    assert_exit(&out, 2);
    let stderr = text(&out).1;
    let installed = [
        "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1",
        "/opt/rocm/lib/libhsa-runtime64.so.1",
    ]
    .iter()
    .any(|p| Path::new(p).exists());
    if installed {
        assert!(
            stderr.contains("no AMD GPU found (HSA_STATUS_ERROR_"),
            "{stderr}"
        );
        assert!(stderr.contains(" from hsa_init)"), "{stderr}");
    } else {
        assert!(
            std::env::var("REPRISE_REQUIRE_HSA").as_deref() != Ok("1"),
            "REPRISE_REQUIRE_HSA=1 but no HSA runtime library is installed"
        );
        assert!(
            stderr.contains("HSA runtime not found (libhsa-runtime64.so.1: "),
            "{stderr}"
        );
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// The simulated runtime's path, or why the simulated tests skip.
fn sim_library() -> Option<String> {
    match sim::available().and_then(|()| sim::library().map(|p| p.display().to_string())) {
        Ok(p) => Some(p),
        Err(why) => {
            crate::common::skip(&why.to_string(), None);
            None
        }
    }
}

fn replay_on_sim(lib: &str, args: &[&str], extra: &[(&str, &str)]) -> std::process::Output {
    let mut env = vec![("REPRISE_HSA_LIBRARY", lib)];
    env.extend_from_slice(extra);
    reprise_env(args, &env)
}

#[test]
fn the_demo_records_and_replays_on_the_simulated_runtime() {
    let Some(lib) = sim_library() else { return };
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    let out = replay_on_sim(
        &lib,
        &[
            "demo",
            "--backend",
            "amdgpu",
            "--size",
            "64K",
            "--dir",
            s(&demo),
        ],
        &[],
    );
    let (stdout, stderr) = text(&out);
    assert_exit(&out, 0);
    assert!(stdout.contains("verification: PASS"), "{stdout}{stderr}");
    assert!(stdout.contains("amdgpu"), "{stdout}");
    // The replay needs the runtime's variable, inspect does not.
    let hint = |prefix: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("{stdout}"))
            .trim()
            .to_string()
    };
    assert!(
        hint("replay it yourself:").starts_with("REPRISE_HSA_LIBRARY="),
        "{stdout}"
    );
    assert!(
        !hint("look inside:").contains("REPRISE_HSA_LIBRARY"),
        "{stdout}"
    );
}

#[test]
fn recordings_through_the_library_replay_in_another_process() {
    let Some(lib) = sim_library() else { return };
    sim::use_in_this_process().unwrap();
    use reprise::{Args, LaunchConfig, RecordConfig, Recorder};
    let dir = tempfile::tempdir().unwrap();
    let exec = reprise::AmdExecutor::new(0).unwrap();
    let config = RecordConfig::default()
        .enabled(true)
        .dir(dir.path())
        .region_size(16 << 20);
    let mut rec = Recorder::new(exec, 0, config).unwrap();
    let n = 3000usize;
    let x = rec.alloc((n * 4) as u64, 256).unwrap();
    let y = rec.alloc((n * 4) as u64, 256).unwrap();
    rec.upload(x, &floats(&vec![1.5; n])).unwrap();
    rec.upload(y, &floats(&vec![2.0; n])).unwrap();
    let image = rec.load_image(GFX90A).unwrap();
    let k = rec.kernel(image, "saxpy").unwrap();
    let args = Args::new().f32(3.0).ptr(x).ptr(y).i32(n as i32);
    let geometry = LaunchConfig {
        grid: [(n as u32).div_ceil(256), 1, 1],
        block: [256, 1, 1],
        shared_mem: 0,
    };
    let probe = sim::Probe::open().unwrap();
    let written = reprise::block_on(async {
        let (waits, handlers) = (probe.waits(), probe.handlers());
        rec.launch(&k, geometry, &args).await.unwrap();
        // The whole record schedule (H2D, D2H info, kernel, D2H output)
        // is waited on once, by one asynchronous signal handler: no
        // blocking wait.
        assert_eq!(
            probe.handlers() - handlers,
            1,
            "one handler per recorded launch"
        );
        assert_eq!(probe.waits(), waits, "no blocking signal wait");
        let out = rec.download(y, n * 4).await.unwrap();
        // y = 3 * 1.5 + 2 + bias (0.5)
        assert_eq!(f32::from_le_bytes(out[8..12].try_into().unwrap()), 7.0);
        rec.finish().await.unwrap()
    });
    let capture = written.into_iter().next().expect("one capture");
    let out = replay_on_sim(
        &lib,
        &["replay", "--verify", "--repetitions", "3", s(&capture)],
        &[],
    );
    let (stdout, stderr) = text(&out);
    assert_exit(&out, 0);
    assert!(stdout.contains("verification: PASS"), "{stdout}{stderr}");
    assert!(
        stdout.contains("restored the region from a copy kept on the device"),
        "{stdout}"
    );
    let out = reprise(&["inspect", s(&capture)]);
    assert!(
        text(&out).0.contains("for gfx90a (code object v5)"),
        "{}",
        text(&out).0
    );
}

#[test]
fn llvm_captures_replay_with_their_implicit_arguments() {
    let Some(lib) = sim_library() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (capture, expected) = amd_saxpy_capture(dir.path(), 0x1534_f7e0_0000, 5000);
    let out = replay_on_sim(
        &lib,
        &["replay", "--verify", "--save-output", s(&capture)],
        &[],
    );
    let (stdout, stderr) = text(&out);
    assert_exit(&out, 0);
    assert!(stdout.contains("amdgpu executor"), "{stdout}{stderr}");
    assert!(stdout.contains("verification: PASS"), "{stdout}");
    let saved = std::fs::read(dir.path().join("1234_5678.replay_output")).unwrap();
    assert_eq!(saved, expected);
    // A sweep on the simulator: 3 x 2 configurations.
    let out = replay_on_sim(
        &lib,
        &[
            "tune",
            s(&capture),
            "--num-teams",
            "20,40",
            "--num-threads",
            "128,256",
            "--repetitions",
            "2",
        ],
        &[],
    );
    let (stdout, stderr) = text(&out);
    assert_exit(&out, 0);
    assert!(stdout.contains("fastest: "), "{stdout}{stderr}");
}

#[test]
fn the_runtime_misbehaving_is_named() {
    let Some(lib) = sim_library() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (capture, _) = amd_saxpy_capture(dir.path(), 0x1534_f7e0_0000, 1000);
    // (the simulator's switches, another build of it, what stderr says)
    type Case<'a> = (Vec<(&'a str, &'a str)>, Option<String>, &'a str);
    let cases: Vec<Case> = vec![
        (
            vec![("REPRISE_SIM_HSA_VMEM", "ignored")],
            None,
            "the HSA runtime cannot reserve",
        ),
        (
            vec![("REPRISE_SIM_HSA_GFX", "gfx1030")],
            None,
            "the code object is built for gfx90a, but the device is amdgcn-amd-amdhsa--gfx1030",
        ),
        (
            vec![("REPRISE_SIM_HSA_NO_GPU", "1")],
            None,
            "no AMD GPU found (hsa_init succeeded but the runtime reports no GPU agent)",
        ),
        (
            vec![("REPRISE_SIM_HSA_INIT", "1008")],
            None,
            "no AMD GPU found (HSA_STATUS_ERROR_OUT_OF_RESOURCES from hsa_init)",
        ),
        (
            vec![],
            Some(
                sim::variant(&["-DSIM_NO_VMEM"])
                    .unwrap()
                    .display()
                    .to_string(),
            ),
            "needs the HSA runtime's virtual memory management",
        ),
        (
            vec![("REPRISE_SIM_HSA_FAIL", "hsa_queue_create:1")],
            None,
            "hsa_queue_create failed: HSA_STATUS_ERROR_OUT_OF_RESOURCES",
        ),
    ];
    for (env, library, want) in cases {
        let library = library.unwrap_or_else(|| lib.clone());
        let out = replay_on_sim(&library, &["replay", s(&capture)], &env);
        let stderr = text(&out).1;
        assert_exit(&out, 2);
        assert!(stderr.contains(want), "{env:?}: {stderr}");
        assert!(stderr.contains(s(&capture)), "{env:?}: {stderr}");
    }
}

#[test]
fn a_faulting_kernel_is_an_error_naming_it() {
    let Some(lib) = sim_library() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (capture, _) = amd_saxpy_capture(dir.path(), 0x1534_f7e0_0000, 1000);
    // y points far outside anything the device has.
    edit_descriptor(&capture, |r| r.arg_ptrs[2] = 0x7000_0000_0000_i64 as _);
    let out = replay_on_sim(&lib, &["replay", "--no-checksums", s(&capture)], &[]);
    assert_exit(&out, 2);
    let stderr = text(&out).1;
    assert!(
        stderr.contains(
            "the kernel `saxpy` faulted: HSA_STATUS_ERROR_MEMORY_FAULT (an access at 0x7000000"
        ),
        "{stderr}"
    );
}

#[test]
fn damaged_code_objects_are_errors_never_signals() {
    let Some(lib) = sim_library() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (capture, _) = amd_saxpy_capture(dir.path(), 0x1534_f7e0_0000, 256);
    let image = dir.path().join("1234_5678.image");
    let mut exits = [0usize; 3];
    // Cut at every 97th byte and one byte changed at every 61st: LLVM
    // captures have no checksums, so every damaged image is read.
    let cuts = (0..GFX90A.len())
        .step_by(97)
        .map(|at| GFX90A[..at].to_vec());
    let flips = (0..GFX90A.len()).step_by(61).map(|at| {
        let mut b = GFX90A.to_vec();
        b[at] ^= 0x5a;
        b
    });
    for damaged in cuts.chain(flips) {
        std::fs::write(&image, &damaged).unwrap();
        let out = replay_on_sim(&lib, &["replay", "--verify", s(&capture)], &[]);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0..=2)),
            "{:?}: {}",
            out.status,
            text(&out).1
        );
        exits[code.unwrap() as usize] += 1;
        if code == Some(2) {
            assert!(text(&out).1.contains("1234_5678"), "{}", text(&out).1);
        }
    }
    eprintln!("exit 0/1/2: {exits:?}");
    assert!(exits[2] > 0, "no damage was noticed: {exits:?}");
}
