//! Compiles the demo kernel that the library embeds as `DEMO_IMAGE` (an ELF
//! shared object).

#[path = "build-support/kernels.rs"]
mod kernels;

fn main() {
    kernels::compile(
        std::path::Path::new("src/kernels/demo.c"),
        &kernels::kernels_dir().join("demo.so"),
    );
}
