//! Compiles the host demo kernel (kernels/demo.c) that this crate embeds as
//! `DEMO_IMAGE` (an ELF shared object).

#[path = "../build-support/kernels.rs"]
mod kernels;

fn main() {
    kernels::compile(
        std::path::Path::new("kernels/demo.c"),
        &kernels::kernels_dir().join("demo.so"),
    );
}
