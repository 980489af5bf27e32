//! The disk budget of `reprise record` on the simulated driver: `--max-disk`
//! stops recording with one line before the captures pass it, and with no
//! budget a file system that fills up (a 16 MiB tmpfs) stops it while 5%
//! is still free. Either way the program computes and prints what it does
//! without reprise, and what was recorded is whole: `reprise list` finds
//! nothing incomplete or orphaned, and the captures replay and verify.
//! Without a C compiler the tests skip, unless `REPRISE_REQUIRE_SIM=1`; the
//! tmpfs test skips when it cannot mount one (not root, no `sudo -n`),
//! unless `REPRISE_REQUIRE_TMPFS=1`.

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

/// `launches.c` run without reprise with `env`: its stdout (exit status 3
/// asked for, and checked).
fn alone(program: &Path, env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(program);
    cmd.arg(saxpy_ptx()).arg("3");
    let (k, v) = sim_env();
    cmd.env(k, v).envs(env.iter().copied());
    let out = common::output_within(&mut cmd, common::RUN_LIMIT);
    assert_eq!(out.status.code(), Some(3), "{:?}", text(&out));
    text(&out).0
}

/// The bytes of every regular file under `dir`.
fn file_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = std::fs::symlink_metadata(e.path()).unwrap();
        if m.is_dir() {
            total += file_bytes(&e.path());
        } else if m.is_file() {
            total += m.len();
        }
    }
    total
}

/// `reprise list DIR` says every capture is whole and nothing is left
/// over; returns how many captures it lists.
fn list_clean(dir: &Path) -> usize {
    let out = common::reprise(&["list", common::s(dir)]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    for bad in ["BROKEN", "ORPHAN", "INCOMPLETE"] {
        assert!(!stdout.contains(bad), "{stdout}");
    }
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.contains("(0 incomplete), 0 unreadable, 0 orphaned"),
        "{stdout}"
    );
    last.split_whitespace().next().unwrap().parse().unwrap()
}

/// `reprise replay --verify` of `capture` on the simulator passes.
fn replays(capture: &Path) {
    let (k, v) = sim_env();
    let out = common::reprise_env(
        &["replay", "--verify", common::s(capture)],
        &[(k, v.to_str().unwrap())],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: {stdout}{stderr}",
        capture.display()
    );
    assert!(stdout.contains("verification: PASS"), "{stdout}");
}

/// The lines of `stderr` that say recording stopped.
fn stop_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("recording stopped"))
        .collect()
}

#[test]
fn the_disk_budget_stops_recording_before_it_is_passed() {
    if !ready() {
        return;
    }
    let program = build_program("launches");
    let want = alone(&program, &[]);
    let dir = tempfile::tempdir().unwrap();
    let captures = dir.path().join("captures");
    let budget = 2u64 << 20;
    let out = record(&program, &captures, &["--max-disk", "2M"], &["3"]);
    let (stdout, stderr) = text(&out);
    // The program is unaffected: its own checks pass, its output and
    // status are what they are without reprise.
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert_eq!(stdout, want, "{stderr}");
    let stops = stop_lines(&stderr);
    assert_eq!(stops.len(), 1, "one line says recording stopped: {stderr}");
    assert!(
        stops[0].contains("disk budget of 2.0 MiB") && stops[0].contains("--max-disk"),
        "{stderr}"
    );
    // Some launches were recorded, not all 200, and the captures (their
    // manifests, descriptors and the store's files) stay within the budget.
    let found = descriptors(&captures);
    assert!(
        !found.is_empty() && found.len() < 200,
        "{} captures: {stderr}",
        found.len()
    );
    let bytes = file_bytes(&captures);
    assert!(bytes <= budget, "{bytes} bytes on disk, budget {budget}");
    assert_eq!(list_clean(&captures), found.len());
    replays(&found[0]);
    replays(found.last().unwrap());
}

#[test]
fn a_disk_size_that_cannot_be_read_is_refused_naming_the_option() {
    if !ready() {
        return;
    }
    let program = build_program("launches");
    let dir = tempfile::tempdir().unwrap();
    let out = record(&program, dir.path(), &["--max-disk", "12Q"], &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("--max-disk"), "{stderr}");
    assert!(descriptors(dir.path()).is_empty());
    // The variable, set wrong, names itself too: the interposer says so
    // and the program runs unrecorded.
    let out = record_env(
        &program,
        dir.path(),
        &[],
        &["3"],
        &[("REPRISE_RECORD_MAX_DISK", "lots")],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert!(stderr.contains("REPRISE_RECORD_MAX_DISK"), "{stderr}");
}

/// A tmpfs of `size` mounted on a fresh directory, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
    sudo: bool,
}

impl Tmpfs {
    /// Mounts one (as root, else through `sudo -n`); `None`, after saying
    /// why, where that is not allowed, unless `REPRISE_REQUIRE_TMPFS=1`.
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let opts = format!("size={size}");
        let args = [
            "mount",
            "-t",
            "tmpfs",
            "-o",
            &opts,
            "tmpfs",
            common::s(dir.path()),
        ];
        let mut why = String::new();
        for sudo in [false, true] {
            let mut cmd = if sudo {
                let mut c = Command::new("sudo");
                c.arg("-n").args(args);
                c
            } else {
                let mut c = Command::new(args[0]);
                c.args(&args[1..]);
                c
            };
            match cmd.output() {
                Ok(o) if o.status.success() => return Some(Tmpfs { dir, sudo }),
                Ok(o) => why = String::from_utf8_lossy(&o.stderr).trim().to_string(),
                Err(e) => why = format!("{}: {e}", if sudo { "sudo" } else { "mount" }),
            }
        }
        assert!(
            std::env::var("REPRISE_REQUIRE_TMPFS").as_deref() != Ok("1"),
            "REPRISE_REQUIRE_TMPFS=1 but a tmpfs cannot be mounted: {why}"
        );
        crate::common::skip(&format!("a tmpfs cannot be mounted here: {why}"), None);
        None
    }

    fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let target = self.dir.path().to_str().unwrap().to_string();
        let _ = if self.sudo {
            Command::new("sudo")
                .args(["-n", "umount", &target])
                .status()
        } else {
            Command::new("umount").arg(&target).status()
        };
    }
}

/// Free and total bytes of the file system holding `dir` (`df -B1`).
fn free_and_total(dir: &Path) -> (u64, u64) {
    let out = Command::new("df")
        .args(["-B1", "--output=avail,size"])
        .arg(dir)
        .output()
        .expect("df");
    let text = String::from_utf8_lossy(&out.stdout);
    let nums: Vec<u64> = text
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    (nums[0], nums[1])
}

#[test]
fn a_filling_disk_stops_recording_while_5_percent_is_free() {
    if !ready() {
        return;
    }
    let program = build_program("launches");
    let want = alone(&program, &[]);
    let Some(fs) = Tmpfs::mount("16m") else {
        return;
    };
    for format in ["raw", "store"] {
        let captures = fs.path().join(format);
        // The store keeps about a tenth of what raw files take: a larger
        // y (1 MiB) fills the 16 MiB in time.
        let elements = if format == "raw" { "16384" } else { "262144" };
        let want = if format == "raw" {
            want.clone()
        } else {
            alone(&program, &[("ELEMENTS", elements)])
        };
        let out = record_env(
            &program,
            &captures,
            &["--format", format],
            &["3"],
            &[("ELEMENTS", elements)],
        );
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(3), "{format}: {stdout}{stderr}");
        assert_eq!(stdout, want, "{format}: {stderr}");
        let stops = stop_lines(&stderr);
        assert_eq!(stops.len(), 1, "{format}: {stderr}");
        assert!(stops[0].contains("5% of its size"), "{format}: {stderr}");
        assert!(!stderr.contains("No space left"), "{format}: {stderr}");
        let (free, total) = free_and_total(&captures);
        assert!(
            free * 20 >= total,
            "{format}: {free} of {total} bytes free, under 5%"
        );
        let found = descriptors(&captures);
        assert!(!found.is_empty() && found.len() < 200, "{format}: {stderr}");
        assert_eq!(list_clean(&captures), found.len(), "{format}");
        replays(&found[0]);
        replays(found.last().unwrap());
        std::fs::remove_dir_all(&captures).unwrap();
    }
}
