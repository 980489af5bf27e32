//! `reprise record` into the content-addressed store (the default format)
//! on the simulated driver: two programs recording into one store at once
//! both complete, and every capture of both is whole and replays; a
//! 200-launch program's captures take under a fifth of what raw files
//! would. Without a C compiler the tests skip, unless
//! `REPRISE_REQUIRE_SIM=1`.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::programs::*;
use common::text;

/// The simulator and the interposer are there (else the test skips, after
/// saying why).
fn ready() -> bool {
    matches!(setup(), Some(Target::Simulated)) && interposer().is_some()
}

/// `reprise list DIR` says every capture is whole and nothing is left
/// over; returns how many captures it lists.
fn list_clean(dir: &Path) -> usize {
    let out = common::reprise(&["list", common::s(dir)]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    for bad in ["BROKEN", "ORPHAN", "INCOMPLETE"] {
        assert!(!stdout.contains(bad), "{stdout}");
    }
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.contains("(0 incomplete), 0 unreadable, 0 orphaned"),
        "{stdout}"
    );
    last.split_whitespace().next().unwrap().parse().unwrap()
}

/// The bytes of every regular file under `dir`, and of those that are
/// descriptors (`*.json` in `dir` itself).
fn file_bytes(dir: &Path, top: bool) -> (u64, u64) {
    let (mut all, mut descriptors) = (0, 0);
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = std::fs::symlink_metadata(e.path()).unwrap();
        if m.is_dir() {
            all += file_bytes(&e.path(), false).0;
        } else if m.is_file() {
            all += m.len();
            if top && e.path().extension().is_some_and(|x| x == "json") {
                descriptors += m.len();
            }
        }
    }
    (all, descriptors)
}

#[test]
fn two_programs_record_into_one_store_at_once() {
    if !ready() {
        return;
    }
    let program = build_program("launches");
    let lib = interposer().unwrap();
    let (k, v) = sim_env();
    let dir = tempfile::tempdir().unwrap();
    // Both start before either has stored a chunk, on the same inputs:
    // they store the same chunks at the same time.
    let spawn = || {
        Command::new(common::reprise_bin())
            .args(["record", "--dir", common::s(dir.path()), "--"])
            .arg(&program)
            .arg(saxpy_ptx())
            .arg("3")
            .env(k, &v)
            .env("REPRISE_INTERPOSER", &lib)
            .env("LAUNCHES", "20")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let children = [spawn(), spawn()];
    for child in children {
        let out = child.wait_with_output().unwrap();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
        assert!(stdout.contains("launches 20"), "{stdout}");
        assert!(
            stderr.contains("reprise record: 20 launches recorded in"),
            "each recorded its launches: {stderr}"
        );
        assert!(!stderr.contains("recording stopped"), "{stderr}");
    }
    let found = descriptors(dir.path());
    assert_eq!(found.len(), 40);
    assert_eq!(list_clean(dir.path()), 40);
    // Every capture replays and verifies, each in a process of its own.
    for c in &found {
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
        assert!(
            stdout.contains("verification: PASS"),
            "{}: {stdout}",
            c.display()
        );
    }
}

#[test]
fn a_200_launch_program_stores_under_a_fifth_of_raw() {
    if !ready() {
        return;
    }
    let program = build_program("launches");
    let dir = tempfile::tempdir().unwrap();
    let out = record(&program, dir.path(), &[], &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("launches 200"), "{stdout}");
    assert_eq!(list_clean(dir.path()), 200);
    // What `du` says ...
    let out = common::reprise(&["du", "--json", common::s(dir.path())]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let du: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let raw = du["raw_bytes"].as_u64().unwrap();
    assert!(du["ratio"].as_f64().unwrap() >= 5.0, "{du}");
    // ... and what the directory holds, every file counted (descriptors,
    // manifests, the store's own files), against the raw files and the
    // same descriptors.
    let (on_disk, descriptors) = file_bytes(dir.path(), true);
    assert!(
        on_disk * 5 < raw + descriptors,
        "{on_disk} bytes on disk, {raw} raw + {descriptors} of descriptors"
    );
    // Two snapshots of 256 KiB and more per launch.
    assert!(raw >= 200 * 2 * (256 << 10), "{du}");
}
