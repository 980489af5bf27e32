//! Every driver function the interposer hooks is called through it, on
//! the simulated driver, by a C program of `tests/programs/` that checks
//! what the call returns: `hooks_memory.c` (page-locked mapped memory,
//! pools, 2D copies, memsets, prefetches) and `hooks_streams.c` (two
//! devices and their contexts, per-thread default streams, their capture
//! and graph launch, priority streams, events) cover the hooks the older
//! programs leave out. Each program computes what it computes without
//! reprise and under `reprise record`, and every capture recorded without
//! a mark verifies on replay. A hook added to the interposer without a
//! program that calls it fails [`every_hook_is_called_by_a_test_program`].

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::programs::*;
use common::text;

/// The simulator and the interposer are there (else the test skips, after
/// saying why).
fn ready() -> bool {
    matches!(setup(), Some(Target::Simulated)) && interposer().is_some()
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The identifier starting at the beginning of `s`.
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The driver functions the interposer exports: every `extern "C" fn cu…`
/// of its sources, every `cu…: Type, Skipped::…` entry of a macro that
/// defines hooks (`counted!`), and every `cu… =>` entry of the table
/// `cuGetProcAddress` and `dlsym` hand hooks out from.
fn hooked_functions() -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&workspace().join("interposer/src"), &mut files);
    assert!(!files.is_empty(), "the interposer's sources");
    let mut names = Vec::new();
    for f in files {
        let source = std::fs::read_to_string(&f).unwrap();
        for line in source.lines() {
            let line = line.trim_start();
            let found = if let Some(i) = line.find("extern \"C\" fn cu") {
                Some(ident(&line[i + "extern \"C\" fn ".len()..]))
            } else if line.starts_with("cu")
                && ((line.contains(": ") && line.contains("Skipped::")) || line.contains(" => "))
            {
                Some(ident(line))
            } else {
                None
            };
            if let Some(name) = found
                && name.len() > 2
            {
                names.push(name.to_string());
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

/// Whether the C source `code` names `function` (as a whole identifier).
fn names(code: &str, function: &str) -> bool {
    code.match_indices(function).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + function.len()..].chars().next();
        let part = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !part(before) && !part(after)
    })
}

/// A hook no program calls has never run: every hooked function is named
/// in a program of `tests/programs/` (each recorded by a test of this
/// crate under `reprise record`).
#[test]
fn every_hook_is_called_by_a_test_program() {
    let hooks = hooked_functions();
    // The parse still finds the hooks (a change of how they are declared
    // must not make this test pass vacuously).
    for known in [
        "cuLaunchKernel",
        "cuMemAlloc_v2",
        "cuMemHostRegister_v2",
        "cuGraphLaunch_ptsz",
        "cuGetProcAddress_v2",
    ] {
        assert!(hooks.iter().any(|h| h == known), "{known} in {hooks:?}");
    }
    let dir = workspace().join("cli/tests/programs");
    let mut code = String::new();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "c" || x == "h") {
            code.push_str(&std::fs::read_to_string(&p).unwrap());
            code.push('\n');
        }
    }
    let missing: Vec<&String> = hooks.iter().filter(|h| !names(&code, h)).collect();
    assert!(
        missing.is_empty(),
        "hooked by the interposer but called by no program of {}: {missing:?}",
        dir.display()
    );
}

/// `program ARGS` (after saxpy.ptx) on the simulator without reprise,
/// with `env` added.
fn plain(program: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(program);
    cmd.arg(saxpy_ptx()).args(args);
    let (k, v) = sim_env();
    cmd.env(k, v).envs(env.iter().copied());
    common::output_within(&mut cmd, common::RUN_LIMIT)
}

fn replay(capture: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let (k, v) = sim_env();
    let mut all = vec![(k, v.to_str().unwrap())];
    all.extend_from_slice(env);
    common::reprise_env(&["replay", "--verify", common::s(capture)], &all)
}

/// Whether a capture was recorded with a mark (its arguments reach memory
/// outside the recording region).
fn marked(capture: &Path) -> bool {
    std::fs::read_to_string(capture)
        .unwrap()
        .contains("\"ArgsOutside\"")
}

/// Runs `name ARGS` alone and under `reprise record` with `env`: both say
/// `<name>: ok` and exit 0, the same stdout; `launches` captures are
/// recorded, and each recorded without a mark (its arguments all in memory
/// the capture holds) verifies on replay. Returns the recording's stderr.
fn records_and_verifies(
    name: &str,
    args: &[&str],
    env: &[(&str, &str)],
    launches: usize,
) -> String {
    let program = build_program(name);
    let alone = plain(&program, args, env);
    let (alone_out, alone_err) = text(&alone);
    assert_eq!(alone.status.code(), Some(0), "{alone_out}{alone_err}");
    assert_eq!(alone_out, format!("{name}: ok\n"), "{alone_err}");
    let dir = tempfile::tempdir().unwrap();
    let out = record_env(&program, dir.path(), &[], args, env);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(stdout, alone_out, "{stderr}");
    assert!(!stderr.contains("recording stopped"), "{stderr}");
    let captures = descriptors(dir.path());
    assert_eq!(captures.len(), launches, "{stderr}");
    let without: Vec<&PathBuf> = captures.iter().filter(|c| !marked(c)).collect();
    for c in without {
        let out = replay(c, env);
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {stdout}{stderr}",
            c.display()
        );
        assert!(
            stdout.contains("verification: PASS"),
            "{}: {stdout}",
            c.display()
        );
    }
    stderr
}

/// Page-locked memory mapped for the device (allocated and registered),
/// pools, 2D copies, memsets and prefetches, through the interposer: its
/// six launches are recorded (three on device memory, two on mapped host
/// memory, one on pool memory).
#[test]
fn the_memory_hooks_are_called_through_the_interposer() {
    if !ready() {
        return;
    }
    records_and_verifies("hooks_memory", &[], &[], 6);
}

/// Two devices, their contexts pushed and popped, per-thread default
/// streams (one thread's runs while another's is held), a capture of the
/// per-thread stream and its graph, a cooperative launch, a priority
/// stream and events, through the interposer: its four plain launches are
/// recorded, the captured, graph and cooperative ones counted.
#[test]
fn the_stream_and_context_hooks_are_called_through_the_interposer() {
    if !ready() {
        return;
    }
    let env = [("REPRISE_SIM_CUDA_DEVICES", "2")];
    let stderr = records_and_verifies("hooks_streams", &[], &env, 4);
    assert!(
        stderr.contains("during stream capture")
            && stderr.contains("graph launch")
            && stderr.contains("cooperative"),
        "{stderr}"
    );
}

/// A launch queued behind a host function that waits for the launching
/// thread (which opens its gate after the launch returns) runs without
/// reprise; under `reprise record` it returns too: it is not recorded (the
/// recorder's synchronize would wait for the host function, which waits
/// for the launch to return), and the summary says why. The program's
/// other launches are recorded and verify.
#[test]
fn a_launch_behind_a_waiting_host_function_returns_under_reprise() {
    if !ready() {
        return;
    }
    let env = [("REPRISE_SIM_CUDA_DEVICES", "2")];
    let stderr = records_and_verifies("hooks_streams", &["gated"], &env, 3);
    assert!(
        stderr.contains("1 behind a host function still to run"),
        "{stderr}"
    );
}
