//! Special files planted in a capture directory's store, where reprise
//! reads a regular file: a FIFO in place of `VERSION`, of a manifest and of
//! a chunk file. Every command that reads them ends at once, saying what is
//! wrong, and none waits for a writer that never comes (a hang fails the
//! test: see `RUN_LIMIT`).

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// A demo capture recorded into a fresh store in `dir`: its descriptor.
fn stored_capture(dir: &Path) -> PathBuf {
    let out = reprise(&["demo", "--dir", s(dir)]);
    assert_exit(&out, 0);
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("the demo's descriptor")
}

fn fifo_at(path: &Path) {
    if path.exists() {
        std::fs::remove_file(path).unwrap();
    }
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Runs each command over the capture `d` in `dir`: none hangs, and each
/// one that reads what is planted fails saying `said`.
fn none_hangs(dir: &Path, d: &Path, said: &str) {
    let results = dir.with_extension("jsonl");
    let export = dir.with_extension("exported");
    for args in [
        vec!["list", s(dir)],
        vec!["inspect", s(d)],
        vec!["replay", s(d), "--verify"],
        vec!["check", s(dir), "--results", s(&results)],
        vec!["export", "--dir", s(&export), s(d)],
    ] {
        let out = reprise(&args);
        let (stdout, stderr) = text(&out);
        assert_ne!(out.status.code(), Some(0), "{args:?}:\n{stdout}{stderr}");
        assert!(
            stdout.contains(said) || stderr.contains(said),
            "{args:?}:\n{stdout}{stderr}"
        );
    }
}

#[test]
fn a_fifo_for_a_manifest_is_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let d = stored_capture(&dir);
    let stem = d.file_stem().unwrap().to_string_lossy().into_owned();
    fifo_at(&dir.join(format!("{stem}.record_input.chunks")));
    none_hangs(&dir, &d, "not a regular file");
}

#[test]
fn a_fifo_for_a_chunk_file_is_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let d = stored_capture(&dir);
    let mut chunks = Vec::new();
    for prefix in std::fs::read_dir(dir.join(".reprise-store/chunks")).unwrap() {
        for c in std::fs::read_dir(prefix.unwrap().path()).unwrap() {
            chunks.push(c.unwrap().path());
        }
    }
    chunks.sort();
    for c in &chunks {
        fifo_at(c);
    }
    none_hangs(&dir, &d, "not a regular file");
    for args in [vec!["du", s(&dir)], vec!["gc", s(&dir), "--grace", "0"]] {
        let out = reprise(&args);
        assert!(out.status.code().is_some(), "{args:?}: {:?}", text(&out));
    }
}

#[test]
fn a_fifo_for_the_store_version_is_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let d = stored_capture(&dir);
    fifo_at(&dir.join(".reprise-store/VERSION"));
    for args in [
        vec!["replay", s(&d), "--verify"],
        vec!["du", s(&dir)],
        vec!["gc", s(&dir), "--grace", "0"],
        vec!["demo", "--dir", s(&dir)],
    ] {
        let out = reprise(&args);
        assert_exit(&out, 2);
        assert!(
            text(&out).1.contains("VERSION"),
            "{args:?}: {:?}",
            text(&out)
        );
    }
    for args in [vec!["list", s(&dir)], vec!["inspect", s(&d)]] {
        let out = reprise(&args);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {:?}", text(&out));
    }
}

/// A manifest that seals a length the descriptor never had (64 GiB made of
/// one chunk the store holds, named again and again) is refused by its
/// length before a chunk is read: nothing decompresses or hashes what it
/// claims.
#[test]
fn a_manifest_that_lies_about_its_length_is_refused_before_it_is_read() {
    use reprise_capture::chunks::Manifest;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir_all(&dir).unwrap();
    let config = reprise::RecordConfig::default()
        .enabled(true)
        .dir(&dir)
        .region_size(64 << 20)
        .fsync(false);
    let d = record_axpy(config, 1 << 20, 1).remove(0);
    let stem = d.file_stem().unwrap().to_string_lossy().into_owned();
    let path = dir.join(format!("{stem}.record_input.chunks"));
    let m = Manifest::read(&path).unwrap();
    let full = m.chunks()[0];
    assert_eq!(full.len, m.chunk_size(), "a whole chunk to repeat");
    let n = (64u64 << 30) / u64::from(m.chunk_size());
    let lie = Manifest::new(
        n * u64::from(m.chunk_size()),
        m.chunk_size(),
        vec![full; n as usize],
    )
    .unwrap();
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, lie.encode()).unwrap();
    let export = tmp.path().join("exported");
    for args in [
        vec!["inspect", s(&d)],
        vec!["list", s(&dir)],
        vec!["replay", s(&d), "--verify"],
        vec!["export", "--dir", s(&export), s(&d)],
    ] {
        let started = std::time::Instant::now();
        let out = reprise(&args);
        let (stdout, stderr) = text(&out);
        assert_ne!(out.status.code(), Some(0), "{args:?}:\n{stdout}{stderr}");
        assert!(
            (stdout.clone() + &stderr).contains("68719476736"),
            "{args:?} names the length:\n{stdout}{stderr}"
        );
        // Reading 64 GiB takes minutes; refusing it, no time.
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{args:?} read what the manifest claims"
        );
    }
}

/// A capture directory swapped for a link while a recording runs: every
/// capture still lands whole in the directory the recording began in
/// (descriptors, manifests and chunks alike), and nothing goes where the
/// link leads.
#[test]
fn a_directory_swapped_for_a_link_mid_record_keeps_every_capture_whole() {
    use reprise::{Args, HostExecutor, Recorder};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let began = tmp.path().join("d-began");
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    for format in [reprise::CaptureFormat::Store, reprise::CaptureFormat::Raw] {
        let _ = std::fs::remove_file(&dir);
        let _ = std::fs::remove_dir_all(&began);
        std::fs::create_dir_all(&dir).unwrap();
        let config = reprise::RecordConfig::default()
            .enabled(true)
            .dir(&dir)
            .region_size(64 << 20)
            .fsync(false)
            .format(format);
        let mut rec = Recorder::new(HostExecutor::new().unwrap(), 0, config).unwrap();
        let n = 1024usize;
        let x = rec.alloc((n * 4) as u64, 64).unwrap();
        let y = rec.alloc((n * 4) as u64, 64).unwrap();
        let calls = rec.alloc(8, 8).unwrap();
        rec.upload(x, &vec![1u8; n * 4]).unwrap();
        let image = rec.load_image(AXPY).unwrap();
        let k = rec.kernel(image, "axpy").unwrap();
        let args = Args::new().ptr(x).ptr(y).scalar(n as u64).ptr(calls);
        reprise::block_on(async {
            rec.launch(&k, geometry(4, 64), &args).await.unwrap();
            rec.synchronize().await.unwrap();
            // The directory goes, and a link to another takes its name.
            std::fs::rename(&dir, &began).unwrap();
            std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
            for _ in 0..3 {
                rec.launch(&k, geometry(4, 64), &args).await.unwrap();
            }
            rec.finish().await.unwrap();
        });
        assert_eq!(
            std::fs::read_dir(&elsewhere).unwrap().count(),
            0,
            "{format:?}: nothing went where the link leads"
        );
        let descriptors = std::fs::read_dir(&began)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "json")
            })
            .count();
        assert_eq!(descriptors, 4, "{format:?}");
        let out = reprise(&["list", s(&began)]);
        assert_exit(&out, 0);
    }
}
