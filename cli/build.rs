//! Compiles the C kernels the end-to-end tests record into ELF shared
//! objects.

#[path = "../build-support/kernels.rs"]
mod kernels;

fn main() {
    kernels::compile_dir(std::path::Path::new("tests/kernels"));
}
