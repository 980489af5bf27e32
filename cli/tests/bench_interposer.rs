//! `reprise bench --backend cuda` measures what the interposer adds to a
//! launch of an unmodified program, against the same launch without it, in
//! the same run: on the simulated CUDA driver (or the machine's, with
//! `REPRISE_GPU_TESTS=1`). Only ratios and counts are asserted, never
//! absolute times. Without a C compiler to build the simulator the tests
//! skip, unless `REPRISE_REQUIRE_SIM=1`.

mod common;

use common::programs::{Target, interposer, setup, sim_env};
use common::{assert_exit, text};

/// `reprise bench --backend cuda --quick --json --sizes 64K` on the
/// target, with `env` too: the JSON it printed, and its output.
fn bench(target: &Target, env: &[(&str, &str)]) -> (serde_json::Value, std::process::Output) {
    let sim = sim_env();
    let mut all: Vec<(&str, &str)> = Vec::new();
    if let Target::Simulated = target {
        all.push((sim.0, sim.1.to_str().expect("a UTF-8 path")));
    }
    all.extend_from_slice(env);
    let out = common::reprise_env(
        &[
            "bench",
            "--backend",
            "cuda",
            "--quick",
            "--json",
            "--sizes",
            "64K",
        ],
        &all,
    );
    assert_exit(&out, 0);
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("bench's JSON: {e}\n{}", text(&out).0));
    (v, out)
}

#[test]
fn bench_measures_the_interposer_against_plain_launches() {
    let Some(target) = setup() else { return };
    let Some(lib) = interposer() else { return };
    let (v, _) = bench(&target, &[("REPRISE_INTERPOSER", common::s(&lib))]);
    // The other tables are still there.
    assert_eq!(v["sizes"][0]["size_bytes"], 65536, "{v}");
    let i = &v["interposer"];
    assert!(i.is_object(), "no interposer entry: {v}");
    assert!(
        i.get("skipped").is_none() && i.get("error").is_none(),
        "{i}"
    );
    // x and y over the 64 KiB size.
    assert_eq!(i["elements"], 8192, "{i}");
    for way in ["plain", "pass_through", "recorded"] {
        let t = i[way]["median_s"]
            .as_f64()
            .unwrap_or_else(|| panic!("{way}: {i}"));
        assert!(t.is_finite() && t > 0.0, "{way}: {t}");
        let min = i[way]["min_s"].as_f64().unwrap();
        assert!(min > 0.0 && min <= t, "{way}: min {min}, median {t}");
        assert!(i[way]["launches"].as_u64().unwrap() > 0, "{i}");
    }
    for ratio in ["pass_through_vs_plain", "recorded_vs_plain"] {
        let r = i[ratio].as_f64().unwrap_or_else(|| panic!("{ratio}: {i}"));
        assert!(r.is_finite() && r > 0.0, "{ratio}: {r}");
    }
    // The recorded way recorded every timed launch, each with both
    // snapshots of the 64 KiB it used.
    let captures = i["captures"].as_u64().unwrap();
    assert!(captures > 0, "{i}");
    assert_eq!(Some(captures), i["recorded"]["launches"].as_u64(), "{i}");
    assert!(i["capture_bytes"].as_u64().unwrap() >= 2 * 65536, "{i}");
}

#[test]
fn the_table_says_how_the_launches_compare() {
    let Some(target) = setup() else { return };
    let Some(lib) = interposer() else { return };
    let sim = sim_env();
    let mut env = vec![("REPRISE_INTERPOSER", common::s(&lib))];
    if let Target::Simulated = target {
        env.push((sim.0, sim.1.to_str().unwrap()));
    }
    let out = common::reprise_env(
        &["bench", "--backend", "cuda", "--quick", "--sizes", "64K"],
        &env,
    );
    assert_exit(&out, 0);
    let stdout = text(&out).0;
    for needle in [
        "interposer (per launch, same run)",
        "| plain | 200 |",
        "| interposer, not recorded | 200 |",
        "| interposer, recorded | 20 |",
        "capture per recorded launch",
        "(20 captures)",
    ] {
        assert!(
            stdout.contains(needle),
            "stdout lacks {needle:?}:\n{stdout}"
        );
    }
}

#[test]
fn without_the_interposer_the_rows_are_skipped_saying_why() {
    let Some(target) = setup() else { return };
    let missing = "/nonexistent/libreprise_interposer.so";
    let (v, out) = bench(&target, &[("REPRISE_INTERPOSER", missing)]);
    let why = v["interposer"]["skipped"]
        .as_str()
        .unwrap_or_else(|| panic!("not skipped: {v}"));
    assert!(
        why.contains(missing) && why.contains("no such file"),
        "{why}"
    );
    assert_eq!(v["sizes"][0]["size_bytes"], 65536, "{v}");
    assert!(!text(&out).1.contains("error"), "{}", text(&out).1);

    // In the tables, one line.
    let sim = sim_env();
    let mut env = vec![("REPRISE_INTERPOSER", missing)];
    if let Target::Simulated = target {
        env.push((sim.0, sim.1.to_str().unwrap()));
    }
    let out = common::reprise_env(
        &["bench", "--backend", "cuda", "--quick", "--sizes", "64K"],
        &env,
    );
    assert_exit(&out, 0);
    let lines: Vec<String> = text(&out)
        .0
        .lines()
        .filter(|l| l.contains("interposer"))
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("skipped") && lines[0].contains(missing),
        "{lines:?}"
    );
}

/// The hidden launch loop names the call that failed, with its CUresult.
#[test]
fn the_launch_loop_names_a_failing_call() {
    let Some(Target::Simulated) = setup() else {
        return;
    };
    let sim = sim_env();
    // A simulator with no device: cuInit says so.
    let out = common::reprise_env(
        &["__launch-loop", "--launches", "3", "--json"],
        &[
            (sim.0, sim.1.to_str().unwrap()),
            ("REPRISE_SIM_CUDA_DEVICES", "0"),
        ],
    );
    common::assert_error(&out, &["cuInit failed: CUDA_ERROR_NO_DEVICE (100)"]);
    assert!(text(&out).0.is_empty(), "{}", text(&out).0);
    // With one, it prints its times.
    let out = common::reprise_env(
        &[
            "__launch-loop",
            "--launches",
            "3",
            "--elements",
            "300",
            "--json",
        ],
        &[(sim.0, sim.1.to_str().unwrap())],
    );
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        (v["launches"].as_u64(), v["elements"].as_u64()),
        (Some(3), Some(300)),
        "{v}"
    );
    assert!(v["median_s"].as_f64().unwrap() > 0.0, "{v}");
}
