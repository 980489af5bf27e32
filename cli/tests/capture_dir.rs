//! The capture directory: one default for every command, messages that say
//! where captures were looked for, a directory copied without its store
//! named once with the fix, and a demo whose printed commands run as
//! printed in a new shell.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;

/// `reprise ARGS` run in `cwd`, with `REPRISE_RECORD_DIR` set or not.
fn run_in(cwd: &Path, args: &[&str], record_dir: Option<&str>) -> Output {
    let mut cmd = Command::new(reprise_bin());
    cmd.args(args)
        .current_dir(cwd)
        .env("RUST_BACKTRACE", "0")
        .env_remove("REPRISE_RECORD_DIR");
    if let Some(d) = record_dir {
        cmd.env("REPRISE_RECORD_DIR", d);
    }
    output_within(&mut cmd, RUN_LIMIT)
}

#[test]
fn list_du_and_gc_look_where_record_writes() {
    let home = tempfile::tempdir().unwrap();
    let cwd = home.path();
    // Before anything is recorded: where captures are looked for, and how
    // they get there.
    for cmd in ["list", "du", "gc"] {
        let out = run_in(cwd, &[cmd], None);
        assert_error(
            &out,
            &[
                "reprise-captures: no such directory",
                "reprise record -- ./app",
            ],
        );
    }
    // A capture where record would put it is what each finds by default.
    let out = run_in(cwd, &["demo", "--dir", "reprise-captures"], None);
    assert_exit(&out, 0);
    let out = run_in(cwd, &["list"], None);
    assert_exit(&out, 0);
    assert!(text(&out).0.contains("1 capture(s)"), "{}", text(&out).0);
    assert!(
        text(&out).0.contains("in reprise-captures"),
        "{}",
        text(&out).0
    );
    let out = run_in(cwd, &["du"], None);
    assert_exit(&out, 0);
    assert!(text(&out).0.contains("in 4 manifests"), "{}", text(&out).0);
    let out = run_in(cwd, &["gc"], None);
    assert_exit(&out, 0);
    assert!(text(&out).0.contains("4 manifests"), "{}", text(&out).0);
    // REPRISE_RECORD_DIR moves the default for every one of them.
    std::fs::create_dir(cwd.join("elsewhere")).unwrap();
    let out = run_in(cwd, &["list"], Some("elsewhere"));
    assert_exit(&out, 0);
    let (stdout, stderr) = text(&out);
    assert!(stdout.contains("0 capture(s)"), "{stdout}");
    assert!(stdout.contains("in elsewhere"), "{stdout}");
    assert!(
        stderr.contains("no captures in elsewhere") && stderr.contains("REPRISE_RECORD_DIR"),
        "{stderr}"
    );
    let out = run_in(cwd, &["du"], Some("elsewhere"));
    assert_exit(&out, 0);
    assert!(
        text(&out)
            .0
            .contains("elsewhere: no stored captures, and no raw ones"),
        "{}",
        text(&out).0
    );
    let out = run_in(cwd, &["gc"], Some("elsewhere"));
    assert_exit(&out, 0);
    assert!(
        text(&out).0.contains("elsewhere: no store here"),
        "{}",
        text(&out).0
    );
}

#[test]
fn a_directory_copied_without_its_store_is_named_once_with_the_fix() {
    let home = tempfile::tempdir().unwrap();
    let cwd = home.path();
    assert_exit(&run_in(cwd, &["demo", "--dir", "orig"], None), 0);
    // `cp orig/* copied/`: the hidden store stays behind.
    std::fs::create_dir(cwd.join("copied")).unwrap();
    for e in std::fs::read_dir(cwd.join("orig")).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), cwd.join("copied").join(e.file_name())).unwrap();
        }
    }
    let fix = "copy the whole directory, including .reprise-store, or export with --format raw";
    let out = run_in(cwd, &["list", "copied"], None);
    assert_exit(&out, 1);
    let stdout = text(&out).0;
    let lines: Vec<&str> = stdout.lines().filter(|l| l.contains(fix)).collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    assert!(lines[0].starts_with("NO STORE"), "{stdout}");
    assert_eq!(stdout.matches(fix).count(), 1, "{stdout}");
    let out = run_in(cwd, &["du", "copied"], None);
    assert_exit(&out, 1);
    assert!(
        text(&out)
            .0
            .contains("1 capture(s) whose store is not here"),
        "{}",
        text(&out).0
    );
    assert!(text(&out).1.contains(fix), "{}", text(&out).1);
    // inspect says the problem once, and what it could not check.
    let descriptor = std::fs::read_dir(cwd.join("copied"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    let out = run_in(cwd, &["inspect", s(&descriptor)], None);
    assert_exit(&out, 1);
    let stdout = text(&out).0;
    assert_eq!(stdout.matches(fix).count(), 1, "{stdout}");
    let input = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("input"))
        .unwrap();
    assert!(input.contains("checksum not checked"), "{stdout}");
    assert!(!stdout.contains("no checksum recorded"), "{stdout}");
    // The original is fine, and `cp -r` of the whole directory travels.
    assert_exit(&run_in(cwd, &["list", "orig"], None), 0);
    let status = Command::new("cp")
        .args(["-r", "orig", "whole"])
        .current_dir(cwd)
        .status()
        .unwrap();
    assert!(status.success());
    assert_exit(&run_in(cwd, &["list", "whole"], None), 0);
}

#[test]
fn a_directory_given_to_replay_names_its_descriptors_and_check() {
    let home = tempfile::tempdir().unwrap();
    let cwd = home.path();
    assert_exit(&run_in(cwd, &["demo", "--dir", "d"], None), 0);
    let out = run_in(cwd, &["replay", "d"], None);
    assert_error(
        &out,
        &[
            "d: is a directory: replay takes one capture's descriptor",
            "e.g. d/demo_stencil-",
            "`reprise check d` replays and verifies every capture in it",
        ],
    );
}

#[test]
fn leaving_out_the_separator_of_record_says_where_the_program_goes() {
    let out = reprise(&["record", "ls", "/"]);
    assert_exit(&out, 2);
    assert!(
        text(&out).1.contains("put the program after `--`"),
        "{}",
        text(&out).1
    );
}

#[test]
fn a_missing_cuda_driver_names_the_simulators() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(reprise_bin());
    cmd.args(["demo", "--backend", "cuda"])
        .current_dir(home.path())
        .env_remove("LD_LIBRARY_PATH");
    let out = output_within(&mut cmd, RUN_LIMIT);
    if out.status.code() == Some(0) {
        // A machine with NVIDIA's driver installed: nothing is missing.
        return;
    }
    assert_error(&out, &["CUDA driver not found", "scripts/simulators.sh"]);
}

/// The CUDA demo's "replay it yourself" line carries the environment that
/// found the driver: run by a shell that has none of it, it verifies.
#[test]
fn the_cuda_demo_prints_a_replay_that_runs_in_a_new_shell() {
    let lib = match sim::library_dir() {
        Ok(l) => l,
        Err(e) => return skip(&format!("the simulated CUDA driver: {e}"), None),
    };
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(reprise_bin());
    cmd.args(["demo", "--backend", "cuda", "--size", "64K"])
        .current_dir(home.path())
        .env("LD_LIBRARY_PATH", lib);
    let out = output_within(&mut cmd, RUN_LIMIT);
    assert_exit(&out, 0);
    let stdout = text(&out).0;
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("replay it yourself:"))
        .unwrap_or_else(|| panic!("{stdout}"))
        .trim()
        .to_string();
    assert!(line.starts_with("LD_LIBRARY_PATH="), "{line}");
    let mut shell = Command::new("sh");
    shell
        .args(["-c", &line])
        .current_dir(home.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    let run = output_within(&mut shell, RUN_LIMIT);
    assert_exit(&run, 0);
    assert!(
        text(&run).0.contains("verification: PASS"),
        "{}",
        text(&run).0
    );
}

#[test]
fn the_manual_synopsis_names_each_value() {
    let out = reprise(&["man", "--dir", "/dev/null/x"]);
    assert_exit(&out, 2);
    let dir = tempfile::tempdir().unwrap();
    assert_exit(&reprise(&["man", "--dir", s(dir.path())]), 0);
    let page = std::fs::read_to_string(dir.path().join("reprise-list.1")).unwrap();
    let synopsis = page
        .lines()
        .skip_while(|l| *l != ".SH SYNOPSIS")
        .nth(1)
        .unwrap();
    assert!(
        synopsis.contains(r"[\fB\-\-image\fR \fIPATH\fR]"),
        "{synopsis}"
    );
    assert!(
        synopsis.contains(r"[\fB\-\-no\-checksums\fR]"),
        "{synopsis}"
    );
}

#[test]
fn a_program_that_never_uses_cuda_is_told_apart_from_one_that_launched_nothing() {
    let home = tempfile::tempdir().unwrap();
    let out = run_in(home.path(), &["record", "--", "true"], None);
    assert_exit(&out, 0);
    let stderr = text(&out).1;
    assert!(
        stderr.contains("0 launches recorded in reprise-captures"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the program never used the CUDA driver"),
        "{stderr}"
    );
    // REPRISE_RECORD_DIR is record's default too.
    let out = run_in(home.path(), &["record", "--", "true"], Some("there"));
    assert_exit(&out, 0);
    assert!(
        text(&out).1.contains("recorded in there"),
        "{}",
        text(&out).1
    );
}

#[test]
fn check_says_each_file_it_wrote() {
    let home = tempfile::tempdir().unwrap();
    let cwd = home.path();
    assert_exit(&run_in(cwd, &["demo", "--dir", "d"], None), 0);
    let out = run_in(cwd, &["check", "d", "--junit", "report.xml"], None);
    assert_exit(&out, 0);
    let stdout = text(&out).0;
    assert!(stdout.contains("results: reprise-check.jsonl"), "{stdout}");
    assert!(stdout.contains("junit: report.xml"), "{stdout}");
    assert!(cwd.join("report.xml").is_file() && cwd.join("reprise-check.jsonl").is_file());
}
