//! Options a user can get wrong, and the directories `bench` may touch:
//! each is refused up front with a message that says why, or warned about.

mod common;

use common::*;
use reprise::core::record::Generation;

#[test]
fn bench_leaves_the_directory_it_is_given_alone() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, b"keep me").unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmCurrent, 0x1539_4000_0000, 16);
    let out = reprise(&[
        "bench",
        "--quick",
        "--json",
        "--sizes",
        "64K",
        "--dir",
        s(dir.path()),
    ]);
    assert_exit(&out, 0);
    assert_eq!(std::fs::read(&notes).unwrap(), b"keep me");
    assert!(
        f.descriptor.exists(),
        "bench removed a capture it did not write"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("reprise-bench-")
        })
        .collect();
    assert!(left.is_empty(), "bench left its scratch directory behind");
}

#[test]
fn sizes_out_of_range_are_refused_before_any_work() {
    for args in [
        &["bench", "--quick", "--sizes", "0"][..],
        &["bench", "--quick", "--sizes", "64K,8"],
        &["demo", "--size", "0"],
        &["demo", "--size", "1T"],
        // A snapshot size no kernel can count, and one that wrapped past
        // the end of u64 when the region's slack was added.
        &["bench", "--quick", "--sizes", "1T"],
        &["bench", "--quick", "--sizes", "18446744073709551615"],
    ] {
        let out = reprise(args);
        assert_exit(&out, 2);
        let (_, stderr) = text(&out);
        assert!(
            stderr.contains("too small") || stderr.contains("too large"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_bench_larger_than_memory_is_refused_naming_what_it_needs() {
    let avail = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map(|kib| kib * 1024);
    // 7 GiB needs about 42 GiB: refused where less is available.
    if avail.is_none_or(|a| a >= 42 << 30) {
        crate::common::skip("this machine has 42 GiB available (or says nothing)", None);
        return;
    }
    let out = reprise(&["bench", "--quick", "--sizes", "7G"]);
    assert_error(
        &out,
        &["bench --sizes 7.0 GiB needs about 42.0 GiB of memory"],
    );
}

#[test]
fn geometry_overrides_of_zero_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmCurrent, 0x1539_4000_0000, 16);
    for opt in ["--num-teams=0", "--num-threads=0", "--device-id=-1"] {
        let out = reprise(&["replay", opt, s(&f.descriptor)]);
        assert_exit(&out, 2);
        let (_, stderr) = text(&out);
        assert!(stderr.contains(opt.split('=').next().unwrap()), "{stderr}");
    }
}

#[test]
fn a_device_id_the_host_cannot_use_is_flagged() {
    let out = reprise(&["demo", "--device-id", "3"]);
    assert_error(&out, &["--device-id 3", "--backend cuda"]);

    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmCurrent, 0x1539_4000_0000, 16);
    let out = reprise(&["replay", "--device-id", "5", s(&f.descriptor)]);
    assert_exit(&out, 0);
    let (_, stderr) = text(&out);
    assert!(
        stderr.contains("warning: --device-id 5 is ignored"),
        "{stderr}"
    );
}

#[test]
fn bench_offers_only_the_executors_it_can_measure() {
    // `auto` means nothing without a capture; every executor has a
    // built-in kernel.
    let out = reprise(&["bench", "--quick", "--backend", "auto"]);
    assert_exit(&out, 2);
    let (_, stderr) = text(&out);
    assert!(
        stderr.contains("possible values: host, cuda, amdgpu"),
        "{stderr}"
    );
}

#[test]
fn list_exits_1_when_a_capture_is_broken_and_names_it_once() {
    let dir = tempfile::tempdir().unwrap();
    llvm_fixture(dir.path(), Generation::LlvmCurrent, 0x1539_4000_0000, 16);
    let out = reprise(&["list", s(dir.path())]);
    assert_exit(&out, 0);
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, b"{\"Name\": ").unwrap();
    let out = reprise(&["list", s(dir.path())]);
    assert_exit(&out, 1);
    let (stdout, _) = text(&out);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("BROKEN"))
        .unwrap_or_else(|| panic!("no BROKEN line: {stdout}"));
    assert_eq!(line.matches("bad.json").count(), 1, "{line}");
}

#[test]
fn the_cuda_demo_replays_in_a_new_process_as_a_user_would() {
    // A driver that ignores address hints records fine, but no new process
    // gets the recorded address back: the demo must say so, not pass by
    // replaying in the process that still knows the address.
    match sim::driver() {
        Ok(sim::Driver::Simulated) => {}
        other => {
            crate::common::skip(
                &format!("needs the simulated CUDA driver ({other:?})"),
                None,
            );
            return;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "demo",
        "--backend",
        "cuda",
        "--size",
        "64K",
        "--dir",
        s(dir.path()),
    ];
    let out = reprise_env(&args, &[("REPRISE_SIM_CUDA_HINTS", "ignore")]);
    assert_exit(&out, 2);
    let (stdout, stderr) = text(&out);
    assert!(
        stdout.contains("[3/4] replaying in a new process"),
        "{stdout}"
    );
    assert!(!stdout.contains("[4/4]"), "{stdout}");
    assert!(
        stderr.contains("in a new process failed (exit 2)"),
        "{stderr}"
    );
    assert!(stderr.contains("reserve"), "{stderr}");
}

#[test]
fn inspect_reports_what_replay_would_refuse() {
    let dir = tempfile::tempdir().unwrap();
    // An image that runs on another executor than the descriptor names.
    let written = record_axpy(
        reprise::RecordConfig::default()
            .enabled(true)
            .dir(dir.path())
            .fsync(false),
        64,
        1,
    );
    assert_exit(&reprise(&["inspect", s(&written[0])]), 0);
    edit_descriptor(&written[0], |r| {
        r.backend = Some(reprise::BackendKind::Cuda)
    });
    let out = reprise(&["inspect", s(&written[0])]);
    assert_exit(&out, 1);
    assert!(text(&out).0.contains("does not belong"), "{}", text(&out).0);

    // An LLVM capture whose snapshot is larger than its region.
    let f = llvm_fixture(dir.path(), Generation::LlvmCurrent, 0x1539_4000_0000, 256);
    edit_descriptor(&f.descriptor, |r| r.region_size = Some(64));
    let out = reprise(&["inspect", s(&f.descriptor)]);
    assert_exit(&out, 1);
    assert!(text(&out).0.contains("VAllocSize 64"), "{}", text(&out).0);
}

#[test]
fn an_interrupted_bench_removes_its_captures() {
    interrupt_bench(false);
}

#[test]
fn an_interrupted_bench_whose_stderr_is_closed_still_exits() {
    // `reprise bench 2>&1 | tee log`, and Ctrl-C kills tee too.
    interrupt_bench(true);
}

fn interrupt_bench(close_stderr: bool) {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(reprise_bin())
        .args(["bench", "--quick", "--sizes", "16M", "--dir", s(dir.path())])
        .stdout(Stdio::null())
        .stderr(if close_stderr {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .spawn()
        .unwrap();
    if close_stderr {
        drop(child.stderr.take());
    }
    // Wait until captures are being written into the scratch directory.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let scratch = dir.path().join(format!("reprise-bench-{}", child.id()));
    while std::fs::read_dir(scratch.join("captures")).map_or(true, |mut d| d.next().is_none()) {
        assert!(
            std::time::Instant::now() < deadline,
            "bench wrote no capture"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the interrupted bench did not exit");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(
        !scratch.exists(),
        "the interrupted bench left {}",
        scratch.display()
    );
}

#[test]
fn a_capture_from_before_llvm_saved_globals_is_a_note_not_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmLegacy, 0x1539_4000_0000, 16);
    std::fs::remove_file(dir.path().join("axpy.globals")).unwrap();
    let out = reprise(&["inspect", s(&f.descriptor)]);
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("status    complete"), "{stdout}");
    let note = stdout
        .lines()
        .find(|l| l.starts_with("note"))
        .unwrap_or_else(|| panic!("no note: {stdout}"));
    assert!(note.contains("--allow-missing-globals"), "{note}");
    assert_exit(&reprise(&["list", s(dir.path())]), 0);

    // A reprise capture vouches for its globals file: missing, it is a
    // problem, reported once.
    let written = record_axpy(
        reprise::RecordConfig::default()
            .enabled(true)
            .dir(dir.path())
            .fsync(false)
            .format(reprise::CaptureFormat::Raw),
        16,
        1,
    );
    let globals = written[0].with_extension("globals");
    std::fs::remove_file(&globals).unwrap();
    let out = reprise(&["inspect", s(&written[0])]);
    assert_exit(&out, 1);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("status    1 problem(s)"), "{stdout}");
    assert!(stdout.contains("records its checksum"), "{stdout}");
}

#[test]
fn list_skips_json_files_that_are_no_captures_and_aligns_its_columns() {
    let dir = tempfile::tempdir().unwrap();
    llvm_fixture(dir.path(), Generation::LlvmCurrent, 0x1539_4000_0000, 16);
    record_axpy(
        reprise::RecordConfig::default()
            .enabled(true)
            .dir(dir.path())
            .fsync(false),
        16,
        1,
    );
    std::fs::write(
        dir.path().join("package.json"),
        br#"{"name": "web", "version": "1.0.0"}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("compile_commands.json"),
        br#"[{"directory": "/src", "file": "k.c"}]"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("tsconfig.json"), b"{ // comments\n}").unwrap();
    // A lone descriptor that is cut short is still a broken capture.
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, br#"{"Name": "k", "NumArgs": 2, "ArgPtrs": [1"#).unwrap();
    let out = reprise(&["list", s(dir.path())]);
    assert_exit(&out, 1);
    assert!(text(&out).0.contains("BROKEN"), "{}", text(&out).0);
    std::fs::remove_file(&cut).unwrap();
    let out = reprise(&["list", s(dir.path())]);
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    assert!(!stdout.contains("package.json"), "{stdout}");
    assert!(
        stdout.contains("(3 other JSON file(s) skipped)"),
        "{stdout}"
    );
    // The executor column starts at the same place on every capture line.
    let columns: Vec<usize> = stdout
        .lines()
        .filter(|l| l.contains(" host "))
        .map(|l| l.find(" host ").unwrap())
        .collect();
    assert_eq!(columns.len(), 2, "{stdout}");
    assert_eq!(columns[0], columns[1], "{stdout}");
}
