//! The command line's own files (results, baselines, plans, plots), as an
//! attacker plants them: a FIFO or a device where a file is read is
//! refused at once (never waited on, never read without end), and a link
//! planted where a file is written is replaced, never written through.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use reprise::RecordConfig;

const SAXPY: &[u8] = include_bytes!("../../backends/cuda/fixtures/saxpy.ptx");

/// One axpy host capture in `dir`.
fn host_capture(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let config = RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20)
        .fsync(false);
    record_axpy(config, 64, 1).remove(0)
}

fn fifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Runs `reprise args` (a hang fails the test: see `RUN_LIMIT`), and
/// checks that it exits 2 saying `said`.
fn refused(args: &[&str], said: &str) {
    let out = reprise(args);
    assert_exit(&out, 2);
    let (_, stderr) = text(&out);
    assert!(stderr.contains(said), "{stderr}");
}

#[test]
fn a_baseline_or_results_file_that_is_no_regular_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    host_capture(&corpus);
    let pipe = dir.path().join("pipe.jsonl");
    fifo(&pipe);
    let results = dir.path().join("r.jsonl");
    for baseline in [s(&pipe), "/dev/zero"] {
        refused(
            &[
                "check",
                s(&corpus),
                "--results",
                s(&results),
                "--baseline",
                baseline,
            ],
            "not a regular file",
        );
    }
    // The results file resumed from, and written to.
    refused(
        &["check", s(&corpus), "--results", s(&pipe), "--resume"],
        "pipe.jsonl",
    );
}

#[test]
fn tune_reads_no_fifo_and_writes_through_no_planted_link() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_one_gpu_saxpy(dir.path(), SAXPY, 32768) else {
        return;
    };
    let lists = [
        "--num-teams",
        "64,128",
        "--num-threads",
        "128,256",
        "--repetitions",
        "1",
        "--warmup",
        "0",
    ];
    let tune = |extra: &[&str]| {
        let mut all = vec!["tune", s(&capture)];
        all.extend(lists);
        all.extend(extra);
        reprise(&all)
    };
    // A FIFO as the results file resumed.
    let pipe = dir.path().join("rows.jsonl");
    fifo(&pipe);
    let out = tune(&["--resume", s(&pipe)]);
    assert_exit(&out, 2);
    assert!(
        text(&out).1.contains("not a regular file"),
        "{}",
        text(&out).1
    );

    // The plot's name and every worker's plan name planted as links to a
    // file that must stay as it is.
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"untouched").unwrap();
    let svg = dir.path().join("plot.svg");
    std::os::unix::fs::symlink(&victim, &svg).unwrap();
    let rows = dir.path().join("w.jsonl");
    for k in 0..2 {
        let mut plan = rows.as_os_str().to_owned();
        plan.push(format!(".worker-{k}.plan.json"));
        std::os::unix::fs::symlink(&victim, PathBuf::from(plan)).unwrap();
    }
    let out = reprise_env(
        &[
            &["tune", s(&capture)][..],
            &lists,
            &[
                "--sampler",
                "random",
                "--trials",
                "3",
                "--workers",
                "auto",
                "--rows",
                s(&rows),
            ],
        ]
        .concat(),
        &[("REPRISE_SIM_CUDA_DEVICES", "2")],
    );
    assert_exit(&out, 0);
    let out = tune(&["--plot", s(&svg)]);
    assert_exit(&out, 0);
    assert_eq!(std::fs::read(&victim).unwrap(), b"untouched");
    let svg_meta = std::fs::symlink_metadata(&svg).unwrap();
    assert!(svg_meta.is_file(), "the plot replaced the link");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
}
