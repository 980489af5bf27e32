//! Helpers shared by the end-to-end tests: the kernels the build compiled,
//! running the `reprise` binary, recording through the library, and a
//! generator of LLVM-format captures written from the format description
//! alone.

#![allow(dead_code)]

pub use reprise_test_support::cuda_driver as sim;

pub mod llvm16;
pub mod programs;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use reprise::core::globals::{self, Layout};
use reprise::core::record::{Generation, KernelRecord};
use reprise::{Args, HostExecutor, LaunchConfig, RecordConfig, Recorder};

pub const AXPY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels/axpy.so"));
pub const MANY_ARGS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels/many_args.so"));

/// The `reprise` binary under test: `REPRISE_BIN` when set (test binaries
/// carried to another machine), else the one cargo built.
pub fn reprise_bin() -> PathBuf {
    std::env::var_os("REPRISE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_reprise")))
}

/// Runs the `reprise` binary.
pub fn reprise(args: &[&str]) -> Output {
    reprise_env(args, &[])
}

/// Runs the `reprise` binary with extra environment variables. A process
/// that loaded the simulated CUDA driver hands it on; the simulated HSA
/// runtime a test loaded in this process (`REPRISE_HSA_LIBRARY`) goes to a
/// child only when the test passes it.
pub fn reprise_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(reprise_bin());
    // The embedded interposer is written out under target/, not into the
    // user's cache directory.
    cmd.args(args)
        .env("RUST_BACKTRACE", "0")
        .env(
            "XDG_CACHE_HOME",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache"),
        )
        .env_remove("REPRISE_HSA_LIBRARY");
    if let Some((k, v)) = sim::child_env() {
        cmd.env(k, v);
    }
    let out = output_within(cmd.envs(env.iter().copied()), RUN_LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "reprise panicked:\n{stderr}");
    out
}

/// How long one run of the binary may take before the test fails (a hang
/// must fail the test, not stall the suite).
pub const RUN_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs `cmd` to completion with its output captured; kills it and panics
/// when it runs past `limit`.
pub fn output_within(cmd: &mut Command, limit: std::time::Duration) -> Output {
    use std::io::Read;
    use std::process::Stdio;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A binary a test has just copied can be busy for a moment: another
    // test's child, forked while the copy was open for writing, holds it
    // until it execs (ETXTBSY).
    let mut tries = 0;
    let mut child = loop {
        match cmd.spawn() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            spawned => break spawned.expect("the reprise binary runs"),
        }
    };
    let mut pipes = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let stdout = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = pipes.0.read_to_end(&mut v);
        v
    });
    let stderr = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = pipes.1.read_to_end(&mut v);
        v
    });
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for reprise") {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let err = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
            panic!("{cmd:?} ran past {limit:?} and was killed; stderr:\n{err}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Asserts the run exited with `code`, showing its output otherwise.
pub fn assert_exit(o: &Output, code: i32) {
    let (out, err) = text(o);
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout:\n{out}\nstderr:\n{err}"
    );
}

/// Asserts exit status 2 and that stderr mentions every one of `needles`.
pub fn assert_error(o: &Output, needles: &[&str]) {
    assert_exit(o, 2);
    let (_, err) = text(o);
    for n in needles {
        assert!(err.contains(n), "stderr lacks {n:?}:\n{err}");
    }
}

pub fn floats(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

/// The recorder set-up of the tune tests: raw files in `dir` (tests read
/// and change the recorded output), a 64 MiB region, no fsync.
pub fn raw_config(dir: &Path) -> RecordConfig {
    RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20)
        .fsync(false)
        .format(reprise::CaptureFormat::Raw)
}

/// One saxpy launch of `n` elements from the PTX (or cubin) `image` on the
/// GPU (the simulated driver unless `REPRISE_GPU_TESTS=1`), raw files in
/// `dir`, 256 threads a block; `None` where there is no GPU to record on.
pub fn record_one_gpu_saxpy(dir: &Path, image: &[u8], n: usize) -> Option<PathBuf> {
    record_gpu_saxpy(gpu()?, raw_config(dir), image, n, 1)
        .into_iter()
        .next()
}

/// The rows of a tune results (or shard rows) file, the header checked to
/// be its first line.
pub fn result_rows(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert!(header["tune_shard"].is_string(), "{text}");
    lines
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Whether the SVG `svg` has a text element that reads `text` (the plot's
/// labels stand on lines of their own).
pub fn svg_text(svg: &str, text: &str) -> bool {
    svg.lines().any(|l| l.trim() == text)
}

/// Runs `tune(args)` for each shard K of `n`, with `--shard K/n --rows
/// DIR/K.jsonl` (DIR made here); each rows file and its run's output.
pub fn tune_shards(
    dir: &Path,
    n: u32,
    mut tune: impl FnMut(&[&str]) -> Output,
) -> Vec<(PathBuf, Output)> {
    std::fs::create_dir_all(dir).unwrap();
    (0..n)
        .map(|k| {
            let rows = dir.join(format!("{k}.jsonl"));
            let shard = format!("{k}/{n}");
            let out = tune(&["--shard", &shard, "--rows", s(&rows)]);
            (rows, out)
        })
        .collect()
}

/// Records `launches` launches of `saxpy(3.0, x, y, n)` from the GPU image
/// `image` (PTX or a code object) on `exec`, `x` all 1.0 and `y` all 2.0,
/// 256 threads a block; the descriptors written.
pub fn record_gpu_saxpy<E>(
    exec: E,
    config: RecordConfig,
    image: &[u8],
    n: usize,
    launches: usize,
) -> Vec<PathBuf>
where
    E: reprise::executors::AnyExecutor,
{
    record_gpu_saxpy_ir(exec, config, image, None, n, launches)
}

/// [`record_gpu_saxpy`], with the LLVM bitcode `ir` attached to the image
/// (`Recorder::attach_ir`) where one is given.
pub fn record_gpu_saxpy_ir<E>(
    exec: E,
    config: RecordConfig,
    image: &[u8],
    ir: Option<&[u8]>,
    n: usize,
    launches: usize,
) -> Vec<PathBuf>
where
    E: reprise::executors::AnyExecutor,
{
    let mut rec = Recorder::new(exec, 0, config).unwrap();
    let x = rec.alloc((n * 4) as u64, 256).unwrap();
    let y = rec.alloc((n * 4) as u64, 256).unwrap();
    rec.upload(x, &floats(&vec![1.0; n])).unwrap();
    rec.upload(y, &floats(&vec![2.0; n])).unwrap();
    let image = rec.load_image(image).unwrap();
    if let Some(ir) = ir {
        rec.attach_ir(image, ir).unwrap();
    }
    let k = rec.kernel(image, "saxpy").unwrap();
    let args = Args::new().f32(3.0).ptr(x).ptr(y).i32(n as i32);
    let geometry = geometry((n as u32).div_ceil(256), 256);
    reprise::block_on(async {
        for _ in 0..launches {
            rec.launch(&k, geometry, &args).await.unwrap();
        }
        rec.finish().await.unwrap()
    })
}

pub fn geometry(teams: u32, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid: [teams, 1, 1],
        block: [threads, 1, 1],
        shared_mem: 0,
    }
}

/// Records `launches` launches of the axpy kernel through the library with
/// `config` (directory and recording switched on by the caller), alpha set
/// to 2.5 on the device before the first launch. Returns the descriptors.
pub fn record_axpy(config: RecordConfig, n: usize, launches: usize) -> Vec<PathBuf> {
    let exec = HostExecutor::new().unwrap();
    let mut rec = Recorder::new(exec, 0, config).unwrap();
    let x = rec.alloc((n * 4) as u64, 64).unwrap();
    let y = rec.alloc((n * 4) as u64, 64).unwrap();
    let calls = rec.alloc(8, 8).unwrap();
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let ys: Vec<f32> = (0..n).map(|i| 1000.0 - i as f32).collect();
    rec.upload(x, &floats(&xs)).unwrap();
    rec.upload(y, &floats(&ys)).unwrap();
    let image = rec.load_image(AXPY).unwrap();
    let (alpha, size) = rec
        .global(image, "alpha")
        .unwrap()
        .expect("axpy defines alpha");
    assert_eq!(size, 4);
    rec.upload(alpha, &2.5f32.to_le_bytes()).unwrap();
    let k = rec.kernel(image, "axpy").unwrap();
    let args = Args::new().ptr(x).ptr(y).scalar(n as u64).ptr(calls);
    reprise::block_on(async {
        for _ in 0..launches {
            rec.launch(&k, geometry(4, 64), &args).await.unwrap();
        }
        // The kernel really ran: y = 2.5 * x + y after each launch.
        let out = rec.download(y, n * 4).await.unwrap();
        let y1 = f32::from_le_bytes(out[4..8].try_into().unwrap());
        assert_eq!(y1, 999.0 + 2.5 * launches as f32);
        rec.finish().await.unwrap()
    })
}

/// Flips one byte of a capture's recorded output and updates the
/// descriptor's checksum, as if the kernel had produced that output.
pub fn corrupt_output(descriptor: &Path, offset: u64) {
    let mut rec = KernelRecord::from_json(&std::fs::read(descriptor).unwrap()).unwrap();
    let output = reprise_std::CapturePaths::new(descriptor, rec.generation).output;
    let mut bytes = std::fs::read(&output).unwrap();
    bytes[offset as usize] ^= 0x40;
    std::fs::write(&output, &bytes).unwrap();
    if rec.checksums.output.is_some() {
        rec.checksums.output = Some(reprise_std::capture::checksum(&bytes));
        std::fs::write(descriptor, rec.to_json_string(rec.generation).unwrap()).unwrap();
    }
}

/// What an LLVM fixture holds.
pub struct Fixture {
    pub descriptor: PathBuf,
    pub base: u64,
    pub n: usize,
    pub expected_output: Vec<u8>,
}

/// Writes an axpy capture as LLVM's runtime would, from FORMATS.md alone:
/// region at `base` holding x, y and a `long` result; globals alpha = 3.0
/// and axpy_calls = 41 (the image says 1.0 and 0, so a replay that does not
/// restore globals computes something else). The expected output is
/// computed here, independently of reprise's executors.
pub fn llvm_fixture(dir: &Path, generation: Generation, base: u64, n: usize) -> Fixture {
    let xs: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.5).collect();
    let ys: Vec<f32> = (0..n).map(|i| (i % 13) as f32 - 6.0).collect();
    let x_at = base;
    let y_at = base + (n as u64 * 4).next_multiple_of(16);
    let calls_at = y_at + (n as u64 * 4).next_multiple_of(16);
    let used = (calls_at - base + 16) as usize;
    let mut memory = vec![0u8; used];
    memory[..n * 4].copy_from_slice(&floats(&xs));
    let y_off = (y_at - base) as usize;
    memory[y_off..y_off + n * 4].copy_from_slice(&floats(&ys));
    let mut expected = memory.clone();
    let y_new: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| 3.0 * x + y).collect();
    expected[y_off..y_off + n * 4].copy_from_slice(&floats(&y_new));
    let c_off = (calls_at - base) as usize;
    expected[c_off..c_off + 8].copy_from_slice(&(42i64 * 100 + 3).to_le_bytes());

    let mut rec = KernelRecord::new("axpy").unwrap();
    rec.generation = generation;
    rec.format_version = None;
    for v in [x_at, y_at, n as u64, calls_at] {
        rec.push_arg(v).unwrap();
    }
    rec.grid = [8, 1, 1];
    rec.block = [128, 1, 1];
    rec.loop_trip_count = n as u64;
    rec.region_base = Some(base);
    rec.memory_size = Some(used as u64);
    let (stem, layout, input_ext, output_ext) = match generation {
        Generation::LlvmLegacy => (
            "axpy".to_string(),
            Layout::Seed,
            "memory",
            "original.output",
        ),
        _ => {
            rec.region_size = Some(64 << 30);
            rec.teams_limits = Some([0, 0]);
            rec.threads_limits = Some([1, 1024]);
            (
                "9431736110271238513_1274526373".to_string(),
                Layout::Current,
                "record_input",
                "record_output",
            )
        }
    };
    let mut json = vec![0u8; 8192];
    let len = rec.to_json(generation, &mut json).unwrap();
    let path = |ext: &str| dir.join(format!("{stem}.{ext}"));
    std::fs::write(path("json"), &json[..len]).unwrap();
    std::fs::write(path(input_ext), &memory).unwrap();
    std::fs::write(path(output_ext), &expected).unwrap();
    std::fs::write(path("image"), AXPY).unwrap();
    let g = [
        ("alpha", &3.0f32.to_le_bytes()[..]),
        ("axpy_calls", &41i64.to_le_bytes()[..]),
    ];
    let mut blob = vec![0u8; globals::encoded_len(layout, g).unwrap()];
    globals::encode_into(layout, g, &mut blob).unwrap();
    std::fs::write(path("globals"), &blob).unwrap();
    Fixture {
        descriptor: path("json"),
        base,
        n,
        expected_output: expected,
    }
}

/// Says that the running test skips, and why: `SKIPPED: TEST: WHY
/// (install: apt-get install PACKAGE)` on stderr (`--nocapture` shows it),
/// and the same line appended to `target/skipped-tests.txt`, which
/// `scripts/skipped.sh` sums up after a run.
pub fn skip(why: &str, install: Option<&str>) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    let hint = install
        .map(|p| format!(" (install: apt-get install {p})"))
        .unwrap_or_default();
    let line = format!("SKIPPED: {test}: {why}{hint}");
    eprintln!("{line}");
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../skipped-tests.txt");
    // One write of one line in append mode: tests running at once do not
    // mix their lines. The list is a convenience; failing to write it
    // does not fail the test.
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(file)
    {
        use std::io::Write as _;
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}

/// The executor for device 0: the real driver with `REPRISE_GPU_TESTS=1`,
/// else the simulated one (which the replaying `reprise` process then finds
/// too); `None` after saying why when the tests skip.
pub fn gpu() -> Option<reprise::CudaExecutor> {
    match sim::driver() {
        Ok(sim::Driver::Real) => {}
        Ok(sim::Driver::Simulated) => eprintln!("on the simulated CUDA driver"),
        Err(why) => {
            skip(&why.to_string(), None);
            return None;
        }
    }
    Some(reprise::CudaExecutor::new(0).unwrap_or_else(|e| panic!("CUDA device 0: {e}")))
}

/// Rewrites a descriptor through `edit` (keeping its generation).
pub fn edit_descriptor(path: &Path, edit: impl FnOnce(&mut KernelRecord)) {
    let mut rec = KernelRecord::from_json(&std::fs::read(path).unwrap()).unwrap();
    edit(&mut rec);
    std::fs::write(path, rec.to_json_string(rec.generation).unwrap()).unwrap();
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Writes a saxpy capture as LLVM's runtime would (from FORMATS.md alone):
/// 8-byte argument slots, teams of `block` threads, the region at `base`, globals
/// `bias` = 0.25 and `launches` = 41 (the image says 0.5 and 0, so a replay
/// that did not restore them would compute something else). Returns the
/// descriptor and the expected memory after the kernel, computed here.
pub fn llvm_saxpy_capture(
    dir: &std::path::Path,
    generation: reprise::core::record::Generation,
    image: &[u8],
    base: u64,
    n: usize,
    block: u32,
) -> (PathBuf, Vec<u8>) {
    use reprise::core::globals::{self, Layout};
    use reprise::core::record::{Generation, KernelRecord};
    let xs: Vec<f32> = (0..n).map(|i| (i % 31) as f32).collect();
    let ys: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
    let y_off = (4 * n).next_multiple_of(256);
    let used = y_off + (4 * n).next_multiple_of(256);
    let mut memory = vec![0u8; used];
    memory[..4 * n].copy_from_slice(&floats(&xs));
    memory[y_off..y_off + 4 * n].copy_from_slice(&floats(&ys));
    let mut expected = memory.clone();
    let y_new: Vec<f32> = xs
        .iter()
        .zip(&ys)
        .map(|(x, y)| 2.0 * x + y + 0.25)
        .collect();
    expected[y_off..y_off + 4 * n].copy_from_slice(&floats(&y_new));

    let mut rec = KernelRecord::new("saxpy").unwrap();
    rec.generation = generation;
    rec.format_version = None;
    // `float a` travels in an 8-byte slot, as LLVM passes every argument.
    for v in [
        u64::from(2.0f32.to_bits()),
        base,
        base + y_off as u64,
        n as u64,
    ] {
        rec.push_arg(v).unwrap();
    }
    rec.grid = [(n as u32).div_ceil(block), 1, 1];
    rec.block = [block, 1, 1];
    rec.loop_trip_count = n as u64;
    rec.region_base = Some(base);
    rec.memory_size = Some(used as u64);
    let (stem, layout, input_ext, output_ext) = match generation {
        Generation::LlvmLegacy => ("saxpy", Layout::Seed, "memory", "original.output"),
        _ => {
            rec.region_size = Some(1 << 30);
            rec.teams_limits = Some([0, 0]);
            rec.threads_limits = Some([1, 1024]);
            (
                "1234_5678",
                Layout::Current,
                "record_input",
                "record_output",
            )
        }
    };
    let path = |ext: &str| dir.join(format!("{stem}.{ext}"));
    std::fs::write(path("json"), rec.to_json_string(generation).unwrap()).unwrap();
    std::fs::write(path(input_ext), &memory).unwrap();
    std::fs::write(path(output_ext), &expected).unwrap();
    std::fs::write(path("image"), image).unwrap();
    let g = [
        ("bias", &0.25f32.to_le_bytes()[..]),
        ("launches", &41u32.to_le_bytes()[..]),
    ];
    let mut blob = vec![0u8; globals::encoded_len(layout, g).unwrap()];
    globals::encode_into(layout, g, &mut blob).unwrap();
    std::fs::write(path("globals"), &blob).unwrap();
    (path("json"), expected)
}

pub const CHECK_MODES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels/check_modes.so"));

/// Records `launches` launches of the `check_modes` kernel (mode 0: adds
/// one to each of `n` floats) through the library with `config`. Returns
/// the descriptors.
pub fn record_check_modes(config: RecordConfig, n: usize, launches: usize) -> Vec<PathBuf> {
    let exec = HostExecutor::new().unwrap();
    let mut rec = Recorder::new(exec, 0, config).unwrap();
    let mode = rec.alloc(8, 8).unwrap();
    let data = rec.alloc((n * 4) as u64, 64).unwrap();
    rec.upload(mode, &0i64.to_le_bytes()).unwrap();
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    rec.upload(data, &floats(&xs)).unwrap();
    let image = rec.load_image(CHECK_MODES).unwrap();
    let k = rec.kernel(image, "check_modes").unwrap();
    let args = Args::new().ptr(mode).ptr(data).scalar(n as u64);
    reprise::block_on(async {
        for _ in 0..launches {
            rec.launch(&k, geometry(1, 1), &args).await.unwrap();
        }
        rec.finish().await.unwrap()
    })
}

/// Rewrites the mode in a `check_modes` capture's snapshot (where its
/// first argument points) and the descriptor's checksum of it, so that
/// its replay spins (1), faults (2), kills itself (3) or takes 100 ms (4).
pub fn set_check_mode(descriptor: &Path, mode: i64) {
    let mut rec = KernelRecord::from_json(&std::fs::read(descriptor).unwrap()).unwrap();
    let input = reprise_std::CapturePaths::new(descriptor, rec.generation).input;
    let mut bytes = std::fs::read(&input).unwrap();
    let at = (rec.arg_value(0) - rec.region_base.unwrap()) as usize;
    bytes[at..at + 8].copy_from_slice(&mode.to_le_bytes());
    std::fs::write(&input, &bytes).unwrap();
    if rec.checksums.input.is_some() {
        rec.checksums.input = Some(reprise_std::capture::checksum(&bytes));
        std::fs::write(descriptor, rec.to_json_string(rec.generation).unwrap()).unwrap();
    }
}

/// Whether a Slurm cluster with a node that takes work answers; says why
/// not (a failure under `REPRISE_REQUIRE_SLURM=1`, CI's setting, else a
/// skip), naming the script that starts one.
pub fn slurm() -> bool {
    let required = std::env::var_os("REPRISE_REQUIRE_SLURM").is_some_and(|v| v == "1");
    let why = match Command::new("sinfo").args(["-h", "-o", "%T"]).output() {
        Err(e) => format!("sinfo could not run ({e})"),
        Ok(o) if !o.status.success() => format!(
            "sinfo failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        // Idle, or running others' jobs: a node that takes work.
        Ok(o)
            if String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .any(|s| ["idle", "mixed", "allocated", "completing"].contains(&s)) =>
        {
            return true;
        }
        Ok(o) => format!(
            "no node up (sinfo: {:?})",
            String::from_utf8_lossy(&o.stdout).trim()
        ),
    };
    assert!(
        !required,
        "REPRISE_REQUIRE_SLURM=1, but {why} (scripts/slurm-up.sh starts one)"
    );
    skip(
        &format!("no Slurm cluster here: {why} (scripts/slurm-up.sh starts one)"),
        None,
    );
    false
}
