//! `reprise import` and `reprise export` (issue 25): raw captures moved into
//! the store and written back out byte for byte, for reprise's captures,
//! LLVM current's and LLVM legacy's (LLVM 16's own, recorded by the real
//! libomptarget, included); conversions between the formats that replay,
//! and those that cannot be exact refused, saying why; and what killed
//! writers leave (ORPHAN in `list`) removed by `gc`.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;
use reprise::capture::SnapshotSource;
use reprise::core::record::Generation;
use reprise::{CaptureFormat, RecordConfig};

fn raw_config(dir: &Path) -> RecordConfig {
    RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20)
        .fsync(false)
        .format(CaptureFormat::Raw)
}

/// Every plain file of `dir` (not its store), by name, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            out.insert(name, std::fs::read(&p).unwrap());
        }
    }
    out
}

/// The descriptors of `dir`, sorted.
fn descriptors(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

/// `reprise list DIR` found every capture whole, and no orphan.
fn assert_listed_clean(dir: &Path, captures: usize) {
    let out = reprise(&["list", s(dir)]);
    let (stdout, stderr) = text(&out);
    assert_exit(&out, 0);
    assert!(
        stdout.contains(&format!(
            "{captures} capture(s) (0 incomplete), 0 unreadable, 0 orphaned"
        )),
        "{stdout}{stderr}"
    );
}

/// Imports `dir` (whose raw files are `before`), checks every data file is
/// now a manifest and the store lists whole, exports every capture with
/// `--format raw` and checks the files are `before`'s, byte for byte.
fn round_trip(dir: &Path, before: &BTreeMap<String, Vec<u8>>, extra_args: &[&str]) {
    let out = reprise(&["import", "--json", s(dir)]);
    assert_exit(&out, 0);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let data = before.keys().filter(|n| !n.ends_with(".json")).count();
    assert_eq!(r["moved"].as_array().unwrap().len(), data, "{r}");
    assert!(r["raw_bytes"].as_u64().unwrap() > 0, "{r}");
    let now = files(dir);
    for name in before.keys() {
        if name.ends_with(".json") {
            assert_eq!(now[name], before[name], "{name}: the descriptor changed");
        } else {
            assert!(!now.contains_key(name), "{name} is still raw");
            assert!(now.contains_key(&format!("{name}.chunks")), "{name}");
        }
    }
    let mut list = vec!["list"];
    list.extend_from_slice(extra_args);
    list.push(s(dir));
    let out = reprise(&list);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains("(0 incomplete), 0 unreadable, 0 orphaned"),
        "{stdout}"
    );
    let back = tempfile::tempdir().unwrap();
    let ds = descriptors(dir);
    let mut args = vec!["export", "--format", "raw", "--dir", s(back.path())];
    args.extend(ds.iter().map(|d| s(d)));
    assert_exit(&reprise(&args), 0);
    let exported = files(back.path());
    assert_eq!(
        exported.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in before {
        assert!(
            exported[name] == *bytes,
            "{name}: exported bytes differ from the recorded ones"
        );
    }
}

#[test]
fn a_reprise_capture_round_trips_through_the_store_byte_for_byte_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    // Past three chunks, two launches sharing most of them.
    let written = record_axpy(raw_config(dir.path()), (3 << 20) / 8 + 2, 2);
    let before = files(dir.path());
    round_trip(dir.path(), &before, &[]);
    for w in &written {
        assert_exit(&reprise(&["replay", "--verify", s(w)]), 0);
    }
    // Importing again finds nothing raw to move.
    let out = reprise(&["import", "--json", s(dir.path())]);
    assert_exit(&out, 0);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["moved"].as_array().unwrap().len(), 0, "{r}");
}

#[test]
fn llvm_current_and_legacy_captures_round_trip_and_replay_from_the_store() {
    for generation in [Generation::LlvmCurrent, Generation::LlvmLegacy] {
        let dir = tempfile::tempdir().unwrap();
        let f = llvm_fixture(dir.path(), generation, 0x7e00_0000_0000, 300_000);
        let before = files(dir.path());
        round_trip(dir.path(), &before, &[]);
        let out = reprise(&["replay", "--verify", "--save-output", s(&f.descriptor)]);
        assert_exit(&out, 0);
        let saved = match generation {
            Generation::LlvmLegacy => "axpy.replay.output",
            _ => "9431736110271238513_1274526373.replay_output",
        };
        assert!(std::fs::read(dir.path().join(saved)).unwrap() == f.expected_output);
    }
}

#[test]
fn llvm16_captures_of_the_real_runtime_round_trip_and_replay_from_the_store() {
    use common::llvm16;
    if llvm16::need(
        llvm16::compiler(),
        "llvm16_captures_of_the_real_runtime_round_trip_and_replay_from_the_store",
    )
    .is_none()
    {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let (dir, bin, ds) = llvm16::recorded_in(root.path(), "two");
    assert!(!ds.is_empty());
    llvm16::is_what_llvm16_writes(&dir, &bin);
    // The program binary is no capture file: set aside while its captures
    // are imported and compared.
    let held = root.path().join("bin");
    std::fs::rename(&bin, &held).unwrap();
    let before = files(&dir);
    round_trip(&dir, &before, &["--image", s(&held)]);
    for d in &ds {
        let out = llvm16::replay(d, &held, &[]);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
        assert!(stdout.contains("verification: PASS"), "{stdout}");
    }
    // LLVM 16 saved neither image nor globals: LLVM current's format
    // always has both, so that conversion is refused, naming what is
    // missing.
    let out = reprise(&[
        "export",
        "--format",
        "llvm-current",
        "--dir",
        s(&root.path().join("current")),
        s(&ds[0]),
    ]);
    assert_exit(&out, 2);
    let (_, stderr) = text(&out);
    assert!(
        stderr.contains("cannot be exported exactly") && stderr.contains("no device image"),
        "{stderr}"
    );
    let current = root.path().join("current");
    assert!(
        !current.exists() || std::fs::read_dir(&current).unwrap().next().is_none(),
        "a refused export wrote files"
    );
}

#[test]
fn a_reprise_capture_exported_to_llvm_formats_replays_there() {
    let dir = tempfile::tempdir().unwrap();
    let written = record_axpy(
        raw_config(dir.path()).format(CaptureFormat::Store),
        50_000,
        1,
    );
    for (format, descriptor, memory) in [
        (
            "llvm-current",
            written[0]
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned(),
            written[0]
                .with_extension("record_input.chunks")
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned(),
        ),
        (
            "llvm-legacy",
            "axpy.json".to_string(),
            "axpy.memory".to_string(),
        ),
    ] {
        let out_dir = dir.path().join(format);
        let out = reprise(&[
            "export",
            "--format",
            format,
            "--dir",
            s(&out_dir),
            s(&written[0]),
        ]);
        assert_exit(&out, 0);
        let d = out_dir.join(&descriptor);
        let json = std::fs::read_to_string(&d).unwrap();
        // LLVM's own keys only.
        assert!(
            !json.contains("Checksums") && !json.contains("Backend"),
            "{json}"
        );
        let rec = reprise::core::record::KernelRecord::from_json(json.as_bytes()).unwrap();
        assert_eq!(rec.generation.as_str(), format);
        let memory = out_dir.join(memory.trim_end_matches(".chunks"));
        let original =
            reprise_std::capture::SnapshotFile::open(&written[0].with_extension("record_input"))
                .unwrap()
                .unwrap();
        let mut want = Vec::new();
        original
            .for_each_chunk(1 << 20, |b| want.extend_from_slice(b))
            .unwrap();
        assert!(
            std::fs::read(&memory).unwrap() == want,
            "{}",
            memory.display()
        );
        let out = reprise(&["replay", "--verify", s(&d)]);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{format}: {stdout}{stderr}");
        assert!(stdout.contains("verification: PASS"), "{stdout}");
        // Exported twice into one place: refused, nothing replaced.
        let out = reprise(&[
            "export",
            "--format",
            format,
            "--dir",
            s(&out_dir),
            s(&written[0]),
        ]);
        assert_exit(&out, 2);
        assert!(text(&out).1.contains("exists already"), "{}", text(&out).1);
    }
    // And between LLVM's formats, both ways.
    let legacy = dir.path().join("llvm-legacy").join("axpy.json");
    let back = dir.path().join("back-to-current");
    assert_exit(
        &reprise(&[
            "export",
            "--format",
            "llvm-current",
            "--dir",
            s(&back),
            s(&legacy),
        ]),
        2,
    );
    // (LLVM legacy records no reserved size; LLVM current always does.)
    let current = descriptors(&dir.path().join("llvm-current"));
    let to_legacy = dir.path().join("to-legacy");
    assert_exit(
        &reprise(&[
            "export",
            "--format",
            "llvm-legacy",
            "--dir",
            s(&to_legacy),
            s(&current[0]),
        ]),
        0,
    );
    let out = reprise(&["replay", "--verify", s(&to_legacy.join("axpy.json"))]);
    assert_exit(&out, 0);
}

#[test]
fn conversions_that_cannot_be_exact_are_refused_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let written = record_axpy(raw_config(dir.path()), 1000, 1);
    let d = &written[0];
    edit_descriptor(d, |r| {
        r.grid = [2, 3, 1];
    });
    for format in ["llvm-current", "llvm-legacy"] {
        let out_dir = dir.path().join(format);
        let out = reprise(&["export", "--format", format, "--dir", s(&out_dir), s(d)]);
        assert_exit(&out, 2);
        let (_, stderr) = text(&out);
        assert!(
            stderr.contains("cannot be exported exactly") && stderr.contains("one dimension"),
            "{stderr}"
        );
        assert!(
            !out_dir.exists() || std::fs::read_dir(&out_dir).unwrap().next().is_none(),
            "a refused export wrote files"
        );
    }
    // Its own format keeps everything.
    let out = reprise(&["export", "--dir", s(&dir.path().join("raw")), s(d)]);
    assert_exit(&out, 0);
    assert!(
        std::fs::read(dir.path().join("raw").join(d.file_name().unwrap())).unwrap()
            == std::fs::read(d).unwrap()
    );
}

#[test]
fn a_dry_run_moves_nothing_and_a_half_finished_import_lists_whole_and_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let written = record_axpy(raw_config(dir.path()), 100_000, 1);
    let before = files(dir.path());
    let out = reprise(&["import", "--dry-run", s(dir.path())]);
    assert_exit(&out, 0);
    assert!(
        text(&out).0.contains("would move 4 file(s)"),
        "{}",
        text(&out).0
    );
    assert!(files(dir.path()) == before);
    assert!(!dir.path().join(".reprise-store").exists());

    // A manifest beside its raw file (killed between the two): the
    // capture is whole, nothing is an orphan, and import finishes it.
    let other = tempfile::tempdir().unwrap();
    let copy = other.path().join(written[0].file_name().unwrap());
    for (name, bytes) in &before {
        std::fs::write(other.path().join(name), bytes).unwrap();
    }
    assert_exit(&reprise(&["import", s(other.path())]), 0);
    let input = copy.with_extension("record_input");
    std::fs::write(
        &input,
        &before[input.file_name().unwrap().to_str().unwrap()],
    )
    .unwrap();
    assert_listed_clean(other.path(), 1);
    let out = reprise(&["import", "--json", s(other.path())]);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["moved"].as_array().unwrap().len(), 1, "{r}");
    assert!(!input.exists());
    assert_exit(&reprise(&["replay", "--verify", s(&copy)]), 0);
}

#[test]
fn what_killed_writers_leave_is_orphan_and_gc_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let written = record_axpy(
        raw_config(dir.path()).format(CaptureFormat::Store),
        100_000,
        2,
    );
    // A recorder killed before its descriptor: manifests without one.
    std::fs::remove_file(&written[1]).unwrap();
    // A writer killed in a put: its pin (nobody holds its lock) and the
    // chunk it was writing under it.
    let tmp = dir.path().join(".reprise-store/tmp");
    std::fs::write(tmp.join("pin.00000000deadbeef"), [0u8; 32]).unwrap();
    std::fs::write(tmp.join("chunk.00000000deadbeef.0123456789abcdef"), b"zstd").unwrap();
    // A write killed before its rename.
    std::fs::write(
        dir.path().join(".reprise-tmp.k.json.0123456789abcdef"),
        b"{",
    )
    .unwrap();
    let out = reprise(&["list", s(dir.path())]);
    let (stdout, _) = text(&out);
    assert_exit(&out, 0);
    let orphans = stdout.lines().filter(|l| l.starts_with("ORPHAN")).count();
    assert_eq!(orphans, 4 + 2 + 1, "{stdout}");
    assert!(stdout.contains("manifest without a descriptor"), "{stdout}");
    assert!(stdout.contains("pin of a writer that is gone"), "{stdout}");
    assert!(
        stdout.contains("chunk being written by a writer that is gone"),
        "{stdout}"
    );

    // A live writer's pin: gc leaves the orphans (they may be its work).
    let store = reprise_capture::chunks::ChunkStore::create(
        dir.path(),
        reprise_capture::chunks::StoreOptions::default(),
    )
    .unwrap();
    let pin = store.pin().unwrap();
    let out = reprise(&["gc", "--grace", "0", "--json", s(dir.path())]);
    assert_exit(&out, 0);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["orphans_left_for_writers"], 5, "{r}");
    assert!(
        dir.path()
            .join(written[1].with_extension("record_input.chunks"))
            .exists()
    );
    drop(pin);

    let out = reprise(&["gc", "--grace", "0", "--json", s(dir.path())]);
    assert_exit(&out, 0);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["orphan_manifests_removed"], 4, "{r}");
    assert_eq!(r["orphan_temp_files_removed"], 1, "{r}");
    assert_listed_clean(dir.path(), 1);
    assert_exit(&reprise(&["replay", "--verify", s(&written[0])]), 0);
    let out = reprise(&["du", "--json", s(dir.path())]);
    let du: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(du["unreferenced_bytes"], 0, "{du}");
}
