//! `reprise tune` and the repeated replays it rests on: sweeps on the
//! simulated CUDA driver (or a real GPU with `REPRISE_GPU_TESTS=1`), the
//! refusals (the host executor, limits recorded in the capture), and
//! restores that leave the region and globals as recorded before every
//! repetition.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use reprise::RecordConfig;

const SAXPY: &[u8] = include_bytes!("../../backends/cuda/fixtures/saxpy.ptx");

/// The tests of this file share one process, and a recording or a replay
/// made in it holds the region's recorded address while it lasts: one at a
/// time, or a second one finds the address taken.
static REGION: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn region() -> std::sync::MutexGuard<'static, ()> {
    REGION
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Records one saxpy launch over `n` elements, 128 teams of 256 threads
/// (`n` = 32768 covers them exactly); returns the descriptor. Raw files:
/// tests read and change its recorded output.
fn record_saxpy(dir: &Path, n: usize) -> Option<PathBuf> {
    let _region = region();
    let config = RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20)
        .fsync(false)
        .format(reprise::CaptureFormat::Raw);
    record_gpu_saxpy(gpu()?, config, SAXPY, n, 1)
        .into_iter()
        .next()
}

#[test]
fn a_sweep_reports_the_fastest_verified_configuration_with_csv_json_and_a_plot() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_saxpy(dir.path(), 32768) else {
        return;
    };
    let csv = dir.path().join("sweep.csv");
    let svg = dir.path().join("sweep.svg");
    // 4 x 4 configurations: those with fewer threads than elements leave
    // elements undone (the kernel is not a grid-stride loop), so their
    // output differs; a block of 2048 threads is beyond the device.
    let out = reprise(&[
        "tune",
        s(&capture),
        "--num-teams",
        "64,128,256,512",
        "--num-threads",
        "128,256,512,2048",
        "--repetitions",
        "3",
        "--csv",
        s(&csv),
        "--plot",
        s(&svg),
    ]);
    let (stdout, stderr) = text(&out);
    eprintln!("{stdout}{stderr}");
    assert_exit(&out, 0);
    assert!(stdout.contains("16 configurations"), "{stdout}");
    assert!(stdout.contains("OUTPUT DIFFERS"), "{stdout}");
    assert!(
        stdout.contains("refused: block 2048x1x1 (2048 threads) exceeds"),
        "{stdout}"
    );
    assert!(stdout.contains("fastest: "), "{stdout}");
    // The CSV: a header and a row per configuration, each marked.
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 16, "{text}");
    fn status<'a>(r: &[&'a str]) -> &'a str {
        r[9]
    }
    let count = |w: &str| rows.iter().filter(|r| status(r) == w).count();
    // 128x256 (recorded), 128x512, 256x128, 256x256, 256x512, 512x*
    // (except 2048) cover 32768 elements: 9 verified.
    assert_eq!(count("verified"), 9, "{text}");
    assert_eq!(count("refused"), 4, "{text}");
    assert_eq!(count("differs"), 3, "{text}");
    assert_eq!(
        rows.iter().filter(|r| r[8] == "true").count(),
        1,
        "one recorded row"
    );
    // Ranked rows come first, fastest first; the best is the fastest
    // verified one.
    let medians: Vec<f64> = rows
        .iter()
        .filter(|r| status(r) == "verified")
        .map(|r| r[11].parse().unwrap())
        .collect();
    assert!(medians.windows(2).all(|w| w[0] <= w[1]), "{medians:?}");
    assert_eq!(rows[0][0], "1");
    // JSON agrees.
    let out = reprise(&[
        "tune",
        s(&capture),
        "--num-teams",
        "128,256",
        "--num-threads",
        "256,512",
        "--json",
    ]);
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_str(&text_of(&out)).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    let best = v["best"]["median_s"].as_f64().unwrap();
    for r in results {
        if r["status"] == "verified" {
            assert!(best <= r["median_s"].as_f64().unwrap(), "{v}");
        }
    }
    assert_eq!(v["recorded"]["grid"], serde_json::json!([128, 1, 1]));
    // The plot is an SVG naming the kernel.
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(
        plot.starts_with("<svg") && plot.contains("saxpy"),
        "{}",
        &plot[..100]
    );
}

fn text_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn configurations_outside_the_recorded_limits_are_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_saxpy(dir.path(), 32768) else {
        return;
    };
    edit_descriptor(&capture, |r| r.threads_limits = Some([128, 512]));
    let sweep = |extra: &[&str]| {
        let mut args = vec![
            "tune",
            s(&capture),
            "--num-threads",
            "64,256,1024",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = reprise(&args);
        assert_exit(&out, 0);
        serde_json::from_str::<serde_json::Value>(&text_of(&out)).unwrap()
    };
    let v = sweep(&[]);
    let refused: Vec<String> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "refused")
        .map(|r| r["detail"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        refused,
        [
            "threads 64 is outside the recorded ThreadsLimits [128, 512]",
            "threads 1024 is outside the recorded ThreadsLimits [128, 512]"
        ]
    );
    let v = sweep(&["--force"]);
    assert!(
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] != "refused"),
        "{v}"
    );
}

#[test]
fn tuning_on_the_host_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let config = RecordConfig::default().enabled(true).dir(dir.path());
    let capture = record_axpy(config, 256, 1).remove(0);
    let out = reprise(&["tune", s(&capture), "--num-threads", "1..8"]);
    assert_error(
        &out,
        &[
            "the host executor calls a kernel with its arguments only",
            "OMP_NUM_THREADS=N",
        ],
    );
}

#[test]
fn bad_lists_and_plot_names_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let config = RecordConfig::default().enabled(true).dir(dir.path());
    let capture = record_axpy(config, 256, 1).remove(0);
    for (args, want) in [
        (vec!["--num-threads", "64..32"], "ends before it starts"),
        (vec!["--num-teams", "0"], "must be at least 1"),
        (vec!["--num-threads", "1x2x3x4"], "at most three dimensions"),
        (vec!["--plot", "out.png"], "must end in .svg"),
        (vec!["--plot", "/no/such/dir/p.svg"], "does not exist"),
    ] {
        let mut all = vec!["tune", s(&capture)];
        all.extend(args);
        let out = reprise(&all);
        assert_exit(&out, 2);
        assert!(text(&out).1.contains(want), "{all:?}: {}", text(&out).1);
    }
}

#[test]
fn every_repetition_starts_from_the_recorded_region_and_globals() {
    // axpy computes y = alpha * x + y and counts its calls: a repetition
    // that ran on what the previous one left would verify as different.
    let dir = tempfile::tempdir().unwrap();
    let config = RecordConfig::default().enabled(true).dir(dir.path());
    let capture = {
        let _region = region();
        record_axpy(config, 4096, 1).remove(0)
    };
    let out = reprise(&["replay", "--verify", "--repetitions", "5", s(&capture)]);
    assert_exit(&out, 0);
    let stdout = text(&out).0;
    assert_eq!(stdout.matches("replay ").count(), 5, "{stdout}");
    assert!(stdout.contains("verification: PASS"), "{stdout}");
    // On a GPU, through the copy kept on the device.
    let Some(gpu_capture) = record_saxpy(dir.path(), 32768) else {
        return;
    };
    let out = reprise(&["replay", "--verify", "--repetitions", "4", s(&gpu_capture)]);
    assert_exit(&out, 0);
    let stdout = text(&out).0;
    assert!(
        stdout.contains("restored the region from a copy kept on the device"),
        "{stdout}"
    );
    assert!(stdout.contains("verification: PASS"), "{stdout}");
}

/// Runs `capture` `runs` times on one session, each run copying its output
/// back, and asserts that every run's output is the recorded one: a run
/// that started from what the one before it left would differ.
fn every_run_matches_the_recording<E: reprise::core::Executor>(
    exec: &E,
    descriptor: &Path,
    runs: u32,
) -> reprise::replayer::RestoreWay {
    let capture = reprise::Capture::open(descriptor).unwrap();
    let recorded = std::fs::read(&capture.paths.output).unwrap();
    let config =
        reprise::replayer::launch_config(&capture.record, &reprise::ReplayOptions::default())
            .unwrap();
    reprise::block_on(async {
        let mut session = reprise::replayer::Session::new(exec, &capture, runs)
            .await
            .unwrap();
        for run in 0..runs {
            session.run(config, true).await.unwrap();
            let output = session.output().expect("the run copied its output back");
            assert!(
                output == &recorded[..],
                "run {run} of {runs}: the output differs from the recording"
            );
        }
        session.restore_way()
    })
}

#[test]
fn every_run_of_a_session_starts_from_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let config = RecordConfig::default()
        .enabled(true)
        .dir(dir.path())
        .format(reprise::CaptureFormat::Raw);
    {
        let _region = region();
        let host_capture = record_axpy(config, 4096, 1).remove(0);
        let host = reprise::HostExecutor::new().unwrap();
        every_run_matches_the_recording(&host, &host_capture, 6);
    }
    let Some(gpu_capture) = record_saxpy(dir.path(), 32768) else {
        return;
    };
    let _region = region();
    let gpu = gpu().unwrap();
    let way = every_run_matches_the_recording(&gpu, &gpu_capture, 6);
    assert_eq!(way, reprise::replayer::RestoreWay::DeviceCopy, "{way:?}");
}

#[test]
fn a_sweep_with_no_verified_configuration_is_no_success() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_saxpy(dir.path(), 32768) else {
        return;
    };
    let sweep = || {
        reprise(&[
            "tune",
            s(&capture),
            "--num-threads",
            "128,256",
            "--repetitions",
            "1",
        ])
    };
    // Every configuration refused, the recorded one (256) included.
    edit_descriptor(&capture, |r| r.threads_limits = Some([1024, 1024]));
    assert_error(&sweep(), &["no configuration ran"]);
    // Every output differs from a recorded output changed after the fact.
    edit_descriptor(&capture, |r| r.threads_limits = None);
    corrupt_output(&capture, 4);
    let out = sweep();
    assert_exit(&out, 1);
    assert!(
        text(&out).1.contains("every output differs"),
        "{:?}",
        text(&out)
    );
}
