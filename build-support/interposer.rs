//! Building the interposer (`interposer/`, a `cdylib`) for the command
//! line to embed: `reprise record` and `bench --backend cuda` write it out
//! on first use, so one `cargo install --path cli` gives a `reprise` that
//! records with no repository around. Included by the command line's build
//! script with `#[path]`.
//!
//! Cargo cannot yet depend on a `cdylib` as an artifact on stable, so the
//! build script runs cargo itself, on the workspace the command line is in,
//! into a target directory of its own under `OUT_DIR` (its own build lock;
//! the jobserver is inherited, so the jobs stay within the outer build's).
//! `REPRISE_EMBED_INTERPOSER=PATH` embeds a library built elsewhere instead.

#![allow(dead_code)] // each build script uses part of it

use std::path::{Path, PathBuf};
use std::process::Command;

/// The interposer's file name, as cargo builds it.
pub const FILE: &str = "libreprise_interposer.so";

/// Builds (or copies) the interposer to `OUT_DIR/libreprise_interposer.so`
/// and sets `REPRISE_INTERPOSER_HASH` (for the program, `env!`) to a hash
/// of its bytes. `workspace` is the root of the workspace holding
/// `interposer/`.
pub fn embed(workspace: &Path) {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dest = out.join(FILE);
    println!("cargo:rerun-if-env-changed=REPRISE_EMBED_INTERPOSER");
    let built = match std::env::var_os("REPRISE_EMBED_INTERPOSER") {
        Some(p) => {
            let p = PathBuf::from(p);
            println!("cargo:rerun-if-changed={}", p.display());
            p
        }
        None => build(workspace, &out.join("interposer-target")),
    };
    let bytes = std::fs::read(&built)
        .unwrap_or_else(|e| panic!("reading the interposer {}: {e}", built.display()));
    std::fs::write(&dest, &bytes).unwrap_or_else(|e| panic!("{}: {e}", dest.display()));
    println!(
        "cargo:rustc-env=REPRISE_INTERPOSER_HASH={:016x}",
        fnv1a(&bytes)
    );
}

/// Runs `cargo build -p reprise-interposer` into `target_dir`, in the
/// profile of the outer build (release or dev), without debug information
/// (which would make it ten times larger); the library built.
fn build(workspace: &Path, target_dir: &Path) -> PathBuf {
    // Its sources and those of the crates it stands on (their `src/` and
    // manifests: not their tests, nor core's embedded build).
    for dir in ["interposer", "core", "std-adapter", "backends/cuda"] {
        for part in ["src", "Cargo.toml"] {
            println!(
                "cargo:rerun-if-changed={}",
                workspace.join(dir).join(part).display()
            );
        }
    }
    println!(
        "cargo:rerun-if-changed={}",
        workspace.join("Cargo.lock").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        workspace.join("Cargo.toml").display()
    );
    let release = std::env::var("PROFILE").as_deref() == Ok("release");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--lib",
        "-p",
        "reprise-interposer",
        "--manifest-path",
    ])
    .arg(workspace.join("Cargo.toml"))
    .arg("--target-dir")
    .arg(target_dir)
    .env_remove("CARGO_TARGET_DIR")
    .env_remove("CARGO_BUILD_TARGET_DIR");
    let profile = if release {
        cmd.arg("--release");
        "RELEASE"
    } else {
        "DEV"
    };
    cmd.env(format!("CARGO_PROFILE_{profile}_DEBUG"), "false")
        .env(format!("CARGO_PROFILE_{profile}_STRIP"), "debuginfo");
    // Cross builds: the interposer for the target the command line is for.
    let (target, host) = (std::env::var("TARGET").ok(), std::env::var("HOST").ok());
    let mut lib = target_dir.to_path_buf();
    if let Some(t) = target.as_ref().filter(|t| Some(*t) != host.as_ref()) {
        cmd.args(["--target", t]);
        lib.push(t);
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("running cargo to build the interposer: {e}"));
    assert!(
        status.success(),
        "building the interposer (cargo build -p reprise-interposer) failed; \
         REPRISE_EMBED_INTERPOSER=PATH embeds one built elsewhere"
    );
    lib.push(if release { "release" } else { "debug" });
    lib.push(FILE);
    lib
}

/// FNV-1a, 64 bits: names the cached copy by its content, so that two
/// builds of `reprise` never share one file for two libraries.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
