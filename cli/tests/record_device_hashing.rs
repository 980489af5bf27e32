//! `reprise record --device-hashing` of an unmodified program on the
//! simulated driver (`changes.c`: three launches over a 16 MiB region, each
//! changing the one chunk that holds y): the captures are the ones a
//! recording without it makes, byte for byte once exported raw, and replay
//! and verify; the simulator's device-to-host bytes show the recording
//! copied about the region once plus a chunk a launch, not the region
//! twice a launch. When a device copy cannot be allocated, that launch is
//! recorded the ordinary way, with one warning. Without a C compiler the
//! tests skip, unless `REPRISE_REQUIRE_SIM=1`.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::programs::*;
use common::{s, text};

const MIB: u64 = 1 << 20;
/// The program's region (its `MIB` default).
const REGION: u64 = 16 * MIB;
/// A store chunk: the default chunk size (y, 1 MiB at 3 MiB, lies in one).
const CHUNK: u64 = reprise_capture::chunks::layout::DEFAULT_CHUNK_SIZE as u64;

/// The simulator and the interposer are there (else the test skips, after
/// saying why).
fn ready() -> bool {
    matches!(setup(), Some(Target::Simulated)) && interposer().is_some()
}

/// A recording of `changes` into `dir` with `options` and `env`: it exits
/// 0 with the program's result, and says how many bytes the driver copied
/// device-to-host (the program's `d2h` line); with its stderr.
fn record_changes(dir: &Path, options: &[&str], env: &[(&str, &str)]) -> (u64, String) {
    let program = build_program("changes");
    let out = record_env(&program, dir, options, &[], env);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains(&expected_result()), "{stdout}{stderr}");
    let d2h = stdout
        .lines()
        .find_map(|l| l.strip_prefix("d2h "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no d2h line: {stdout}"));
    (d2h, stderr)
}

/// Every capture in `dir` (three) replays and verifies.
fn all_replay(dir: &Path) {
    let captures = descriptors(dir);
    assert_eq!(captures.len(), 3, "{captures:?}");
    let (k, v) = sim_env();
    for c in &captures {
        let out = common::reprise_env(&["replay", "--verify", s(c)], &[(k, v.to_str().unwrap())]);
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

/// The captures of `dir` exported raw: each data file's bytes, in the
/// order of their names (the descriptors, which name the process, left
/// out).
fn exported(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let out_dir = tempfile::tempdir().unwrap();
    let ds = descriptors(dir);
    let mut args = vec!["export", "--format", "raw", "--dir", s(out_dir.path())];
    args.extend(ds.iter().map(|d| s(d)));
    let out = common::reprise(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    let mut files = BTreeMap::new();
    for e in std::fs::read_dir(out_dir.path()).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".json") {
            files.insert(name, std::fs::read(e.path()).unwrap());
        }
    }
    // Names differ by the process only: what follows the last '.' says
    // which file of a capture it is.
    files
        .into_iter()
        .map(|(name, bytes)| {
            let kind = name.rsplit('.').next().unwrap_or_default().to_string();
            (kind, bytes)
        })
        .collect()
}

#[test]
fn device_hashing_records_the_same_captures_copying_what_changed() {
    if !ready() {
        return;
    }
    let (plain_dir, hashed_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (plain, _) = record_changes(plain_dir.path(), &[], &[]);
    let (hashed, stderr) = record_changes(hashed_dir.path(), &["--device-hashing"], &[]);
    assert!(!stderr.contains("recording stopped"), "{stderr}");
    all_replay(hashed_dir.path());
    let (a, b) = (exported(plain_dir.path()), exported(hashed_dir.path()));
    assert!(
        a.len() >= 6,
        "{:?}",
        a.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    assert_eq!(
        a.iter().map(|f| &f.0).collect::<Vec<_>>(),
        b.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for (i, ((kind, x), (_, y))) in a.iter().zip(&b).enumerate() {
        assert!(
            x == y,
            "exported file {i} ({kind}) differs with device hashing"
        );
    }
    // Without it: each launch's input and output, the whole region each.
    assert!(plain >= 6 * REGION, "plain recording copied {plain} bytes");
    // With it: the first input (nothing on the host had it), then the one
    // chunk each launch changed, its hashes and what the program read
    // back; a chunk of slack for a y straddling two chunks.
    assert!(
        hashed <= REGION + 3 * CHUNK + CHUNK,
        "device hashing copied {hashed} bytes (plain: {plain})"
    );
}

#[test]
fn no_device_memory_for_a_copy_records_that_launch_the_ordinary_way_with_one_warning() {
    if !ready() {
        return;
    }
    let (plain_dir, short_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    record_changes(plain_dir.path(), &[], &[]);
    // The driver's cuMemAlloc refuses the first device copy (2:
    // CUDA_ERROR_OUT_OF_MEMORY); the program's allocations come from the
    // recording region, not from it.
    let (d2h, stderr) = record_changes(
        short_dir.path(),
        &["--device-hashing"],
        &[("REPRISE_SIM_CUDA_FAIL", "cuMemAlloc_v2:2:0")],
    );
    assert_eq!(
        stderr.matches("device hashing: no device memory").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("CUDA_ERROR_OUT_OF_MEMORY"), "{stderr}");
    assert!(!stderr.contains("recording stopped"), "{stderr}");
    all_replay(short_dir.path());
    assert_eq!(exported(plain_dir.path()), exported(short_dir.path()));
    // The first launch copied its snapshots whole (the region twice); the
    // later ones hashed on the device, and found the first's output on
    // the host.
    assert!(
        (2 * REGION..2 * REGION + 4 * CHUNK).contains(&d2h),
        "copied {d2h} bytes"
    );
}

#[test]
fn device_hashing_is_refused_before_the_program_runs_in_the_raw_format() {
    if !ready() {
        return;
    }
    let program = build_program("changes");
    let dir = tempfile::tempdir().unwrap();
    let out = record(
        &program,
        dir.path(),
        &["--device-hashing", "--format", "raw"],
        &[],
    );
    let (stdout, stderr) = text(&out);
    assert_ne!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stderr.contains("raw format keeps no store"), "{stderr}");
    assert!(!stdout.contains("result"), "the program ran: {stdout}");
    assert!(descriptors(dir.path()).is_empty());
}
