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
fn captures_without_teams_or_threads_clauses_replay_with_overrides() {
    // LLVM 16/17 saved the num_teams/thread_limit clauses, 0 for a
    // construct without them; LLVM's replay tool let the plugin choose.
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

        // Without overrides the geometry is unknown: say so, and how to fix it.
        let name = f.descriptor.display().to_string();
        assert_error(
            &reprise(&["replay", "--verify", s(&f.descriptor)]),
            &[&format!(
                "{name}: {teams_key} is 0 and {threads_key} is 0: {why}, so the launch's team \
                 count and threads per team are unknown; pass --num-teams N and --num-threads N"
            )],
        );
        let out = reprise(&["replay", "--num-teams", "4", s(&f.descriptor)]);
        assert_error(
            &out,
            &[
                &format!("{name}: {threads_key} is 0"),
                "pass --num-threads N",
            ],
        );
        assert!(!text(&out).1.contains("--num-teams N"), "{}", text(&out).1);
        // The library says the same, naming the descriptor.
        let capture = reprise::Capture::open(&f.descriptor).unwrap();
        let err = reprise::block_on(std::future::IntoFuture::into_future(reprise::replay(
            &capture,
        )))
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("{name}: {teams_key} is 0")),
            "{err}"
        );

        // With both given it replays and verifies (the host kernel ignores
        // the geometry).
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

        // inspect and list read it without calling it broken.
        let out = reprise(&["inspect", s(&f.descriptor)]);
        assert_exit(&out, 0);
        let (stdout, _) = text(&out);
        assert!(
            stdout.contains("(teams 0)") && stdout.contains("(threads 0)"),
            "{stdout}"
        );
        // ... and say what a replay will need.
        let note = stdout.lines().find(|l| l.starts_with("note")).unwrap_or("");
        assert!(
            note.contains("pass --num-teams N and --num-threads N"),
            "{stdout}"
        );
        let out = reprise(&["inspect", "--json", s(&f.descriptor)]);
        assert_exit(&out, 0);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            (v["num_teams"].as_u64(), v["num_threads"].as_u64()),
            (Some(0), Some(0))
        );
        assert!(
            v["notes"][0]
                .as_str()
                .unwrap_or("")
                .contains("--num-teams N")
        );
        let out = reprise(&["list", s(dir.path())]);
        assert_exit(&out, 0);
        let (stdout, _) = text(&out);
        assert!(!stdout.contains("BROKEN"), "{stdout}");
        assert!(
            stdout.contains("NOTE: ") && stdout.contains("--num-teams N"),
            "{stdout}"
        );
    }
}
