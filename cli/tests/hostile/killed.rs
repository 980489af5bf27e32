//! A recording killed at random points (a child process of this test
//! binary) leaves whole captures or orphans, never a broken capture.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::common::*;
use crate::run;

/// Where `child_records_until_killed` writes its captures.
const KILL_DIR: &str = "REPRISE_TEST_KILL_DIR";

#[test]
#[ignore = "run by killed_mid_recording_leaves_whole_captures_or_orphans in a child it kills"]
fn child_records_until_killed() {
    let Some(dir) = std::env::var_os(KILL_DIR) else {
        return;
    };
    let config = reprise::RecordConfig::default()
        .enabled(true)
        .dir(PathBuf::from(dir))
        .region_size(64 << 20);
    // Launches of a kernel over 4 MiB, recorded until the parent kills us.
    loop {
        record_axpy(config.clone(), 1 << 19, 8);
    }
}

#[test]
fn killed_mid_recording_leaves_whole_captures_or_orphans() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("captures");
    std::fs::create_dir(&dir).unwrap();
    let me = std::env::current_exe().unwrap();
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64
        | 1;
    let mut points = Vec::new();
    for _ in 0..30 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let after = Duration::from_millis(60 + seed % 440);
        let mut child = Command::new(&me)
            .args([
                "--ignored",
                "--exact",
                "killed::child_records_until_killed",
                "--nocapture",
            ])
            .env(KILL_DIR, &dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(after);
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        points.push((after.as_millis(), status.code().is_none()));
    }
    assert!(
        points.iter().filter(|p| p.1).count() >= 25,
        "most children should have died mid-recording: {points:?}"
    );
    // Whole captures and orphans only: list finds no broken or incomplete
    // capture, and every capture replays and verifies.
    let out = run(&dir, &["list", s(&dir)]);
    let (stdout, _) = text(&out);
    assert_exit(&out, 0);
    let summary = stdout.lines().last().unwrap().to_string();
    assert!(
        summary.contains("(0 incomplete), 0 unreadable"),
        "{summary}"
    );
    let captures: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert!(
        !captures.is_empty(),
        "nothing was recorded before the kills"
    );
    for c in &captures {
        assert_exit(&run(&dir, &["replay", "--verify", s(c)]), 0);
    }
    // Recording in that directory works again.
    let config = reprise::RecordConfig::default()
        .enabled(true)
        .dir(&dir)
        .region_size(64 << 20);
    assert_eq!(record_axpy(config, 1024, 1).len(), 1);
    eprintln!(
        "{} kills mid-recording at {:?} ms; {} whole captures replayed; {summary}",
        points.len(),
        points.iter().map(|p| p.0).collect::<Vec<_>>(),
        captures.len()
    );
}
