//! Unmodified CUDA programs (C, in `programs/`) on the simulated CUDA driver:
//! one linked with `-lcuda`, one that reaches the driver only through
//! `dlopen("libcuda.so.1")` and `cuGetProcAddress_v2` as CUDA's runtime does,
//! and one that loads its kernel through `cuLibraryLoadData` and allocates
//! with `cuMemAllocAsync`. Each computes saxpy three times over and prints
//! `result <sum>`, which must be what the host computes, and ends with the
//! status it is asked for.
//!
//! With `REPRISE_GPU_TESTS=1` the programs run on the machine's driver
//! instead (they are still linked against the simulator, whose soname is the
//! driver's); `REPRISE_GPU_TESTS=0` skips. Without a C compiler they skip,
//! unless `REPRISE_REQUIRE_SIM=1`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{output_within, sim, text};

/// The PTX fixture every program loads.
pub fn saxpy_ptx() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../backends/cuda/fixtures/saxpy.ptx")
}

/// Builds `programs/<name>.c` (once per source version; concurrent builds are
/// safe) and returns the executable. `resolver` is linked with `-ldl` only,
/// every other program with `-L<simulator dir> -lcuda`, so it records
/// `NEEDED libcuda.so.1` and runs on whichever `libcuda.so.1` the loader finds
/// (the simulator's with `LD_LIBRARY_PATH` set to [`sim::library_dir`], see
/// [`sim_env`]). Panics when the simulator or the program cannot be built:
/// call it once [`setup`] said the tests run.
pub fn build_program(name: &str) -> PathBuf {
    let programs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs");
    let source = programs.join(format!("{name}.c"));
    let code = std::fs::read(&source).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
    let header = std::fs::read(programs.join("driver.h")).expect("programs/driver.h");
    let lib = sim::library_dir().unwrap_or_else(|e| panic!("the simulated CUDA driver: {e}"));
    let hash = code
        .iter()
        .chain(&header)
        .chain(lib.as_os_str().as_encoded_bytes())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cuda-programs-{hash:016x}"));
    let exe = dir.join(name);
    if exe.exists() {
        return exe;
    }
    std::fs::create_dir_all(&dir).unwrap();
    let tmp = dir.join(format!(
        "{name}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut words = cc.split_whitespace();
    let mut cmd = Command::new(words.next().unwrap_or("cc"));
    cmd.args(words)
        .args(["-O2", "-Wall", "-Werror", "-o"])
        .arg(&tmp)
        .arg(&source);
    if name == "resolver" {
        cmd.arg("-ldl");
    } else {
        cmd.arg(format!("-L{}", lib.display())).arg("-lcuda");
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cc}: {e} (building {})", source.display()));
    assert!(
        out.status.success(),
        "building {} failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&tmp, &exe).unwrap();
    exe
}

/// Where the programs run: on the simulator, with its environment, or on the
/// machine's driver.
pub enum Target {
    /// The simulated driver, through [`sim_env`].
    Simulated,
    /// The machine's driver (`REPRISE_GPU_TESTS=1`).
    Real,
}

/// Whether the tests run here, and on what; `None` after saying why not.
pub fn setup() -> Option<Target> {
    let target = match std::env::var("REPRISE_GPU_TESTS").as_deref() {
        Ok("0") => {
            eprintln!("skipped: REPRISE_GPU_TESTS=0");
            return None;
        }
        Ok("1") => Target::Real,
        _ => Target::Simulated,
    };
    // Linking needs the simulator either way.
    match sim::library_dir() {
        Ok(_) => Some(target),
        Err(why) if std::env::var("REPRISE_REQUIRE_SIM").as_deref() == Ok("1") => {
            panic!("REPRISE_REQUIRE_SIM=1 but the simulated CUDA driver is unusable: {why}")
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            None
        }
    }
}

/// The environment that makes a program find the simulator as its driver:
/// `LD_LIBRARY_PATH` with the simulator's directory first.
pub fn sim_env() -> (&'static str, std::ffi::OsString) {
    let mut path = std::ffi::OsString::from(sim::library_dir().expect("the simulator"));
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        path.push(":");
        path.push(old);
    }
    ("LD_LIBRARY_PATH", path)
}

/// The line every program prints: the host's saxpy, three times, summed.
pub fn expected_result() -> String {
    let mut sum = 0f64;
    for i in 0..10_000 {
        let x = i as f32 * 0.25;
        let mut y = 1.0 + (i % 7) as f32;
        for a in [1.5f32, 2.0, -0.5] {
            y = a * x + y + 0.5;
        }
        sum += f64::from(y);
    }
    format!("result {sum:.6}")
}

/// Runs `program` (built by [`build_program`]) on saxpy.ptx with `args`.
fn run(target: &Target, program: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(program);
    cmd.arg(saxpy_ptx()).args(args);
    if let Target::Simulated = target {
        let (k, v) = sim_env();
        cmd.env(k, v);
    }
    output_within(&mut cmd, common::RUN_LIMIT)
}

fn check(name: &str) {
    let Some(target) = setup() else { return };
    let program = build_program(name);
    for (args, status) in [(&[][..], 0), (&["3"][..], 3)] {
        let out = run(&target, &program, args);
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(status),
            "{name} {args:?}:\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
        assert_eq!(
            stdout.lines().collect::<Vec<_>>(),
            [expected_result()],
            "{name} {args:?}: stderr:\n{stderr}"
        );
    }
}

#[test]
fn linked_program_runs_on_the_driver() {
    check("linked");
}

/// `features.c`: pitched, managed and stream-ordered memory, a stream
/// capture launched as a graph twice, a cooperative launch and
/// `cuLaunchKernelEx` with and without a cluster attribute. It checks its
/// own buffers against the host's computation (exit 1 and `FAIL:` lines when
/// they differ), so its `result` differs from [`expected_result`]; it
/// prints how many launches of each kind it made.
#[test]
fn features_program_runs_on_the_driver() {
    let Some(target) = setup() else { return };
    let program = build_program("features");
    for (args, status) in [(&[][..], 0), (&["3"][..], 3)] {
        let out = run(&target, &program, args);
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(status),
            "features {args:?}:\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 2, "features {args:?}: {stdout}{stderr}");
        assert!(
            lines[0].starts_with("result "),
            "features {args:?}: {stdout}{stderr}"
        );
        assert_eq!(
            lines[1], "launches plain=5 capture=1 graph=2 cooperative=1 attributes=1",
            "features {args:?}: {stderr}"
        );
    }
}

#[test]
fn resolver_program_runs_on_the_driver() {
    check("resolver");
}

#[test]
fn library_program_runs_on_the_driver() {
    check("library");
}

/// The linked programs need `libcuda.so.1`, as with NVIDIA's driver.
#[test]
fn linked_programs_need_the_drivers_soname() {
    if setup().is_none() {
        return;
    }
    let program = build_program("linked");
    let out = Command::new("readelf").arg("-d").arg(&program).output();
    let Ok(out) = out else {
        eprintln!("skipped: no readelf");
        return;
    };
    let dynamic = String::from_utf8_lossy(&out.stdout);
    assert!(
        dynamic.contains("Shared library: [libcuda.so.1]"),
        "{dynamic}"
    );
}

/// The interposer the workspace builds (`cargo build` leaves it next to the
/// `reprise` executable, `cargo test --workspace` in its `deps/`), or `None`
/// after saying why the recording tests skip.
fn interposer() -> Option<PathBuf> {
    let dir = common::reprise_bin().parent().unwrap().to_path_buf();
    let found = [
        dir.join("libreprise_interposer.so"),
        dir.join("deps/libreprise_interposer.so"),
    ]
    .into_iter()
    .find(|p| p.exists());
    if found.is_none() {
        let why = "the interposer is not built (cargo build -p reprise-interposer)";
        assert!(
            std::env::var("REPRISE_REQUIRE_SIM").as_deref() != Ok("1"),
            "REPRISE_REQUIRE_SIM=1 but {why}"
        );
        eprintln!("skipped: {why}");
    }
    found
}

/// `reprise record` of `program` on the simulator: its output.
fn record(program: &Path, dir: &Path, options: &[&str], args: &[&str]) -> std::process::Output {
    record_env(program, dir, options, args, &[])
}

/// [`record`] with more environment (the simulator's switches).
fn record_env(
    program: &Path,
    dir: &Path,
    options: &[&str],
    args: &[&str],
    env: &[(&str, &str)],
) -> std::process::Output {
    let lib = interposer().expect("checked by the caller");
    let mut argv = vec!["record", "--dir", common::s(dir)];
    argv.extend_from_slice(options);
    argv.push("--");
    argv.push(common::s(program));
    let ptx = saxpy_ptx();
    argv.push(common::s(&ptx));
    argv.extend_from_slice(args);
    let (k, v) = sim_env();
    let mut all = vec![
        (k, v.to_str().unwrap()),
        ("REPRISE_INTERPOSER", common::s(&lib)),
    ];
    all.extend_from_slice(env);
    common::reprise_env(&argv, &all)
}

fn descriptors(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "json"));
    v.sort();
    v
}

/// `program` under `reprise record`: the same result and status as
/// without it, `captures` captures, each replaying and verifying in another
/// process.
fn records_unchanged_and_replays(name: &str, captures: usize) {
    let Some(Target::Simulated) = setup() else {
        return;
    };
    if interposer().is_none() {
        return;
    }
    let program = build_program(name);
    let dir = tempfile::tempdir().unwrap();
    let out = record(&program, dir.path(), &[], &["3"]);
    let (stdout, stderr) = text(&out);
    // The program's own result and status, as without reprise.
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [expected_result()],
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{captures} launches recorded in")),
        "{stderr}"
    );
    let found = descriptors(dir.path());
    assert_eq!(found.len(), captures, "{found:?}");
    let captures = found;
    let (k, v) = sim_env();
    for c in &captures {
        let out = common::reprise_env(
            &["replay", "--verify", common::s(c)],
            &[(k, v.to_str().unwrap())],
        );
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {stdout}{stderr}",
            c.display()
        );
        assert!(stdout.contains("verification: PASS"), "{stdout}");
    }
}

#[test]
fn a_linked_program_records_unchanged_and_every_capture_replays() {
    records_unchanged_and_replays("linked", 3);
}

/// CUDA's runtime reaches the driver through `dlopen` + `dlsym` +
/// `cuGetProcAddress_v2`, and launches with `cuLaunchKernel_ptsz`.
#[test]
fn a_program_resolving_the_driver_records_unchanged_and_every_capture_replays() {
    records_unchanged_and_replays("resolver", 3);
}

/// CUDA 12's way: a library's kernel, launched as its `CUfunction`, as the
/// `CUkernel` itself and through `cuLaunchKernelEx`, on `cuMemAllocAsync`
/// memory.
#[test]
fn a_library_program_records_unchanged_and_every_capture_replays() {
    records_unchanged_and_replays("library", 3);
}

#[test]
fn the_options_choose_the_launches() {
    let Some(Target::Simulated) = setup() else {
        return;
    };
    if interposer().is_none() {
        return;
    }
    let program = build_program("linked");
    let some = tempfile::tempdir().unwrap();
    let out = record(&program, some.path(), &["--skip", "1", "--max", "1"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    assert_eq!(descriptors(some.path()).len(), 1);
    let none = tempfile::tempdir().unwrap();
    let out = record(&program, none.path(), &["--filter", "nothing*"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    assert!(descriptors(none.path()).is_empty());
}

#[test]
fn a_failure_inside_the_interposer_leaves_the_program_alone() {
    let Some(Target::Simulated) = setup() else {
        return;
    };
    if interposer().is_none() {
        return;
    }
    let program = build_program("linked");
    let dir = tempfile::tempdir().unwrap();
    // A driver without virtual memory management gives no region:
    // recording stops at the first allocation, and the program goes on
    // with the driver's own memory.
    let out = record_env(
        &program,
        dir.path(),
        &[],
        &["3"],
        &[("REPRISE_SIM_CUDA_VMM", "0")],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [expected_result()],
        "{stderr}"
    );
    assert!(stderr.contains("reprise: recording stopped: "), "{stderr}");
    assert_eq!(stderr.matches("recording stopped").count(), 1, "{stderr}");
    assert!(descriptors(dir.path()).is_empty());
}
