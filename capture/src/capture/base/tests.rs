use super::*;
use reprise_core::record::Generation;

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
