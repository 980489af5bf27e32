//! `--arg N` compares the allocation argument N points into, as the
//! recorder made it, and says which bytes it compared: recorded from an
//! unmodified CUDA program (`programs/buffers.c`, on the simulated driver)
//! whose kernel gets x and y while the program keeps a third buffer, z,
//! above them. A difference in z, or in the padding between y and z, is
//! outside argument 2's allocation; one in y is inside.
//!
//! Without a C compiler the test skips, unless `REPRISE_REQUIRE_SIM=1`.

mod common;

use std::path::Path;

use common::programs::*;
use common::{corrupt_output, edit_descriptor, s, text};

/// Bytes of each buffer: N floats (driver.h).
const BUFFER: u64 = 10_000 * 4;

/// `reprise replay --verify` of `c` with `options`, on the simulator.
fn replay(c: &Path, options: &[&str]) -> (Option<i32>, String) {
    let (k, v) = sim_env();
    let mut argv = vec!["replay", "--verify", s(c)];
    argv.extend_from_slice(options);
    let out = common::reprise_env(&argv, &[(k, v.to_str().unwrap())]);
    let (stdout, stderr) = text(&out);
    (out.status.code(), format!("{stdout}{stderr}"))
}

/// The descriptor's region base and argument `i`'s value.
fn base_and_arg(c: &Path, i: usize) -> (u64, u64) {
    let r = reprise::core::record::KernelRecord::from_json(&std::fs::read(c).unwrap()).unwrap();
    (r.region_base.unwrap(), r.arg_value(i))
}

#[test]
fn an_argument_compares_its_own_allocation_and_says_which_bytes() {
    let Some(Target::Simulated) = setup() else {
        return;
    };
    if interposer().is_none() {
        return;
    }
    let program = build_program("buffers");
    let dir = tempfile::tempdir().unwrap();
    let out = record(&program, dir.path(), &["--format", "raw"], &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let found = descriptors(dir.path());
    assert_eq!(found.len(), 1, "{found:?}\n{stdout}{stderr}");
    let c = &found[0];
    let (base, x) = base_and_arg(c, 1);
    let (_, y) = base_and_arg(c, 2);
    let (ox, oy) = (x - base, y - base);
    assert!(oy >= ox + BUFFER, "x at {ox:#x}, y at {oy:#x}");
    let said = |i: usize, at: u64| {
        format!(
            "--arg {i}: {:#x}..{:#x} ({BUFFER} bytes at offset {at:#x}): its allocation, as \
             recorded",
            base + at,
            base + at + BUFFER
        )
    };

    // Unchanged, each argument's allocation verifies, and the output says
    // which bytes were compared.
    let (code, shown) = replay(c, &["--arg", "1", "--arg", "2"]);
    assert_eq!(code, Some(0), "{shown}");
    assert!(shown.contains(&said(1, ox)), "{shown}");
    assert!(shown.contains(&said(2, oy)), "{shown}");
    assert!(
        shown.contains("verification: PASS (78.1 KiB compared over 2 ranges"),
        "{shown}"
    );

    // A byte of z, the program's own buffer above y, and one of the
    // padding between y's end and z: outside argument 2's allocation.
    corrupt_output(c, oy + BUFFER + 8);
    corrupt_output(c, oy + BUFFER + 0x200);
    let (code, shown) = replay(c, &[]);
    assert_eq!(code, Some(1), "the whole region differs: {shown}");
    let (code, shown) = replay(c, &["--arg", "2"]);
    assert_eq!(code, Some(0), "{shown}");
    assert!(shown.contains(&said(2, oy)), "{shown}");
    assert!(
        shown.contains("verification: PASS (39.1 KiB compared over 1 range, all equal)"),
        "{shown}"
    );

    // A byte of y itself: inside, and reported where it is.
    corrupt_output(c, oy + 100);
    let (code, shown) = replay(c, &["--arg", "2"]);
    assert_eq!(code, Some(1), "{shown}");
    assert!(
        shown.contains(&format!(
            "verification: FAIL: 1 of {BUFFER} bytes differ over 1 range; first difference at \
             offset {:#x} (address {:#x})",
            oy + 100,
            y + 100
        )),
        "{shown}"
    );
    // `diff` compares and says the same from the descriptor.
    let (k, v) = sim_env();
    let saved = common::reprise_env(
        &["replay", "--save-output", s(c)],
        &[(k, v.to_str().unwrap())],
    );
    assert_eq!(saved.status.code(), Some(0), "{}", text(&saved).1);
    let replayed =
        reprise::capture::CapturePaths::new(c, reprise::core::record::Generation::Reprise)
            .replay_output;
    let diffed = common::reprise(&["diff", s(c), s(&replayed), "--arg", "1"]);
    let (stdout, stderr) = text(&diffed);
    assert_eq!(diffed.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains(&said(1, ox)), "{stdout}");

    // A capture that records no allocations (as LLVM's): from the argument
    // to the next buffer another argument points to, or to the snapshot's
    // end, as the output says.
    edit_descriptor(c, |r| r.arg_allocations.clear());
    let (code, shown) = replay(c, &["--arg", "1"]);
    assert_eq!(code, Some(0), "{shown}");
    assert!(
        shown.contains(&format!(
            "--arg 1: {x:#x}..{y:#x} ({} bytes at offset {ox:#x}): up to argument 2's buffer \
             (the capture records no allocations)",
            oy - ox
        )),
        "{shown}"
    );
    let (code, shown) = replay(c, &["--arg", "2"]);
    assert_eq!(code, Some(1), "{shown}");
    assert!(
        shown.contains("up to the end of the snapshot, no other argument pointing above it"),
        "{shown}"
    );
}
