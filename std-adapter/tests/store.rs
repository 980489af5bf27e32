//! Writing captures: unique names, checksums, crash safety.

use reprise_core::record::{BackendKind, Generation, KernelRecord};
use reprise_std::capture::{Capture, CapturePaths, OpenOptions};
use reprise_std::list::{Entry, scan};
use reprise_std::store::{CaptureData, CaptureStore, file_stem_for};

fn record(name: &str, seq: u64) -> KernelRecord {
    let mut r = KernelRecord::new(name).unwrap();
    r.push_arg(0x2000_0000_0000).unwrap();
    r.region_base = Some(0x2000_0000_0000);
    r.backend = Some(BackendKind::Host);
    r.launch_seq = Some(seq);
    r
}

fn data<'a>(input: &'a [u8], output: &'a [u8]) -> CaptureData<'a> {
    CaptureData {
        input,
        output: Some(output),
        globals: &[0, 0, 0, 0],
        image: b"not really an image",
    }
}

#[test]
fn every_launch_gets_its_own_capture() {
    let dir = tempfile::tempdir().unwrap();
    let store = CaptureStore::new(dir.path(), false).unwrap();
    let mut paths = Vec::new();
    for seq in [0, 1, 1] {
        let mut r = record("_Z6kernelPf", seq);
        paths.push(store.write(&mut r, data(&[1, 2, 3], &[4, 5, 6])).unwrap());
    }
    paths.sort();
    paths.dedup();
    assert_eq!(
        paths.len(),
        3,
        "even a repeated sequence number does not overwrite"
    );
    for p in &paths {
        let c = Capture::open(p).unwrap();
        assert_eq!(c.record.generation, Generation::Reprise);
        assert!(c.checksums_verified);
        assert_eq!(c.record.memory_size, Some(3));
    }
    // The image is stored once and hard-linked.
    let image = CapturePaths::new(&paths[0], Generation::Reprise).image;
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(image).unwrap().nlink(), 3);
}

#[test]
fn names_are_safe_file_names() {
    assert_eq!(file_stem_for("_Z6kernelPf"), "_Z6kernelPf");
    assert_eq!(file_stem_for("ns::k<int>(a b)"), "ns__k_int__a_b_");
    assert_eq!(file_stem_for("../../etc/passwd"), "_.._etc_passwd");
    assert_eq!(file_stem_for(""), "kernel");
    let long = "x".repeat(300);
    assert!(file_stem_for(&long).len() <= 80);
    assert_ne!(file_stem_for(&long), file_stem_for(&"x".repeat(301)));
}

#[test]
fn an_interrupted_recording_is_never_a_whole_capture() {
    let dir = tempfile::tempdir().unwrap();
    let store = CaptureStore::new(dir.path(), true).unwrap();
    let mut r = record("k", 5);
    let descriptor = store.write(&mut r, data(&[9; 64], &[8; 64])).unwrap();
    // Simulate a crash after the data files were renamed into place but
    // before the descriptor was: remove the descriptor.
    std::fs::remove_file(&descriptor).unwrap();
    let err = Capture::open(&descriptor).unwrap_err();
    assert!(err.to_string().contains("open failed"), "{err}");
    let entries = scan(dir.path(), true).unwrap();
    assert!(entries.iter().all(|e| matches!(e, Entry::Orphan { .. })));
    assert_eq!(
        entries.len(),
        4,
        "input, output, globals, image are orphans"
    );
    // No temporary files remain from the completed writes.
    assert!(std::fs::read_dir(dir.path()).unwrap().all(|e| {
        !e.unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".reprise-tmp")
    }));
}

#[test]
fn open_options_control_missing_globals_and_checksums() {
    let dir = tempfile::tempdir().unwrap();
    let store = CaptureStore::new(dir.path(), false).unwrap();
    let mut r = record("k", 1);
    let p = store.write(&mut r, data(&[1; 16], &[2; 16])).unwrap();
    let paths = CapturePaths::new(&p, Generation::Reprise);
    std::fs::write(&paths.input, [7u8; 16]).unwrap();
    // Snapshots are checked where they are read, not at open.
    let c = Capture::open(&p).unwrap();
    assert!(c.checksums_verified, "globals and image were checked");
    let e = c.check_input(&[7u8; 16]).unwrap_err().to_string();
    assert!(
        e.contains("checksum mismatch") && e.contains(".record_input"),
        "{e}"
    );
    assert!(c.check_input(&[1u8; 16]).is_ok());
    assert!(
        c.verify_checksums().is_err(),
        "the full check reads the file"
    );
    let c = Capture::open_with(
        &p,
        OpenOptions {
            verify_checksums: false,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    assert!(!c.checksums_verified);
    assert!(c.check_input(&[7u8; 16]).is_ok(), "checking is off");
    std::fs::write(&paths.image, b"swapped").unwrap();
    assert!(
        Capture::open(&p)
            .unwrap_err()
            .to_string()
            .contains(".image")
    );
    std::fs::remove_file(&paths.globals).unwrap();
    let opts = OpenOptions {
        verify_checksums: false,
        allow_missing_globals: true,
        ..OpenOptions::default()
    };
    let c = Capture::open_with(&p, opts).unwrap();
    assert!(c.globals.is_none());
    assert_eq!(c.globals().count(), 0);
}

#[test]
fn a_write_that_fails_midway_leaves_nothing_and_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = CaptureStore::new(dir.path(), false).unwrap();
    // The globals file cannot be put in place (a directory holds its name),
    // as a disk that fills up after the snapshots were written.
    let stem = format!("k-{}-3", std::process::id());
    let globals = dir.path().join(format!("{stem}.globals"));
    std::fs::create_dir(&globals).unwrap();
    let mut r = record("k", 3);
    let err = store
        .write(&mut r, data(&[1; 64], &[2; 64]))
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("{stem}.globals")), "{err}");
    assert!(!err.contains(".reprise-tmp"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        left,
        [format!("{stem}.globals")],
        "only the obstacle is left"
    );

    // The image was never written, so the next capture writes it afresh
    // rather than linking to a file that was removed.
    std::fs::remove_dir(&globals).unwrap();
    let mut r = record("k", 4);
    let p = store.write(&mut r, data(&[1; 64], &[2; 64])).unwrap();
    assert!(Capture::open(&p).unwrap().checksums_verified);
}

#[test]
fn a_failed_image_write_removes_that_capture_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = CaptureStore::new(dir.path(), false).unwrap();
    // The first capture's image is kept; a failure of the second removes
    // only the second's files, and the image map forgets the removed link.
    let first = store
        .write(&mut record("k", 1), data(&[1; 8], &[2; 8]))
        .unwrap();
    let stem = format!("k-{}-2", std::process::id());
    let obstacle = dir.path().join(format!("{stem}.image"));
    std::fs::create_dir(&obstacle).unwrap();
    assert!(
        store
            .write(&mut record("k", 2), data(&[1; 8], &[2; 8]))
            .is_err()
    );
    std::fs::remove_dir(&obstacle).unwrap();
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.iter().all(|n| !n.contains(&stem)), "{names:?}");
    assert!(Capture::open(&first).unwrap().checksums_verified);
}

#[test]
fn an_image_removed_by_a_failed_write_is_never_linked_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = CaptureStore::new(dir.path(), false).unwrap();
    let pid = std::process::id();
    let data_with = |image: &'static [u8]| CaptureData {
        input: &[1; 8],
        output: None,
        globals: &[0, 0, 0, 0],
        image,
    };
    // Capture k-PID-5 writes image A, then fails at its descriptor (the
    // descriptor's temporary name is taken): its files, image A's among
    // them, are removed.
    let blocker = dir
        .path()
        .join(format!(".reprise-tmp.k-{pid}-5.json.{pid}"));
    std::fs::create_dir(&blocker).unwrap();
    assert!(
        store
            .write(&mut record("k", 5), data_with(b"image A"))
            .is_err()
    );
    std::fs::remove_dir(&blocker).unwrap();
    // The same name is free again and now holds image B ...
    let b = store
        .write(&mut record("k", 5), data_with(b"image B"))
        .unwrap();
    assert_eq!(
        b.file_name().unwrap().to_string_lossy(),
        format!("k-{pid}-5.json")
    );
    // ... so a capture of image A must not be linked to that file.
    let a = store
        .write(&mut record("k", 6), data_with(b"image A"))
        .unwrap();
    let image = CapturePaths::new(&a, Generation::Reprise).image;
    assert_eq!(std::fs::read(image).unwrap(), b"image A");
    assert!(Capture::open(&a).unwrap().checksums_verified);
}
