//! Tolerant verification: `replay --verify` and `reprise diff` with
//! `--dtype` and tolerances, ranges and argument buffers, on host captures
//! whose recorded output was changed in the last bit (as another GPU's
//! floating-point results differ) or by a real error.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use reprise::RecordConfig;

/// One axpy capture over 4096 elements (x, y, then an 8-byte counter), in
/// raw files: the tests change its recorded output.
fn capture(dir: &Path) -> PathBuf {
    let config = RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .format(reprise::CaptureFormat::Raw);
    record_axpy(config, 4096, 1).remove(0)
}

fn output_of(descriptor: &Path) -> PathBuf {
    let rec = reprise::core::KernelRecord::from_json(&std::fs::read(descriptor).unwrap()).unwrap();
    reprise::CapturePaths::new(descriptor, rec.generation).output
}

/// Changes the recorded output's f32 elements at `indices` of y (the
/// second buffer, at 16 KiB) with `f`, keeping the descriptor's checksum
/// in step, as if the recording GPU had computed them so.
fn change_recorded_y(descriptor: &Path, indices: &[usize], f: impl Fn(f32) -> f32) {
    let path = output_of(descriptor);
    let mut bytes = std::fs::read(&path).unwrap();
    for &i in indices {
        let at = 16384 + 4 * i;
        let v = f32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        bytes[at..at + 4].copy_from_slice(&f(v).to_le_bytes());
    }
    std::fs::write(&path, &bytes).unwrap();
    edit_descriptor(descriptor, |r| {
        r.checksums.output = Some(reprise_std::capture::checksum(&bytes))
    });
}

fn next_up(v: f32) -> f32 {
    f32::from_bits(v.to_bits() + 1)
}

#[test]
fn last_bit_differences_pass_within_a_tolerance_and_real_errors_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let c = capture(dir.path());
    let elements = std::fs::metadata(output_of(&c)).unwrap().len() / 4;
    change_recorded_y(&c, &[3, 100, 4000], next_up);
    // Byte for byte, the replay differs.
    let out = reprise(&["replay", "--verify", s(&c)]);
    assert_exit(&out, 1);
    assert!(
        text(&out).0.contains("verification: FAIL: 3 of"),
        "{}",
        text(&out).0
    );
    // One ULP, or a relative tolerance, accepts it.
    for tol in [["--ulps", "1"], ["--rtol", "1e-6"]] {
        let out = reprise(&["replay", s(&c), "--dtype", "f32", tol[0], tol[1]]);
        assert_exit(&out, 0);
        let stdout = text(&out).0;
        assert!(stdout.contains("verification: PASS ("), "{stdout}");
        assert!(stdout.contains("f32 elements"), "{stdout}");
    }
    // Values only (no tolerance): the three differ, listed with index and
    // both values.
    let out = reprise(&["replay", s(&c), "--dtype", "f32", "--mismatches", "2"]);
    assert_exit(&out, 1);
    let stdout = text(&out).0;
    assert!(
        stdout.contains(&format!(
            "FAIL: 3 of {elements} f32 elements differ in value"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("[4099] offset 0x400c"), "{stdout}");
    assert!(stdout.contains("... 1 more"), "{stdout}");
    // A real error is not within the tolerance.
    change_recorded_y(&c, &[7], |v| v + 1.0);
    let out = reprise(&["replay", s(&c), "--dtype", "f32", "--rtol", "1e-5"]);
    assert_exit(&out, 1);
    let stdout = text(&out).0;
    assert!(
        stdout.contains(&format!(
            "FAIL: 1 of {elements} f32 elements differ beyond rtol 1e-5"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("recorded 1011.5, replayed 1010.5"),
        "{stdout}"
    );
}

#[test]
fn ranges_and_argument_buffers_limit_the_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let c = capture(dir.path());
    // An error in y; x (argument 0) is untouched.
    change_recorded_y(&c, &[10], |v| v * 2.0);
    let out = reprise(&["replay", s(&c), "--arg", "0"]);
    assert_exit(&out, 0);
    assert!(
        text(&out).0.contains("16.0 KiB compared over 1 range"),
        "{}",
        text(&out).0
    );
    let out = reprise(&["replay", s(&c), "--arg", "1", "--dtype", "f32"]);
    assert_exit(&out, 1);
    assert!(
        text(&out).0.contains("[10] offset 0x4028"),
        "{}",
        text(&out).0
    );
    let out = reprise(&["replay", s(&c), "--range", "0:0x4000"]);
    assert_exit(&out, 0);
    // Outside the snapshot, or an argument that is no pointer into it.
    let out = reprise(&["replay", s(&c), "--range", "0x8000:0x100000"]);
    assert_error(&out, &["--range 32768:1048576", "inside the"]);
    let out = reprise(&["replay", s(&c), "--arg", "2"]);
    assert_error(&out, &["--arg 2", "points nowhere into the region"]);
    let out = reprise(&["replay", s(&c), "--arg", "9"]);
    assert_error(&out, &["--arg 9", "the kernel has 4 arguments"]);
}

#[test]
fn diff_compares_output_files_and_captures() {
    let dir = tempfile::tempdir().unwrap();
    let c = capture(dir.path());
    let recorded = output_of(&c);
    let noisy = dir.path().join("noisy.out");
    let mut bytes = std::fs::read(&recorded).unwrap();
    for i in [0usize, 5, 99] {
        let at = 16384 + 4 * i;
        let v = f32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        bytes[at..at + 4].copy_from_slice(&next_up(v).to_le_bytes());
    }
    std::fs::write(&noisy, &bytes).unwrap();
    // A descriptor stands for its recorded output.
    let out = reprise(&["diff", s(&c), s(&noisy)]);
    assert_exit(&out, 1);
    assert!(
        text(&out).0.contains("diff: FAIL: 3 of"),
        "{}",
        text(&out).0
    );
    let out = reprise(&[
        "diff",
        s(&recorded),
        s(&noisy),
        "--dtype",
        "f32",
        "--rtol",
        "1e-6",
    ]);
    assert_exit(&out, 0);
    assert!(text(&out).0.contains("diff: PASS"), "{}", text(&out).0);
    // A large error, in the same run, is still found.
    let at = 16384 + 4 * 50;
    bytes[at..at + 4].copy_from_slice(&1e9f32.to_le_bytes());
    std::fs::write(&noisy, &bytes).unwrap();
    let out = reprise(&["diff", s(&c), s(&noisy), "--dtype", "f32", "--rtol", "1e-6"]);
    assert_exit(&out, 1);
    assert!(
        text(&out)
            .0
            .contains(&format!("1 of {} f32 elements differ", bytes.len() / 4)),
        "{}",
        text(&out).0
    );
    // Errors: lengths that differ, a missing file, options that need what
    // is not there.
    let short = dir.path().join("short.out");
    std::fs::write(&short, &bytes[..100]).unwrap();
    assert_error(
        &reprise(&["diff", s(&recorded), s(&short)]),
        &[s(&short), "is 100 bytes", "not outputs of one region"],
    );
    let missing = dir.path().join("missing.out");
    assert_error(
        &reprise(&["diff", s(&recorded), s(&missing)]),
        &[s(&missing)],
    );
    assert_error(
        &reprise(&["diff", s(&recorded), s(&noisy), "--arg", "1"]),
        &["--arg N needs a capture's descriptor"],
    );
    assert_exit(
        &reprise(&["diff", s(&recorded), s(&noisy), "--rtol", "1e-6"]),
        2,
    );
    assert_exit(
        &reprise(&[
            "diff",
            s(&recorded),
            s(&noisy),
            "--dtype",
            "f32",
            "--rtol",
            "-1",
        ]),
        2,
    );
    assert_exit(
        &reprise(&["diff", s(&recorded), s(&noisy), "--dtype", "f8"]),
        2,
    );
}

#[test]
fn the_library_compares_with_the_same_rules() {
    let dir = tempfile::tempdir().unwrap();
    let c = capture(dir.path());
    change_recorded_y(&c, &[1], next_up);
    let capture = reprise::Capture::open(&c).unwrap();
    let spec = reprise::CompareSpec {
        tolerance: reprise::compare::Tolerance::elements(reprise::compare::DType::F32).ulps(1),
        ranges: vec![reprise::OutputRange::Arg(1)],
    };
    let o = reprise::block_on(std::future::IntoFuture::into_future(
        reprise::replay(&capture).verify(true).compare(spec),
    ))
    .unwrap();
    let v = o.verification.unwrap();
    assert!(v.is_match(), "{v}");
    assert_eq!(v.ranges, [(16384, 16384)]);
    assert_eq!(
        v.to_string(),
        "all 4096 f32 elements equal within the tolerance"
    );
    let exact = reprise::block_on(std::future::IntoFuture::into_future(
        reprise::replay(&capture).verify(true),
    ))
    .unwrap();
    let v = exact.verification.unwrap();
    assert!(!v.is_match());
    assert!(v.to_string().starts_with("1 of "), "{v}");
}

#[test]
fn a_typed_range_must_be_whole_elements() {
    let dir = tempfile::tempdir().unwrap();
    let c = capture(dir.path());
    // 3 bytes are no f32 element: refused, naming the element size, not
    // "3 f32 elements ... equal".
    for cmd in ["replay", "diff"] {
        let mut args = vec![cmd, s(&c)];
        let out_file = output_of(&c);
        if cmd == "diff" {
            args.push(s(&out_file));
        }
        args.extend(["--dtype", "f32", "--range", "100:3"]);
        assert_error(&reprise(&args), &["--range", "100:3", "4 bytes each"]);
    }
    // Whole elements are compared.
    let out = reprise(&["replay", s(&c), "--dtype", "f32", "--range", "100:12"]);
    assert_exit(&out, 0);
    assert!(text(&out).0.contains("3 f32 elements"), "{}", text(&out).0);
}

/// Two outputs of which neither need be a replay: the sides are A and B,
/// named by their files, never "recorded" and "replayed".
#[test]
fn diff_names_its_sides_a_and_b() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("one.out"), dir.path().join("two.out"));
    std::fs::write(&a, [0u8, 0, 0, 0]).unwrap();
    std::fs::write(&b, [0u8, 7, 0, 0]).unwrap();
    let out = reprise(&["diff", s(&a), s(&b)]);
    assert_exit(&out, 1);
    let stdout = text(&out).0;
    assert!(stdout.contains(&format!("A: {}", a.display())), "{stdout}");
    assert!(stdout.contains(&format!("B: {}", b.display())), "{stdout}");
    assert!(stdout.contains("offset 0x1: A 0x00, B 0x07"), "{stdout}");
    assert!(
        !stdout.contains("recorded") && !stdout.contains("replayed"),
        "{stdout}"
    );
}
