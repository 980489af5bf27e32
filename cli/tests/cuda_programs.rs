//! Unmodified CUDA programs (C, in `programs/`) on the simulated CUDA driver:
//! one linked with `-lcuda`, one that reaches the driver only through
//! `dlopen("libcuda.so.1")` and `cuGetProcAddress_v2` as CUDA's runtime does,
//! and one that loads its kernel through `cuLibraryLoadData` and allocates
//! with `cuMemAllocAsync`. Each computes saxpy three times over and prints
//! `result <sum>`, which must be what the host computes, and ends with the
//! status it is asked for.
//!
//! With `REPRISE_GPU_TESTS=1` the programs run on the machine's driver
//! instead (they are still linked against the simulator, whose soname is the
//! driver's); `REPRISE_GPU_TESTS=0` skips. Without a C compiler they skip,
//! unless `REPRISE_REQUIRE_SIM=1`.

mod common;

use std::process::Command;

use common::programs::*;
use common::text;

fn check(name: &str) {
    let Some(target) = setup() else { return };
    let program = build_program(name);
    for (args, status) in [(&[][..], 0), (&["3"][..], 3)] {
        let out = run(&target, &program, args);
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(status),
            "{name} {args:?}:\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
        assert_eq!(
            stdout.lines().collect::<Vec<_>>(),
            [expected_result()],
            "{name} {args:?}: stderr:\n{stderr}"
        );
    }
}

#[test]
fn linked_program_runs_on_the_driver() {
    check("linked");
}

/// `features.c`: pitched, managed and stream-ordered memory, a stream
/// capture launched as a graph twice, a cooperative launch and
/// `cuLaunchKernelEx` with and without a cluster attribute. It checks its
/// own buffers against the host's computation (exit 1 and `FAIL:` lines when
/// they differ), so its `result` differs from [`expected_result`]; it
/// prints how many launches of each kind it made.
#[test]
fn features_program_runs_on_the_driver() {
    let Some(target) = setup() else { return };
    let program = build_program("features");
    for (args, status) in [(&[][..], 0), (&["3"][..], 3)] {
        let out = run(&target, &program, args);
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(status),
            "features {args:?}:\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 2, "features {args:?}: {stdout}{stderr}");
        assert!(
            lines[0].starts_with("result "),
            "features {args:?}: {stdout}{stderr}"
        );
        assert_eq!(
            lines[1], "launches plain=5 capture=1 graph=2 cooperative=1 attributes=1",
            "features {args:?}: {stderr}"
        );
    }
}

#[test]
fn resolver_program_runs_on_the_driver() {
    check("resolver");
}

#[test]
fn library_program_runs_on_the_driver() {
    check("library");
}

/// The linked programs need `libcuda.so.1`, as with NVIDIA's driver.
#[test]
fn linked_programs_need_the_drivers_soname() {
    if setup().is_none() {
        return;
    }
    let program = build_program("linked");
    let out = Command::new("readelf").arg("-d").arg(&program).output();
    let Ok(out) = out else {
        crate::common::skip("no readelf", Some("binutils"));
        return;
    };
    let dynamic = String::from_utf8_lossy(&out.stdout);
    assert!(
        dynamic.contains("Shared library: [libcuda.so.1]"),
        "{dynamic}"
    );
}

/// `program` under `reprise record`: the same result and status as
/// without it, `captures` captures, each replaying and verifying in another
/// process.
fn records_unchanged_and_replays(name: &str, captures: usize) {
    let Some(Target::Simulated) = setup() else {
        return;
    };
    if interposer().is_none() {
        return;
    }
    let program = build_program(name);
    let dir = tempfile::tempdir().unwrap();
    let out = record(&program, dir.path(), &[], &["3"]);
    let (stdout, stderr) = text(&out);
    // The program's own result and status, as without reprise.
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [expected_result()],
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{captures} launches recorded in")),
        "{stderr}"
    );
    let found = descriptors(dir.path());
    assert_eq!(found.len(), captures, "{found:?}");
    let captures = found;
    let (k, v) = sim_env();
    for c in &captures {
        let out = common::reprise_env(
            &["replay", "--verify", common::s(c)],
            &[(k, v.to_str().unwrap())],
        );
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {stdout}{stderr}",
            c.display()
        );
        assert!(stdout.contains("verification: PASS"), "{stdout}");
    }
}

#[test]
fn a_linked_program_records_unchanged_and_every_capture_replays() {
    records_unchanged_and_replays("linked", 3);
}

/// CUDA's runtime reaches the driver through `dlopen` + `dlsym` +
/// `cuGetProcAddress_v2`, and launches with `cuLaunchKernel_ptsz`.
#[test]
fn a_program_resolving_the_driver_records_unchanged_and_every_capture_replays() {
    records_unchanged_and_replays("resolver", 3);
}

/// CUDA 12's way: a library's kernel, launched as its `CUfunction`, as the
/// `CUkernel` itself and through `cuLaunchKernelEx`, on `cuMemAllocAsync`
/// memory.
#[test]
fn a_library_program_records_unchanged_and_every_capture_replays() {
    records_unchanged_and_replays("library", 3);
}

#[test]
fn the_options_choose_the_launches() {
    let Some(Target::Simulated) = setup() else {
        return;
    };
    if interposer().is_none() {
        return;
    }
    let program = build_program("linked");
    let some = tempfile::tempdir().unwrap();
    let out = record(&program, some.path(), &["--skip", "1", "--max", "1"], &[]);
    let stderr = text(&out).1;
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // One summary line, reprise record's (the interposer's own line is for
    // a program it is preloaded into by hand).
    assert!(
        stderr.contains("reprise record: 1 launch recorded in "),
        "{stderr}"
    );
    assert!(!stderr.contains("reprise: recorded"), "{stderr}");
    let found = descriptors(some.path());
    assert_eq!(found.len(), 1);
    // The process's second matching launch (the first was skipped), not
    // the recorder's first recording.
    let out = common::reprise(&["inspect", common::s(&found[0])]);
    let shown = text(&out).0;
    assert!(shown.contains(", launch #1 of its process"), "{shown}");
    let out = common::reprise(&["inspect", "--json", common::s(&found[0])]);
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["launch_seq"], 1, "{info}");
    let none = tempfile::tempdir().unwrap();
    let out = record(&program, none.path(), &["--filter", "nothing*"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    assert!(descriptors(none.path()).is_empty());
}

#[test]
fn a_failure_inside_the_interposer_leaves_the_program_alone() {
    let Some(Target::Simulated) = setup() else {
        return;
    };
    if interposer().is_none() {
        return;
    }
    let program = build_program("linked");
    let dir = tempfile::tempdir().unwrap();
    // A driver without virtual memory management gives no region:
    // recording stops at the first allocation, and the program goes on
    // with the driver's own memory.
    let out = record_env(
        &program,
        dir.path(),
        &[],
        &["3"],
        &[("REPRISE_SIM_CUDA_VMM", "0")],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [expected_result()],
        "{stderr}"
    );
    assert!(stderr.contains("reprise: recording stopped: "), "{stderr}");
    assert_eq!(stderr.matches("recording stopped").count(), 1, "{stderr}");
    assert!(descriptors(dir.path()).is_empty());
}
