//! Compiles the C kernels into ELF shared objects: the demo kernel that
//! `reprise demo` embeds, and the kernels the end-to-end tests record.

use std::path::Path;
use std::process::Command;

fn compile(compiler: &cc::Tool, src: &Path, out: &Path) {
    println!("cargo:rerun-if-changed={}", src.display());
    let status = Command::new(compiler.path())
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(out)
        .arg(src)
        .status()
        .unwrap_or_else(|e| panic!("running the C compiler {}: {e}", compiler.path().display()));
    assert!(status.success(), "compiling {} failed", src.display());
}

fn main() {
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let kernels = Path::new(&out_dir).join("kernels");
    std::fs::create_dir_all(&kernels).expect("creating OUT_DIR/kernels");
    let compiler = cc::Build::new().get_compiler();
    compile(
        &compiler,
        Path::new("src/kernels/demo.c"),
        &kernels.join("demo.so"),
    );
    for entry in std::fs::read_dir("tests/kernels").expect("tests/kernels exists") {
        let src = entry.expect("readable directory").path();
        if src.extension().is_some_and(|e| e == "c") {
            let name = src
                .file_stem()
                .expect("a file name")
                .to_string_lossy()
                .into_owned();
            compile(&compiler, &src, &kernels.join(format!("{name}.so")));
        }
    }
    println!("cargo:rerun-if-changed=tests/kernels");
}
