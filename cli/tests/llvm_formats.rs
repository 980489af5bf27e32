//! Captures in LLVM's own formats (legacy and current), written by a
//! generator that follows FORMATS.md, replay and verify with `reprise`.

mod common;

use common::*;
use reprise::core::record::Generation;

const BASE: u64 = 0x1539_4000_0000;

#[test]
fn legacy_capture_replays_verifies_and_saves_output() {
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmLegacy, BASE, 5000);
    assert!(dir.path().join("axpy.memory").exists());
    let out = reprise(&["replay", "--verify", "--save-output", s(&f.descriptor)]);
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("llvm-legacy capture"), "{stdout}");
    let saved = std::fs::read(dir.path().join("axpy.replay.output")).unwrap();
    assert_eq!(saved, f.expected_output);
}

#[test]
fn current_capture_replays_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmCurrent, BASE + (4 << 30), 3000);
    let out = reprise(&["replay", "--verify=true", "--save-output", s(&f.descriptor)]);
    assert_exit(&out, 0);
    let stem = f
        .descriptor
        .to_string_lossy()
        .trim_end_matches(".json")
        .to_string();
    assert_eq!(
        std::fs::read(format!("{stem}.replay_output")).unwrap(),
        f.expected_output
    );
}

#[test]
fn replay_restores_globals() {
    // Without the globals file the image's own values (alpha = 1, calls = 0)
    // are used, and the output no longer matches: proof that a replay with
    // the file restores them.
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmLegacy, BASE, 100);
    std::fs::remove_file(dir.path().join("axpy.globals")).unwrap();
    let out = reprise(&["replay", "--verify", s(&f.descriptor)]);
    assert_error(&out, &["axpy.globals", "--allow-missing-globals"]);
    let out = reprise(&[
        "replay",
        "--verify",
        "--allow-missing-globals",
        s(&f.descriptor),
    ]);
    assert_exit(&out, 1);
}

#[test]
fn reading_is_relative_to_the_descriptor_not_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmLegacy, BASE, 64);
    let elsewhere = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_reprise"))
        .args(["replay", "--verify", s(&f.descriptor)])
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    assert_exit(&out, 0);
}

#[test]
fn teams_and_threads_overrides_respect_recorded_limits() {
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmCurrent, BASE, 64);
    // ThreadsLimits [1, 1024]: 2048 is refused, 256 is fine (both forms).
    let out = reprise(&["replay", "--num-threads=2048", s(&f.descriptor)]);
    assert_error(
        &out,
        &["--num-threads 2048 is outside the recorded limits [1, 1024]"],
    );
    let out = reprise(&[
        "replay",
        "--num-threads",
        "256",
        "--num-teams=3",
        "--verify",
        s(&f.descriptor),
    ]);
    assert_exit(&out, 0);
    assert!(text(&out).0.contains("grid 3x1x1, block 256x1x1"));
}

#[test]
fn captures_without_teams_or_threads_clauses_replay_on_the_host_as_they_are() {
    // LLVM 16/17 saved the num_teams/thread_limit clauses, 0 for a
    // construct without them. A host kernel is given no geometry (the
    // OpenMP runtime in the image chooses its threads), so the host replays
    // such a capture as it is; GPU executors need the counts
    // (gpu_cuda/commands.rs:
    // llvm_captures_without_teams_or_threads_need_them_on_a_gpu).
    for (generation, teams_key, threads_key) in [
        (
            Generation::LlvmLegacy,
            "NumTeamsClause",
            "ThreadLimitClause",
        ),
        (Generation::LlvmCurrent, "NumTeams", "NumThreads"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let f = llvm_fixture(dir.path(), generation, BASE, 500);
        edit_descriptor(&f.descriptor, |r| {
            r.grid[0] = 0;
            r.block[0] = 0;
        });
        let json = std::fs::read_to_string(&f.descriptor).unwrap();
        assert!(
            json.contains(&format!(r#""{teams_key}":0"#))
                && json.contains(&format!(r#""{threads_key}":0"#)),
            "{json}"
        );

        // Without overrides: replays and verifies.
        let out = reprise(&["replay", "--verify", s(&f.descriptor)]);
        assert_exit(&out, 0);
        let (stdout, _) = text(&out);
        assert!(stdout.contains("grid 1x1x1, block 1x1x1"), "{stdout}");
        assert!(stdout.contains("verification: PASS"), "{stdout}");
        // The library too.
        let capture = reprise::Capture::open(&f.descriptor).unwrap();
        let o = reprise::block_on(std::future::IntoFuture::into_future(
            reprise::replay(&capture).verify(true),
        ))
        .unwrap();
        assert!(o.verification.unwrap().is_match());

        // Overrides still apply (the host kernel ignores the geometry).
        let out = reprise(&[
            "replay",
            "--num-teams",
            "4",
            "--num-threads",
            "64",
            "--verify",
            s(&f.descriptor),
        ]);
        assert_exit(&out, 0);
        let (stdout, _) = text(&out);
        assert!(stdout.contains("grid 4x1x1, block 64x1x1"), "{stdout}");
        assert!(stdout.contains("verification: PASS"), "{stdout}");

        // inspect and list read it without calling it broken, and ask for
        // nothing: replay needs no counts here.
        let out = reprise(&["inspect", s(&f.descriptor)]);
        assert_exit(&out, 0);
        let (stdout, _) = text(&out);
        assert!(
            stdout.contains("(teams 0)") && stdout.contains("(threads 0)"),
            "{stdout}"
        );
        assert!(!stdout.contains("--num-teams N"), "{stdout}");
        let out = reprise(&["list", s(dir.path())]);
        assert_exit(&out, 0);
        let (stdout, _) = text(&out);
        assert!(!stdout.contains("BROKEN"), "{stdout}");
        assert!(!stdout.contains("--num-teams N"), "{stdout}");
    }
}

#[test]
fn llvm_19_to_22_captures_that_lost_their_arguments_are_refused_by_name() {
    // LLVM 19.1.7 to 22.1.8 record the addresses of the runtime's own
    // argument array (`&Args[I]`, host stack, 8 apart) instead of the
    // arguments: nothing can replay them, and every command says why.
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmLegacy, BASE, 500);
    let stack = 0x7ffc_9a3b_1e40u64;
    edit_descriptor(&f.descriptor, |r| {
        for (i, p) in r.arg_ptrs.iter_mut().enumerate() {
            *p = (stack + 8 * i as u64) as i64;
        }
    });
    let name = f.descriptor.display().to_string();
    let why = format!(
        "{name}: ArgPtrs holds no argument values: its 4 entries are the addresses {stack:#x}, \
         {:#x}, ... 8 bytes apart, outside the recorded region, which is how LLVM 19 to 22.1 \
         record a launch",
        stack + 8
    );
    assert_error(&reprise(&["replay", s(&f.descriptor)]), &[&why]);
    let out = reprise(&["inspect", s(&f.descriptor)]);
    assert_exit(&out, 1);
    assert!(
        text(&out).0.contains("ArgPtrs holds no argument values"),
        "{}",
        text(&out).0
    );
    let out = reprise(&["list", s(dir.path())]);
    assert_exit(&out, 1);
    assert!(
        text(&out).0.contains("ArgPtrs holds no argument values"),
        "{}",
        text(&out).0
    );
    let err = reprise::Capture::open(&f.descriptor).unwrap_err();
    assert!(
        matches!(err, reprise::Error::ArgumentsNotRecorded { first, count: 4, .. } if first == stack),
        "{err:?}"
    );

    // What LLVM 18 records is not mistaken for it: the environment slot
    // (~0) first, then values, pointers among them inside the region.
    edit_descriptor(&f.descriptor, |r| {
        let values = [-1, (BASE + 0x40) as i64, (BASE + 0x48) as i64, 500];
        r.arg_ptrs.clear();
        r.arg_offsets.clear();
        for v in values {
            r.push_arg(v as u64).unwrap();
        }
    });
    assert!(reprise::Capture::open(&f.descriptor).is_ok());
    // Nor are scalars 8 apart beside a pointer into the region.
    edit_descriptor(&f.descriptor, |r| {
        r.arg_ptrs[0] = 16;
        r.arg_ptrs[1] = 24;
        r.arg_ptrs[2] = 32;
        r.arg_ptrs[3] = BASE as i64;
    });
    assert!(reprise::Capture::open(&f.descriptor).is_ok());
}

#[test]
fn an_llvm_18_snapshot_taken_before_its_launch_environment_landed_is_refused() {
    // LLVM 18 passes a kernel with reductions the address of a launch
    // environment it allocated in the region ({u32, u32, ReductionBuffer})
    // and snapshots memory without waiting for the copy that fills it.
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmLegacy, BASE, 500);
    let input = dir.path().join("axpy.memory");
    let mut memory = std::fs::read(&input).unwrap();
    let env_off = memory.len() - 16;
    let env = BASE + env_off as u64;
    edit_descriptor(&f.descriptor, |r| {
        r.arg_ptrs[0] = env as i64;
        r.name = "__omp_offloading_fd00_2b5b6e0_axpy_l12".try_into().unwrap();
    });
    // A buffer outside the region (what was there before the copy).
    memory[env_off + 8..].copy_from_slice(&0u64.to_le_bytes());
    std::fs::write(&input, &memory).unwrap();
    let stale = format!(
        "{}: the kernel's launch environment (argument 0, at {env:#x}) points its reduction \
         buffer at 0x0, outside the recorded region",
        input.display()
    );
    assert_error(
        &reprise(&["replay", s(&f.descriptor)]),
        &[&stale, "record the launch again"],
    );
    let out = reprise(&["inspect", s(&f.descriptor)]);
    assert_exit(&out, 1);
    assert!(
        text(&out).0.contains("launch environment"),
        "{}",
        text(&out).0
    );
    // One that points inside the region is what LLVM writes: no complaint.
    memory[env_off + 8..].copy_from_slice(&BASE.to_le_bytes());
    std::fs::write(&input, &memory).unwrap();
    let out = reprise(&["inspect", s(&f.descriptor)]);
    assert!(
        !text(&out).0.contains("launch environment"),
        "{}",
        text(&out).0
    );
    // Nor is a kernel that is not an OpenMP target region's (reprise
    // writes this format for any kernel).
    memory[env_off + 8..].copy_from_slice(&0u64.to_le_bytes());
    std::fs::write(&input, &memory).unwrap();
    edit_descriptor(&f.descriptor, |r| r.name = "axpy".try_into().unwrap());
    let out = reprise(&["inspect", s(&f.descriptor)]);
    assert!(
        !text(&out).0.contains("launch environment"),
        "{}",
        text(&out).0
    );
    edit_descriptor(&f.descriptor, |r| {
        r.name = "__omp_offloading_fd00_2b5b6e0_axpy_l12".try_into().unwrap()
    });
    // LLVM 16 records no region base, and its first argument is the
    // program's own: never read as an environment.
    edit_descriptor(&f.descriptor, |r| r.region_base = None);
    let out = reprise(&["inspect", s(&f.descriptor)]);
    assert!(
        !text(&out).0.contains("launch environment"),
        "{}",
        text(&out).0
    );
}
