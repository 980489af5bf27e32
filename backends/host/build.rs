//! Compiles the fault guard (`src/guard.c`, linked into the crate) and the
//! kernels of this crate's own tests (`tests/kernels/*.c`, ELF shared
//! objects in `OUT_DIR/kernels`).

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=src/guard.c");
    println!("cargo:rerun-if-changed=tests/kernels");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        // The host executor runs on Linux only; elsewhere it reports
        // `Unsupported` and has no kernel to guard.
        return;
    }
    let mut build = cc::Build::new();
    build
        .file("src/guard.c")
        .warnings(true)
        .extra_warnings(true);
    let compiler = build.get_compiler();
    build.compile("reprise_host_guard");

    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let kernels = Path::new(&out_dir).join("kernels");
    std::fs::create_dir_all(&kernels).expect("creating OUT_DIR/kernels");
    for entry in std::fs::read_dir("tests/kernels").expect("tests/kernels exists") {
        let src = entry.expect("a readable directory").path();
        if src.extension().is_none_or(|e| e != "c") {
            continue;
        }
        println!("cargo:rerun-if-changed={}", src.display());
        let stem = src.file_stem().expect("a file name").to_string_lossy();
        let out = kernels.join(format!("{stem}.so"));
        // No stack protector (some distributions' compilers add one by
        // default), as clang builds offload images: a kernel that overruns a
        // stack buffer returns through the overwritten return address.
        let status = Command::new(compiler.path())
            .args(["-shared", "-fPIC", "-O2", "-fno-stack-protector", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
            .unwrap_or_else(|e| {
                panic!("running the C compiler {}: {e}", compiler.path().display())
            });
        assert!(status.success(), "compiling {} failed", src.display());
    }
}
