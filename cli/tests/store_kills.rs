//! SIGKILL at random points of `reprise record` (a small CUDA program on
//! the simulated driver, into the store), `reprise import` and
//! `reprise gc` (issue 25): after every kill `reprise list` finds no
//! capture BROKEN or INCOMPLETE, every capture that was whole before still
//! is (an import's are exported and compared with the original raw files
//! byte for byte), and at the end `gc` removes every ORPHAN and the
//! captures replay. The delays come from a seeded generator (the seed is
//! printed; `REPRISE_KILL_SEED` sets it), so a failing run can be repeated.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use reprise::{CaptureFormat, RecordConfig};

/// xorshift64*: the delays' generator.
struct Rng(u64);

impl Rng {
    fn seeded(test: &str) -> Rng {
        let seed = std::env::var("REPRISE_KILL_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x5eed_0000_0000_0025);
        eprintln!("{test}: seed {seed} (REPRISE_KILL_SEED)");
        Rng(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A duration in `[0, max)`.
    fn below(&mut self, max: Duration) -> Duration {
        let us = max.as_micros().max(1) as u64;
        Duration::from_micros(self.next() % us)
    }
}

/// Runs `cmd` in a process group of its own and kills the whole group with
/// SIGKILL after `delay`; `true` when it had finished before.
fn run_and_kill(mut cmd: Command, delay: Duration) -> bool {
    cmd.process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let until = Instant::now() + delay;
    while Instant::now() < until {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_micros(200).min(delay));
    }
    let pgid = child.id();
    let st = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    if !st.success() {
        // Gone between the look and the kill.
        let _ = child.kill();
    }
    child.wait().unwrap();
    wait_group_gone(pgid);
    false
}

/// Waits (up to ten seconds) until no process of the group `pgid` runs:
/// only the child is waited for, and a grandchild killed with it (the
/// recorded program, whose recorder holds a pin on the store) may still be
/// exiting, its pin held, when the next command looks (a `gc` would then
/// rightly leave the orphans to that writer). A zombie has closed its
/// files, so it no longer counts.
fn wait_group_gone(pgid: u32) {
    let until = Instant::now() + Duration::from_secs(10);
    let running = || {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                    return false;
                };
                // After the command's name, in parentheses: state, ppid, pgrp.
                let Some((_, rest)) = stat.rsplit_once(')') else {
                    return false;
                };
                let mut fields = rest.split_whitespace();
                let state = fields.next();
                let pgrp = fields.nth(1);
                state != Some("Z") && pgrp == Some(pgid.to_string().as_str())
            })
    };
    while running() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Kills runs of a command at random points: each delay is drawn below a
/// bound that starts at a whole run's time and adapts (shorter after a run
/// that finished first, longer after a kill), so that the kills keep
/// falling inside the runs however loaded the machine is.
struct Killer {
    rng: Rng,
    max: Duration,
    /// Runs killed while they ran.
    kills: usize,
    /// Runs started.
    runs: usize,
    /// ORPHAN lines the listings after the kills showed, in all.
    orphans: usize,
}

impl Killer {
    fn new(test: &str, whole_run: Duration) -> Killer {
        Killer {
            rng: Rng::seeded(test),
            max: whole_run,
            kills: 0,
            runs: 0,
            orphans: 0,
        }
    }

    /// Whether `want` kills are made (at most 4 runs a kill are tried).
    fn done(&self, want: usize) -> bool {
        assert!(
            self.runs < 4 * want,
            "{} runs, only {} killed",
            self.runs,
            self.kills
        );
        self.kills >= want
    }

    /// Runs `cmd` and kills it at a random point: `true` when it was
    /// killed while it ran.
    fn run(&mut self, cmd: Command) -> bool {
        self.runs += 1;
        let finished = run_and_kill(cmd, self.rng.below(self.max));
        if finished {
            self.max = self.max * 3 / 4;
        } else {
            self.kills += 1;
            self.max = self.max * 11 / 10;
        }
        !finished
    }
}

/// How long `cmd()` takes to run whole here: the shortest of three runs
/// (the first one warms the caches), so that the kills fall inside it.
fn whole_run(mut cmd: impl FnMut() -> Command) -> Duration {
    (0..3)
        .map(|_| {
            let t0 = Instant::now();
            assert!(run_and_kill(cmd(), Duration::from_secs(60)));
            t0.elapsed()
        })
        .min()
        .unwrap()
}

/// `reprise` as a command, for [`run_and_kill`].
fn reprise_cmd(args: &[&str]) -> Command {
    let mut c = Command::new(reprise_bin());
    c.args(args).env("RUST_LOG", "off");
    c
}

/// The descriptors in `dir`.
fn descriptors(dir: &Path) -> BTreeSet<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect()
}

/// `reprise list DIR` after a kill: exit 0 (nothing BROKEN or INCOMPLETE),
/// every descriptor of the directory listed as a capture, every one of
/// `before` among them. The orphans' count and the descriptors.
fn assert_whole(dir: &Path, before: &BTreeSet<PathBuf>, what: &str) -> (usize, BTreeSet<PathBuf>) {
    let out = reprise(&["list", s(dir)]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{what}:\n{stdout}{stderr}");
    assert!(
        !stdout.contains("BROKEN") && !stdout.contains("INCOMPLETE"),
        "{what}:\n{stdout}"
    );
    let now = descriptors(dir);
    for d in &now {
        assert!(
            stdout
                .lines()
                .any(|l| !l.starts_with("ORPHAN") && l.contains(s(d))),
            "{what}: {} is not listed as a capture:\n{stdout}",
            d.display()
        );
    }
    for d in before {
        assert!(
            now.contains(d),
            "{what}: {} was whole and is gone",
            d.display()
        );
    }
    let orphans = stdout.lines().filter(|l| l.starts_with("ORPHAN")).count();
    (orphans, now)
}

/// `gc --grace 0`, then `list` shows no ORPHAN and the same captures.
fn gc_leaves_no_orphan(dir: &Path, captures: &BTreeSet<PathBuf>, what: &str) {
    let out = reprise(&["gc", "--grace", "0", s(dir)]);
    assert_exit(&out, 0);
    let (orphans, now) = assert_whole(dir, captures, what);
    assert_eq!(orphans, 0, "{what}: gc left orphans");
    assert_eq!(&now, captures, "{what}");
    let out = reprise(&["du", "--json", s(dir)]);
    let du: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(du["missing_chunks"], 0, "{what}: {du}");
    assert_eq!(du["unreferenced_bytes"], 0, "{what}: {du}");
}

#[test]
fn record_killed_at_random_points_leaves_whole_captures_or_orphans_gc_removes() {
    use common::programs;
    let Some(target) = programs::setup() else {
        return;
    };
    let Some(lib) = programs::interposer() else {
        return;
    };
    let program = programs::build_program("linked");
    let plain = programs::run(&target, &program, &[]);
    assert_exit(&plain, 0);
    let dir = tempfile::tempdir().unwrap();
    let (var, path) = programs::sim_env();
    let ptx = programs::saxpy_ptx();
    let cmd = || {
        let mut c = reprise_cmd(&["record", "--dir", s(dir.path()), "--", s(&program), s(&ptx)]);
        c.env(var, &path).env("REPRISE_INTERPOSER", &lib);
        c
    };
    let full = whole_run(cmd);
    let mut killer = Killer::new("record", full);
    let mut whole = descriptors(dir.path());
    assert_eq!(whole.len(), 9);
    while !killer.done(20) {
        killer.run(cmd());
        let what = format!("record run {}", killer.runs);
        let (orphans, now) = assert_whole(dir.path(), &whole, &what);
        killer.orphans += orphans;
        whole = now;
    }
    eprintln!(
        "record: {} kills in {} runs (a whole run {full:?}), {} whole captures, {} orphans seen",
        killer.kills,
        killer.runs,
        whole.len(),
        killer.orphans
    );
    gc_leaves_no_orphan(dir.path(), &whole, "record, after gc");
    for d in &whole {
        let out = reprise_env(
            &["replay", "--verify", s(d)],
            &[(var, path.to_str().unwrap())],
        );
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {stdout}{stderr}",
            d.display()
        );
    }
}

fn raw_config(dir: &Path, format: CaptureFormat) -> RecordConfig {
    RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20)
        .fsync(false)
        .format(format)
}

/// Every plain file of `dir`, by name, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            out.insert(
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            );
        }
    }
    out
}

/// Exports every capture of `dir` raw and compares the files with
/// `original`'s, byte for byte.
fn assert_exports_as(dir: &Path, original: &BTreeMap<String, Vec<u8>>, what: &str) {
    let back = tempfile::tempdir().unwrap();
    let ds: Vec<PathBuf> = descriptors(dir).into_iter().collect();
    let mut args = vec!["export", "--dir", s(back.path())];
    args.extend(ds.iter().map(|d| s(d)));
    let out = reprise(&args);
    assert_eq!(out.status.code(), Some(0), "{what}: {}", text(&out).1);
    let got = files(back.path());
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        original.keys().collect::<Vec<_>>(),
        "{what}"
    );
    for (name, bytes) in original {
        assert!(
            got[name] == *bytes,
            "{what}: {name} differs from the original"
        );
    }
}

#[test]
fn import_killed_at_random_points_loses_no_byte() {
    let source = tempfile::tempdir().unwrap();
    let written = record_axpy(
        raw_config(source.path(), CaptureFormat::Raw),
        (3 << 20) / 8,
        4,
    );
    assert_eq!(written.len(), 4);
    let original = files(source.path());
    let dir = tempfile::tempdir().unwrap();
    let fresh = || {
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                std::fs::remove_dir_all(&p).unwrap();
            } else {
                std::fs::remove_file(&p).unwrap();
            }
        }
        for (name, bytes) in &original {
            std::fs::write(dir.path().join(name), bytes).unwrap();
        }
    };
    let full = whole_run(|| {
        fresh();
        reprise_cmd(&["import", s(dir.path())])
    });
    assert_exports_as(dir.path(), &original, "a whole import");
    let mut killer = Killer::new("import", full);
    let whole = descriptors(dir.path());
    while !killer.done(20) {
        // Every other run starts again from raw files; the others go on
        // from what the kill before left.
        if killer.runs.is_multiple_of(2) {
            fresh();
        }
        killer.run(reprise_cmd(&["import", s(dir.path())]));
        let what = format!("import run {}", killer.runs);
        killer.orphans += assert_whole(dir.path(), &whole, &what).0;
        assert_exports_as(dir.path(), &original, &what);
    }
    eprintln!(
        "import: {} kills in {} runs (a whole import {full:?}), {} orphans seen",
        killer.kills, killer.runs, killer.orphans
    );
    // Import finishes what the kills left; gc removes the rest.
    assert_exit(&reprise(&["import", s(dir.path())]), 0);
    // What is left is descriptors and manifests, and the hidden temporary
    // files of manifests a kill interrupted (orphans, which gc removes).
    let not_moved = |temps: bool| -> Vec<String> {
        files(dir.path())
            .into_keys()
            .filter(|n| !(n.ends_with(".json") || n.ends_with(".chunks")))
            .filter(|n| !(temps && n.starts_with(".reprise-tmp.")))
            .collect()
    };
    assert_eq!(
        not_moved(true),
        Vec::<String>::new(),
        "import left raw files"
    );
    gc_leaves_no_orphan(dir.path(), &whole, "import, after gc");
    assert_eq!(
        not_moved(false),
        Vec::<String>::new(),
        "gc left temporary files"
    );
    assert_exports_as(dir.path(), &original, "import, after gc");
    assert_exit(&reprise(&["replay", "--verify", s(&written[3])]), 0);
}

#[test]
fn gc_killed_at_random_points_loses_nothing_a_capture_names() {
    let dir = tempfile::tempdir().unwrap();
    let written = record_axpy(
        raw_config(dir.path(), CaptureFormat::Store),
        (2 << 20) / 4,
        6,
    );
    // The first two captures' descriptors go: their manifests are orphans,
    // the chunks only they name garbage.
    for w in &written[..2] {
        std::fs::remove_file(w).unwrap();
    }
    let whole = descriptors(dir.path());
    assert_eq!(whole.len(), 4);
    let store = reprise_capture::chunks::ChunkStore::create(
        dir.path(),
        reprise_capture::chunks::StoreOptions {
            fsync: false,
            ..Default::default()
        },
    )
    .unwrap();
    // Chunks no manifest names come from their own generator.
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Chunks no manifest names, for each gc to remove.
    let garbage = |rng: &mut Rng| {
        for _ in 0..200 {
            let bytes: Vec<u8> = (0..64).map(|_| rng.next() as u8).collect();
            store.put(&bytes).unwrap();
        }
    };
    let full = whole_run(|| {
        garbage(&mut rng);
        reprise_cmd(&["gc", "--grace", "0", s(dir.path())])
    });
    assert_whole(dir.path(), &whole, "a whole gc");
    let mut killer = Killer::new("gc", full);
    while !killer.done(15) {
        garbage(&mut rng);
        killer.run(reprise_cmd(&["gc", "--grace", "0", s(dir.path())]));
        let what = format!("gc run {}", killer.runs);
        killer.orphans += assert_whole(dir.path(), &whole, &what).0;
        let out = reprise(&["du", "--json", s(dir.path())]);
        let du: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(du["missing_chunks"], 0, "{what}: {du}");
    }
    eprintln!(
        "gc: {} kills in {} runs (a whole gc {full:?}), {} orphans seen",
        killer.kills, killer.runs, killer.orphans
    );
    gc_leaves_no_orphan(dir.path(), &whole, "gc, after a whole gc");
    for d in &whole {
        assert_exit(&reprise(&["replay", "--verify", s(d)]), 0);
    }
}
