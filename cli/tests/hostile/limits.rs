//! Files that are not what they seem and machines short of memory: special
//! files (FIFOs, `/dev/zero`, directories) never read or waited on, huge
//! sparse files refused before a byte is read, and too little address space
//! an error, not an abort.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::*;
use crate::{Damages, check, originals, run, run_within};

/// Makes a FIFO at `path` (with the system's `mkfifo`).
fn mkfifo(path: &Path) {
    let st = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(st.success());
}

#[test]
fn special_files_never_hang_or_get_read() {
    let root = tempfile::tempdir().unwrap();
    let mut cases = 0;
    for o in originals(root.path()) {
        let input_ext = if o.name == "legacy" {
            "memory"
        } else {
            "record_input"
        };
        let output_ext = if o.name == "legacy" {
            "original.output"
        } else {
            "record_output"
        };
        for ext in ["json", input_ext, output_ext, "globals", "image"] {
            let name = if ext == "json" {
                o.descriptor().to_string()
            } else {
                o.file(ext).to_string()
            };
            for kind in ["FIFO", "/dev/zero", "directory"] {
                cases += 1;
                let dir = o.write(root.path(), cases);
                let path = dir.join(&name);
                std::fs::remove_file(&path).unwrap();
                match kind {
                    "FIFO" => mkfifo(&path),
                    "/dev/zero" => std::os::unix::fs::symlink("/dev/zero", &path).unwrap(),
                    _ => std::fs::create_dir(&path).unwrap(),
                }
                let case = format!("{name} is {kind}");
                let code = check(&o, &dir, &case, Damages::Data);
                assert_eq!(code, 2, "{}: {case}", o.name);
                // inspect and list see a problem too, and say what is there.
                let descriptor = dir.join(o.descriptor());
                let inspect = run(&dir, &["inspect", s(&descriptor)]);
                let list = run(&dir, &["list", s(&dir)]);
                for (what, out) in [("inspect", &inspect), ("list", &list)] {
                    let want = if what == "inspect" && ext == "json" {
                        2
                    } else {
                        1
                    };
                    assert_eq!(
                        out.status.code(),
                        Some(want),
                        "{}: {case}: {what}: {:?}",
                        o.name,
                        text(out)
                    );
                }
                let (_, err) = text(&inspect);
                let (shown, _) = text(&list);
                let all = format!("{err}{shown}{}", text(&inspect).0);
                assert!(
                    all.contains("not a regular file"),
                    "{}: {case}: no word of what is there:\n{all}",
                    o.name
                );
            }
        }
    }
    eprintln!("{cases} special files, each replayed, inspected and listed");
}

#[test]
fn huge_sparse_files_are_refused_before_a_byte_is_read() {
    let root = tempfile::tempdir().unwrap();
    for o in originals(root.path()) {
        for (ext, size) in [("globals", 3u64 << 30), ("image", 3 << 30)] {
            let dir = o.write(root.path(), 0);
            let path = dir.join(o.file(ext));
            std::fs::File::create(&path).unwrap().set_len(size).unwrap();
            let start = std::time::Instant::now();
            let out = run(&dir, &["replay", "--verify", s(&dir.join(o.descriptor()))]);
            assert_error(&out, &[&path.display().to_string(), "bytes at most"]);
            assert!(start.elapsed() < Duration::from_secs(10), "read whole?");
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}

#[test]
fn running_out_of_memory_is_an_error_not_an_abort() {
    // The demo at 16 MiB under address-space limits from too little to
    // enough: each run succeeds or ends with exit 2 and a message, never an
    // abort ("memory allocation failed") or a signal.
    let root = tempfile::tempdir().unwrap();
    let mut outcomes = Vec::new();
    for mib in [40u64, 120, 160, 200, 250, 300, 400, 600] {
        let dir = root.path().join(mib.to_string());
        let out = run_within(
            root.path(),
            &["demo", "--size", "16M", "--dir", s(&dir)],
            mib << 10,
        );
        let (stdout, stderr) = text(&out);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0 | 2)),
            "{mib} MiB: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status
        );
        assert!(
            !stderr.contains("memory allocation") && !stderr.contains("panicked"),
            "{mib} MiB: {stderr}"
        );
        if code == Some(2) {
            assert!(stderr.contains("error: "), "{mib} MiB: {stderr}");
        }
        outcomes.push((mib, code));
    }
    assert!(
        outcomes.iter().any(|o| o.1 == Some(2)),
        "{outcomes:?}: no run ran short"
    );
    assert!(
        outcomes.iter().any(|o| o.1 == Some(0)),
        "{outcomes:?}: no run had enough"
    );
}
