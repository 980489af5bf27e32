//! `reprise check` over corpora of host captures, as users run it: a
//! corpus that passes, one capture that differs, kernels that hang, fault
//! or kill their process, shards that cover the corpus exactly once, a
//! run killed and resumed, the JUnit report, the merge of the shards'
//! results, a baseline, and bad arguments.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use reprise::RecordConfig;
use serde_json::Value;

fn config(dir: &Path) -> RecordConfig {
    std::fs::create_dir_all(dir).unwrap();
    RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20)
        .fsync(false)
}

/// A corpus of `a + b` axpy captures: `a` in `root/a`, `b` in
/// `root/b/deeper` (found recursively).
fn corpus(root: &Path, a: usize, b: usize) -> Vec<PathBuf> {
    // Raw files: tests change their recorded outputs.
    let raw = |d: &Path| config(d).format(reprise::CaptureFormat::Raw);
    let mut all = record_axpy(raw(&root.join("a")), 256, a);
    all.extend(record_axpy(raw(&root.join("b/deeper")), 256, b));
    all.sort();
    all
}

/// One `check_modes` capture in `dir`, set to `mode`.
fn modal(dir: &Path, mode: i64) -> PathBuf {
    // Raw files: set_check_mode edits the recorded input.
    let d = record_check_modes(config(dir).format(reprise::CaptureFormat::Raw), 64, 1).remove(0);
    if mode != 0 {
        set_check_mode(&d, mode);
    }
    d
}

/// `reprise check ARGS --json`: its exit status and summary.
fn check_json(args: &[&str]) -> (i32, Value) {
    let mut all = vec!["check", "--json"];
    all.extend_from_slice(args);
    let out = reprise(&all);
    let (stdout, stderr) = text(&out);
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}\nstderr:\n{stderr}"));
    (out.status.code().expect("an exit status"), v)
}

fn count(v: &Value, status: &str) -> u64 {
    v["counts"][status].as_u64().unwrap()
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

/// The result lines of a results file.
fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn a_corpus_that_passes_exits_0_with_its_counts() {
    let dir = tempfile::tempdir().unwrap();
    let found = corpus(&dir.path().join("corpus"), 18, 12);
    let results = dir.path().join("r.jsonl");
    let c = s(&dir.path().join("corpus")).to_string();
    let (code, v) = check_json(&[&c, "--jobs", "2", "--results", s(&results)]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["captures"], 30);
    assert_eq!(count(&v, "passed"), 30);
    for s in ["differs", "refused", "failed", "timeout"] {
        assert_eq!(count(&v, s), 0, "{s}");
    }
    // Every capture once, in the file and the summary, sorted by path.
    let in_file: Vec<String> = lines(&results)
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(in_file.len(), 30);
    let expected: BTreeSet<String> = found.iter().map(|p| p.display().to_string()).collect();
    assert_eq!(in_file.iter().cloned().collect::<BTreeSet<_>>(), expected);
    let summary: Vec<String> = statuses(&v).into_keys().collect();
    assert_eq!(summary, expected.into_iter().collect::<Vec<_>>());
    // Each result says what ran and how long it took.
    let r = &v["results"][0];
    assert_eq!(r["kernel"], "axpy");
    assert_eq!(r["backend"], "host");
    assert_eq!(r["exit_code"], 0);
    assert_eq!(r["kernel_times_ns"].as_array().unwrap().len(), 5);
    assert!(r["kernel_ns"].as_u64().unwrap() > 0, "{r}");
    assert!(r["wall_ns"].as_u64().unwrap() > 0, "{r}");
    assert!(r["message"].as_str().unwrap().contains("PASS"), "{r}");
    assert!(r["name"].as_str().unwrap().starts_with("a/"), "{r}");
    assert_eq!(v["slowest"].as_array().unwrap().len(), 10);

    // The table says the same.
    let out = reprise(&["check", &c, "--results", s(&results)]);
    assert_exit(&out, 0);
    let (table, _) = text(&out);
    assert!(table.contains("30 capture(s) checked"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.split_whitespace().eq(["passed", "30"])),
        "{table}"
    );
    assert!(table.contains("slowest 10"), "{table}");
}

#[test]
fn store_captures_are_checked_beside_raw_ones_and_the_store_is_no_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let stored = record_axpy(
        config(&dir.path().join("store")).format(reprise::CaptureFormat::Store),
        256,
        3,
    );
    let raw = record_axpy(
        config(&dir.path().join("raw")).format(reprise::CaptureFormat::Raw),
        256,
        2,
    );
    assert!(dir.path().join("store/.reprise-store").is_dir());
    let results = dir.path().join("r.jsonl");
    let out = reprise(&["check", "--json", s(dir.path()), "--results", s(&results)]);
    assert_exit(&out, 0);
    let (stdout, stderr) = text(&out);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(count(&v, "passed"), 5, "{v:#}");
    let found: BTreeSet<PathBuf> = statuses(&v).into_keys().map(PathBuf::from).collect();
    assert_eq!(found, stored.iter().chain(&raw).cloned().collect());
    // The store's chunks and temporary files are not taken for orphans.
    assert!(!stderr.contains("no whole capture"), "{stderr}");
}

#[test]
fn a_capture_whose_output_differs_exits_1_and_the_rest_pass() {
    let dir = tempfile::tempdir().unwrap();
    let found = corpus(dir.path(), 6, 4);
    corrupt_output(&found[3], 8);
    let results = dir.path().join("r.jsonl");
    let (code, v) = check_json(&[s(dir.path()), "--results", s(&results)]);
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(count(&v, "differs"), 1);
    assert_eq!(count(&v, "passed"), 9);
    let st = statuses(&v);
    assert_eq!(st[&found[3].display().to_string()], "differs");
    let differs = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["status"] == "differs")
        .unwrap();
    assert_eq!(differs["exit_code"], 1);
    assert!(
        differs["message"].as_str().unwrap().contains("FAIL: 1 of"),
        "{differs}"
    );
}

/// A corpus with one capture of each outcome: four that pass, one that
/// differs, one incomplete, one that faults, one whose worker is killed,
/// one that hangs.
struct Mixed {
    _dir: tempfile::TempDir,
    root: PathBuf,
    differs: PathBuf,
    incomplete: PathBuf,
    faults: PathBuf,
    killed: PathBuf,
    hangs: PathBuf,
}

fn mixed() -> Mixed {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("corpus");
    let ok = corpus(&root, 3, 2);
    corrupt_output(&ok[1], 4);
    let incomplete = modal(&root.join("incomplete"), 0);
    let image =
        reprise_std::CapturePaths::new(&incomplete, reprise::core::record::Generation::Reprise)
            .image;
    std::fs::remove_file(image).unwrap();
    Mixed {
        differs: ok[1].clone(),
        incomplete,
        faults: modal(&root.join("faults"), 2),
        killed: modal(&root.join("killed"), 3),
        hangs: modal(&root.join("hangs"), 1),
        root,
        _dir: dir,
    }
}

/// The processes whose command line mentions `needle`.
fn processes_naming(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                found.push(format!("{}: {cmd}", e.file_name().to_string_lossy()));
            }
        }
    }
    found
}

#[test]
fn hangs_faults_and_killed_workers_are_results_and_the_suite_goes_on() {
    let m = mixed();
    let results = m.root.join("results.jsonl");
    let junit = m.root.join("report.xml");
    let started = Instant::now();
    let (code, v) = check_json(&[
        s(&m.root),
        "--timeout",
        "2",
        "--jobs",
        "2",
        "--results",
        s(&results),
        "--junit",
        s(&junit),
    ]);
    let took = started.elapsed();
    assert_eq!(code, 2, "{v:#}");
    assert_eq!(v["captures"], 9);
    assert_eq!(count(&v, "passed"), 4, "{v:#}");
    assert_eq!(count(&v, "differs"), 1, "{v:#}");
    assert_eq!(count(&v, "refused"), 1, "{v:#}");
    assert_eq!(count(&v, "failed"), 2, "{v:#}");
    assert_eq!(count(&v, "timeout"), 1, "{v:#}");
    assert!(took < Duration::from_secs(30), "{took:?}");
    let by_path: BTreeMap<String, Value> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["path"].as_str().unwrap().to_string(), r.clone()))
        .collect();
    let get = |p: &Path| &by_path[&p.display().to_string()];
    assert_eq!(get(&m.differs)["status"], "differs");
    let refused = get(&m.incomplete);
    assert_eq!(refused["status"], "refused");
    assert!(
        refused["message"].as_str().unwrap().contains("incomplete"),
        "{refused}"
    );
    let faults = get(&m.faults);
    assert_eq!(faults["status"], "failed");
    assert_eq!(faults["exit_code"], 2);
    assert!(
        faults["message"].as_str().unwrap().contains("faulted"),
        "{faults}"
    );
    let killed = get(&m.killed);
    assert_eq!(killed["status"], "failed");
    assert_eq!(killed["signal"], 9, "{killed}");
    assert!(
        killed["message"].as_str().unwrap().contains("SIGKILL")
            || killed["message"].as_str().unwrap().contains("signal 9"),
        "{killed}"
    );
    let hangs = get(&m.hangs);
    assert_eq!(hangs["status"], "timeout");
    assert!(
        hangs["message"].as_str().unwrap().contains("timeout"),
        "{hangs}"
    );
    let wall = hangs["wall_ns"].as_u64().unwrap();
    assert!((2_000_000_000..10_000_000_000).contains(&wall), "{hangs}");
    // The hung worker's process group was killed: nothing spins on.
    let left = processes_naming(s(&m.hangs));
    assert!(left.is_empty(), "left running: {left:?}");
    // Every result made it to the file.
    assert_eq!(lines(&results).len(), 9);

    // The JUnit report parses, and counts as the summary does.
    let xml = std::fs::read_to_string(&junit).unwrap();
    let j = junit_counts(&xml);
    assert_eq!(j.testcases, 9, "{xml}");
    assert_eq!(j.failures, 1, "{xml}");
    assert_eq!(j.errors, 3, "{xml}");
    assert_eq!(j.skipped, 1, "{xml}");
    assert_eq!(j.suite_attr["tests"], "9");
    assert_eq!(j.suite_attr["failures"], "1");
    assert_eq!(j.suite_attr["errors"], "3");
    assert_eq!(j.suite_attr["skipped"], "1");
    let stem = m.hangs.file_stem().unwrap().to_string_lossy().into_owned();
    let hang_case = j
        .cases
        .iter()
        .find(|(_, name, _)| *name == stem)
        .unwrap_or_else(|| panic!("no testcase {stem}: {xml}"));
    assert_eq!(hang_case.0, m.hangs.parent().unwrap().display().to_string());
    assert_eq!(hang_case.2.as_deref(), Some("error"));
}

/// A kernel is code in its worker's process, and can print what a worker
/// prints: results that say "passed", more than one, or one and then end
/// the process. None of it is believed, and none of it reaches the result
/// of a capture checked after it.
#[test]
fn a_kernel_that_prints_results_decides_no_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("corpus");
    // Forgers sort first: with one job, the honest captures come after
    // them (in the same worker, before each host capture had its own).
    let many = modal(&root.join("a-prints-many"), 5);
    let one = modal(&root.join("b-prints-one-and-exits"), 6);
    let honest = corpus(&root.join("c-honest"), 3, 0);
    let results = dir.path().join("r.jsonl");
    let (code, v) = check_json(&[s(&root), "--jobs", "1", "--results", s(&results)]);
    assert_eq!(code, 2, "{v:#}");
    assert_eq!(count(&v, "passed"), 3, "{v:#}");
    assert_eq!(count(&v, "failed"), 2, "{v:#}");
    let by_path: BTreeMap<String, Value> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["path"].as_str().unwrap().to_string(), r.clone()))
        .collect();
    let get = |p: &Path| &by_path[&p.display().to_string()];
    let m = get(&many)["message"].as_str().unwrap();
    assert!(m.contains("results for one capture"), "{m}");
    assert!(!m.contains("forged"), "{m}");
    let o = get(&one)["message"].as_str().unwrap();
    assert!(o.contains("left no output"), "{o}");
    for h in &honest {
        assert_eq!(get(h)["status"], "passed", "{}", get(h));
    }
    // The forger's own replay says its output differs.
    let out = reprise(&["replay", s(&many), "--verify"]);
    assert_eq!(out.status.code(), Some(1), "{:?}", text(&out));
}

/// A descriptor reached through a symbolic link never stands for the
/// capture it leads to: the real one is checked, wherever the link lies.
#[test]
fn a_link_to_a_capture_does_not_replace_it_in_a_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("corpus");
    let real = corpus(&root, 1, 0).remove(0);
    corrupt_output(&real, 4);
    // Found after the real one (deeper), and before it (a sorted sibling).
    // The link bears the capture's own name, as a capture's descriptor.
    let name = real.file_name().unwrap();
    for sub in ["z-links", "0-links"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
        std::os::unix::fs::symlink(&real, root.join(sub).join(name)).unwrap();
    }
    let results = dir.path().join("r.jsonl");
    let (code, v) = check_json(&[s(&root), "--results", s(&results)]);
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["captures"], 1, "{v:#}");
    assert_eq!(count(&v, "differs"), 1, "{v:#}");
    assert_eq!(statuses(&v)[&real.display().to_string()], "differs");
}

/// What a JUnit report holds.
struct Junit {
    testcases: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
    /// The `testsuite` element's attributes.
    suite_attr: BTreeMap<String, String>,
    /// Each testcase: classname, name, and the element inside it that
    /// says it did not pass.
    cases: Vec<(String, String, Option<String>)>,
}

/// Reads a JUnit report with quick-xml (a malformed document fails the
/// test), counting its elements.
fn junit_counts(xml: &str) -> Junit {
    use quick_xml::Reader;
    use quick_xml::events::Event;
    let mut reader = Reader::from_str(xml);
    let mut j = Junit {
        testcases: 0,
        failures: 0,
        errors: 0,
        skipped: 0,
        suite_attr: BTreeMap::new(),
        cases: Vec::new(),
    };
    let mut depth = Vec::new();
    loop {
        let event = reader.read_event().unwrap_or_else(|e| {
            panic!("malformed XML at {}: {e}\n{xml}", reader.buffer_position())
        });
        let (e, empty) = match event {
            Event::Eof => break,
            Event::Start(e) => (e, false),
            Event::Empty(e) => (e, true),
            Event::End(_) => {
                depth.pop();
                continue;
            }
            Event::Text(t) => {
                assert_xml_chars(&t.xml10_content(), xml);
                continue;
            }
            Event::GeneralRef(r) => {
                // A character reference to a character XML holds, or one
                // of the five predefined entities.
                match r.resolve_char_ref().expect("a character reference") {
                    Some(c) => assert_xml_chars(&c.to_string(), xml),
                    None => assert!(
                        ["lt", "gt", "amp", "apos", "quot"].contains(&&*r.xml10_content()),
                        "unknown entity &{};",
                        r.xml10_content()
                    ),
                }
                continue;
            }
            _ => continue,
        };
        let name = e.name().as_ref().to_string();
        let attrs: BTreeMap<String, String> = e
            .attributes()
            .map(|a| {
                let a = a.expect("a well-formed attribute");
                let value = a
                    .normalized_value(quick_xml::XmlVersion::Explicit1_0)
                    .expect("an attribute value")
                    .into_owned();
                assert_xml_chars(&value, xml);
                (a.key.as_ref().to_string(), value)
            })
            .collect();
        match name.as_str() {
            "testsuite" => j.suite_attr = attrs,
            "testcase" => {
                assert_eq!(depth.last().map(String::as_str), Some("testsuite"));
                j.testcases += 1;
                j.cases
                    .push((attrs["classname"].clone(), attrs["name"].clone(), None));
            }
            "failure" | "error" | "skipped" => {
                assert_eq!(depth.last().map(String::as_str), Some("testcase"));
                match name.as_str() {
                    "failure" => j.failures += 1,
                    "error" => j.errors += 1,
                    _ => j.skipped += 1,
                }
                j.cases.last_mut().unwrap().2 = Some(name.clone());
            }
            _ => {}
        }
        if !empty {
            depth.push(name);
        }
    }
    assert!(depth.is_empty(), "unclosed elements: {depth:?}");
    j
}

/// Asserts that `text` holds only characters XML 1.0 allows.
fn assert_xml_chars(text: &str, xml: &str) {
    let bad = text.chars().find(|&c| {
        (c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{fffe}' | '\u{ffff}')
    });
    assert!(bad.is_none(), "{bad:?} is no XML 1.0 character:\n{xml}");
}

#[test]
fn shards_cover_the_corpus_exactly_once_and_merge_into_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("corpus");
    let found = corpus(&root, 12, 9);
    let all: BTreeSet<String> = found.iter().map(|p| p.display().to_string()).collect();
    let scratch = dir.path().join("scratch.jsonl");
    let (code, whole) = check_json(&[s(&root), "--results", s(&scratch)]);
    assert_eq!(code, 0, "{whole:#}");
    let shards_dir = dir.path().join("shards");
    std::fs::create_dir(&shards_dir).unwrap();
    for n in 1..=7u32 {
        let mut seen = BTreeSet::new();
        for k in 0..n {
            let shard = format!("{k}/{n}");
            let results = if n == 3 {
                shards_dir.join(format!("{k}.jsonl"))
            } else {
                scratch.clone()
            };
            let (code, v) = check_json(&[s(&root), "--shard", &shard, "--results", s(&results)]);
            assert_eq!(code, 0, "{shard}: {v:#}");
            for p in statuses(&v).into_keys() {
                assert!(seen.insert(p.clone()), "{p} in two shards of {n}");
            }
        }
        assert_eq!(seen, all, "the shards of {n} cover the corpus");
    }
    // A shard is the same set wherever the corpus lies and however it is
    // found: by name within the directory, not by position.
    let moved = dir.path().join("elsewhere/copy");
    copy_dir(&root, &moved);
    let names = |root: &Path, v: &Value| -> BTreeSet<String> {
        statuses(v)
            .into_keys()
            .map(|p| {
                Path::new(&p)
                    .strip_prefix(root)
                    .unwrap()
                    .display()
                    .to_string()
            })
            .collect()
    };
    let (_, here) = check_json(&[s(&root), "--shard", "1/4", "--results", s(&scratch)]);
    let (_, there) = check_json(&[s(&moved), "--shard", "1/4", "--results", s(&scratch)]);
    assert_eq!(names(&root, &here), names(&moved, &there));

    // The shards' files merge into the whole run's summary.
    let (code, merged) = check_json(&["--merge", s(&shards_dir)]);
    assert_eq!(code, 0, "{merged:#}");
    assert_eq!(merged["counts"], whole["counts"]);
    assert_eq!(merged["captures"], whole["captures"]);
    assert_eq!(statuses(&merged), statuses(&whole));
    // And so does its JUnit report.
    let junit = dir.path().join("merged.xml");
    let out = reprise(&["check", "--merge", s(&shards_dir), "--junit", s(&junit)]);
    assert_exit(&out, 0);
    let (table, _) = text(&out);
    assert!(table.contains("21 capture(s) checked"), "{table}");
    assert!(table.contains("3 file(s) merged"), "{table}");
    assert_eq!(
        junit_counts(&std::fs::read_to_string(&junit).unwrap()).testcases,
        21
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn a_killed_run_resumes_without_checking_any_capture_twice() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("corpus");
    // Slow captures (100 ms a replay), so that the run is killed midway.
    let mut found = Vec::new();
    for i in 0..10 {
        let d = modal(&root.join(format!("c{i}")), 4);
        found.push(d);
    }
    let results = dir.path().join("r.jsonl");
    let mut child = Command::new(reprise_bin())
        .args(["check", s(&root), "--jobs", "1", "--repetitions", "1"])
        .args(["--results", s(&results)])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while lines(&results).len() < 3 {
        assert!(Instant::now() < deadline, "no results written");
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = std::fs::read_to_string(&results).unwrap();
    let written = lines(&results).len();
    assert!((3..10).contains(&written), "{written} lines: {before}");
    assert!(before.ends_with('\n'), "a line cut short: {before:?}");

    let out = reprise(&[
        "check",
        s(&root),
        "--jobs",
        "1",
        "--repetitions",
        "1",
        "--resume",
        "--results",
        s(&results),
    ]);
    assert_exit(&out, 0);
    let (table, stderr) = text(&out);
    assert!(table.contains("10 capture(s) checked"), "{table}");
    assert!(
        stderr.contains(&format!("resuming: {written} of 10")),
        "{stderr}"
    );
    // Every capture has one line: the earlier ones were not checked again.
    let mut per_capture: BTreeMap<String, usize> = BTreeMap::new();
    for l in lines(&results) {
        *per_capture
            .entry(l["path"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    assert_eq!(per_capture.len(), 10, "{per_capture:?}");
    assert!(per_capture.values().all(|&n| n == 1), "{per_capture:?}");
    assert!(
        std::fs::read_to_string(&results)
            .unwrap()
            .starts_with(&before)
    );
}

#[test]
fn a_baseline_flags_what_got_slower_and_says_the_noise() {
    let dir = tempfile::tempdir().unwrap();
    let found = corpus(dir.path(), 4, 0);
    let results = dir.path().join("r.jsonl");
    let (code, v) = check_json(&[s(dir.path()), "--results", s(&results)]);
    assert_eq!(code, 0, "{v:#}");
    // A baseline in which one kernel took 1 ns: it is now far slower.
    let mut base = v.clone();
    let slow = found[2].display().to_string();
    for r in base["results"].as_array_mut().unwrap() {
        if r["path"] == slow.as_str() {
            r["kernel_ns"] = 1.into();
            r["kernel_times_ns"] = serde_json::json!([1, 1, 1, 1, 1]);
        }
    }
    let baseline = dir.path().join("base.json");
    std::fs::write(&baseline, base.to_string()).unwrap();
    let out = reprise(&[
        "check",
        s(dir.path()),
        "--results",
        s(&results),
        "--baseline",
        s(&baseline),
        "--slower",
        "1000",
    ]);
    assert_exit(&out, 1);
    let (table, _) = text(&out);
    let flagged: Vec<&str> = table.lines().filter(|l| l.contains("SLOWER")).collect();
    assert_eq!(flagged.len(), 1, "{table}");
    assert!(flagged[0].contains(&slow), "{table}");
    assert!(flagged[0].contains("repetitions spread"), "{table}");
    assert!(table.contains("4 compared"), "{table}");
    // A results file serves as a baseline too; in JSON, the comparison.
    let (code, v) = check_json(&[
        s(dir.path()),
        "--results",
        s(&dir.path().join("again.jsonl")),
        "--baseline",
        s(&results),
        "--slower",
        "1000",
    ]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["baseline"]["compared"], 4);
    assert_eq!(v["baseline"]["slower"].as_array().unwrap().len(), 0);
}

const SAXPY_PTX: &[u8] = include_bytes!("../../backends/cuda/fixtures/saxpy.ptx");

/// Records `launches` saxpy launches on CUDA device 0 (the simulated
/// driver unless `REPRISE_GPU_TESTS=1`); `None` when the GPU tests skip.
fn record_saxpy(dir: &Path, launches: usize) -> Option<Vec<PathBuf>> {
    Some(record_gpu_saxpy(
        gpu()?,
        config(dir),
        SAXPY_PTX,
        4096,
        launches,
    ))
}

#[test]
fn gpu_captures_run_beside_host_captures_one_per_device() {
    let dir = tempfile::tempdir().unwrap();
    let Some(gpu) = record_saxpy(&dir.path().join("gpu"), 3) else {
        return;
    };
    let host = record_axpy(config(&dir.path().join("host")), 256, 3);
    let results = dir.path().join("r.jsonl");
    let (code, v) = check_json(&[s(dir.path()), "--results", s(&results)]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(count(&v, "passed"), 6, "{v:#}");
    for r in v["results"].as_array().unwrap() {
        let path = PathBuf::from(r["path"].as_str().unwrap());
        let backend = if gpu.contains(&path) { "cuda" } else { "host" };
        assert!(gpu.contains(&path) || host.contains(&path), "{r}");
        assert_eq!(r["backend"], backend, "{r}");
    }
}

#[test]
fn bad_arguments_are_refused_clearly_with_status_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = s(dir.path());
    for (args, needles) in [
        (
            vec!["check", d, "--shard", "3/2"],
            vec!["3/2", "K must be below N", "0 to 1"],
        ),
        (
            vec!["check", d, "--shard", "x"],
            vec!["\"x\" is not K/N", "SLURM_ARRAY_TASK_ID"],
        ),
        (
            vec!["check", d, "--shard", "1/0"],
            vec!["N must be at least 1"],
        ),
        (
            vec!["check", d, "--shard", "a/3"],
            vec!["K \"a\" is not a whole number"],
        ),
        (vec!["check", d, "--jobs", "0"], vec!["--jobs"]),
        (
            vec!["check", d, "--timeout", "soon"],
            vec!["not a number of seconds"],
        ),
        (vec!["check", d, "--slower", "0.5"], vec!["at least 1"]),
        (vec!["check", "--merge", d, d], vec!["cannot be used with"]),
        (vec!["check"], vec!["DIR|FILE"]),
        (vec!["check", d], vec!["no captures found in"]),
        (vec!["check", "--merge", d], vec!["no results files"]),
        (vec!["check", &format!("{d}/missing")], vec!["missing"]),
        (
            vec!["check", d, "--junit", &format!("{d}/report.txt")],
            vec!["must end in .xml"],
        ),
    ] {
        let out = reprise(&args);
        assert_error(&out, &needles);
    }
}

#[test]
fn the_help_explains_every_option_and_the_exit_status() {
    let out = reprise(&["check", "--help"]);
    assert_exit(&out, 0);
    let (help, _) = text(&out);
    for word in [
        "--jobs",
        "--shard",
        "--timeout",
        "--junit",
        "--json",
        "--results",
        "--resume",
        "--baseline",
        "--slower",
        "--repetitions",
        "--merge",
        "--dtype",
        "CUDA_VISIBLE_DEVICES",
        "Exit status: 0",
        "SLURM_ARRAY_TASK_ID",
    ] {
        assert!(help.contains(word), "--help lacks {word}:\n{help}");
    }
    assert!(!help.contains("--worker"), "{help}");
}
