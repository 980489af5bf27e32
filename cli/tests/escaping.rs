//! Strings read from a capture are escaped wherever reprise prints them: a
//! kernel name holding an erase-line sequence, a carriage return, a line
//! break and a terminal-title sequence (all valid JSON) cannot draw a forged
//! "status complete" line or retitle the terminal, in `inspect`, `list`,
//! `replay`, their errors, or the log.

mod common;

use common::*;

/// The name an attacker writes: erase the line, return, forge a status,
/// set the title, and start a new line.
const NAME: &str =
    r"k\u001b[2K\rstatus    complete\u001b]0;owned\u0007\u009b2J\u202e\nstatus    complete";

fn no_raw_controls(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for (i, c) in text.chars().enumerate() {
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        assert!(
            c == '\n' || !(c.is_control() || bidi),
            "{what}: raw {c:?} at char {i}:\n{text}"
        );
    }
    assert!(
        !text.lines().any(|l| l.starts_with("status    complete")),
        "{what}: a forged line:\n{text}"
    );
}

#[test]
fn hostile_kernel_names_are_escaped_wherever_printed() {
    let dir = tempfile::tempdir().unwrap();
    let config = reprise::RecordConfig::default()
        .enabled(true)
        .dir(dir.path());
    let d = record_axpy(config, 256, 1).remove(0);
    // The name, in the descriptor's own JSON escapes.
    let json = std::fs::read_to_string(&d).unwrap();
    let name = reprise_std::capture::read_descriptor(&d)
        .unwrap()
        .name
        .to_string();
    std::fs::write(
        &d,
        json.replace(&format!("\"{name}\""), &format!("\"{NAME}\"")),
    )
    .unwrap();
    assert!(
        std::fs::read_to_string(&d).unwrap().contains("u001b"),
        "the name was not replaced"
    );
    let runs: [(&str, Vec<&str>); 4] = [
        ("inspect", vec!["inspect", s(&d)]),
        ("inspect --json", vec!["inspect", "--json", s(&d)]),
        ("list", vec!["list", s(dir.path())]),
        ("replay", vec!["replay", "--verify", s(&d)]),
    ];
    for (what, args) in runs {
        let out = reprise_env(&args, &[("RUST_LOG", "debug")]);
        no_raw_controls(what, &out.stdout);
        no_raw_controls(what, &out.stderr);
        let (stdout, stderr) = text(&out);
        // Shown, escaped, where the name is shown at all.
        if what == "inspect" {
            assert!(stdout.contains(r"k\u{1b}[2K\rstatus"), "{stdout}");
        }
        // JSON stays JSON, the name whole inside it.
        if what == "inspect --json" {
            let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            assert!(v.to_string().contains("owned"), "{v}");
        }
        // The kernel is not in the image: replay names it, escaped.
        if what == "replay" {
            assert!(!out.status.success(), "{stdout}{stderr}");
            assert!(stderr.contains(r"\u{1b}"), "{stderr}");
        }
    }
}
