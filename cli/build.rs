//! Compiles the C kernels the end-to-end tests record into ELF shared
//! objects, and builds the interposer the `reprise` binary embeds.

#[path = "../build-support/kernels.rs"]
mod kernels;

#[path = "../build-support/interposer.rs"]
mod interposer;

fn main() {
    kernels::compile_dir(std::path::Path::new("tests/kernels"));
    let manifest = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    interposer::embed(manifest.parent().expect("cli/ is inside the workspace"));
}
