//! LLVM 16's OpenMP offloading on the host, for the tests of the captures
//! it writes: whether its runtime and compiler are here, recording a
//! program of `tests/openmp/` with it, and replaying what it wrote.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

pub const LIB: &str = "/usr/lib/llvm-16/lib";

/// Whether the LLVM 16 runtime the images need is here; else why not.
pub fn runtime() -> Result<(), String> {
    for f in [
        format!("{LIB}/libomp.so.5"),
        format!("{LIB}/libomptarget.so.16"),
        "/usr/lib/x86_64-linux-gnu/libLLVM-16.so.1".to_string(),
    ] {
        if !Path::new(&f).exists() {
            return Err(format!(
                "{f} is missing (Debian's libomp-16-dev and libllvm16)"
            ));
        }
    }
    Ok(())
}

/// Whether clang-16 can build OpenMP offload programs here; else why not.
pub fn compiler() -> Result<(), String> {
    runtime()?;
    for tool in ["clang-16", "clang-offload-packager-16"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Err(format!(
                "{tool} is missing (Debian's clang-16 and clang-tools-16)"
            ));
        }
    }
    Ok(())
}

/// `Some(())` when `check` passes; else skips (or fails, under
/// `REPRISE_REQUIRE_LLVM16=1`) saying why.
pub fn need(check: Result<(), String>, test: &str) -> Option<()> {
    match check {
        Ok(()) => Some(()),
        Err(why) if std::env::var("REPRISE_REQUIRE_LLVM16").as_deref() == Ok("1") => {
            panic!("{test}: REPRISE_REQUIRE_LLVM16=1 but {why}")
        }
        Err(why) => {
            super::skip(&format!("{test}: {why}"), None);
            None
        }
    }
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llvm16")
}

/// The descriptors in `dir`, sorted.
pub fn descriptors(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    v
}

/// Compiles `cli/tests/openmp/NAME.c` (or `NAME.cpp`) for the host offload target into
/// `dir/NAME`, runs it there with LLVM 16's recorder on, and returns the
/// binary.
pub fn record(name: &str, dir: &Path) -> PathBuf {
    let openmp = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openmp");
    let (src, cc) = match openmp.join(format!("{name}.cpp")) {
        cpp if cpp.exists() => (cpp, "clang++-16"),
        _ => (openmp.join(format!("{name}.c")), "clang-16"),
    };
    let bin = dir.join(name);
    let st = Command::new(cc)
        .args(["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "-O2"])
        .arg(&src)
        .arg("-o")
        .arg(&bin)
        .status()
        .unwrap();
    assert!(st.success(), "compiling {}", src.display());
    let out = Command::new(&bin)
        .current_dir(dir)
        .env("LD_LIBRARY_PATH", LIB)
        .env("LIBOMPTARGET_RECORD", "1")
        .env("LIBOMPTARGET_RR_SAVE_OUTPUT", "1")
        .env("LIBOMPTARGET_RR_DEVMEM_SIZE", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{name}: {:?}", text(&out));
    bin
}

/// `reprise replay --verify --allow-missing-globals --image BIN D`.
pub fn replay(descriptor: &Path, bin: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "replay",
        "--verify",
        "--allow-missing-globals",
        "--image",
        s(bin),
    ];
    args.extend_from_slice(extra);
    args.push(s(descriptor));
    reprise(&args)
}

/// What LLVM 16 writes: the descriptor, the snapshots, nothing else; a
/// descriptor without a region base.
pub fn is_what_llvm16_writes(dir: &Path, bin: &Path) {
    for d in descriptors(dir) {
        let json = std::fs::read_to_string(&d).unwrap();
        assert!(json.contains("\"NumTeamsClause\":"), "{json}");
        assert!(!json.contains("BumpAllocVAStart"), "{json}");
        let stem = d.with_extension("");
        for ext in ["memory", "original.output"] {
            assert!(PathBuf::from(format!("{}.{ext}", stem.display())).exists());
        }
        for ext in ["image", "globals"] {
            assert!(!PathBuf::from(format!("{}.{ext}", stem.display())).exists());
        }
    }
    assert!(bin.exists());
}

/// Compiles the C `code` into the shared object `out` with the system
/// compiler, `extra` arguments after it (libraries to link).
pub fn shared_object(code: &str, out: &Path, extra: &[&str]) {
    let st = Command::new("cc")
        .args(["-shared", "-fPIC", "-x", "c", "-", "-o"])
        .arg(out)
        .args(extra)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(code.as_bytes())?;
            c.wait()
        })
        .unwrap();
    assert!(st.success(), "compiling {}", out.display());
}

/// [`record`] in a directory `root/NAME` of its own: the directory, the
/// binary and the descriptors LLVM wrote.
pub fn recorded_in(root: &Path, name: &str) -> (PathBuf, PathBuf, Vec<PathBuf>) {
    let dir = root.join(name);
    std::fs::create_dir(&dir).unwrap();
    let bin = record(name, &dir);
    let ds = descriptors(&dir);
    (dir, bin, ds)
}
