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
    // (gpu_cuda.rs: llvm_captures_without_teams_or_threads_need_them_on_a_gpu).
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
