//! No build step: the simulators are compiled when a test first asks for
//! them (a missing C compiler then skips those tests with a message). The
//! script exists for `OUT_DIR`, where those builds are kept.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
}
