//! The values that reach the batch script `reprise check --slurm` and
//! `reprise tune --slurm` write, fed as an attacker would: a line break
//! (then a command) or another control character in every field (the
//! working directory, `--results`, `--rows`, `--partition`,
//! `--sbatch-arg`, a path forwarded to the tasks, the executable's own
//! path) is refused, named, with nothing submitted and nothing run; a
//! quote, a space, a `$(...)` and a `%` in the paths reach the tasks
//! whole on a real Slurm; and a job directory planted as a symbolic link
//! is refused without a file of its target removed.
//!
//! The refusals run without a cluster: `sbatch` is a wrapper that notes
//! each call (then runs the real one, where there is one), and a refusal
//! must leave it uncalled. The run on a cluster skips with a message when
//! `sinfo` is absent or shows no node that takes work, unless
//! REPRISE_REQUIRE_SLURM=1 (CI), where that fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use reprise::RecordConfig;

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

fn record_saxpy(dir: &Path) -> Option<PathBuf> {
    record_gpu_saxpy(gpu()?, config(dir), SAXPY, 32768, 1)
        .into_iter()
        .next()
}

/// What goes into each field: a line break and what an attacker puts
/// after one, and the other kinds of control character.
const PAYLOADS: [&str; 7] = [
    "\ntouch PWNED\n#",
    "\n",
    "\r\ntouch PWNED #",
    "\t",
    "\u{7f}",
    "\u{1b}]0;x\u{7}",
    "\u{85}",
];

/// The real `sbatch` on PATH, if there is one.
fn real_sbatch() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("sbatch"))
        .find(|p| p.is_file())
}

/// A directory holding an `sbatch` that notes each call in `log` and then
/// runs the real one (or fails, without one); the PATH that finds it
/// first.
fn noting_sbatch(dir: &Path, log: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let then = match real_sbatch() {
        Some(real) => format!("exec '{}' \"$@\"", real.display()),
        None => "echo 'sbatch: error: no Slurm here' >&2; exit 1".into(),
    };
    let tool = bin.join("sbatch");
    std::fs::write(
        &tool,
        format!(
            "#!/bin/sh\nprintf 'sbatch %s\\n' \"$*\" >>'{}'\n{then}\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    format!("{}:{path}", bin.display())
}

/// Runs `exe` (the `reprise` under test, or a copy) with `args` from the
/// directory `cwd`, with `path` as PATH.
fn run_in(exe: &Path, cwd: &Path, args: &[&str], path: &str) -> Output {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .current_dir(cwd)
        .env("PATH", path)
        .env("RUST_BACKTRACE", "0")
        .env(
            "XDG_CACHE_HOME",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache"),
        )
        .env_remove("REPRISE_HSA_LIBRARY");
    if let Some((k, v)) = sim::child_env() {
        cmd.env(k, v);
    }
    let out = output_within(&mut cmd, RUN_LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "reprise panicked:\n{stderr}");
    out
}

/// Every file named PWNED under `root`, links not followed.
fn pwned(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            if e.file_name() == "PWNED" {
                found.push(e.path());
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(e.path());
            }
        }
    }
    found
}

/// `exe` itself, or a copy of it, at `path`.
fn exe_at(exe: &Path, path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    if std::fs::hard_link(exe, path).is_err() {
        std::fs::copy(exe, path).unwrap();
    }
}

/// One attack: `args` run from `cwd` by `exe` must be refused naming
/// `what`, the value shown escaped, with sbatch never called, no job
/// directory `job` made and no PWNED file anywhere under `root`.
struct Attack<'a> {
    root: &'a Path,
    log: &'a Path,
    path: &'a str,
}

impl Attack<'_> {
    fn refused(
        &self,
        exe: &Path,
        cwd: &Path,
        args: &[&str],
        what: &str,
        payload: &str,
        job: &Path,
    ) {
        let out = run_in(exe, cwd, args, self.path);
        let (stdout, stderr) = text(&out);
        let shown = format!("{args:?} from {cwd:?}, naming {what}");
        assert_eq!(
            out.status.code(),
            Some(2),
            "{shown}\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
        assert!(
            stderr.contains(&format!("error: {what}: \""))
                && stderr.contains("holds a control character")
                && stderr.contains("cannot be written into a Slurm batch script"),
            "{shown}: {stderr}"
        );
        // The value is named, escaped: no control character reaches the
        // terminal.
        assert!(
            stderr.contains(&payload.escape_debug().to_string()),
            "{shown}: {stderr}"
        );
        assert!(
            !stderr
                .trim_end()
                .chars()
                .any(|c| c.is_control() && c != '\n')
                && stderr.trim_end().lines().count() == 1,
            "{shown}: {stderr:?}"
        );
        assert!(
            !self.log.exists(),
            "{shown}: sbatch was called:\n{}",
            std::fs::read_to_string(self.log).unwrap_or_default()
        );
        assert!(
            std::fs::symlink_metadata(job).is_err(),
            "{shown}: {job:?} was made"
        );
        assert_eq!(pwned(self.root), Vec::<PathBuf>::new(), "{shown}");
    }
}

#[test]
fn a_control_character_in_any_value_of_check_slurm_is_refused_and_nothing_runs() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let corpus = root.join("corpus");
    record_axpy(config(&corpus), 64, 2);
    let log = root.join("sbatch.log");
    let path = noting_sbatch(root, &log);
    let attack = Attack {
        root,
        log: &log,
        path: &path,
    };
    let me = reprise_bin();
    let ok_results = root.join("ok.jsonl");
    let ok_job = root.join("ok.slurm");
    for (i, p) in PAYLOADS.iter().enumerate() {
        let check = |extra: &[&str]| -> Vec<String> {
            let mut v: Vec<String> = ["check", s(&corpus), "--slurm"].map(String::from).to_vec();
            v.extend(extra.iter().map(|s| s.to_string()));
            v
        };
        // The working directory: the tasks would cd there.
        let cwd = root.join(format!("cwd{i}{p}"));
        std::fs::create_dir(&cwd).unwrap();
        for extra in [vec!["--results", s(&ok_results)], vec![]] {
            let args = check(&extra);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            attack.refused(&me, &cwd, &args, "the working directory", p, &ok_job);
            assert!(std::fs::symlink_metadata(cwd.join("reprise-check.slurm")).is_err());
        }
        // --results: in its name, and in the name of its directory.
        let named = root.join(format!("r{i}{p}.jsonl"));
        let inside = root.join(format!("d{i}{p}"));
        std::fs::create_dir(&inside).unwrap();
        for (results, job) in [
            (named.clone(), named.with_extension("slurm")),
            (inside.join("r.jsonl"), inside.join("r.slurm")),
        ] {
            let args = check(&["--results", s(&results)]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            attack.refused(&me, root, &args, "--results", p, &job);
        }
        // --partition and --sbatch-arg.
        let partition = format!("debug{p}");
        let sbatch_arg = format!("--sbatch-arg=--comment=x{p}");
        for (extra, what) in [
            (["--partition", partition.as_str()], "--partition"),
            (["--array-size=1", sbatch_arg.as_str()], "--sbatch-arg"),
        ] {
            let mut args = check(&extra);
            args.extend(["--results".into(), s(&ok_results).into()]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            attack.refused(&me, root, &args, what, p, &ok_job);
        }
        // A path forwarded to the tasks: the corpus.
        let bad_corpus = root.join(format!("c{i}{p}"));
        record_axpy(config(&bad_corpus), 64, 1);
        let args = [
            "check",
            s(&bad_corpus),
            "--slurm",
            "--results",
            s(&ok_results),
        ];
        attack.refused(&me, root, &args, "an argument", p, &ok_job);
        // The executable's own path, which the script runs.
        if i < 2 {
            let exe = root.join(format!("bin{i}{p}/reprise"));
            exe_at(&me, &exe);
            let args = ["check", s(&corpus), "--slurm", "--results", s(&ok_results)];
            attack.refused(&exe, root, &args, "the reprise executable", p, &ok_job);
        }
    }
}

#[test]
fn a_control_character_in_any_value_of_tune_slurm_is_refused_and_nothing_runs() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let Some(capture) = record_saxpy(&root.join("c")) else {
        return;
    };
    let log = root.join("sbatch.log");
    let path = noting_sbatch(root, &log);
    let attack = Attack {
        root,
        log: &log,
        path: &path,
    };
    let me = reprise_bin();
    let ok_rows = root.join("ok.jsonl");
    let ok_job = root.join("ok.slurm");
    let lists = [
        "--num-teams",
        "64,128",
        "--num-threads",
        "128,256",
        "--repetitions",
        "1",
    ];
    let tune = |file: &Path, extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["tune", s(file), "--slurm"].map(String::from).to_vec();
        v.extend(lists.iter().chain(extra).map(|s| s.to_string()));
        v
    };
    for (i, p) in PAYLOADS.iter().enumerate() {
        // The working directory.
        let cwd = root.join(format!("cwd{i}{p}"));
        std::fs::create_dir(&cwd).unwrap();
        for extra in [vec!["--rows", s(&ok_rows)], vec![]] {
            let args = tune(&capture, &extra);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            attack.refused(&me, &cwd, &args, "the working directory", p, &ok_job);
            assert!(std::fs::symlink_metadata(cwd.join("reprise-tune.slurm")).is_err());
        }
        // --rows: in its name, and in the name of its directory.
        let named = root.join(format!("r{i}{p}.jsonl"));
        let inside = root.join(format!("d{i}{p}"));
        std::fs::create_dir(&inside).unwrap();
        for (rows, job) in [
            (named.clone(), named.with_extension("slurm")),
            (inside.join("r.jsonl"), inside.join("r.slurm")),
        ] {
            let args = tune(&capture, &["--rows", s(&rows)]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            attack.refused(&me, root, &args, "--rows", p, &job);
        }
        // --partition and --sbatch-arg.
        let partition = format!("debug{p}");
        let sbatch_arg = format!("--sbatch-arg=--comment=x{p}");
        for (extra, what) in [
            (["--partition", partition.as_str()], "--partition"),
            (["--array-size=1", sbatch_arg.as_str()], "--sbatch-arg"),
        ] {
            let mut args = tune(&capture, &extra);
            args.extend(["--rows".into(), s(&ok_rows).into()]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            attack.refused(&me, root, &args, what, p, &ok_job);
        }
        // A path forwarded to the tasks: the capture.
        if let Some(bad) = record_saxpy(&root.join(format!("c{i}{p}"))) {
            let args = tune(&bad, &["--rows", s(&ok_rows)]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            attack.refused(&me, root, &args, "an argument", p, &ok_job);
        }
        // The executable's own path.
        if i < 2 {
            let exe = root.join(format!("bin{i}{p}/reprise"));
            exe_at(&me, &exe);
            let args = tune(&capture, &["--rows", s(&ok_rows)]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            attack.refused(&exe, root, &args, "the reprise executable", p, &ok_job);
        }
    }
}

/// A quote, spaces, a `$(...)`, a backtick, double quotes and a `%` in
/// the working directory, the corpus's path and the results file's
/// (whose job directory names the tasks' log files for sbatch): a real
/// job array checks the corpus, each task's log where it belongs, and
/// nothing in the names runs.
#[test]
fn quotes_and_spaces_in_the_paths_reach_the_tasks_whole_on_a_real_slurm() {
    if !slurm() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let cwd = root.join("it's $(touch PWNED) `touch PWNED` 100%a \"here\"");
    let corpus = cwd.join("c'orpus 1");
    let captures = record_axpy(config(&corpus), 64, 6);
    let results_dir = cwd.join("r's dir %j %%");
    std::fs::create_dir(&results_dir).unwrap();
    let args = [
        "check",
        "c'orpus 1",
        "--slurm",
        "--array-size",
        "2",
        "--results",
        "r's dir %j %%/res 'ults.jsonl",
        "--timeout",
        "30",
        "--repetitions",
        "1",
    ];
    let path = std::env::var("PATH").unwrap_or_default();
    let out = run_in(&reprise_bin(), &cwd, &args, &path);
    let (stdout, stderr) = text(&out);
    assert_exit(&out, 0);
    assert!(stderr.contains("submitted job"), "{stderr}");
    let results = std::fs::read_to_string(results_dir.join("res 'ults.jsonl")).unwrap();
    assert_eq!(
        results.lines().count(),
        captures.len(),
        "{stdout}\n{stderr}"
    );
    let job = results_dir.join("res 'ults.slurm");
    // Each task's results and its log (a shard without captures has no
    // task).
    let tasks: Vec<u64> = (0..2)
        .filter(|k| job.join(format!("shard-{k}-of-2.jsonl")).is_file())
        .collect();
    assert!(!tasks.is_empty());
    for k in &tasks {
        assert!(job.join(format!("logs/task-{k}.out")).is_file(), "{k}");
    }
    assert_eq!(
        std::fs::read_dir(job.join("logs")).unwrap().count(),
        tasks.len()
    );
    let script = std::fs::read_to_string(job.join("check.sbatch")).unwrap();
    for l in script.lines().filter(|l| l.starts_with("#SBATCH")) {
        assert!(!l.contains("here") && !l.contains("ults"), "{l}");
    }
    assert_eq!(pwned(root), Vec::<PathBuf>::new());
}

/// A job directory planted as a link to a directory holding others'
/// `.jsonl` files (one named as a shard's): a fresh run refuses it and
/// removes nothing there.
#[test]
fn a_job_directory_planted_as_a_link_is_refused_and_its_target_kept() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let corpus = root.join("corpus");
    record_axpy(config(&corpus), 64, 2);
    let log = root.join("sbatch.log");
    let path = noting_sbatch(root, &log);
    let target = root.join("target");
    std::fs::create_dir(&target).unwrap();
    let kept = ["precious.jsonl", "shard-0-of-1.jsonl", "shard-1-of-2.jsonl"];
    for f in kept {
        std::fs::write(target.join(f), "mine\n").unwrap();
    }
    let results = root.join("r.jsonl");
    std::os::unix::fs::symlink(&target, root.join("r.slurm")).unwrap();
    let mut runs: Vec<Vec<&str>> = vec![vec![
        "check",
        s(&corpus),
        "--slurm",
        "--results",
        s(&results),
    ]];
    let capture = record_saxpy(&root.join("c"));
    if let Some(c) = &capture {
        runs.push(vec![
            "tune",
            s(c),
            "--slurm",
            "--num-teams",
            "64,128",
            "--rows",
            s(&results),
        ]);
    }
    for args in runs {
        let out = run_in(&reprise_bin(), root, &args, &path);
        assert_error(&out, &["r.slurm: the job directory is a symbolic link"]);
        for f in kept {
            assert_eq!(
                std::fs::read_to_string(target.join(f)).unwrap(),
                "mine\n",
                "{args:?}: {f}"
            );
        }
        assert!(!target.join("logs").exists(), "{args:?}");
        assert!(!log.exists(), "{args:?}: sbatch was called");
    }
}
