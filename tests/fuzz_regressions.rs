//! The fuzz targets' bodies (`fuzz/targets.rs`) over every input kept in
//! `fuzz/corpus/<target>.pack` (the minimized corpus of what the fuzzers
//! reached, packed: each input as a little-endian u64 length and its bytes)
//! and `fuzz/regressions/<target>/` (inputs that once failed a target), on
//! the stable toolchain: a reader that panics on any of them fails here.
//! The fuzzers themselves need the nightly toolchain: `scripts/fuzz.sh`.

#[allow(dead_code)] // the libFuzzer binaries use the bodies one by one
#[path = "../fuzz/targets.rs"]
mod targets;

use std::path::Path;

/// The inputs packed in `file` (none when it is missing).
fn unpack(file: &Path) -> Vec<Vec<u8>> {
    let Ok(blob) = std::fs::read(file) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < blob.len() {
        let len = u64::from_le_bytes(blob[at..at + 8].try_into().unwrap()) as usize;
        out.push(blob[at + 8..at + 8 + len].to_vec());
        at += 8 + len;
    }
    out
}

#[test]
fn every_kept_fuzz_input_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut ran = 0;
    for (name, body) in targets::TARGETS {
        let mut inputs: Vec<(String, Vec<u8>)> =
            unpack(&root.join("corpus").join(format!("{name}.pack")))
                .into_iter()
                .enumerate()
                .map(|(i, d)| (format!("corpus/{name}.pack #{i}"), d))
                .collect();
        let kept = inputs.len();
        if let Ok(entries) = std::fs::read_dir(root.join("regressions").join(name)) {
            for e in entries {
                let path = e.unwrap().path();
                inputs.push((path.display().to_string(), std::fs::read(&path).unwrap()));
            }
        }
        assert!(kept > 0, "no kept corpus for the fuzz target {name}");
        for (what, data) in &inputs {
            let result = std::panic::catch_unwind(|| body(data));
            assert!(result.is_ok(), "{name} panicked on {what}");
        }
        ran += inputs.len();
    }
    eprintln!("{ran} kept fuzz inputs passed their targets");
}
