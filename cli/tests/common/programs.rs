//! The C programs of `tests/programs/` (unmodified CUDA programs): built
//! against the simulated driver, run on it (or on the machine's driver with
//! `REPRISE_GPU_TESTS=1`), and recorded with `reprise record`.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{output_within, sim};

/// The PTX fixture every program loads.
pub fn saxpy_ptx() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../backends/cuda/fixtures/saxpy.ptx")
}

/// Builds `programs/<name>.c` (once per source version; concurrent builds are
/// safe) and returns the executable. `resolver` is linked with `-ldl` only,
/// every other program with `-L<simulator dir> -lcuda`, so it records
/// `NEEDED libcuda.so.1` and runs on whichever `libcuda.so.1` the loader finds
/// (the simulator's with `LD_LIBRARY_PATH` set to [`sim::library_dir`], see
/// [`sim_env`]). A name ending in `.so` (`shim.so` from `shim.c`) is
/// built as a shared library to preload, linked with `-ldl`. Panics when
/// the simulator or the program cannot be built: call it once [`setup`]
/// said the tests run.
pub fn build_program(name: &str) -> PathBuf {
    let (stem, shared) = match name.strip_suffix(".so") {
        Some(stem) => (stem, true),
        None => (name, false),
    };
    let programs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs");
    let source = programs.join(format!("{stem}.c"));
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
    if shared {
        cmd.args(["-shared", "-fPIC", "-ldl"]);
    } else if name == "resolver" {
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
            super::skip("REPRISE_GPU_TESTS=0", None);
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
            super::skip(&why.to_string(), None);
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
pub fn run(target: &Target, program: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(program);
    cmd.arg(saxpy_ptx()).args(args);
    if let Target::Simulated = target {
        let (k, v) = sim_env();
        cmd.env(k, v);
    }
    output_within(&mut cmd, super::RUN_LIMIT)
}

/// The interposer the workspace builds: the newer of the one next to the
/// `reprise` executable (`cargo build`) and the one in its `deps/` (what
/// `cargo test` builds, the CLI's tests depending on it), or `None` after
/// saying why the recording tests skip.
pub fn interposer() -> Option<PathBuf> {
    let dir = super::reprise_bin().parent().unwrap().to_path_buf();
    let found = [
        dir.join("libreprise_interposer.so"),
        dir.join("deps/libreprise_interposer.so"),
    ]
    .into_iter()
    .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
    .max()
    .map(|(_, p)| p);
    if found.is_none() {
        let why = "the interposer is not built (cargo build -p reprise-interposer)";
        assert!(
            std::env::var("REPRISE_REQUIRE_SIM").as_deref() != Ok("1"),
            "REPRISE_REQUIRE_SIM=1 but {why}"
        );
        super::skip(why, None);
    }
    found
}

/// `reprise record` of `program` on the simulator: its output.
pub fn record(program: &Path, dir: &Path, options: &[&str], args: &[&str]) -> std::process::Output {
    record_env(program, dir, options, args, &[])
}

/// [`record`] with more environment (the simulator's switches).
pub fn record_env(
    program: &Path,
    dir: &Path,
    options: &[&str],
    args: &[&str],
    env: &[(&str, &str)],
) -> std::process::Output {
    let lib = interposer().expect("checked by the caller");
    let mut argv = vec!["record", "--dir", super::s(dir)];
    argv.extend_from_slice(options);
    argv.push("--");
    argv.push(super::s(program));
    let ptx = saxpy_ptx();
    argv.push(super::s(&ptx));
    argv.extend_from_slice(args);
    let (k, v) = sim_env();
    let mut all = vec![
        (k, v.to_str().unwrap()),
        ("REPRISE_INTERPOSER", super::s(&lib)),
    ];
    all.extend_from_slice(env);
    super::reprise_env(&argv, &all)
}

pub fn descriptors(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "json"));
    v.sort();
    v
}
