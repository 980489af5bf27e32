//! Files a replay verifies against or writes: a missing recorded output
//! (lost, or never saved), missing globals allowed with a warning, and an
//! output that cannot be saved.

use reprise::core::record::Generation;
use serde_json::json;

use crate::common::*;
use crate::{BASE, current, error_line, legacy, set_keys, sibling};

#[test]
fn missing_output_says_whether_it_was_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    let output = sibling(&f.descriptor, "record_output");
    std::fs::remove_file(&output).unwrap();
    // LLVM current without output: recorded without saving it.
    assert_error(
        &reprise(&["replay", "--verify", s(&f.descriptor)]),
        &["(it was recorded without saving output)"],
    );
    // A descriptor that records the output's checksum: the file was lost.
    set_keys(
        &f.descriptor,
        json!({ "RepriseFormat": 1, "Checksums": { "output": "0123456789abcdef" } }),
    );
    let out = reprise(&["replay", "--verify", s(&f.descriptor)]);
    assert_error(
        &out,
        &[&format!(
            "{}: cannot verify: the recorded output file is missing, though the descriptor \
             records its checksum",
            output.display()
        )],
    );
    assert!(!error_line(&out).contains("recorded without saving output"));
}

#[test]
fn missing_globals_allowed_are_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let f = legacy(dir.path());
    let globals = dir.path().join("axpy.globals");
    std::fs::remove_file(&globals).unwrap();
    let out = reprise_env(
        &["replay", "--allow-missing-globals", s(&f.descriptor)],
        &[("RUST_LOG", "warn")],
    );
    assert_exit(&out, 0);
    let (_, err) = text(&out);
    // A line for the user, not the logger's `[WARN target]`.
    assert!(err.contains("warning: "), "{err}");
    assert!(!err.contains("[WARN"), "{err}");
    assert!(
        err.contains(&format!(
            "{}: globals file is missing; every global keeps the value the image gives it",
            globals.display()
        )),
        "{err}"
    );

    // With a recorded checksum, the file was lost: both messages say so.
    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    let globals = sibling(&f.descriptor, "globals");
    let sum = reprise_std::capture::checksum(&std::fs::read(&globals).unwrap());
    std::fs::remove_file(&globals).unwrap();
    set_keys(
        &f.descriptor,
        json!({ "RepriseFormat": 1, "Checksums": { "globals": format!("{sum:016x}") } }),
    );
    assert_error(
        &reprise(&["replay", s(&f.descriptor)]),
        &[&format!(
            "{}: globals file is missing, though the descriptor records its checksum",
            globals.display()
        )],
    );
    let out = reprise_env(
        &["replay", "--allow-missing-globals", s(&f.descriptor)],
        &[("RUST_LOG", "warn")],
    );
    assert_exit(&out, 0);
    let (_, err) = text(&out);
    assert!(
        err.contains("the descriptor records the file's checksum"),
        "{err}"
    );
}

#[test]
fn save_output_errors_name_the_destination() {
    // At a base no other test of this binary uses.
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmLegacy, BASE + (1 << 40), 64);
    let dest = dir.path().join("axpy.replay.output");
    // The output cannot be put in place: a directory (not empty) has its
    // name.
    std::fs::create_dir(&dest).unwrap();
    std::fs::write(dest.join("keep"), b"").unwrap();
    let capture = reprise::Capture::open(&f.descriptor).unwrap();
    let err = reprise::block_on(std::future::IntoFuture::into_future(
        reprise::replay(&capture).save_output(true),
    ))
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("{}: rename into place failed", dest.display())),
        "{text}"
    );
    assert!(!text.contains(reprise_std::store::TEMP_PREFIX), "{text}");
    assert!(dest.join("keep").exists());
    // No temporary file is left behind.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(reprise_std::store::TEMP_PREFIX))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
