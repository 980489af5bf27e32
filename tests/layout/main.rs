//! The workspace's layout rules, checked on the real thing:
//!
//! - dependencies flow one way, core <- backends <- std adapter <- facade <-
//!   command line: a backend depends on no reprise crate but the core and
//!   its own FFI crate, and the core on none; the samples (the built-in
//!   kernels) on the core and the std adapter only, below the facade; the
//!   benchmark harness on the facade alone; the command line on the facade
//!   and the harness (`cargo tree -e normal`); the facade on neither, and
//!   with no bench module of its own;
//! - a plain `reprise` dependency compiles none of the command line's
//!   dependencies;
//! - within every folder of every crate, no module imports one that
//!   imports it back (`crate::`, `super::` and `self::` paths between the
//!   folder's children, and what lies below each);
//! - no file is opened by path outside the one way to read and the one
//!   staged write, but for the reasoned exceptions of `OPENS_FILES`;
//! - in the C simulators of test-support, no two source files depend on
//!   each other, through the headers they include or what they name of
//!   each other's (`c_unit_graph`).

mod c_units;
mod deps;
mod modules;
mod opens;
mod registry;
mod store;

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}
