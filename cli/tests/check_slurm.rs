//! `reprise check --slurm` and `reprise tune --slurm` on a real Slurm
//! cluster (one node is enough: scripts/slurm-up.sh starts one), and the
//! sharded sweep and the Slurm errors that need no cluster.
//!
//! The cluster tests skip with a message when `sinfo` is absent or shows
//! no node that takes work, unless REPRISE_REQUIRE_SLURM=1 (CI), where that fails.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use reprise::RecordConfig;
use serde_json::Value;

const SAXPY: &[u8] = include_bytes!("../../backends/cuda/fixtures/saxpy.ptx");

fn config(dir: &Path) -> RecordConfig {
    std::fs::create_dir_all(dir).unwrap();
    RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20)
        .fsync(false)
        .format(reprise::CaptureFormat::Raw)
}

/// The shard of 4 that the capture at `path` (under `root`) is in.
fn shard_of(root: &Path, path: &Path) -> u64 {
    let name = path.strip_prefix(root).unwrap().display().to_string();
    reprise::core::record::checksum(name.as_bytes()) % 4
}

/// The corpus: 200 host captures under `root` (160 axpy, 40 check_modes),
/// one whose recorded output was changed (it differs), one that hangs,
/// and the check_modes ones of shard 2 of 4 slowed to 100 ms a replay
/// (so that shard's task can be cancelled midway). Returns the differing
/// and the hanging capture.
fn corpus(root: &Path) -> (PathBuf, PathBuf) {
    let axpy = record_axpy(config(&root.join("axpy")), 64, 160);
    let modes = record_check_modes(config(&root.join("modes")), 16, 40);
    assert_eq!(axpy.len() + modes.len(), 200);
    corrupt_output(&axpy[7], 4);
    let hang = modes
        .iter()
        .find(|d| shard_of(root, d) != 2)
        .unwrap()
        .clone();
    set_check_mode(&hang, 1);
    let slow: Vec<&PathBuf> = modes.iter().filter(|d| shard_of(root, d) == 2).collect();
    assert!(slow.len() >= 4, "{} slow captures", slow.len());
    for d in slow {
        set_check_mode(d, 4);
    }
    (axpy[7].clone(), hang)
}

const OPTIONS: [&str; 4] = ["--timeout", "3", "--repetitions", "1"];

/// `reprise check ARGS --json OPTIONS`: exit status, summary, stderr.
fn check(args: &[&str]) -> (i32, Value, String) {
    let mut all = vec!["check", "--json"];
    all.extend_from_slice(args);
    all.extend_from_slice(&OPTIONS);
    let out = reprise(&all);
    let (stdout, stderr) = text(&out);
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}\nstderr:\n{stderr}"));
    (out.status.code().unwrap(), v, stderr)
}

/// Each result's path and status.
fn statuses(v: &Value) -> BTreeMap<String, String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// How many result lines each capture has in the shards' files of `dir`.
fn lines_per_capture(dir: &Path) -> BTreeMap<String, usize> {
    let mut n = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "jsonl") {
            for l in std::fs::read_to_string(e.path()).unwrap().lines() {
                let v: Value = serde_json::from_str(l).unwrap();
                *n.entry(v["path"].as_str().unwrap().to_string())
                    .or_default() += 1;
            }
        }
    }
    n
}

fn job_id(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("job.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    Some(
        v["submissions"].as_array()?.last()?["job_id"]
            .as_str()?
            .to_string(),
    )
}

fn run(tool: &str, args: &[&str]) {
    let o = Command::new(tool).args(args).output().unwrap();
    assert!(o.status.success(), "{tool} {args:?}: {o:?}");
}

#[test]
fn a_corpus_checked_as_a_job_array_is_the_local_check_and_a_cancelled_task_resumes() {
    if !slurm() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("corpus");
    let (differs, hang) = corpus(&root);

    let local_results = dir.path().join("local.jsonl");
    let (code, local, _) = check(&[s(&root), "--results", s(&local_results)]);
    assert_eq!(code, 2, "a timeout: {local:#}");
    let want = statuses(&local);
    assert_eq!(want.len(), 200);
    assert_eq!(want[s(&differs)], "differs");
    assert_eq!(want[s(&hang)], "timeout");
    assert_eq!(want.values().filter(|s| *s == "passed").count(), 198);

    // The whole corpus as 4 array tasks: the same statuses.
    let results = dir.path().join("slurm/run.jsonl");
    std::fs::create_dir_all(results.parent().unwrap()).unwrap();
    let (code, merged, stderr) = check(&[
        s(&root),
        "--slurm",
        "--array-size",
        "4",
        "--results",
        s(&results),
    ]);
    assert_eq!(code, 2, "{merged:#}\n{stderr}");
    assert_eq!(statuses(&merged), want, "{stderr}");
    assert_eq!(merged["counts"], local["counts"]);
    assert!(stderr.contains("submitted job"), "{stderr}");
    let job = dir.path().join("slurm/run.slurm");
    let script = std::fs::read_to_string(job.join("check.sbatch")).unwrap();
    assert!(
        script.contains("--shard \"$SLURM_ARRAY_TASK_ID/4\""),
        "{script}"
    );
    assert!(script.contains("--timeout 3"), "{script}");
    for k in 0..4 {
        assert!(job.join(format!("shard-{k}-of-4.jsonl")).is_file());
    }
    // The merged results file is every capture's line.
    assert_eq!(
        std::fs::read_to_string(&results).unwrap().lines().count(),
        200
    );
    // --merge alone gives the same.
    let out = reprise(&["check", "--json", "--merge", s(&job)]);
    let again: Value = serde_json::from_str(&text(&out).0).unwrap();
    assert_eq!(statuses(&again), want);

    // Held, then one task cancelled midway: it is named, and --resume
    // completes the result checking nothing twice.
    let results = dir.path().join("cancel/run.jsonl");
    std::fs::create_dir_all(results.parent().unwrap()).unwrap();
    let job = dir.path().join("cancel/run.slurm");
    let mut args: Vec<&str> = vec!["check", "--json", s(&root), "--slurm"];
    args.extend([
        "--array-size",
        "4",
        "--sbatch-arg=--hold",
        "--results",
        s(&results),
    ]);
    args.extend(OPTIONS);
    let mut cmd = Command::new(reprise_bin());
    cmd.args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null());
    let child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let id = loop {
        if let Some(id) = job_id(&job) {
            break id;
        }
        assert!(Instant::now() < deadline, "no job submitted");
        std::thread::sleep(Duration::from_millis(20));
    };
    run("scontrol", &["release", &id]);
    let shard2 = job.join("shard-2-of-4.jsonl");
    // Cancelled once it has checked one of its slow captures.
    while !std::fs::read_to_string(&shard2).is_ok_and(|t| t.contains("/modes/")) {
        assert!(Instant::now() < deadline, "shard 2 checked nothing slow");
        std::thread::sleep(Duration::from_millis(10));
    }
    run("scancel", &[&format!("{id}_2")]);
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("INCOMPLETE shard 2/4") && stderr.contains("CANCELLED"),
        "{stderr}"
    );
    let partial = std::fs::read_to_string(&shard2).unwrap();
    let before = partial.lines().count();
    let in_shard2 = want
        .keys()
        .filter(|p| shard_of(&root, Path::new(p)) == 2)
        .count();
    assert!(before > 0 && before < in_shard2, "{before} of {in_shard2}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let failed = v["counts"]["failed"].as_u64().unwrap() as usize;
    assert_eq!(failed, in_shard2 - before, "the captures left are named");

    let (code, resumed, stderr) =
        check(&[s(&root), "--slurm", "--resume", "--results", s(&results)]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("resuming: 1 of the 4 shards are incomplete"),
        "{stderr}"
    );
    assert_eq!(statuses(&resumed), want, "{stderr}");
    let per = lines_per_capture(&job);
    assert_eq!(per.len(), 200);
    assert!(per.values().all(|&n| n == 1), "checked twice: {per:?}");
    assert!(
        std::fs::read_to_string(&shard2)
            .unwrap()
            .starts_with(&partial)
    );
}

/// The CSV rows of a sweep without their times and ranks: configuration,
/// recorded, status and detail.
fn rows_of(csv: &str) -> BTreeSet<String> {
    csv.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.splitn(15, ',').collect();
            format!("{} {}", f[1..10].join(","), f[14])
        })
        .collect()
}

/// The CSV's ranked rows' medians are in order, and its rows are ranked,
/// then the rest.
fn assert_ranked(csv: &str) {
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let ranked: Vec<f64> = rows
        .iter()
        .take_while(|r| !r[0].is_empty())
        .map(|r| r[11].parse().unwrap())
        .collect();
    assert!(!ranked.is_empty(), "{csv}");
    assert!(ranked.windows(2).all(|w| w[0] <= w[1]), "{csv}");
    assert!(
        rows.iter().skip(ranked.len()).all(|r| r[0].is_empty()),
        "{csv}"
    );
}

fn record_saxpy(dir: &Path) -> Option<PathBuf> {
    record_gpu_saxpy(gpu()?, config(dir), SAXPY, 32768, 1)
        .into_iter()
        .next()
}

const LISTS: [&str; 6] = [
    "--num-teams",
    "64,128,256,512",
    "--num-threads",
    "128,256,512,2048",
    "--repetitions",
    "2",
];

fn tune(args: &[&str]) -> String {
    let mut all = vec!["tune"];
    all.extend_from_slice(args);
    all.extend_from_slice(&LISTS);
    let out = reprise(&all);
    let (stdout, stderr) = text(&out);
    assert_exit(&out, 0);
    format!("{stdout}{stderr}")
}

#[test]
fn a_sharded_sweep_merges_into_the_rows_of_the_whole_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_saxpy(&dir.path().join("c")) else {
        return;
    };
    let local = dir.path().join("local.csv");
    tune(&[s(&capture), "--csv", s(&local)]);
    let local = std::fs::read_to_string(&local).unwrap();
    assert_eq!(rows_of(&local).len(), 16, "{local}");
    let shards = dir.path().join("shards");
    std::fs::create_dir(&shards).unwrap();
    for k in 0..3 {
        let rows = shards.join(format!("{k}.jsonl"));
        tune(&[
            s(&capture),
            "--shard",
            &format!("{k}/3"),
            "--rows",
            s(&rows),
        ]);
    }
    let merged = dir.path().join("merged.csv");
    let said = tune(&[s(&capture), "--merge", s(&shards), "--csv", s(&merged)]);
    let merged = std::fs::read_to_string(&merged).unwrap();
    assert_eq!(rows_of(&merged), rows_of(&local), "{said}");
    assert_ranked(&merged);
    assert!(said.contains("fastest: "), "{said}");
    // A shard missing is said, and the merge is no success.
    std::fs::remove_file(shards.join("1.jsonl")).unwrap();
    let mut all = vec!["tune", s(&capture), "--merge", s(&shards)];
    all.extend(LISTS);
    let out = reprise(&all);
    assert_error(&out, &["INCOMPLETE shard 1/3: no rows file"]);
}

#[test]
fn a_sweep_as_a_job_array_gives_the_rows_of_the_local_sweep() {
    if !slurm() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_saxpy(&dir.path().join("c")) else {
        return;
    };
    let local = dir.path().join("local.csv");
    tune(&[s(&capture), "--csv", s(&local)]);
    let local = std::fs::read_to_string(&local).unwrap();
    let merged = dir.path().join("slurm.csv");
    let rows = dir.path().join("sweep.jsonl");
    let said = tune(&[
        s(&capture),
        "--slurm",
        "--array-size",
        "4",
        "--rows",
        s(&rows),
        "--csv",
        s(&merged),
    ]);
    assert!(said.contains("submitted job"), "{said}");
    let merged = std::fs::read_to_string(&merged).unwrap();
    assert_eq!(rows_of(&merged).len(), 16, "{merged}");
    assert_eq!(rows_of(&merged), rows_of(&local), "{said}");
    assert_ranked(&merged);
    let job = dir.path().join("sweep.slurm");
    assert!(job.join("tune.sbatch").is_file());
}

/// A directory holding an `sbatch` that says `message` and fails.
/// A sweep of JIT options as a job array: the (geometry, JIT setting)
/// pairs of the local sweep, each with its register count, once.
#[test]
fn a_jit_sweep_as_a_job_array_gives_the_rows_of_the_local_sweep() {
    if !slurm() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_saxpy(&dir.path().join("c")) else {
        return;
    };
    let run = |extra: &[&str]| -> String {
        let mut all = vec![
            "tune",
            s(&capture),
            "--max-registers",
            "16,255",
            "--num-teams",
            "64,128",
            "--repetitions",
            "2",
        ];
        all.extend_from_slice(extra);
        let out = reprise(&all);
        let (stdout, stderr) = text(&out);
        assert_exit(&out, 0);
        format!("{stdout}{stderr}")
    };
    let local = dir.path().join("local.csv");
    run(&["--csv", s(&local)]);
    let local = std::fs::read_to_string(&local).unwrap();
    let want = rows_of(&local);
    assert!(want.len() >= 4, "{local}");
    for setting in ["MAX_REGISTERS=16", "MAX_REGISTERS=255"] {
        assert!(want.iter().any(|r| r.contains(setting)), "{local}");
    }
    let merged = dir.path().join("slurm.csv");
    let rows = dir.path().join("jit.jsonl");
    let said = run(&[
        "--slurm",
        "--array-size",
        "3",
        "--rows",
        s(&rows),
        "--csv",
        s(&merged),
    ]);
    assert!(said.contains("submitted job"), "{said}");
    let merged = std::fs::read_to_string(&merged).unwrap();
    assert_eq!(rows_of(&merged), want, "{said}");
    assert_ranked(&merged);
}

fn failing_sbatch(dir: &Path, message: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let tool = bin.join("sbatch");
    std::fs::write(&tool, format!("#!/bin/sh\necho '{message}' >&2\nexit 1\n")).unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn a_missing_or_failing_sbatch_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("corpus");
    record_axpy(config(&root), 64, 2);
    let results = dir.path().join("r.jsonl");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let args = ["check", s(&root), "--slurm", "--results", s(&results)];
    let out = reprise_env(&args, &[("PATH", s(&empty))]);
    assert_error(&out, &["sbatch is not on PATH", "Slurm's client commands"]);
    let bin = failing_sbatch(
        dir.path(),
        "sbatch: error: invalid partition specified: nope",
    );
    let out = reprise_env(&args, &[("PATH", s(&bin))]);
    assert_error(
        &out,
        &[
            "sbatch --parsable --array=",
            "invalid partition specified: nope",
        ],
    );
    // The options only a submission takes need --slurm.
    let out = reprise(&["check", s(&root), "--array-size", "4"]);
    assert_exit(&out, 2);
    let out = reprise(&["check", s(&root), "--slurm", "--shard", "0/2"]);
    assert_exit(&out, 2);
}
