//! The command line as a user meets it: demo, inspect, list, help, usage
//! errors.

mod common;

use common::*;
use reprise::core::record::Generation;

#[test]
fn demo_records_replays_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let out = reprise(&[
        "demo",
        "--dir",
        s(dir.path()),
        "--size",
        "1M",
        "--format",
        "raw",
    ]);
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("[4/4] verified"), "{stdout}");
    assert!(stdout.contains(".record_input"), "{stdout}");
    let json: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(json.len(), 1);
    let size = std::fs::metadata(json[0].path().with_extension("record_input"))
        .unwrap()
        .len();
    assert_eq!(
        size,
        1 << 20,
        "--size 1M: input and output arrays of 512 KiB each"
    );
}

#[test]
fn inspect_shows_everything_and_never_runs_the_image() {
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmCurrent, 0x1539_4000_0000, 256);
    // An image that would crash if executed is still inspectable.
    let out = reprise(&["inspect", s(&f.descriptor)]);
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    for needle in [
        "kernel    axpy",
        "format    llvm-current",
        "executor  host (from the image)",
        "grid 8 x 1 x 1 (teams 8), block 128 x 1 x 1 (threads 128)",
        "threads limits [1, 1024]",
        "region    0x153940000000",
        "-> region + 0x0",
        "alpha (4 bytes)",
        "axpy_calls (8 bytes)",
        "status    complete",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    let out = reprise(&["inspect", "--json", s(&f.descriptor)]);
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kernel"], "axpy");
    assert_eq!(v["format"], "llvm-current");
    assert_eq!(v["arguments"][0]["in_region"], true);
    assert_eq!(v["arguments"][2]["in_region"], false);
    assert_eq!(v["arguments"][2]["value"], 256);
    assert_eq!(v["globals"][0]["name"], "alpha");
    assert_eq!(v["region"]["base"], 0x1539_4000_0000u64);
    assert!(v["problems"].as_array().unwrap().is_empty());

    std::fs::remove_file(dir.path().join(format!(
        "{}.record_input",
        f.descriptor.file_stem().unwrap().to_string_lossy()
    )))
    .unwrap();
    // A capture with a problem: still described, and exit 1.
    let out = reprise(&["inspect", s(&f.descriptor)]);
    assert_exit(&out, 1);
    assert!(text(&out).0.contains("problem(s)"));
    assert_exit(&reprise(&["inspect", "--json", s(&f.descriptor)]), 1);
}

#[test]
fn list_shows_captures_and_orphans() {
    let dir = tempfile::tempdir().unwrap();
    llvm_fixture(dir.path(), Generation::LlvmLegacy, 0x1539_4000_0000, 16);
    llvm_fixture(dir.path(), Generation::LlvmCurrent, 0x1539_4000_0000, 16);
    // What a crash mid-recording leaves: data without a descriptor, and a
    // temporary file of an interrupted write.
    std::fs::write(dir.path().join("k-1-7.record_input"), b"partial").unwrap();
    std::fs::write(dir.path().join(".reprise-tmp.k-1-8.globals.99"), b"x").unwrap();
    let out = reprise(&["list", s(dir.path())]);
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("llvm-legacy"), "{stdout}");
    assert!(stdout.contains("llvm-current"), "{stdout}");
    assert!(
        stdout.contains("ORPHAN") && stdout.contains("k-1-7.record_input"),
        "{stdout}"
    );
    assert!(stdout.contains("interrupted write"), "{stdout}");
    assert!(
        stdout.contains("2 capture(s) (0 incomplete), 0 unreadable, 2 orphaned file(s)"),
        "{stdout}"
    );
    assert_error(
        &reprise(&["list", "/nonexistent-dir"]),
        &["/nonexistent-dir"],
    );
}

#[test]
fn help_and_usage_errors() {
    let out = reprise(&["--help"]);
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    for cmd in ["replay", "inspect", "list", "demo", "Exit status"] {
        assert!(stdout.contains(cmd), "{stdout}");
    }
    assert_exit(&reprise(&["replay", "--help"]), 0);
    assert_exit(&reprise(&["--version"]), 0);
    assert_exit(&reprise(&["replay"]), 2);
    assert_exit(&reprise(&["replay", "--repetitions=0", "x.json"]), 2);
    assert_exit(&reprise(&["frobnicate"]), 2);
    assert_error(
        &reprise(&["replay", "--backend", "amdgpu", "/nonexistent.json"]),
        &["/nonexistent.json"],
    );
}

#[test]
fn forcing_an_executor_the_image_does_not_run_on_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmLegacy, 0x1539_4000_0000, 16);
    let out = reprise(&["replay", "--backend", "amdgpu", s(&f.descriptor)]);
    assert_error(
        &out,
        &["which runs on the host executor, not on the amdgpu executor that --backend asks for"],
    );
    // Said before anything else, not after announcing the replay.
    assert!(text(&out).0.is_empty(), "{}", text(&out).0);
}

#[test]
fn bench_quick_json_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("bench.svg");
    let out = reprise(&[
        "bench",
        "--quick",
        "--json",
        "--sizes",
        "64K",
        "--dir",
        s(&dir.path().join("scratch")),
        "--plot",
        s(&plot),
    ]);
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let size = &v["sizes"][0];
    assert_eq!(size["size_bytes"], 65536);
    for key in [
        "plain_launch_s",
        "sync_inline_s",
        "async_inline_s",
        "async_background_s",
        "copy_lower_bound_s",
        "replay_s",
        "read_files_s",
    ] {
        assert!(
            size[key].as_f64().is_some_and(|t| t >= 0.0),
            "{key}: {}",
            size[key]
        );
    }
    // Ratios are the fields they are computed from.
    let ratio = size["background_vs_sync"].as_f64().unwrap();
    let want =
        size["async_background_s"].as_f64().unwrap() / size["sync_inline_s"].as_f64().unwrap();
    assert!((ratio - want).abs() < 1e-9);
    assert!(
        v["allocator"]["ratio_local_chunks_2_threads"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("async + background"),
        "{}",
        &svg[..svg.len().min(200)]
    );
    assert_eq!(
        std::fs::read_dir(dir.path().join("scratch"))
            .unwrap()
            .count(),
        0,
        "bench's own directory inside --dir is removed"
    );
}

#[test]
fn replaying_on_cuda_without_a_driver_is_a_clean_error_naming_the_file() {
    if reprise_cuda::driver_present() {
        println!("skipped: this machine has a CUDA driver library (or one is preloaded)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmCurrent, 0x1539_4000_0000, 16);
    // A CUDA image, so that the CUDA executor is the one to open.
    let image = reprise::CapturePaths::new(&f.descriptor, Generation::LlvmCurrent).image;
    std::fs::write(
        &image,
        include_bytes!("../../backends/cuda/fixtures/saxpy.ptx"),
    )
    .unwrap();
    // Its kernel, so that nothing but the driver is missing.
    edit_descriptor(&f.descriptor, |r| r.name = "saxpy".try_into().unwrap());
    let mut cmd = std::process::Command::new(reprise_bin());
    cmd.args(["replay", s(&f.descriptor)])
        .env("RUST_BACKTRACE", "0");
    // No simulated driver either: leave out every directory that holds a
    // libcuda.so.
    if let Some(path) = std::env::var_os("LD_LIBRARY_PATH") {
        let kept: Vec<_> = std::env::split_paths(&path)
            .filter(|d| !d.join("libcuda.so").exists() && !d.join("libcuda.so.1").exists())
            .collect();
        cmd.env("LD_LIBRARY_PATH", std::env::join_paths(kept).unwrap());
    }
    let out = output_within(&mut cmd, RUN_LIMIT);
    let (_, stderr) = text(&out);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_error(&out, &["CUDA driver not found", s(&f.descriptor)]);
}

/// Each command's short help (`-h`) fits a screen; the rest is in `--help`.
#[test]
fn every_short_help_fits_a_screen() {
    let out = reprise(&["--help"]);
    let commands: Vec<String> = text(&out)
        .0
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() >= 15, "{commands:?}");
    for c in &commands {
        let short = reprise(&[c, "-h"]);
        assert_exit(&short, 0);
        let lines = text(&short).0.lines().count();
        assert!(lines <= 45, "reprise {c} -h is {lines} lines");
        let long = reprise(&[c, "--help"]);
        assert!(text(&long).0.lines().count() >= lines, "{c}");
    }
}
