//! A region base that the capture does not record and its arguments leave
//! in doubt, settled by replaying under each base possible: an LLVM 16
//! capture written from FORMATS.md alone (no LLVM needed), whose snapshot
//! starts two pages before its first buffer, so the base where that buffer
//! starts, the rule's guess, is wrong.

mod common;

use common::*;
use reprise::core::record::Generation;

/// The true base; the first buffer lies two pages past it.
const BASE: u64 = 0x7f00_0000_0010;
const PAD: usize = 8192;

/// The capture in `dir`: its descriptor and its recorded output's path.
fn capture(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let f = llvm_fixture(dir, Generation::LlvmLegacy, BASE + PAD as u64, 1024);
    let stem = f.descriptor.with_extension("");
    let (input, output) = (
        stem.with_extension("memory"),
        stem.with_extension("original.output"),
    );
    for p in [&input, &output] {
        let mut bytes: Vec<u8> = (0..PAD).map(|i| (i % 251) as u8 ^ 0x5a).collect();
        bytes.extend(std::fs::read(p).unwrap());
        std::fs::write(p, bytes).unwrap();
    }
    edit_descriptor(&f.descriptor, |r| {
        r.region_base = None;
        r.memory_size = Some(r.memory_size.unwrap() + PAD as u64);
    });
    (f.descriptor, output)
}

fn replay(d: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["replay", "--verify"];
    args.extend_from_slice(extra);
    args.push(s(d));
    reprise(&args)
}

#[test]
fn the_base_under_which_the_output_verifies_is_found_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let (d, _) = capture(dir.path());
    let out = replay(&d, &[]);
    assert_exit(&out, 0);
    let stdout = text(&out).0;
    assert!(
        stdout.contains(&format!("region base {BASE:#x}: derived by trying")),
        "{stdout}"
    );
    assert!(stdout.contains("verification: PASS"), "{stdout}");
    // The output saved is the verifying base's, whichever base ran last.
    let out = replay(&d, &["--save-output"]);
    assert_exit(&out, 0);
    let saved = std::fs::read(d.with_extension("replay.output")).unwrap();
    let recorded = std::fs::read(d.with_extension("original.output")).unwrap();
    assert!(
        saved == recorded,
        "the saved output is not the recorded one"
    );
    // Untried (the snapshot over the byte budget): the rule's guess
    // differs, and that is no FAIL.
    let out = replay(&d, &["--max-base-try-bytes", "1K"]);
    assert_error(&out, &["the output differs", "may be wrong"]);
}

#[test]
fn a_difference_under_every_base_is_a_fail_and_a_short_budget_a_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let (d, output) = capture(dir.path());
    // The recorded output changed where y lies, as a global the
    // application changed would change it.
    let mut bytes = std::fs::read(&output).unwrap();
    bytes[PAD + 4096 + 40] ^= 0xff;
    std::fs::write(&output, bytes).unwrap();
    let out = replay(&d, &[]);
    assert_exit(&out, 1);
    let stdout = text(&out).0;
    assert!(
        stdout.contains("bases possible, all tried, none verifies"),
        "{stdout}"
    );
    // The replay shown is the one under the base nearest to verifying.
    assert!(stdout.contains("verification: FAIL: 1 of"), "{stdout}");
    let out = replay(&d, &["--max-base-tries", "2"]);
    assert_error(
        &out,
        &[
            "2 tried (the output differs under",
            "not tried (--max-base-tries",
            "--region-base ADDR",
        ],
    );
}

/// `check`'s verdict on the capture is the one the tries give: passed,
/// then, with the recorded output changed, differs under every base.
#[test]
fn checks_verdict_is_the_tries() {
    let dir = tempfile::tempdir().unwrap();
    let (d, output) = capture(dir.path());
    let results = dir.path().join("results.jsonl");
    let check_with = |extra: &[&str]| {
        let mut args = vec!["check", "--results", s(&results)];
        args.extend(extra);
        args.push(s(&d));
        let out = reprise(&args);
        let line = std::fs::read_to_string(&results).unwrap_or_default();
        std::fs::remove_file(&results).ok();
        (out, line)
    };
    let check = || check_with(&[]);
    let (out, line) = check();
    assert_exit(&out, 0);
    assert!(line.contains("derived by trying"), "{line}");
    // Compared under a tolerance, the bases are tried all the same.
    let (out, line) = check_with(&["--dtype", "u8", "--atol", "0"]);
    assert_exit(&out, 0);
    assert!(line.contains("derived by trying"), "{line}");
    let mut bytes = std::fs::read(&output).unwrap();
    bytes[PAD + 4096 + 40] ^= 0xff;
    std::fs::write(&output, bytes).unwrap();
    let (out, line) = check();
    assert_exit(&out, 1);
    assert!(line.contains("all tried, none verifies"), "{line}");
    // Under a tolerance, every base ran and differs too.
    let (out, line) = check_with(&["--dtype", "u8", "--atol", "0"]);
    assert_exit(&out, 1);
    assert!(line.contains("all tried, none verifies"), "{line}");
}
