//! The GPU-check scripts, run here with a stand-in for cargo (so nothing is
//! built): `scripts/build-gpu-check.sh` stages what cargo built wherever
//! cargo put it, `CARGO_TARGET_DIR` included.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A copy of script `name` in a scratch repository at `repo`: the scripts
/// work from the repository around them, so whatever a broken one writes
/// lands in the scratch copy, never in the real tree.
fn script_copy(repo: &Path, name: &str) -> PathBuf {
    let scripts = repo.join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    let copy = scripts.join(name);
    std::fs::copy(root().join("scripts").join(name), &copy).unwrap();
    copy
}

/// A stand-in for cargo: for `build`, and for `test --no-run`, it makes the
/// executable (a copy of `/bin/true`) under `$CARGO_TARGET_DIR` and reports
/// it the way cargo's JSON messages do; it notes the target directory it
/// was given in `$FAKE_CARGO_LOG`.
const FAKE_CARGO: &str = r#"#!/bin/sh
echo "$CARGO_TARGET_DIR" >>"$FAKE_CARGO_LOG"
case "$1" in
build) kind=bin name=reprise exe="$CARGO_TARGET_DIR/release/reprise" ;;
test)
    name=
    while [ $# -gt 0 ]; do
        [ "$1" = --test ] && name=$2
        shift
    done
    kind=test exe="$CARGO_TARGET_DIR/release/deps/$name-0123456789abcdef" ;;
*) exit 1 ;;
esac
mkdir -p "$(dirname "$exe")"
cp /bin/true "$exe"
echo '{"reason":"compiler-artifact","target":{"kind":["other"],"name":"noise"}}'
printf '{"reason":"compiler-artifact","target":{"kind":["%s"],"crate_types":["bin"],"name":"%s"},"executable":"%s"}\n' "$kind" "$name" "$exe"
echo '{"reason":"build-finished","success":true}'
"#;

#[test]
fn build_gpu_check_takes_binaries_from_cargo_target_dir() {
    let tools = ["bash", "strip", "realpath"];
    if let Some(missing) = tools.iter().find(|t| {
        Command::new(t)
            .arg("--version")
            .output()
            .map_or(true, |o| !o.status.success())
    }) {
        println!("skipped: no {missing} here");
        return;
    }
    let tmp = tempfile_dir();
    let bin = tmp.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let cargo = bin.join("cargo");
    std::fs::write(&cargo, FAKE_CARGO).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let log = tmp.join("cargo.log");
    // Both given relative to the caller's directory, which is not the
    // repository root the script works from.
    let script = script_copy(&tmp.join("repo"), "build-gpu-check.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg("staged")
        .current_dir(&tmp)
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", "elsewhere")
        .env("FAKE_CARGO_LOG", &log)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let target = tmp.join("elsewhere").canonicalize().unwrap();
    let seen = std::fs::read_to_string(&log).unwrap();
    // One build of reprise, one of each test binary staged below.
    assert_eq!(seen.lines().count(), 7, "{seen}");
    for dir in seen.lines() {
        assert_eq!(Path::new(dir), target, "cargo was given another target");
    }
    let staged = tmp.join("staged");
    let names = [
        "reprise",
        "cuda-executor",
        "cuda-fault",
        "cuda-openmp",
        "end-to-end",
        "llvm-openmp",
        "tune-jit",
    ];
    let bytes: Vec<Vec<u8>> = names
        .iter()
        .map(|n| std::fs::read(staged.join(n)).unwrap_or_else(|e| panic!("{n}: {e}")))
        .collect();
    // Every one is cargo's (the stand-in's), none a stale build in the
    // repository's own target directory.
    for (n, b) in names.iter().zip(&bytes) {
        assert_eq!(b, &bytes[1], "{n} is not the one cargo reported");
    }
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// A fresh directory under the target's temporary directory.
fn tempfile_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("scripts-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
