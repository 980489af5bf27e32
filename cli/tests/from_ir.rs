//! Replay from IR: captures in LLVM main's layout with a `.bc` beside the
//! `.image` (`RecordReplay.cpp`: `<KernelHash>_<LaunchConfigHash>.bc`),
//! made here from a real OpenMP program.
//!
//! clang-16 compiles `tests/openmp/saxpy.c` with `-fopenmp-target-jit`, so
//! the application carries the kernel as LLVM bitcode; `reprise extract`
//! takes the bitcode out. Debian's LLVM 16 runtime cannot JIT for the
//! host, so the recorded run is reprise's own: the bitcode compiled ahead
//! of time, launched through the Recorder on the host executor, its files
//! then laid out as LLVM main writes them (current keys, hashed names) with
//! the bitcode as `.bc`. Skipped with a message when clang-16 is absent,
//! unless `REPRISE_REQUIRE_LLVM16=1`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::llvm16;
use common::*;
use reprise::compile::{self, CompileOptions, Target, Toolchain};
use reprise::core::record::{Generation, KernelRecord};
use reprise::{Args, HostExecutor, RecordConfig, Recorder};

const LLVM16: &str = "/usr/lib/llvm-16/bin";
const N: usize = 1024;

/// The application, its bitcode as `reprise extract` wrote it, and the
/// capture in LLVM main's layout; `None` when skipped.
struct Made {
    _dir: tempfile::TempDir,
    root: PathBuf,
    bitcode: PathBuf,
    descriptor: PathBuf,
    /// The capture as reprise's Recorder wrote it, IR attached.
    recorded: PathBuf,
}

fn made(test: &str) -> Option<Made> {
    llvm16::need(llvm16::compiler(), test)?;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openmp/saxpy.c");
    let app = root.join("saxpy");
    let st = Command::new("clang-16")
        .args([
            "-fopenmp",
            "-fopenmp-targets=x86_64-pc-linux-gnu",
            "-fopenmp-target-jit",
            "-O2",
        ])
        .arg(&src)
        .arg("-o")
        .arg(&app)
        .status()
        .unwrap();
    assert!(
        st.success(),
        "clang-16 -fopenmp-target-jit {}",
        src.display()
    );
    let out = reprise(&["extract", "--dir", s(&root.join("images")), s(&app)]);
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("LLVM bitcode"), "{stdout}");
    assert!(stdout.contains("kernels: __omp_offloading_"), "{stdout}");
    let bitcode = root.join("images/saxpy.x86_64-pc-linux-gnu.bc");
    let ir = std::fs::read(&bitcode).unwrap();
    let info = compile::describe(&bitcode, &ir).unwrap();
    assert_eq!(info.triple.as_deref(), Some("x86_64-pc-linux-gnu"));
    assert_eq!(info.version().map(|v| v.0), Some(16), "{:?}", info.producer);
    let kernel = info
        .functions
        .iter()
        .find(|f| f.starts_with("__omp_offloading_"))
        .expect("the bitcode defines the target region's entry")
        .clone();

    // The recorded run: the bitcode compiled ahead of time, launched
    // through reprise's Recorder: y = scale * x + y, scale = 2.
    let tc = Toolchain::find(Some(Path::new(LLVM16))).unwrap();
    let so = compile::compile_cached_in(
        &bitcode,
        &ir,
        &Target::Host,
        &CompileOptions::default(),
        &tc,
        Some(root.join("made-cache")),
    )
    .unwrap();
    assert!(!so.cached);
    let rec_dir = root.join("recorded");
    let config = RecordConfig::default()
        .enabled(true)
        .dir(&rec_dir)
        .region_size(64 << 20)
        .format(reprise::CaptureFormat::Raw)
        .fsync(false);
    let mut rec = Recorder::new(HostExecutor::new().unwrap(), 0, config).unwrap();
    let x = rec.alloc((N * 4) as u64, 64).unwrap();
    let y = rec.alloc((N * 4) as u64, 64).unwrap();
    let xs: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let ys: Vec<f32> = (0..N).map(|i| 1000.0 - i as f32).collect();
    rec.upload(x, &floats(&xs)).unwrap();
    rec.upload(y, &floats(&ys)).unwrap();
    let image = rec.load_image(&so.bytes).unwrap();
    // The Recorder keeps the IR beside each capture's image; what is not
    // LLVM bitcode (NVVM IR, PTX) it refuses.
    let refused = rec
        .attach_ir(image, b".version 8.0\n.target sm_80\n")
        .unwrap_err();
    assert!(
        refused.to_string().contains("not LLVM bitcode"),
        "{refused}"
    );
    rec.attach_ir(image, &ir).unwrap();
    let k = rec.kernel(image, &kernel).unwrap();
    // The entry's parameters, as the IR declares them: (i64 n, ptr y, ptr x).
    let args = Args::new().scalar(N as u64).ptr(y).ptr(x);
    let written = reprise::block_on(async {
        rec.launch(&k, geometry(1, 1), &args).await.unwrap();
        let out = rec.download(y, N * 4).await.unwrap();
        let y1 = f32::from_le_bytes(out[4..8].try_into().unwrap());
        assert_eq!(y1, 2.0 * 1.0 + 999.0, "the kernel ran");
        rec.finish().await.unwrap()
    });
    assert_eq!(written.len(), 1);

    // Laid out as LLVM main writes it.
    let llvm = root.join("llvm");
    std::fs::create_dir(&llvm).unwrap();
    let mut record = KernelRecord::from_json(&std::fs::read(&written[0]).unwrap()).unwrap();
    record.generation = Generation::LlvmCurrent;
    record.region_size = Some(64 << 20);
    record.teams_limits = Some([0, 0]);
    record.threads_limits = Some([1, 1024]);
    let stem = "4118283624592312345_1274526373";
    let at = |ext: &str| llvm.join(format!("{stem}.{ext}"));
    std::fs::write(
        at("json"),
        record.to_json_string(Generation::LlvmCurrent).unwrap(),
    )
    .unwrap();
    let from = reprise::CapturePaths::new(&written[0], Generation::Reprise);
    for (src, ext) in [
        (&from.input, "record_input"),
        (&from.output, "record_output"),
        (&from.globals, "globals"),
        (&from.image, "image"),
    ] {
        std::fs::copy(src, at(ext)).unwrap_or_else(|e| {
            let listing: Vec<_> = std::fs::read_dir(&rec_dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            panic!("{}: {e}; {listing:?}", src.display())
        });
    }
    let kept = reprise::capture::ir_path(&written[0]);
    assert_eq!(std::fs::read(&kept).unwrap(), ir, "{}", kept.display());
    std::fs::copy(&kept, at("bc")).unwrap();
    Some(Made {
        _dir: dir,
        root,
        bitcode,
        descriptor: at("json"),
        recorded: written[0].clone(),
    })
}

fn run(m: &Made, args: &[&str]) -> std::process::Output {
    let cache = m.root.join("cache");
    reprise_env(args, &[("REPRISE_IR_CACHE", s(&cache))])
}

#[test]
fn a_capture_in_llvm_mains_layout_replays_from_its_ir_and_the_cache_is_hit_the_second_time() {
    let Some(m) = made("from_ir::replays") else {
        return;
    };
    let d = s(&m.descriptor);
    let first = run(
        &m,
        &["replay", "--from-ir", "--verify", "--llvm", LLVM16, d],
    );
    assert_exit(&first, 0);
    let (stdout, _) = text(&first);
    eprintln!("{stdout}");
    assert!(stdout.contains("llvm-current capture"), "{stdout}");
    assert!(stdout.contains("compiled for x86-64 host"), "{stdout}");
    assert!(stdout.contains("LLVM 16.0.6, -O3"), "{stdout}");
    assert!(stdout.contains("verification: PASS"), "{stdout}");
    let second = run(
        &m,
        &["replay", "--from-ir", "--verify", "--llvm", LLVM16, d],
    );
    assert_exit(&second, 0);
    let (stdout, _) = text(&second);
    assert!(stdout.contains("taken from the cache"), "{stdout}");
    assert!(stdout.contains("verification: PASS"), "{stdout}");
    // Another level is another compile, verified too.
    let o0 = run(
        &m,
        &[
            "replay",
            "--from-ir",
            "--ir-opt-level",
            "O0",
            "--verify",
            "--llvm",
            LLVM16,
            d,
        ],
    );
    assert_exit(&o0, 0);
    let (stdout, _) = text(&o0);
    assert!(
        stdout.contains("compiled for x86-64 host") && stdout.contains("-O0"),
        "{stdout}"
    );
}

#[test]
fn jit_save_image_keeps_the_compiled_image_beside_the_capture() {
    let Some(m) = made("from_ir::jit_save_image") else {
        return;
    };
    let d = s(&m.descriptor);
    let out = run(
        &m,
        &[
            "replay",
            "--bitcode",
            s(&m.bitcode),
            "--jit-save-image",
            "--llvm",
            LLVM16,
            d,
        ],
    );
    assert_exit(&out, 0);
    let saved = m.descriptor.with_extension("jit.so");
    let bytes = std::fs::read(&saved).unwrap_or_else(|e| panic!("{}: {e}", saved.display()));
    assert_eq!(&bytes[..4], b"\x7fELF");
}

#[test]
fn a_bitcode_newer_than_the_toolchain_is_refused_naming_both_versions() {
    let Some(m) = made("from_ir::newer_bitcode") else {
        return;
    };
    let found = Command::new("sh")
        .args(["-c", "command -v clang-19"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("REPRISE_REQUIRE_LLVM16").as_deref() != Ok("1"),
            "REPRISE_REQUIRE_LLVM16=1 but clang-19 is missing (Debian's clang-19)"
        );
        crate::common::skip(
            "from_ir::newer_bitcode: clang-19 is missing",
            Some("clang-19"),
        );
        return;
    }
    let c = m.root.join("k.c");
    std::fs::write(&c, "void k(float *y) { y[0] += 1.0f; }\n").unwrap();
    let bc = m.root.join("k19.bc");
    let st = Command::new("clang-19")
        .args(["-c", "-emit-llvm", "-O2"])
        .arg(&c)
        .arg("-o")
        .arg(&bc)
        .status()
        .unwrap();
    assert!(st.success());
    let out = run(
        &m,
        &[
            "replay",
            "--bitcode",
            s(&bc),
            "--llvm",
            LLVM16,
            s(&m.descriptor),
        ],
    );
    assert_exit(&out, 2);
    let (_, stderr) = text(&out);
    assert!(
        stderr.contains("k19.bc") && stderr.contains("LLVM 19.") && stderr.contains("LLVM 16.0.6"),
        "{stderr}"
    );
}

#[test]
fn a_bitcode_file_that_is_not_bitcode_is_named() {
    let Some(m) = made("from_ir::not_bitcode") else {
        return;
    };
    let bogus = m.root.join("bogus.bc");
    std::fs::write(&bogus, b"\x7fELF\x02\x01 not IR").unwrap();
    let out = run(&m, &["replay", "--bitcode", s(&bogus), s(&m.descriptor)]);
    assert!(!out.status.success());
    let (_, stderr) = text(&out);
    assert!(
        stderr.contains("bogus.bc") && stderr.contains("not LLVM bitcode"),
        "{stderr}"
    );
}

#[test]
fn inspect_shows_the_ir_its_triple_and_the_functions_it_defines() {
    let Some(m) = made("from_ir::inspect") else {
        return;
    };
    let out = reprise(&["inspect", s(&m.descriptor)]);
    let (stdout, _) = text(&out);
    let ir = stdout
        .lines()
        .find(|l| l.starts_with("ir "))
        .unwrap_or_else(|| panic!("no ir line:\n{stdout}"));
    assert!(ir.contains(".bc") && ir.contains("LLVM16.0.6"), "{ir}");
    assert!(ir.contains("x86_64-pc-linux-gnu"), "{ir}");
    assert!(stdout.contains("defines __omp_offloading_"), "{stdout}");
    let json = reprise(&["inspect", "--json", s(&m.descriptor)]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["ir"]["triple"], "x86_64-pc-linux-gnu");
    // A capture without IR says so.
    std::fs::remove_file(m.descriptor.with_extension("bc")).unwrap();
    let out = reprise(&["inspect", s(&m.descriptor)]);
    let (stdout, _) = text(&out);
    assert!(stdout.lines().any(|l| l == "ir        none"), "{stdout}");
}

#[test]
fn tune_ranks_optimisation_levels_from_ir_each_verified_with_its_compile_time_apart() {
    let Some(m) = made("from_ir::tune_opt_levels") else {
        return;
    };
    let out = run(
        &m,
        &[
            "tune",
            "--opt-level",
            "O0,O2,O3",
            "--repetitions",
            "3",
            "--llvm",
            LLVM16,
            s(&m.descriptor),
        ],
    );
    let (stdout, stderr) = text(&out);
    eprintln!("{stdout}");
    assert_exit(&out, 0);
    assert!(stdout.contains("3 optimisation levels"), "{stdout}{stderr}");
    assert!(
        stdout.contains("compile") && stdout.contains("kernel med"),
        "{stdout}"
    );
    for level in ["O0", "O2", "O3"] {
        let row = stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(level))
            .unwrap_or_else(|| panic!("no row for {level}:\n{stdout}"));
        assert!(row.ends_with("verified"), "{row}");
    }
    let ranks: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.parse::<u32>().is_ok())
        .collect();
    assert_eq!(ranks, ["1", "2", "3"], "{stdout}");
}

#[test]
fn a_search_over_opt_levels_ranks_the_drawn_levels_and_resumes_past_them() {
    let Some(m) = made("from_ir::tune_opt_level_search") else {
        return;
    };
    let rows = m.root.join("levels.jsonl");
    let search = |extra: &[&str]| {
        let mut args = vec![
            "tune",
            s(&m.descriptor),
            "--opt-level",
            "O0,O2",
            "--sampler",
            "random",
            "--seed",
            "1",
            "--repetitions",
            "2",
            "--llvm",
            LLVM16,
        ];
        args.extend(extra);
        let out = run(&m, &args);
        let (stdout, stderr) = text(&out);
        eprintln!("{stdout}{stderr}");
        assert_exit(&out, 0);
        stdout
    };
    let levels = row_levels;
    // One level of the two drawn: one row, of that level.
    let stdout = search(&["--trials", "1", "--rows", s(&rows)]);
    assert!(
        stdout.contains("search space: 2 (--opt-level) = 2"),
        "{stdout}"
    );
    let first = levels(&rows);
    assert_eq!(first.len(), 1, "{first:?}");
    let ranked: Vec<&str> = stdout
        .lines()
        .filter(|l| l.split_whitespace().next() == Some("1"))
        .collect();
    assert!(
        ranked.len() == 1 && ranked[0].contains(&first[0]) && ranked[0].ends_with("verified"),
        "{stdout}"
    );
    // Resuming over both measures the other level only, and ranks both.
    let stdout = search(&["--resume", s(&rows)]);
    assert!(
        stdout.contains("1 configuration(s) already measured, 1 to measure"),
        "{stdout}"
    );
    let all = levels(&rows);
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[0], first[0]);
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(sorted, ["O0", "O2"]);
    for rank in ["1", "2"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.split_whitespace().next() == Some(rank) && l.ends_with("verified")),
            "rank {rank}: {stdout}"
        );
    }
    // The host's kernels take no geometry: a geometry list is refused.
    let out = run(
        &m,
        &[
            "tune",
            s(&m.descriptor),
            "--opt-level",
            "O2",
            "--trials",
            "1",
            "--num-teams",
            "2,4",
            "--llvm",
            LLVM16,
        ],
    );
    assert_exit(&out, 2);
}

/// The optimisation levels of a rows file's rows, in the file's order.
fn row_levels(path: &Path) -> Vec<String> {
    result_rows(path)
        .iter()
        .map(|v| {
            assert_eq!(v["status"], "verified", "{v}");
            format!("O{}", v["opt_level"].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn a_sweep_over_opt_levels_spread_over_shards_merges_into_the_unsharded_one() {
    let Some(m) = made("from_ir::tune_opt_level_shards") else {
        return;
    };
    let sweep = [
        "tune",
        s(&m.descriptor),
        "--opt-level",
        "O0,O1,O2,O3",
        "--repetitions",
        "1",
        "--warmup",
        "0",
        "--llvm",
        LLVM16,
    ];
    let tune = |extra: &[&str]| {
        let out = run(&m, &[&sweep[..], extra].concat());
        let (stdout, stderr) = text(&out);
        eprintln!("{stdout}{stderr}");
        out
    };
    let whole = m.root.join("whole.jsonl");
    assert_exit(&tune(&["--rows", s(&whole)]), 0);
    let mut want = row_levels(&whole);
    want.sort();
    assert_eq!(want, ["O0", "O1", "O2", "O3"]);
    let shards = m.root.join("shards");
    let mut got = Vec::new();
    for (rows, out) in tune_shards(&shards, 2, tune) {
        // A shard that holds no level has no configuration that ran.
        assert!(matches!(out.status.code(), Some(0 | 2)), "{out:?}");
        got.extend(row_levels(&rows));
    }
    got.sort();
    assert_eq!(got, want, "each level in one shard");
    let out = tune(&["--merge", s(&shards), "--json"]);
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut merged: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["opt_level"].as_str().unwrap())
        .collect();
    merged.sort();
    assert_eq!(merged, want, "{v}");
    // JIT options load PTX: on the host they are refused as ever, with
    // --opt-level too.
    let out = tune(&["--max-registers", "32"]);
    assert_error(&out, &["refused on the host executor"]);
}

#[test]
fn the_recorders_capture_names_its_ir_in_its_descriptor_and_replays_from_it() {
    let Some(m) = made("from_ir::recorder_key") else {
        return;
    };
    let json = std::fs::read_to_string(&m.recorded).unwrap();
    assert!(json.contains("\"ir\":"), "{json}");
    let d = s(&m.recorded);
    let out = run(
        &m,
        &["replay", "--from-ir", "--verify", "--llvm", LLVM16, d],
    );
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("verification: PASS"), "{stdout}");
    // The descriptor says there is IR: a missing one is named.
    let bc = reprise::capture::ir_path(&m.recorded);
    std::fs::remove_file(&bc).unwrap();
    let out = run(&m, &["replay", "--from-ir", "--llvm", LLVM16, d]);
    assert!(!out.status.success());
    let (_, stderr) = text(&out);
    assert!(stderr.contains(s(&bc)), "{stderr}");
    // A changed one too.
    std::fs::write(&bc, b"BC\xc0\xde changed").unwrap();
    let out = run(&m, &["replay", "--from-ir", "--llvm", LLVM16, d]);
    let (_, stderr) = text(&out);
    assert!(
        !out.status.success() && stderr.contains("checksum"),
        "{stderr}"
    );
}

/// LLVM 19's tools, where Debian's clang-19, llvm-19 and lld-19 put them;
/// `None` after saying why when absent.
fn llvm19(test: &str) -> Option<Toolchain> {
    let dir = Path::new("/usr/lib/llvm-19/bin");
    let missing: Vec<&str> = ["clang", "llc", "ld.lld"]
        .into_iter()
        .filter(|t| !dir.join(t).exists())
        .collect();
    if missing.is_empty() {
        return Some(Toolchain::find(Some(dir)).unwrap());
    }
    let why = format!("{missing:?} missing (Debian's clang-19, llvm-19, lld-19)");
    assert!(
        std::env::var("REPRISE_REQUIRE_LLVM16").as_deref() != Ok("1"),
        "{test}: REPRISE_REQUIRE_LLVM16=1 but {why}"
    );
    crate::common::skip(&format!("{test}: {why}"), None);
    None
}

#[test]
fn gpu_ir_compiles_to_ptx_for_the_sm_and_to_an_amd_code_object_for_the_gfx() {
    let Some(tc) = llvm19("from_ir::gpu_targets") else {
        return;
    };
    assert!(tc.llc.is_some() && tc.lld.is_some());
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("k.c");
    std::fs::write(&c, "void k(float *y) { y[0] += 1.0f; }\n").unwrap();
    for (triple, extra, target) in [
        ("nvptx64-nvidia-cuda", None, Target::Nvptx { sm: 80 }),
        (
            "amdgcn-amd-amdhsa",
            Some("-mcpu=gfx90a"),
            Target::Amdgcn {
                gfx: "gfx90a".into(),
            },
        ),
    ] {
        let bc = dir.path().join(format!("{triple}.bc"));
        let st = Command::new(&tc.clang)
            .arg(format!("--target={triple}"))
            .args(extra)
            .args(["-O2", "-c", "-emit-llvm", "-nogpulib"])
            .arg(&c)
            .arg("-o")
            .arg(&bc)
            .status()
            .unwrap();
        assert!(st.success(), "{triple}");
        let ir = std::fs::read(&bc).unwrap();
        let got = compile::compile_cached_in(
            &bc,
            &ir,
            &target,
            &CompileOptions::default(),
            &tc,
            Some(dir.path().join("cache")),
        )
        .unwrap_or_else(|e| panic!("{triple}: {e}"));
        match target {
            Target::Nvptx { .. } => {
                let text = String::from_utf8_lossy(&got.bytes);
                assert!(text.contains(".target sm_80"), "{text}");
                assert_eq!(
                    reprise::core::image::sniff(&got.bytes),
                    reprise::core::image::ImageKind::Ptx
                );
            }
            _ => assert_eq!(
                reprise::core::image::sniff(&got.bytes),
                reprise::core::image::ImageKind::Elf {
                    machine: reprise::core::image::EM_AMDGPU,
                    elf_type: 3
                }
            ),
        }
        // IR for one target is not compiled for another.
        let e = compile::compile_cached_in(
            &bc,
            &ir,
            &Target::Host,
            &CompileOptions::default(),
            &tc,
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("not for the x86-64 host"), "{e}");
    }
}

#[test]
fn the_toolchain_on_path_is_found_by_its_versioned_name() {
    let Some(m) = made("from_ir::toolchain_on_path") else {
        return;
    };
    // clang-16 at least is on PATH (or a newer clang-N, whose host images
    // link the system's OpenMP runtime).
    let out = run(&m, &["replay", "--from-ir", "--verify", s(&m.descriptor)]);
    let (stdout, stderr) = text(&out);
    assert_exit(&out, 0);
    assert!(
        stdout.contains("compiled for x86-64 host with "),
        "{stdout}{stderr}"
    );
    assert!(stdout.contains("verification: PASS"), "{stdout}");
}

/// Every option of a sweep over optimisation levels acts: `--csv` writes
/// the levels' rows (it was accepted and ignored).
#[test]
fn a_sweep_over_opt_levels_writes_the_csv_it_is_given() {
    let Some(m) = made("from_ir::tune_opt_levels_csv") else {
        return;
    };
    let csv = m.descriptor.with_extension("levels.csv");
    let out = run(
        &m,
        &[
            "tune",
            "--opt-level",
            "O0,O2",
            "--repetitions",
            "1",
            "--llvm",
            LLVM16,
            "--csv",
            s(&csv),
            s(&m.descriptor),
        ],
    );
    assert_exit(&out, 0);
    let text = std::fs::read_to_string(&csv).unwrap_or_else(|e| panic!("{}: {e}", csv.display()));
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{text}");
    for level in ["O0", "O2"] {
        assert!(
            rows.iter().any(|r| r.contains(level)),
            "no row for {level}:\n{text}"
        );
    }
}
