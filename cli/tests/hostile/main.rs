//! Hostile input: captures from someone else's run, damaged in every way
//! an attacker or a bad disk would, generated from good captures of every
//! format (LLVM legacy, LLVM current, reprise's own). Every case ends
//! cleanly: exit 2 naming a file of the capture (or 1 where the capture is
//! whole and its replay only differs, or 0 where the damage changed
//! nothing that matters), never a panic, never a signal, within a time
//! limit and an address-space limit. A capture that carries checksums
//! (reprise's) never replays damaged data: every data-file case exits 2.
//!
//! The good captures, the limits runs are held to and the check of how a
//! case ended are here, the cases by subject in the modules.

#[path = "../common/mod.rs"]
mod common;

mod checksums;
mod damaged;
mod killed;
mod limits;
mod shared_ranges;
mod static_checks;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::*;
use reprise::core::record::Generation;

const BASE: u64 = 0x1539_4000_0000;

/// Each run may take this long...
const LIMIT: Duration = Duration::from_secs(20);
/// ... and map this much address space (`ulimit -v`, KiB): a replay
/// reserves the recorded region (1 GiB for reprise's captures, and LLVM's
/// 64 GiB only when it can), so an unbounded read or allocation fails.
const ADDRESS_SPACE_KIB: u64 = 3 << 20;

/// Runs `reprise ARGS` under the limits, in `dir`.
fn run(dir: &Path, args: &[&str]) -> Output {
    run_within(dir, args, ADDRESS_SPACE_KIB)
}

/// Runs `reprise ARGS` in `dir` with `kib` KiB of address space.
fn run_within(dir: &Path, args: &[&str], kib: u64) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!(r#"ulimit -v {kib} && exec "$0" "$@""#))
        .arg(reprise_bin())
        .args(args)
        .current_dir(dir)
        .env("RUST_BACKTRACE", "0");
    output_within(&mut cmd, LIMIT)
}

/// The files of a good capture, kept in memory so that each case starts
/// from them.
#[derive(Clone)]
struct Original {
    name: &'static str,
    /// (file name, bytes), the descriptor first.
    files: Vec<(String, Vec<u8>)>,
    checksummed: bool,
}

impl Original {
    fn read(name: &'static str, descriptor: &Path, checksummed: bool) -> Self {
        let dir = descriptor.parent().unwrap();
        let stem = descriptor
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("{stem}."))
            })
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect();
        files.sort_by_key(|(n, _)| !n.ends_with(".json"));
        Original {
            name,
            files,
            checksummed,
        }
    }

    fn descriptor(&self) -> &str {
        &self.files[0].0
    }

    /// The file whose name ends with `ext`.
    fn file(&self, ext: &str) -> &str {
        &self
            .files
            .iter()
            .find(|(n, _)| n.ends_with(&format!(".{ext}")))
            .unwrap_or_else(|| panic!("{}: no .{ext}", self.name))
            .0
    }

    /// Writes the capture into a fresh directory under `root`.
    fn write(&self, root: &Path, case: usize) -> PathBuf {
        let dir = root.join(format!("{}-{case}", self.name));
        std::fs::create_dir(&dir).unwrap();
        for (n, bytes) in &self.files {
            std::fs::write(dir.join(n), bytes).unwrap();
        }
        dir
    }
}

/// The three good captures: LLVM legacy and current fixtures, written from
/// the format description alone, and one recorded by reprise.
fn originals(root: &Path) -> Vec<Original> {
    let mut out = Vec::new();
    for (name, generation) in [
        ("legacy", Generation::LlvmLegacy),
        ("current", Generation::LlvmCurrent),
    ] {
        let dir = root.join(format!("good-{name}"));
        std::fs::create_dir(&dir).unwrap();
        let f = llvm_fixture(&dir, generation, BASE, 256);
        out.push(Original::read(name, &f.descriptor, false));
    }
    let dir = root.join("good-reprise");
    let written = record_axpy(
        reprise::RecordConfig::default()
            .enabled(true)
            .dir(&dir)
            .fsync(false)
            .region_size(1 << 30)
            .format(reprise::CaptureFormat::Raw),
        256,
        1,
    );
    out.push(Original::read("reprise", &written[0], true));
    out
}

/// What a case damages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Damages {
    /// The descriptor.
    Descriptor,
    /// A data file (snapshot, globals, image): under checksums, exit 2.
    Data,
}

/// Set by [`check`] when a replay reported that the process running the
/// image died (the image crashed while loaded, where no guard reaches).
static ISOLATED_CRASHES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Runs `reprise replay --verify` on a damaged capture in `dir` and checks
/// it ended cleanly; returns the exit status.
fn check(o: &Original, dir: &Path, case: &str, damages: Damages) -> i32 {
    let descriptor = dir.join(o.descriptor());
    let out = run(dir, &["replay", "--verify", s(&descriptor)]);
    let (stdout, stderr) = text(&out);
    let code = out.status.code().unwrap_or_else(|| {
        panic!(
            "{}: {case}: killed by a signal ({:?})\nstderr:\n{stderr}",
            o.name, out.status
        )
    });
    assert!(
        !stderr.contains("panicked"),
        "{}: {case}: panicked:\n{stderr}",
        o.name
    );
    assert!(
        matches!(code, 0..=2),
        "{}: {case}: exit {code}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        o.name
    );
    if code == 2 {
        assert!(
            stderr.contains(&dir.display().to_string()),
            "{}: {case}: the error names no file of the capture:\n{stderr}",
            o.name
        );
    }
    if stderr.contains("the process that loaded and ran this image") {
        ISOLATED_CRASHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        assert!(
            stderr.contains(&format!("{}: ", dir.join(o.file("image")).display())),
            "{}: {case}: the crash names no image:\n{stderr}",
            o.name
        );
    }
    if o.checksummed && damages == Damages::Data {
        assert_eq!(
            code, 2,
            "{}: {case}: damaged data replayed:\n{stdout}",
            o.name
        );
    }
    code
}
