//! `reprise tune` as a search on the simulated CUDA driver (or a real GPU
//! with `REPRISE_GPU_TESTS=1`): the seeded random sampler, the cap on
//! trials, resuming a study from its results file, the time budget,
//! workers capped at the device count, and bad values refused.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::*;

const SAXPY: &[u8] = include_bytes!("../../backends/cuda/fixtures/saxpy.ptx");

/// Records one saxpy launch over 32768 elements, 128 teams of 256 threads.
fn record_saxpy(dir: &Path) -> Option<PathBuf> {
    record_one_gpu_saxpy(dir, SAXPY, 32768)
}

/// The lists of the tests' searches: 4 x 4 = 16 configurations, the
/// recorded 128 x 256 among them.
const LISTS: [&str; 4] = [
    "--num-teams",
    "64,128,256,512",
    "--num-threads",
    "128,256,512,1024",
];

/// Runs `tune capture LISTS args` with one timed run, no warm-up.
fn tune(capture: &Path, args: &[&str]) -> std::process::Output {
    tune_env(capture, args, &[])
}

fn tune_env(capture: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut all = vec!["tune", s(capture)];
    all.extend(LISTS);
    all.extend(["--repetitions", "1", "--warmup", "0"]);
    all.extend(args);
    let out = reprise_env(&all, env);
    let (o, e) = text(&out);
    eprintln!("{o}{e}");
    out
}

/// The configurations (grid x, block x) of a results file's rows, in the
/// file's order; the header is checked to be its first line.
fn rows_of(path: &Path) -> Vec<(u32, u32)> {
    result_rows(path)
        .iter()
        .map(|v| {
            (
                v["grid"][0].as_u64().unwrap() as u32,
                v["block"][0].as_u64().unwrap() as u32,
            )
        })
        .collect()
}

#[test]
fn one_seed_draws_the_same_candidates_in_the_same_order_another_seed_others() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_saxpy(dir.path()) else {
        return;
    };
    let run = |seed: &str, name: &str| {
        let rows = dir.path().join(name);
        let out = tune(
            &capture,
            &[
                "--sampler",
                "random",
                "--trials",
                "5",
                "--seed",
                seed,
                "--rows",
                s(&rows),
            ],
        );
        assert_exit(&out, 0);
        assert!(
            text(&out)
                .0
                .contains(&format!("random sample (seed {seed}) of 5 of the 16")),
            "{}",
            text(&out).0
        );
        rows_of(&rows)
    };
    let a = run("7", "a.jsonl");
    let b = run("7", "b.jsonl");
    let c = run("8", "c.jsonl");
    // The recorded configuration first (always measured), then the draw.
    assert_eq!(a[0], (128, 256), "{a:?}");
    assert!((5..=6).contains(&a.len()), "{a:?}");
    let distinct: BTreeSet<_> = a.iter().collect();
    assert_eq!(distinct.len(), a.len(), "drawn without replacement: {a:?}");
    assert_eq!(a, b, "the same seed, the same candidates in the same order");
    assert_ne!(a, c, "another seed, other candidates");
}

#[test]
fn more_trials_than_the_product_are_capped_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_saxpy(dir.path()) else {
        return;
    };
    let rows = dir.path().join("all.jsonl");
    let out = tune(
        &capture,
        &["--sampler", "random", "--trials", "100", "--rows", s(&rows)],
    );
    assert_exit(&out, 0);
    let (stdout, stderr) = text(&out);
    assert!(
        stderr.contains("--trials 100 is more than the 16 configuration(s)")
            && stderr.contains("capped at 16"),
        "{stderr}"
    );
    assert!(
        stdout.contains("of 16 of the 16 configurations"),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("search space: 4 (--num-teams) x 4 (--num-threads) x 1 (--shared-mem) = 16"),
        "{stdout}"
    );
    let got: BTreeSet<_> = rows_of(&rows).into_iter().collect();
    assert_eq!(got.len(), 16, "every configuration once");
    // The results file is refused as the start of a new study.
    let again = tune(&capture, &["--rows", s(&rows)]);
    assert_exit(&again, 2);
    assert!(
        text(&again).1.contains("the results file exists") && text(&again).1.contains("--resume"),
        "{}",
        text(&again).1
    );
}

#[test]
fn a_resumed_study_measures_only_what_its_results_file_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_saxpy(dir.path()) else {
        return;
    };
    let full = dir.path().join("full.jsonl");
    let out = tune(&capture, &["--sampler", "grid", "--rows", s(&full)]);
    assert_exit(&out, 0);
    let whole = rows_of(&full);
    assert_eq!(whole.len(), 16);
    // A study killed after two rows, in the middle of writing a third.
    let text_full = std::fs::read_to_string(&full).unwrap();
    let lines: Vec<&str> = text_full.lines().collect();
    let part = dir.path().join("part.jsonl");
    let cut = &lines[3][..lines[3].len() / 2];
    std::fs::write(
        &part,
        format!("{}\n{}\n{}\n{cut}", lines[0], lines[1], lines[2]),
    )
    .unwrap();
    let out = tune(&capture, &["--resume", s(&part)]);
    assert_exit(&out, 0);
    let (stdout, stderr) = text(&out);
    assert!(
        stdout.contains("2 configuration(s) already measured, 14 to measure"),
        "{stdout}"
    );
    assert!(stderr.contains("cut short"), "{stderr}");
    let resumed = rows_of(&part);
    // The two kept, then only the other 14: none measured twice.
    assert_eq!(resumed.len(), 16, "{resumed:?}");
    assert_eq!(resumed[..2], whole[..2]);
    let a: BTreeSet<_> = resumed.iter().collect();
    let b: BTreeSet<_> = whole.iter().collect();
    assert_eq!(a, b, "the union is the full run's configurations");
    // The table ranks all 16, old and new.
    let ranked = stdout
        .lines()
        .filter(|l| l.contains(" x ") && l.contains("x1x1"))
        .count();
    assert_eq!(ranked, 16, "{stdout}");
    // Resumed again, nothing is left to measure.
    let out = tune(&capture, &["--resume", s(&part)]);
    assert_exit(&out, 0);
    assert!(
        text(&out)
            .0
            .contains("16 configuration(s) already measured, 0 to measure"),
        "{}",
        text(&out).0
    );
    assert_eq!(rows_of(&part).len(), 16);
    // A line in the middle that is no row is an error naming the file and
    // the line; a missing file is named too.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, format!("{}\nnot json\n{}\n", lines[0], lines[1])).unwrap();
    let out = tune(&capture, &["--resume", s(&bad)]);
    assert_exit(&out, 2);
    let stderr = text(&out).1;
    assert!(
        stderr.contains("bad.jsonl") && stderr.contains("line 2 is neither a header nor a row"),
        "{stderr}"
    );
    let out = tune(&capture, &["--resume", s(&dir.path().join("absent.jsonl"))]);
    assert_exit(&out, 2);
    assert!(text(&out).1.contains("absent.jsonl"), "{}", text(&out).1);
}

#[test]
fn a_time_budget_stops_drawing_candidates_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_saxpy(dir.path()) else {
        return;
    };
    let rows = dir.path().join("t.jsonl");
    // A budget spent by the time the first configuration is measured.
    let out = tune(
        &capture,
        &[
            "--sampler",
            "random",
            "--trials",
            "12",
            "--time-budget",
            "1ms",
            "--rows",
            s(&rows),
        ],
    );
    assert_exit(&out, 0);
    let stdout = text(&out).0;
    assert!(
        stdout.contains("time budget of") && stdout.contains("no new candidates were drawn"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the table holds what was measured"),
        "{stdout}"
    );
    let got = rows_of(&rows);
    assert!(!got.is_empty() && got.len() < 13, "{got:?}");
}

#[test]
fn workers_are_capped_at_the_device_count() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_saxpy(dir.path()) else {
        return;
    };
    let rows = dir.path().join("w.jsonl");
    let out = tune(
        &capture,
        &["--workers", "4", "--trials", "3", "--rows", s(&rows)],
    );
    assert_exit(&out, 0);
    let devices = if std::env::var_os("REPRISE_GPU_TESTS").is_some() {
        None
    } else {
        Some(1)
    };
    if let Some(n) = devices {
        assert!(
            text(&out).1.contains(&format!(
                "workers capped at the device count ({n} visible device)"
            )),
            "{}",
            text(&out).1
        );
    }
    // The grid's first 3, the recorded one among them.
    let got: BTreeSet<_> = rows_of(&rows).into_iter().collect();
    let want: BTreeSet<_> = [(64, 128), (64, 256), (64, 512), (128, 256)].into();
    assert_eq!(got, want);
}

#[test]
fn workers_on_two_simulated_devices_measure_each_configuration_once() {
    if std::env::var_os("REPRISE_GPU_TESTS").is_some() {
        crate::common::skip("the simulator's device count is what this test sets", None);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_saxpy(dir.path()) else {
        return;
    };
    let rows = dir.path().join("two.jsonl");
    let out = tune_env(
        &capture,
        &[
            "--sampler",
            "random",
            "--trials",
            "6",
            "--seed",
            "3",
            "--workers",
            "auto",
            "--rows",
            s(&rows),
        ],
        &[("REPRISE_SIM_CUDA_DEVICES", "2")],
    );
    assert_exit(&out, 0);
    assert!(!text(&out).1.contains("capped"), "{}", text(&out).1);
    assert!(
        text(&out)
            .0
            .contains("2 workers, one configuration at a time on each of devices 0 to 1"),
        "{}",
        text(&out).0
    );
    let got = rows_of(&rows);
    let set: BTreeSet<_> = got.iter().collect();
    assert_eq!(set.len(), got.len(), "no configuration twice: {got:?}");
    assert!(set.contains(&(128, 256)), "the recorded row once: {got:?}");
    assert!((6..=7).contains(&got.len()), "{got:?}");
    // The same seed on one device: the same configurations.
    let one = dir.path().join("one.jsonl");
    let out = tune(
        &capture,
        &[
            "--sampler",
            "random",
            "--trials",
            "6",
            "--seed",
            "3",
            "--rows",
            s(&one),
        ],
    );
    assert_exit(&out, 0);
    let single: BTreeSet<_> = rows_of(&one).into_iter().collect();
    assert_eq!(single, got.into_iter().collect::<BTreeSet<_>>());
}

#[test]
fn a_random_search_spread_over_shards_merges_into_the_sample_of_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_saxpy(dir.path()) else {
        return;
    };
    let sample = ["--sampler", "random", "--trials", "7", "--seed", "11"];
    let one = dir.path().join("one.jsonl");
    let mut args = sample.to_vec();
    args.extend(["--rows", s(&one)]);
    assert_exit(&tune(&capture, &args), 0);
    let whole: BTreeSet<_> = rows_of(&one).into_iter().collect();
    let shards = dir.path().join("shards");
    let mut union = Vec::new();
    let run = |extra: &[&str]| tune(&capture, &[&sample[..], extra].concat());
    for (rows, out) in tune_shards(&shards, 3, run) {
        assert_exit(&out, 0);
        union.extend(rows_of(&rows));
    }
    let set: BTreeSet<_> = union.iter().copied().collect();
    assert_eq!(
        set.len(),
        union.len(),
        "each configuration in one shard: {union:?}"
    );
    assert_eq!(set, whole, "the shards hold the one run's sample");
    let mut args = sample.to_vec();
    let merge = s(&shards).to_string();
    args.extend(["--merge", &merge, "--json"]);
    let out = tune(&capture, &args);
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_str(&text(&out).0).unwrap();
    assert_eq!(v["results"].as_array().unwrap().len(), whole.len(), "{v}");
}

#[test]
fn bad_search_values_exit_2_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("none.json");
    for (args, want) in [
        (
            &["--sampler", "foo"][..],
            "invalid value 'foo' for '--sampler",
        ),
        (&["--trials", "0"][..], "the number of trials is at least 1"),
        (&["--trials", "many"][..], "is not a number of trials"),
        (&["--time-budget", "0s"][..], "a time budget is more than 0"),
        (&["--time-budget", "soon"][..], "is not a duration"),
        (
            &["--workers", "0"][..],
            "the number of workers is at least 1",
        ),
    ] {
        let mut all = vec!["tune", s(&capture)];
        all.extend(args);
        let out = reprise(&all);
        assert_exit(&out, 2);
        let stderr = text(&out).1;
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

#[test]
fn a_search_and_a_merge_of_its_shards_plot_every_configuration_timed() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_saxpy(dir.path()) else {
        return;
    };
    let rows = dir.path().join("r.jsonl");
    let svg = dir.path().join("p.svg");
    let sample = ["--sampler", "random", "--trials", "3", "--seed", "5"];
    let out = tune(
        &capture,
        &[&sample[..], &["--rows", s(&rows), "--plot", s(&svg)]].concat(),
    );
    assert_exit(&out, 0);
    assert!(text(&out).0.contains("plotted"), "{}", text(&out).0);
    // A bar (its x label, grid x block) for each row of the results file.
    let got = rows_of(&rows);
    assert!((3..=4).contains(&got.len()), "{got:?}");
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(
        plot.starts_with("<svg") && plot.contains("saxpy"),
        "{}",
        &plot[..100]
    );
    for (g, b) in &got {
        assert!(svg_text(&plot, &format!("{g}x{b}")), "no bar for {g}x{b}");
    }
    // The merge of the shards plots the same bars.
    let shards = dir.path().join("shards");
    let run = |extra: &[&str]| tune(&capture, &[&sample[..], extra].concat());
    for (_, out) in tune_shards(&shards, 2, run) {
        assert!(matches!(out.status.code(), Some(0 | 2)), "{out:?}");
    }
    let merged = dir.path().join("merged.svg");
    let out = tune(
        &capture,
        &[&sample[..], &["--merge", s(&shards), "--plot", s(&merged)]].concat(),
    );
    assert_exit(&out, 0);
    let plot = std::fs::read_to_string(&merged).unwrap();
    for (g, b) in &got {
        assert!(
            svg_text(&plot, &format!("{g}x{b}")),
            "merged: no bar for {g}x{b}"
        );
    }
}
