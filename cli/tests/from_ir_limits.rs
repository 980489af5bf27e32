//! The limits of a compile from IR (`--compile-timeout`, `--compile-memory`,
//! `--compile-output`): a capture's bitcode is untrusted input, and a few
//! KB of it can ask clang for a gigabyte of output. Each limit hit is an
//! error naming the tool, the IR, the limit and its option (exit 2), in
//! seconds, with nothing left in the temporary directory.
//!
//! The time limit is checked against a stand-in toolchain (a `clang` that
//! answers `--version` and then sleeps), which needs no LLVM; the output
//! and memory limits against the real clang (LLVM 19 or 16 where Debian
//! puts them), skipped with a message when neither is installed, unless
//! `REPRISE_REQUIRE_LLVM16=1`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

/// A capture of the host executor (its recorded image is replaced by the
/// compile from IR, which fails first), a test-owned `TMPDIR` and an IR
/// cache directory.
struct Setup {
    dir: tempfile::TempDir,
    descriptor: PathBuf,
    tmp: PathBuf,
    cache: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let captures = dir.path().join("captures");
    let descriptor = record_axpy(raw_config(&captures), 64, 1).remove(0);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    Setup {
        descriptor,
        tmp,
        cache: dir.path().join("cache"),
        dir,
    }
}

impl Setup {
    /// `reprise ARGS` with `TMPDIR` (and `TMP`, `TEMP`) the test's own
    /// directory; the output and how long it took.
    fn run(&self, args: &[&str]) -> (std::process::Output, Duration) {
        let started = Instant::now();
        let out = reprise_env(
            args,
            &[
                ("TMPDIR", s(&self.tmp)),
                ("TMP", s(&self.tmp)),
                ("TEMP", s(&self.tmp)),
                ("REPRISE_IR_CACHE", s(&self.cache)),
            ],
        );
        (out, started.elapsed())
    }

    /// Nothing is left in the temporary directory, and no image in the
    /// cache.
    fn left_nothing(&self) {
        let left: Vec<_> = std::fs::read_dir(&self.tmp)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert!(left.is_empty(), "left in TMPDIR: {left:?}");
        let cached: Vec<_> = std::fs::read_dir(&self.cache)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        assert!(cached.is_empty(), "cached: {cached:?}");
    }
}

/// A toolchain directory whose `clang` says it is LLVM 99 and otherwise
/// writes a file to its `TMPDIR` and sleeps (in a subprocess, which holds
/// its output open: only killing the process group ends it).
fn sleeping_toolchain(root: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = root.join("fake-llvm");
    std::fs::create_dir(&dir).unwrap();
    let clang = dir.join("clang");
    std::fs::write(
        &clang,
        "#!/bin/sh\n\
         if [ \"$1\" = --version ]; then echo 'clang version 99.0.0'; exit 0; fi\n\
         echo partial > \"$TMPDIR/partial.o\"\n\
         sleep 30\n\
         echo done\n",
    )
    .unwrap();
    std::fs::set_permissions(&clang, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

#[test]
fn a_compile_past_the_time_limit_is_killed_and_says_so_on_replay_and_tune() {
    let st = setup();
    let llvm = sleeping_toolchain(st.dir.path());
    // The bitcode magic alone: a module with nothing in it.
    let bc = st.dir.path().join("k.bc");
    std::fs::write(&bc, b"BC\xc0\xde").unwrap();
    let (out, took) = st.run(&[
        "replay",
        "--bitcode",
        s(&bc),
        "--llvm",
        s(&llvm),
        "--backend",
        "host",
        "--compile-timeout",
        "1",
        s(&st.descriptor),
    ]);
    assert_exit(&out, 2);
    let (_, stderr) = text(&out);
    eprintln!("{stderr}");
    let clang = llvm.join("clang");
    assert!(
        stderr.contains(&format!(
            "{} ran past the compile time limit of 1 s (--compile-timeout) compiling {}",
            clang.display(),
            bc.display()
        )),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    st.left_nothing();

    // tune's compiles from IR run through the same limits.
    let (out, took) = st.run(&[
        "tune",
        s(&st.descriptor),
        "--opt-level",
        "O1",
        "--bitcode",
        s(&bc),
        "--llvm",
        s(&llvm),
        "--backend",
        "host",
        "--compile-timeout",
        "1",
    ]);
    assert_exit(&out, 2);
    let (_, stderr) = text(&out);
    eprintln!("{stderr}");
    assert!(
        stderr.contains("ran past the compile time limit of 1 s (--compile-timeout)"),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    st.left_nothing();
}

/// The LLVM toolchain of Debian's clang-19 or clang-16 packages; `None`
/// after saying why when neither is here.
fn real_llvm(test: &str) -> Option<PathBuf> {
    for v in [19, 16] {
        let dir = PathBuf::from(format!("/usr/lib/llvm-{v}/bin"));
        if dir.join("clang").is_file() {
            return Some(dir);
        }
    }
    let why = "no clang in /usr/lib/llvm-19/bin or /usr/lib/llvm-16/bin";
    assert!(
        std::env::var("REPRISE_REQUIRE_LLVM16").as_deref() != Ok("1"),
        "{test}: REPRISE_REQUIRE_LLVM16=1 but {why}"
    );
    skip(&format!("{test}: {why}"), Some("clang-19"));
    None
}

/// `text` (LLVM assembly) as bitcode made by `llvm`'s clang, in `dir`.
fn bitcode(llvm: &Path, dir: &Path, name: &str, text: &str) -> PathBuf {
    let ll = dir.join(format!("{name}.ll"));
    std::fs::write(&ll, text).unwrap();
    let bc = dir.join(format!("{name}.bc"));
    let st = Command::new(llvm.join("clang"))
        .args(["-c", "-emit-llvm"])
        .arg(&ll)
        .arg("-o")
        .arg(&bc)
        .status()
        .unwrap();
    assert!(st.success(), "{}", ll.display());
    bc
}

#[test]
fn a_small_bitcode_asking_for_a_huge_image_is_refused_at_the_output_limit() {
    let Some(llvm) = real_llvm("from_ir_limits::output") else {
        return;
    };
    let st = setup();
    // About 2 KB of bitcode asking the assembler for 128 MiB of data.
    let bc = bitcode(
        &llvm,
        st.dir.path(),
        "fill",
        "target triple = \"x86_64-pc-linux-gnu\"\n\
         module asm \".section .data.fill,\\22aw\\22\"\n\
         module asm \".fill 134217728,1,1\"\n\
         define void @k() {\n  ret void\n}\n",
    );
    assert!(std::fs::metadata(&bc).unwrap().len() < 4096);
    let (out, took) = st.run(&[
        "replay",
        "--bitcode",
        s(&bc),
        "--llvm",
        s(&llvm),
        "--compile-output",
        "1M",
        s(&st.descriptor),
    ]);
    assert_exit(&out, 2);
    let (_, stderr) = text(&out);
    eprintln!("{stderr}");
    assert!(
        stderr.contains(&format!(
            "{} tried to write a file larger than the compile output limit of 1 MiB \
             (--compile-output) compiling {}",
            llvm.join("clang").display(),
            bc.display()
        )),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    st.left_nothing();
}

#[test]
fn a_memory_limit_too_small_for_clang_is_named() {
    let Some(llvm) = real_llvm("from_ir_limits::memory") else {
        return;
    };
    let st = setup();
    let bc = bitcode(
        &llvm,
        st.dir.path(),
        "k",
        "target triple = \"x86_64-pc-linux-gnu\"\n\
         define void @k() {\n  ret void\n}\n",
    );
    let (out, took) = st.run(&[
        "replay",
        "--bitcode",
        s(&bc),
        "--llvm",
        s(&llvm),
        "--compile-memory",
        "16M",
        s(&st.descriptor),
    ]);
    assert_exit(&out, 2);
    let (_, stderr) = text(&out);
    eprintln!("{stderr}");
    assert!(
        stderr.contains(&format!(
            "{} ran out of memory under the compile memory limit of 16 MiB (--compile-memory) \
             compiling {}",
            llvm.join("clang").display(),
            bc.display()
        )),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    st.left_nothing();
}
