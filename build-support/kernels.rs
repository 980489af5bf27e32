//! Compiling C kernels into ELF shared objects, for the build scripts of
//! the packages that embed them (the samples' demo kernel, the command
//! line's test kernels). Included by each build script with `#[path]`.

#![allow(dead_code)] // each build script uses part of it

use std::path::Path;
use std::process::Command;

/// Compiles `src` into the shared object `out` with the system C compiler.
pub fn compile(src: &Path, out: &Path) {
    println!("cargo:rerun-if-changed={}", src.display());
    let compiler = cc::Build::new().get_compiler();
    let status = Command::new(compiler.path())
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(out)
        .arg(src)
        .status()
        .unwrap_or_else(|e| panic!("running the C compiler {}: {e}", compiler.path().display()));
    assert!(status.success(), "compiling {} failed", src.display());
}

/// Compiles every `NAME.c` in `dir` into `OUT_DIR/kernels/NAME.so`.
pub fn compile_dir(dir: &Path) {
    let out = kernels_dir();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let src = entry.expect("a readable directory").path();
        if src.extension().is_some_and(|e| e == "c") {
            let name = src.file_stem().expect("a file name").to_string_lossy();
            compile(&src, &out.join(format!("{name}.so")));
        }
    }
    println!("cargo:rerun-if-changed={}", dir.display());
}

/// `OUT_DIR/kernels`, made if missing.
pub fn kernels_dir() -> std::path::PathBuf {
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("kernels");
    std::fs::create_dir_all(&out).expect("creating OUT_DIR/kernels");
    out
}
