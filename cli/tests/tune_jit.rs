//! PTX JIT options on the command line (`--max-registers`,
//! `--jit-opt-level`, `--jit-option`) for `reprise replay` and
//! `reprise tune`, on the simulated CUDA driver (or a real GPU with
//! `REPRISE_GPU_TESTS=1`: the simulator's register counts are then only
//! printed): the options reach the driver, a sweep reports registers and
//! spills, a JIT failure shows its log, cubins and the host refuse them.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::*;
use reprise::{Args, Recorder};

const SAXPY: &[u8] = include_bytes!("../../backends/cuda/fixtures/saxpy.ptx");
const SAXPY_CUBIN: &[u8] = include_bytes!("../../backends/cuda/fixtures/saxpy.sm_90.cubin");
const REG_HEAVY: &[u8] = include_bytes!("../../backends/cuda/fixtures/reg_heavy.ptx");

fn simulated() -> bool {
    sim::driver() == Ok(sim::Driver::Simulated)
}

/// One saxpy launch from `image` (PTX or a cubin), 4 x 256 threads.
fn record_saxpy(dir: &Path, image: &[u8]) -> Option<PathBuf> {
    record_one_gpu_saxpy(dir, image, 1024)
}

/// One launch of reg_heavy over 1024 elements, 4 x 256 threads.
fn record_reg_heavy(dir: &Path) -> Option<PathBuf> {
    let n = 1024usize;
    let mut rec = Recorder::new(gpu()?, 0, raw_config(dir)).unwrap();
    let x = rec.alloc((64 * n * 4) as u64, 256).unwrap();
    let y = rec.alloc((n * 4) as u64, 256).unwrap();
    let xs: Vec<f32> = (0..64 * n).map(|i| (i % 97) as f32 * 0.25).collect();
    rec.upload(x, &floats(&xs)).unwrap();
    let image = rec.load_image(REG_HEAVY).unwrap();
    let k = rec.kernel(image, "reg_heavy").unwrap();
    let args = Args::new().ptr(x).ptr(y).i32(n as i32);
    reprise::block_on(async {
        rec.launch(&k, geometry(4, 256), &args).await.unwrap();
        rec.finish().await.unwrap()
    })
    .into_iter()
    .next()
}

#[test]
fn the_driver_receives_the_options_given_on_replay() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_saxpy(dir.path(), SAXPY) else {
        return;
    };
    let log = dir.path().join("jit.log");
    let out = reprise_env(
        &[
            "replay",
            "--verify",
            s(&capture),
            "--max-registers",
            "32",
            "--jit-opt-level",
            "3",
            "--jit-option",
            "CU_JIT_CACHE_MODE=ca",
            "--jit-option",
            "generate_line_info=true",
        ],
        &[("REPRISE_SIM_CUDA_JIT_RECORD", s(&log))],
    );
    let (stdout, _) = text(&out);
    assert_exit(&out, 0);
    assert!(
        stdout.contains(
            "PTX JIT options: CACHE_MODE=2,GENERATE_LINE_INFO=1,MAX_REGISTERS=32,OPTIMIZATION_LEVEL=3"
        ),
        "{stdout}"
    );
    if !simulated() {
        return;
    }
    let lines = std::fs::read_to_string(&log).unwrap();
    // One load, with CACHE_MODE (14), GENERATE_LINE_INFO (13),
    // MAX_REGISTERS (0), OPTIMIZATION_LEVEL (7), then the logs.
    assert_eq!(lines.lines().count(), 1, "{lines}");
    assert!(
        lines.starts_with("cuModuleLoadDataEx 14=2 13=1 0=32 7=3 3=buf"),
        "{lines}"
    );
}

#[test]
fn a_max_registers_sweep_reports_registers_and_spills_in_table_csv_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_reg_heavy(dir.path()) else {
        return;
    };
    let log = dir.path().join("jit.log");
    let csv = dir.path().join("sweep.csv");
    let env = [("REPRISE_SIM_CUDA_JIT_RECORD", s(&log))];
    let args = [
        "tune",
        s(&capture),
        "--max-registers",
        "16,32,64,255",
        "--num-teams",
        "4,8",
        "--repetitions",
        "3",
    ];
    let mut with_csv = args.to_vec();
    with_csv.extend(["--csv", s(&csv)]);
    let out = reprise_env(&with_csv, &env);
    let (stdout, stderr) = text(&out);
    eprintln!("{stdout}{stderr}");
    assert_exit(&out, 0);
    assert!(
        stdout.contains(
            "search space: 4 (JIT settings) x 2 (--num-teams) x 1 (--num-threads) x 1 \
             (--shared-mem) = 8"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("regs     spill"), "{stdout}");
    let rows: Vec<Vec<String>> = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .map(|c| c.trim_matches('"').to_string())
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), 8);
    // jit, registers, spill_stores, spill_loads are columns 14 to 17.
    let mut seen: Vec<(String, String, String, String)> = rows
        .iter()
        .map(|r| (r[14].clone(), r[15].clone(), r[16].clone(), r[17].clone()))
        .collect();
    seen.sort();
    seen.dedup();
    // One register count and spill per setting, the same for each
    // geometry.
    assert!(seen.len() <= 4, "{seen:?}");
    assert!(rows.iter().all(|r| r[9] == "verified"), "{rows:?}");
    let out = reprise_env(&[&args[..], &["--json"]].concat(), &env);
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 8);
    let of = |jit: &str| {
        let r = results
            .iter()
            .find(|r| r["jit"] == jit)
            .unwrap_or_else(|| panic!("no {jit} in {v}"));
        (
            r["registers"].as_u64(),
            r["spill_stores"].as_u64(),
            r["spill_loads"].as_u64(),
        )
    };
    let got: Vec<_> = ["16", "32", "64", "255"]
        .iter()
        .map(|n| of(&format!("MAX_REGISTERS={n}")))
        .collect();
    if !simulated() {
        println!("registers and spills on this GPU: {got:?}");
        // The JIT keeps to a limit below what the kernel would use.
        for ((regs, _, _), limit) in got.iter().zip([16, 32, 64]) {
            assert!(regs.is_some_and(|r| r <= limit), "{got:?}");
        }
        return;
    }
    assert_eq!(seen.len(), 4, "{seen:?}");
    // reg_heavy.ptx declares 6 b32, 66 f32 and 8 b64 registers: 88 by the
    // simulator's rule, 4 bytes spilled a register short.
    assert_eq!(
        got,
        vec![
            (Some(16), Some(288), Some(288)),
            (Some(32), Some(224), Some(224)),
            (Some(64), Some(96), Some(96)),
            (Some(88), Some(0), Some(0)),
        ]
    );
    assert!(stdout.contains(" 16   288/288"), "{stdout}");
    // Each setting's module is loaded once for all its geometries and
    // repetitions: two sweeps of 4 settings.
    let loads = std::fs::read_to_string(&log).unwrap().lines().count();
    assert_eq!(loads, 2 * 4);
}

#[test]
fn a_failed_jit_shows_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut ptx = SAXPY.to_vec();
    ptx.extend_from_slice(b"\n// reprise-sim: jit-fail\n");
    let Some(capture) = record_saxpy(dir.path(), &ptx) else {
        return;
    };
    if !simulated() {
        return;
    }
    let out = reprise(&["tune", s(&capture), "--max-registers", "32,64"]);
    let (stdout, stderr) = text(&out);
    eprintln!("{stdout}{stderr}");
    assert_exit(&out, 2);
    assert!(
        stdout.contains("FAILED: the driver's JIT could not compile"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the JIT failed with MAX_REGISTERS=64:"),
        "{stdout}"
    );
    assert!(stdout.contains("ptxas fatal"), "{stdout}");
    assert!(stderr.contains("no configuration ran"), "{stderr}");
    // In a search, each setting the JIT refuses is a failed row of its
    // own, and the search goes on to the next.
    let rows = dir.path().join("failed.jsonl");
    let out = reprise(&[
        "tune",
        s(&capture),
        "--max-registers",
        "32,64",
        "--trials",
        "2",
        "--rows",
        s(&rows),
    ]);
    let (stdout, stderr) = text(&out);
    eprintln!("{stdout}{stderr}");
    assert_exit(&out, 2);
    let got = jit_rows(&rows);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        std::fs::read_to_string(&rows)
            .unwrap()
            .lines()
            .skip(1)
            .all(|l| l.contains(r#""status":"failed""#) && l.contains("ptxas fatal")),
        "{stdout}"
    );
    let out = reprise(&["replay", s(&capture), "--max-registers", "32"]);
    assert_error(&out, &["MAX_REGISTERS=32", "JIT log:", "ptxas fatal"]);
}

#[test]
fn a_cubin_and_the_host_refuse_jit_options_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    if let Some(cubin) = record_saxpy(dir.path(), SAXPY_CUBIN) {
        for cmd in ["tune", "replay"] {
            let out = reprise(&[cmd, s(&cubin), "--max-registers", "32"]);
            assert_error(
                &out,
                &[
                    "JIT options apply to PTX only",
                    "a cubin is compiled already",
                ],
            );
        }
    }
    let host = tempfile::tempdir().unwrap();
    let captures = record_axpy(raw_config(host.path()), 256, 1);
    for cmd in ["tune", "replay"] {
        let out = reprise(&[cmd, s(&captures[0]), "--jit-opt-level", "2"]);
        assert_error(
            &out,
            &[
                "refused on the host executor",
                "runs native code compiled already",
            ],
        );
    }
}

#[test]
fn bad_jit_values_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("absent.json");
    for (args, needle) in [
        (&["--max-registers", "many"][..], "many"),
        (
            &["--jit-opt-level", "5"],
            "no JIT optimisation level (0 to 4",
        ),
        (
            &["--jit-option", "WALL_TIME=1"],
            "is no JIT option reprise passes",
        ),
        (
            &["--jit-option", "MAX_REGISTERS"],
            "a JIT option is NAME=VALUE",
        ),
        (&["--jit-option", "CACHE_MODE=fast"], "or NONE, CG, CA"),
        (&["--jit-option", "OPTIMIZATION_LEVEL=9"], "is 0 to 4"),
    ] {
        for cmd in ["tune", "replay"] {
            let out = reprise(&[&[cmd, s(&capture)][..], args].concat());
            assert_error(&out, &[needle]);
        }
    }
    if let Some(capture) = record_saxpy(dir.path(), SAXPY) {
        let out = reprise(&["replay", s(&capture), "--max-registers", "16,32"]);
        assert_error(
            &out,
            &["--max-registers takes one value on replay (2 given)"],
        );
        // A JIT sweep plots a bar for each (geometry, setting) pair, the
        // setting in its name.
        let svg = dir.path().join("p.svg");
        let args = [
            "tune",
            s(&capture),
            "--max-registers",
            "32,64",
            "--num-teams",
            "4,8",
            "--plot",
            s(&svg),
        ];
        let out = reprise(&args);
        assert_exit(&out, 0);
        let plot = std::fs::read_to_string(&svg).unwrap();
        for g in [4, 8] {
            for r in [32, 64] {
                let bar = format!("{g}x256 MAX_REGISTERS={r}");
                assert!(svg_text(&plot, &bar), "no bar {bar}");
            }
        }
    }
}

/// The (JIT setting, grid x, registers, recorded) of a results file's rows.
fn jit_rows(path: &Path) -> Vec<(String, u64, Option<u64>, bool)> {
    result_rows(path)
        .iter()
        .map(|v| {
            (
                v["jit"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{v}"))
                    .to_string(),
                v["grid"][0].as_u64().unwrap(),
                v["registers"].as_u64(),
                v["recorded"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn loads(log: &Path) -> usize {
    std::fs::read_to_string(log).map_or(0, |t| t.lines().count())
}

#[test]
fn a_random_search_over_max_registers_and_teams_loads_each_drawn_setting_once_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_reg_heavy(dir.path()) else {
        return;
    };
    let log = dir.path().join("jit.log");
    let env = [("REPRISE_SIM_CUDA_JIT_RECORD", s(&log))];
    let search = |rows: &Path, extra: &[&str]| {
        let mut args = vec![
            "tune",
            s(&capture),
            "--sampler",
            "random",
            "--seed",
            "1",
            "--max-registers",
            "16,32,64",
            "--num-teams",
            "4,8",
            "--repetitions",
            "1",
            "--warmup",
            "0",
        ];
        args.extend(extra);
        let _ = std::fs::remove_file(&log);
        let out = reprise_env(&args, &env);
        let (o, e) = text(&out);
        eprintln!("{o}{e}");
        assert_exit(&out, 0);
        (o, jit_rows(rows), loads(&log))
    };
    // 3 of the 6 (setting, geometry) candidates.
    let part = dir.path().join("part.jsonl");
    let (stdout, first, first_loads) = search(&part, &["--trials", "3", "--rows", s(&part)]);
    assert!(
        stdout.contains("search space: 3 (JIT settings) x 2 (--num-teams) x 1 (--num-threads)"),
        "{stdout}"
    );
    let settings: BTreeSet<&str> = first.iter().map(|r| r.0.as_str()).collect();
    let pairs: BTreeSet<(&str, u64)> = first.iter().map(|r| (r.0.as_str(), r.1)).collect();
    assert_eq!(pairs.len(), first.len(), "no candidate twice: {first:?}");
    // The drawn candidates, and the recorded geometry with each setting
    // drawn (the baseline): no more.
    let drawn_elsewhere = first.iter().filter(|r| !r.3).count();
    assert!(drawn_elsewhere <= 3, "{first:?}");
    assert_eq!(first.iter().filter(|r| r.3).count(), settings.len());
    assert!(first.len() <= 3 + settings.len(), "{first:?}");
    // One module load for each distinct setting drawn.
    if simulated() {
        assert_eq!(first_loads, settings.len(), "{first:?}");
        for (jit, _, regs, _) in &first {
            let limit: u64 = jit.trim_start_matches("MAX_REGISTERS=").parse().unwrap();
            assert_eq!(*regs, Some(limit), "{jit}: {first:?}");
        }
    }
    // The same seed draws the same candidates.
    let again = dir.path().join("again.jsonl");
    let (_, second, _) = search(&again, &["--trials", "3", "--rows", s(&again)]);
    let again_pairs: BTreeSet<(&str, u64)> = second.iter().map(|r| (r.0.as_str(), r.1)).collect();
    assert_eq!(again_pairs, pairs);
    // Resuming with the whole product measures only the pairs missing.
    let (stdout, all, resumed_loads) = search(&part, &["--resume", s(&part)]);
    assert!(
        stdout.contains(&format!(
            "{} configuration(s) already measured, {} to measure",
            first.len(),
            6 - first.len()
        )),
        "{stdout}"
    );
    assert_eq!(all.len(), 6, "{all:?}");
    assert_eq!(&all[..first.len()], &first[..]);
    let every: BTreeSet<(&str, u64)> = all.iter().map(|r| (r.0.as_str(), r.1)).collect();
    assert_eq!(every.len(), 6, "each (setting, geometry) once: {all:?}");
    let missing: BTreeSet<&str> = all[first.len()..].iter().map(|r| r.0.as_str()).collect();
    if simulated() {
        assert_eq!(resumed_loads, missing.len(), "{all:?}");
        let regs: BTreeSet<(String, Option<u64>)> =
            all.iter().map(|r| (r.0.clone(), r.2)).collect();
        assert_eq!(
            regs,
            [16, 32, 64]
                .map(|n| (format!("MAX_REGISTERS={n}"), Some(n)))
                .into_iter()
                .collect()
        );
    }
}

#[test]
fn workers_take_the_jit_setting_through_and_measure_each_pair_once() {
    if std::env::var_os("REPRISE_GPU_TESTS").is_some() {
        crate::common::skip("the simulator's device count is what this test sets", None);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_reg_heavy(dir.path()) else {
        return;
    };
    let rows = dir.path().join("two.jsonl");
    let out = reprise_env(
        &[
            "tune",
            s(&capture),
            "--max-registers",
            "16,64",
            "--num-teams",
            "4,8,16",
            "--workers",
            "auto",
            "--rows",
            s(&rows),
            "--repetitions",
            "1",
            "--warmup",
            "0",
        ],
        &[("REPRISE_SIM_CUDA_DEVICES", "2")],
    );
    let (o, e) = text(&out);
    eprintln!("{o}{e}");
    assert_exit(&out, 0);
    assert!(o.contains("2 workers"), "{o}");
    let got = jit_rows(&rows);
    let pairs: BTreeSet<(&str, u64)> = got.iter().map(|r| (r.0.as_str(), r.1)).collect();
    assert_eq!(pairs.len(), got.len(), "no pair twice: {got:?}");
    assert_eq!(got.len(), 6, "{got:?}");
    for (jit, _, regs, _) in &got {
        let limit: u64 = jit.trim_start_matches("MAX_REGISTERS=").parse().unwrap();
        assert_eq!(*regs, Some(limit), "{jit}: {got:?}");
    }
}

#[test]
fn a_jit_sweep_spread_over_shards_merges_into_the_unsharded_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_reg_heavy(dir.path()) else {
        return;
    };
    // 3 JIT settings x 2 geometries: 6 rows, 3 of them the recorded
    // geometry's (one for each setting).
    let sweep = [
        "tune",
        s(&capture),
        "--max-registers",
        "16,32,255",
        "--num-teams",
        "4,8",
        "--repetitions",
        "1",
        "--warmup",
        "0",
    ];
    let whole = dir.path().join("whole.jsonl");
    let out = reprise(&[&sweep[..], &["--rows", s(&whole)]].concat());
    assert_exit(&out, 0);
    let mut want = jit_rows(&whole);
    assert_eq!(want.len(), 6, "{want:?}");
    assert_eq!(want.iter().filter(|r| r.3).count(), 3, "{want:?}");
    let shards = dir.path().join("shards");
    let mut got = Vec::new();
    for (rows, out) in tune_shards(&shards, 3, |extra| reprise(&[&sweep[..], extra].concat())) {
        // A shard that holds no pair has no configuration that ran.
        assert!(matches!(out.status.code(), Some(0 | 2)), "{out:?}");
        got.extend(jit_rows(&rows));
    }
    // Each (setting, geometry) in one shard, the register counts those of
    // the unsharded sweep.
    let key = |r: &(String, u64, Option<u64>, bool)| (r.0.clone(), r.1);
    got.sort_by_key(key);
    want.sort_by_key(key);
    let pairs = |v: &[(String, u64, Option<u64>, bool)]| -> Vec<(String, u64)> {
        v.iter().map(key).collect()
    };
    assert_eq!(pairs(&got), pairs(&want), "the shards hold the sweep once");
    if simulated() {
        assert_eq!(got, want);
    }
    let out = reprise(&[&sweep[..], &["--merge", s(&shards), "--json"]].concat());
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 6, "{v}");
    let settings: BTreeSet<&str> = results.iter().filter_map(|r| r["jit"].as_str()).collect();
    assert_eq!(settings.len(), 3, "{v}");
    // A shard's rows file missing: the merge says so and exits 2.
    std::fs::remove_file(shards.join("1.jsonl")).unwrap();
    let out = reprise(&[&sweep[..], &["--merge", s(&shards)]].concat());
    assert_exit(&out, 2);
    assert!(
        text(&out).1.contains("INCOMPLETE shard 1/3"),
        "{}",
        text(&out).1
    );
}

/// A saxpy capture recorded from the PTX fixture with NVPTX IR attached
/// (the simulated driver runs a kernel by its name, so the IR's body need
/// not be saxpy's: its PTX, loaded with the JIT options, is what the
/// options reach); `None` without a GPU or LLVM 19.
fn record_saxpy_with_ir(dir: &Path) -> Option<PathBuf> {
    let llvm = Path::new("/usr/lib/llvm-19/bin");
    if !llvm.join("llc").exists() || !llvm.join("llvm-as").exists() {
        common::skip(
            "tune_jit::opt_levels_x_jit: LLVM 19 (llc, llvm-as) missing",
            None,
        );
        return None;
    }
    let ll = dir.join("saxpy.ll");
    std::fs::write(
        &ll,
        "target triple = \"nvptx64-nvidia-cuda\"\n\
         @bias = addrspace(1) externally_initialized global float 0.0\n\
         @launches = addrspace(1) externally_initialized global i32 0\n\
         define ptx_kernel void @saxpy(float %a, ptr %x, ptr %y, i32 %n) {\n  ret void\n}\n",
    )
    .unwrap();
    let bc = dir.join("saxpy.bc");
    let st = std::process::Command::new(llvm.join("llvm-as"))
        .arg(&ll)
        .arg("-o")
        .arg(&bc)
        .status()
        .unwrap();
    assert!(st.success(), "llvm-as");
    let ir = std::fs::read(&bc).unwrap();
    let config = raw_config(&dir.join("rec"));
    record_gpu_saxpy_ir(gpu()?, config, SAXPY, Some(&ir), 1024, 1)
        .into_iter()
        .next()
}

#[test]
fn opt_levels_cross_jit_options_on_cuda_each_pair_loaded_once_and_sharded() {
    let dir = tempfile::tempdir().unwrap();
    let Some(capture) = record_saxpy_with_ir(dir.path()) else {
        return;
    };
    let log = dir.path().join("jit.log");
    let cache = dir.path().join("cache");
    let env = [
        ("REPRISE_SIM_CUDA_JIT_RECORD", s(&log)),
        ("REPRISE_IR_CACHE", s(&cache)),
    ];
    let sweep = [
        "tune",
        s(&capture),
        "--opt-level",
        "O1,O2",
        "--max-registers",
        "32,64",
        "--llvm",
        "/usr/lib/llvm-19/bin",
        "--repetitions",
        "1",
        "--warmup",
        "0",
    ];
    let rows = dir.path().join("all.jsonl");
    let out = reprise_env(&[&sweep[..], &["--rows", s(&rows)]].concat(), &env);
    let (stdout, stderr) = text(&out);
    eprintln!("{stdout}{stderr}");
    assert_exit(&out, 0);
    assert!(
        stdout.contains("search space: 4 (--opt-level x JIT settings)"),
        "{stdout}"
    );
    let got: BTreeSet<(String, u64)> = result_rows(&rows)
        .iter()
        .map(|v| {
            assert_eq!(v["status"], "verified", "{v}");
            (
                format!("O{},{}", v["opt_level"], v["jit"].as_str().unwrap()),
                v["grid"][0].as_u64().unwrap(),
            )
        })
        .collect();
    let want: BTreeSet<(String, u64)> = [
        "O1,MAX_REGISTERS=32",
        "O1,MAX_REGISTERS=64",
        "O2,MAX_REGISTERS=32",
        "O2,MAX_REGISTERS=64",
    ]
    .into_iter()
    .map(|l| (l.to_string(), 4))
    .collect();
    assert_eq!(got, want);
    if simulated() {
        // The PTX compiled from IR, loaded once for each pair with its
        // register limit.
        let text = std::fs::read_to_string(&log).unwrap();
        let limits: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("0=")))
            .collect();
        assert_eq!(limits.len(), 4, "{text}");
        assert_eq!(limits.iter().filter(|w| **w == "0=32").count(), 2, "{text}");
    }
    // Two shards hold the four pairs once between them, and merge into
    // the unsharded ranking.
    let shards = dir.path().join("shards");
    let mut union = BTreeSet::new();
    let mut count = 0;
    for (rows, out) in tune_shards(&shards, 2, |extra| {
        reprise_env(&[&sweep[..], extra].concat(), &env)
    }) {
        assert!(matches!(out.status.code(), Some(0 | 2)), "{out:?}");
        for v in result_rows(&rows) {
            count += 1;
            union.insert((
                format!("O{},{}", v["opt_level"], v["jit"].as_str().unwrap()),
                v["grid"][0].as_u64().unwrap(),
            ));
        }
    }
    assert_eq!(count, 4);
    assert_eq!(union, want);
    let out = reprise_env(
        &[&sweep[..], &["--merge", s(&shards), "--json"]].concat(),
        &env,
    );
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["results"].as_array().unwrap().len(), 4, "{v}");
}
