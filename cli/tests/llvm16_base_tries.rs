//! Region bases that LLVM 16 does not record, settled the way a user would
//! want: by what a sibling capture left in memory, or by replaying under
//! each base possible. Programs written as users write them, recorded by
//! LLVM 16's own libomptarget: two `collapse(3)` kernels over column-major
//! 3-D arrays, the second mapping fresh arrays; a kernel launched several
//! times, of which LLVM keeps the last launch. A difference under every
//! base possible is a FAIL (exit 1); a budget that leaves bases untried is
//! a refusal (exit 2) naming what was tried.
//!
//! Skipped with a message where clang-16 or LLVM 16's runtime is missing,
//! unless `REPRISE_REQUIRE_LLVM16=1` (CI).

mod common;

use common::llvm16::*;
use common::*;

/// The region base that the line `region base 0x...:` of `stdout` names,
/// or else the one `replaying ... at 0x...` names.
fn base_of(stdout: &str) -> u64 {
    let hex = stdout
        .lines()
        .find_map(|l| l.strip_prefix("region base 0x"))
        .or_else(|| {
            stdout
                .lines()
                .find(|l| l.starts_with("replaying "))
                .and_then(|l| l.split_once(" at 0x"))
                .map(|(_, r)| r)
        })
        .unwrap_or_else(|| panic!("no base in:\n{stdout}"));
    let end = hex
        .find(|c: char| !c.is_ascii_hexdigit())
        .unwrap_or(hex.len());
    u64::from_str_radix(&hex[..end], 16).unwrap()
}

#[test]
fn a_later_kernel_mapping_fresh_arrays_shares_its_siblings_base() {
    if need(
        compiler(),
        "a_later_kernel_mapping_fresh_arrays_shares_its_siblings_base",
    )
    .is_none()
    {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let (_, bin, ds) = recorded_in(root.path(), "stencil3d");
    assert_eq!(ds.len(), 2, "{ds:?}");
    let mut bases = Vec::new();
    for d in &ds {
        let out = replay(d, &bin, &[]);
        assert_exit(&out, 0);
        let stdout = text(&out).0;
        assert!(stdout.contains("verification: PASS"), "{stdout}");
        bases.push(base_of(&stdout));
    }
    assert_eq!(bases[0], bases[1], "one process, one base");
    // The second is settled by what the first left in memory, before any
    // replay: no base is tried.
    let out = replay(&ds[1], &bin, &["--max-base-tries", "0"]);
    assert_exit(&out, 0);
    let stdout = text(&out).0;
    assert!(stdout.contains("recorded output"), "{stdout}");
    assert_eq!(base_of(&stdout), bases[0]);
}

#[test]
fn an_ambiguous_base_is_settled_by_trying_and_a_wrong_output_fails() {
    if need(
        compiler(),
        "an_ambiguous_base_is_settled_by_trying_and_a_wrong_output_fails",
    )
    .is_none()
    {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    for program in ["repeat", "repeat_pages"] {
        let (_, bin, mut ds) = recorded_in(root.path(), program);
        let d = ds.remove(0);
        // Every base possible tried; one verifies, and is named and used.
        let out = replay(&d, &bin, &[]);
        assert_exit(&out, 0);
        let stdout = text(&out).0;
        assert!(stdout.contains("derived by trying"), "{stdout}");
        assert!(stdout.contains("verification: PASS"), "{stdout}");
        let b = format!("{:#x}", base_of(&stdout));
        assert!(
            replay(&d, &bin, &["--region-base", &b]).status.success(),
            "{program}: {b}"
        );

        // tune settles the base as replay does and tunes under it (the
        // host executor then refuses a sweep for its own reason); under a
        // budget that leaves bases untried, nothing is tuned.
        if program == "repeat" {
            let out = reprise(&["tune", "--allow-missing-globals", "--image", s(&bin), s(&d)]);
            let stderr = text(&out).1;
            assert!(
                stderr.contains(&format!(
                    "tune: region base {b}: the output verifies under it"
                )),
                "{stderr}"
            );
            assert!(stderr.contains("host executor"), "{stderr}");
            let out = reprise(&[
                "tune",
                "--max-base-tries",
                "1",
                "--allow-missing-globals",
                "--image",
                s(&bin),
                s(&d),
            ]);
            assert_error(&out, &["nothing is tuned", "--region-base ADDR"]);
        }
        // A budget that leaves bases untried: refused, naming those tried.
        let out = replay(&d, &bin, &["--max-base-tries", "1"]);
        assert_error(&out, &["1 tried", "not tried", "--region-base ADDR"]);
        // check's verdicts are the same.
        let check = |extra: &[&str]| {
            let results = root.path().join(format!("{program}.jsonl"));
            let mut args = vec!["check", "--allow-missing-globals", "--image", s(&bin)];
            args.extend_from_slice(&["--results", s(&results)]);
            args.extend_from_slice(extra);
            args.push(s(&d));
            let out = reprise(&args);
            let line = std::fs::read_to_string(&results).unwrap_or_default();
            std::fs::remove_file(&results).ok();
            (out, line)
        };
        let (out, line) = check(&[]);
        assert_exit(&out, 0);
        assert!(line.contains("\"passed\""), "{line}");
        let (out, line) = check(&["--max-base-tries", "1"]);
        assert_exit(&out, 2);
        assert!(line.contains("1 tried"), "{line}");

        // The recorded output changed (as a global the application changed
        // would): it differs under every base possible, all of them tried.
        let output =
            reprise::capture::CapturePaths::new(&d, reprise::core::record::Generation::LlvmLegacy)
                .output;
        let mut bytes = std::fs::read(&output).unwrap();
        let at = bytes.len() - 100;
        bytes[at] ^= 0xff;
        std::fs::write(&output, &bytes).unwrap();
        let out = replay(&d, &bin, &[]);
        assert_exit(&out, 1);
        let stdout = text(&out).0;
        assert!(stdout.contains("all tried, none verifies"), "{stdout}");
        assert!(stdout.contains("verification: FAIL: 1 of"), "{stdout}");
        let (out, line) = check(&[]);
        assert_exit(&out, 1);
        assert!(line.contains("all tried, none verifies"), "{line}");
    }
}
