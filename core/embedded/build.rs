//! Hands the linker the memory layout and the runtime's linker script:
//! cortex-m-rt's `link.x` includes `memory.x` itself; riscv-rt's takes
//! `memory-riscv.x` on the command line, before it.

fn main() {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").expect("cargo sets the target's arch");
    let layout = if arch == "riscv32" {
        "memory-riscv.x"
    } else {
        "memory.x"
    };
    std::fs::copy(layout, out.join(layout)).expect("copying the memory layout");
    println!("cargo:rustc-link-search={}", out.display());
    if arch == "riscv32" {
        println!("cargo:rustc-link-arg=-Tmemory-riscv.x");
    }
    println!("cargo:rustc-link-arg=-Tlink.x");
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-changed=memory-riscv.x");
}
