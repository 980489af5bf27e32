use super::*;
use reprise_core::record::Generation;
use std::path::PathBuf;

thread_local! {
    /// How often this thread read a directory's siblings.
    pub(crate) static SIBLING_READS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn record(ptrs: &[i64], size: u64) -> KernelRecord {
    let mut r = KernelRecord::new("k").unwrap();
    r.generation = Generation::LlvmLegacy;
    for &p in ptrs {
        r.arg_ptrs.push(p).unwrap();
        r.arg_offsets.push(0).unwrap();
    }
    r.memory_size = Some(size);
    r
}

const B: u64 = 0x7fe7_e2ff_f010;

#[test]
fn the_descriptor_is_not_its_own_sibling() {
    let first = record(&[1000, B as i64, (B + 4000) as i64], 8000);
    let second = record(&[1000, (B + 8000) as i64, (B + 12_000) as i64], 16_000);
    let siblings = Siblings {
        dir: "dir".into(),
        records: vec![
            ("a.json".into(), Box::new(first)),
            ("k.json".into(), Box::new(second.clone())),
        ],
    };
    match derive_among(&second, Path::new("dir/k.json"), &siblings) {
        Derivation::Base(b, BaseOrigin::Derived { agreeing, .. }) => {
            assert_eq!((b, agreeing), (B, 1));
        }
        other => panic!("{other:?}"),
    }
}

/// Writes `r` as `dir/NAME.json`, with `input` and `output` snapshots.
fn write(dir: &Path, name: &str, r: &KernelRecord, input: &[u8], output: &[u8]) -> PathBuf {
    let d = dir.join(format!("{name}.json"));
    std::fs::write(&d, r.to_json_string(r.generation).unwrap()).unwrap();
    let paths = CapturePaths::new(&d, r.generation);
    std::fs::write(&paths.input, input).unwrap();
    std::fs::write(&paths.output, output).unwrap();
    d
}

#[test]
fn an_input_holding_a_siblings_output_takes_its_base() {
    let dir = tempfile::tempdir().unwrap();
    // The first kernel: 40 KiB buffers at B (its base, by the first
    // allocation, of 10 possible); the second: fresh buffers past them.
    const K: u64 = 40 * 1024;
    let first = record(&[1000, B as i64, (B + K) as i64], 2 * K);
    let second = record(&[(B + 2 * K) as i64, (B + 3 * K) as i64], 4 * K);
    let after: Vec<u8> = (0..2 * K).map(|i| (i % 251) as u8 + 1).collect();
    write(dir.path(), "a", &first, &vec![0; 2 * K as usize], &after);
    let mut input = after.clone();
    input.resize(4 * K as usize, 7);
    let d = write(dir.path(), "b", &second, &input, &input);
    let siblings = Siblings::of(&d);
    match derive_among(&second, &d, &siblings) {
        Derivation::Base(b, BaseOrigin::Derived { evidence, .. }) => {
            assert_eq!(b, B);
            assert!(
                matches!(evidence, Evidence::SiblingOutput { .. }),
                "{evidence:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    // An input that does not hold it (one byte of a compared block
    // changed), or holds only zeros: no evidence from content.
    for changed in [
        {
            let mut v = input.clone();
            v[0] ^= 1;
            v
        },
        vec![0; 16_000],
    ] {
        std::fs::write(CapturePaths::new(&d, second.generation).input, &changed).unwrap();
        if changed[1] == 0 {
            let zeros = vec![0; 2 * K as usize];
            write(dir.path(), "a", &first, &zeros, &zeros);
        }
        let siblings = Siblings::of(&d);
        let got = derive_among(&second, &d, &siblings);
        assert!(
            !matches!(
                got,
                Derivation::Base(
                    _,
                    BaseOrigin::Derived {
                        evidence: Evidence::SiblingOutput { .. },
                        ..
                    }
                )
            ),
            "{got:?}"
        );
    }
    // A sibling output longer than the input, or than its descriptor
    // says, is not read as this capture's memory.
    write(dir.path(), "a", &first, &after, &after[..K as usize]);
    let siblings = Siblings::of(&d);
    let _ = derive_among(&second, &d, &siblings);
}
