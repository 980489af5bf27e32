//! Checksums: a damaged checksum map never turns checking off silently,
//! `list` checks them as it promises, and `inspect`, `list` and `replay` agree
//! on what is whole.

use std::path::Path;

use crate::common::*;
use crate::{Original, originals, run};

/// Rewrites the reprise capture's descriptor in `dir` through `edit` (on
/// its JSON).
fn edit_json(
    o: &Original,
    dir: &Path,
    edit: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>),
) {
    let path = dir.join(o.descriptor());
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(v.as_object_mut().unwrap());
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn a_damaged_checksum_map_never_disables_checking_silently() {
    let root = tempfile::tempdir().unwrap();
    let o = originals(root.path()).pop().unwrap();
    assert!(o.checksummed);
    let output = o.file("record_output").to_string();
    let flip_output = |dir: &Path| {
        let p = dir.join(&output);
        let mut b = std::fs::read(&p).unwrap();
        b[0] ^= 0x40;
        std::fs::write(&p, b).unwrap();
    };
    let mut case = 0;
    let mut fresh = || {
        case += 1;
        o.write(root.path(), case)
    };
    // "Chekksums": no checksums at all in a reprise descriptor, and an
    // output byte flipped: a corrupt capture (2), not a difference (1).
    let dir = fresh();
    edit_json(&o, &dir, |m| {
        let sums = m.remove("Checksums").unwrap();
        m.insert("Chekksums".into(), sums);
    });
    flip_output(&dir);
    let d = dir.join(o.descriptor());
    let out = run(&dir, &["replay", "--verify", s(&d)]);
    assert_error(&out, &[s(&d), "records no checksums", "--no-checksums"]);
    // Skipping checksums replays it, and finds the difference.
    assert_exit(
        &run(&dir, &["replay", "--verify", "--no-checksums", s(&d)]),
        1,
    );
    for cmd in ["inspect", "list"] {
        let target = if cmd == "list" { s(&dir) } else { s(&d) };
        let out = run(&dir, &[cmd, target]);
        assert_exit(&out, 1);
        assert!(
            text(&out).0.contains("records no checksums"),
            "{cmd}: {:?}",
            text(&out)
        );
    }

    // A mangled entry ("3input"): the input would go unchecked.
    let dir = fresh();
    edit_json(&o, &dir, |m| {
        let sums = m["Checksums"].as_object_mut().unwrap();
        let input = sums.remove("input").unwrap();
        sums.insert("3input".into(), input);
    });
    let d = dir.join(o.descriptor());
    assert_error(
        &run(&dir, &["replay", s(&d)]),
        &[s(&d), "Checksums names \"3input\"", "--no-checksums"],
    );
    assert_exit(&run(&dir, &["replay", "--no-checksums", s(&d)]), 0);

    // A map that covers only some files is valid; inspect says which are
    // unchecked.
    let dir = fresh();
    edit_json(&o, &dir, |m| {
        m["Checksums"].as_object_mut().unwrap().remove("output");
    });
    let d = dir.join(o.descriptor());
    assert_exit(&run(&dir, &["replay", "--verify", s(&d)]), 0);
    let out = run(&dir, &["inspect", s(&d)]);
    assert_exit(&out, 0);
    let line = text(&out)
        .0
        .lines()
        .find(|l| l.contains(&output))
        .unwrap()
        .to_string();
    assert!(line.contains("no checksum recorded"), "{line}");
}

#[test]
fn list_checks_checksums_as_it_promises() {
    let root = tempfile::tempdir().unwrap();
    let o = originals(root.path()).pop().unwrap();
    let dir = o.write(root.path(), 1);
    let p = dir.join(o.file("record_output"));
    let mut b = std::fs::read(&p).unwrap();
    b[7] ^= 1;
    std::fs::write(&p, b).unwrap();
    let out = run(&dir, &["list", s(&dir)]);
    assert_exit(&out, 1);
    assert!(
        text(&out).0.contains("checksum mismatch"),
        "{:?}",
        text(&out)
    );
    assert_exit(&run(&dir, &["list", "--no-checksums", s(&dir)]), 0);
}

#[test]
fn inspect_list_and_replay_agree_on_what_is_whole() {
    let root = tempfile::tempdir().unwrap();
    let o = originals(root.path()).pop().unwrap();
    let output = o.file("record_output").to_string();
    let input = o.file("record_input").to_string();
    type Damage = fn(&Path, &str, &str);
    let cases: [(&str, Damage, &str); 4] = [
        (
            "the recorded output missing, its checksum recorded",
            |dir, out, _| std::fs::remove_file(dir.join(out)).unwrap(),
            "the recorded output file is missing, though the descriptor records its checksum",
        ),
        (
            "the recorded output a directory",
            |dir, out, _| {
                std::fs::remove_file(dir.join(out)).unwrap();
                std::fs::create_dir(dir.join(out)).unwrap();
            },
            "is a directory, not a regular file",
        ),
        (
            "the recorded output /dev/zero",
            |dir, out, _| {
                std::fs::remove_file(dir.join(out)).unwrap();
                std::os::unix::fs::symlink("/dev/zero", dir.join(out)).unwrap();
            },
            "is a character device, not a regular file",
        ),
        (
            "output and input of different lengths",
            |dir, out, input| {
                let mut b = std::fs::read(dir.join(input)).unwrap();
                b.extend_from_slice(&[0; 16]);
                std::fs::write(dir.join(out), b).unwrap();
            },
            "recorded output snapshot is",
        ),
    ];
    for (i, (case, damage, needle)) in cases.into_iter().enumerate() {
        let dir = o.write(root.path(), i);
        damage(&dir, &output, &input);
        let d = dir.join(o.descriptor());
        let replay = run(&dir, &["replay", "--verify", s(&d)]);
        assert_error(&replay, &[needle]);
        for cmd in ["inspect", "list"] {
            let target = if cmd == "list" { s(&dir) } else { s(&d) };
            let out = run(&dir, &[cmd, target]);
            assert_exit(&out, 1);
            assert!(
                text(&out).0.contains(needle),
                "{case}: {cmd} does not say {needle:?}: {:?}",
                text(&out)
            );
        }
    }
}
