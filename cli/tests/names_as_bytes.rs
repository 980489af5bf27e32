//! File names are bytes: a capture whose stem, or whose directory's name,
//! is not UTF-8 replays, lists whole, and keeps its manifests and chunks
//! through `gc` (names compared after a lossy conversion to text once made
//! its files "missing" and its manifests orphans).

mod common;

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// `reprise` with arguments that need not be UTF-8.
fn run(args: &[&OsStr]) -> Output {
    let mut cmd = Command::new(reprise_bin());
    cmd.args(args).env("RUST_BACKTRACE", "0");
    let out = output_within(&mut cmd, RUN_LIMIT);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{args:?} panicked: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// One axpy capture recorded into `dir` in `format`, its files then
/// renamed from the recorded stem to `stem`: the new descriptor.
fn renamed(dir: &Path, format: reprise::CaptureFormat, stem: &[u8]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let config = reprise::RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20)
        .fsync(false)
        .format(format);
    let d = record_axpy(config, 256, 1).remove(0);
    let old = d.file_stem().unwrap().as_bytes().to_vec();
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().into_vec();
        if let Some(rest) = name.strip_prefix(&old[..]).filter(|r| r.starts_with(b".")) {
            let mut to = stem.to_vec();
            to.extend_from_slice(rest);
            std::fs::rename(
                dir.join(OsStr::from_bytes(&name)),
                dir.join(OsString::from_vec(to)),
            )
            .unwrap();
        }
    }
    let mut json = stem.to_vec();
    json.extend_from_slice(b".json");
    dir.join(OsString::from_vec(json))
}

#[test]
fn a_capture_whose_name_is_not_utf8_replays_lists_and_survives_gc() {
    let tmp = tempfile::tempdir().unwrap();
    // The directory's name is not UTF-8 either.
    let dir = tmp.path().join(OsStr::from_bytes(b"captures-\xff"));
    let stored = renamed(&dir, reprise::CaptureFormat::Store, b"axpy-\xfe\xff-0");
    let raw_dir = tmp.path().join(OsStr::from_bytes(b"raw-\xfa"));
    let raw = renamed(&raw_dir, reprise::CaptureFormat::Raw, b"axpy-\xc3-1");
    for d in [&stored, &raw] {
        let out = run(&["replay".as_ref(), d.as_os_str(), "--verify".as_ref()]);
        assert_exit(&out, 0);
    }
    let out = run(&["list".as_ref(), dir.as_os_str()]);
    assert_exit(&out, 0);
    let out = run(&["inspect".as_ref(), stored.as_os_str(), "--json".as_ref()]);
    assert_exit(&out, 0);
    // du counts its manifests.
    let out = run(&["du".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    assert_exit(&out, 0);
    let du: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(du.to_string().contains("\"manifests\":4"), "{du}");
    let out = run(&[
        "gc".as_ref(),
        dir.as_os_str(),
        "--grace".as_ref(),
        "0".as_ref(),
    ]);
    assert_exit(&out, 0);
    let manifests = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .as_bytes()
                .ends_with(b".chunks")
        })
        .count();
    assert!(manifests >= 4, "gc kept the capture's manifests");
    let out = run(&["replay".as_ref(), stored.as_os_str(), "--verify".as_ref()]);
    assert_exit(&out, 0);
}
