//! Bad input: every case exits 2 with a message naming the file and the
//! problem, never a panic, never a huge allocation.
//!
//! The fixtures and the descriptor editing the cases share are here, the
//! cases by subject in the modules.

#[path = "../common/mod.rs"]
mod common;

mod descriptors;
mod files;
mod outputs;
mod regions;

use std::path::Path;

use common::*;
use reprise::core::record::Generation;
use serde_json::json;

const BASE: u64 = 0x1539_4000_0000;

fn legacy(dir: &Path) -> Fixture {
    llvm_fixture(dir, Generation::LlvmLegacy, BASE, 256)
}

/// An LLVM-current capture (whose files reprise's own format shares).
fn current(dir: &Path) -> Fixture {
    llvm_fixture(dir, Generation::LlvmCurrent, BASE, 256)
}

/// Sets (or, with `null`, removes) top-level keys of a descriptor, as a
/// person editing it would. A descriptor turned into reprise's format gets
/// the image's checksum too, as reprise's writer always records checksums
/// (a reprise descriptor without them is refused), unless the edit says
/// what `Checksums` is.
fn set_keys(descriptor: &Path, keys: serde_json::Value) {
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(descriptor).unwrap()).unwrap();
    let map = v.as_object_mut().unwrap();
    for (k, x) in keys.as_object().unwrap() {
        if x.is_null() {
            map.remove(k);
        } else {
            map.insert(k.clone(), x.clone());
        }
    }
    if map.contains_key("RepriseFormat") && !map.contains_key("Checksums") {
        let image = std::fs::read(sibling(descriptor, "image")).unwrap();
        let sum = reprise_std::capture::checksum(&image);
        map.insert(
            "Checksums".into(),
            json!({ "image": format!("{sum:016x}") }),
        );
    }
    std::fs::write(descriptor, serde_json::to_vec(&v).unwrap()).unwrap();
}

/// The sibling file of `descriptor` with extension `ext`.
fn sibling(descriptor: &Path, ext: &str) -> std::path::PathBuf {
    let stem = descriptor.to_string_lossy();
    std::path::PathBuf::from(format!("{}.{ext}", stem.trim_end_matches(".json")))
}

/// The `error:` line of a run's stderr.
fn error_line(o: &std::process::Output) -> String {
    let (_, err) = text(o);
    err.lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line in:\n{err}"))
        .to_string()
}
