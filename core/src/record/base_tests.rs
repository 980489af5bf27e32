use super::*;

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

fn base(d: Derivation) -> (u64, BaseOrigin) {
    match d {
        Derivation::Base(b, o) => (b, o),
        other => panic!("no base: {other:?}"),
    }
}

#[test]
fn scalars_beside_pointers_are_not_taken_for_pointers() {
    // n = 100000, x, 1.25f, y, 3.0 (a double's bits), 1 << 40.
    let r = record(
        &[
            100_000,
            B as i64,
            0x3fa0_0000,
            (B + 400_000) as i64,
            0x4008_0000_0000_0000,
            1 << 40,
        ],
        800_000,
    );
    let (b, o) = base(derive(&r, []));
    assert_eq!(b, B);
    assert!(matches!(
        o,
        BaseOrigin::Derived {
            evidence: Evidence::FirstAllocation { .. },
            ..
        }
    ));
}

#[test]
fn a_small_last_buffer_leaves_one_base() {
    let r = record(&[1000, B as i64, (B + 4000) as i64], 8000);
    assert_eq!(
        base(derive(&r, [])),
        (
            B,
            BaseOrigin::Derived {
                evidence: Evidence::Only,
                agreeing: 0,
                disagreeing: 0
            }
        )
    );
}

#[test]
fn offsets_are_left_out_of_containment() {
    let mut r = record(&[B as i64, (B + 4000) as i64], 8000);
    r.arg_offsets[0] = -24_000;
    r.arg_offsets[1] = -8000;
    assert_eq!(base(derive(&r, [])).0, B);
}

#[test]
fn a_later_launch_alone_is_ambiguous_and_names_the_base() {
    // The third launch of a kernel whose buffers are 4000 bytes.
    let r = record(&[1000, (B + 16_000) as i64, (B + 20_000) as i64, 2], 24_000);
    match derive(&r, []) {
        Derivation::Ambiguous(c) => {
            assert!(c.named().contains(&B), "{c}");
            assert!(c.total >= 2 && c.total <= 6, "{c}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn siblings_of_one_process_narrow_to_one_base() {
    let first = record(&[1000, B as i64, (B + 4000) as i64], 8000);
    let second = record(&[1000, (B + 8000) as i64, (B + 12_000) as i64], 16_000);
    let (b, o) = base(derive(&second, [&first]));
    assert_eq!(b, B);
    assert!(matches!(o, BaseOrigin::Derived { agreeing: 1, .. }), "{o}");
}

#[test]
fn a_sibling_of_another_process_is_left_out() {
    let ours = record(&[B as i64, (B + 4000) as i64], 8000);
    let theirs = record(&[0x5555_0000_0010, 0x5555_0000_1010], 8000);
    let (b, o) = base(derive(&ours, [&theirs]));
    assert_eq!(b, B);
    assert!(
        matches!(o, BaseOrigin::Derived { disagreeing: 1, .. }),
        "{o}"
    );
}

#[test]
fn a_sibling_output_settles_a_base_the_capture_allows_and_no_other() {
    let r = record(&[1000, (B + 16_000) as i64, (B + 20_000) as i64, 2], 24_000);
    let Derivation::Ambiguous(c) = derive(&r, []) else {
        panic!()
    };
    assert!(allows(&r, [], B));
    let (b, o) = base(by_sibling_output(&r, [], B).unwrap());
    assert_eq!(b, B);
    let others = o.alternatives().unwrap();
    assert_eq!(others.total, c.total - 1);
    assert!(!others.named().contains(&B), "{o}");
    assert!(alloc::format!("{o}").contains("recorded output"), "{o}");
    // Not a base the capture allows, or not a page + 0x10: no evidence.
    assert_eq!(by_sibling_output(&r, [], B + 64 * PAGE), None);
    assert_eq!(by_sibling_output(&r, [], B + 1), None);
}

#[test]
fn bases_are_ordered_to_try_the_chosen_first_within_a_limit() {
    let r = record(&[1000, (B + 16_000) as i64, (B + 20_000) as i64, 2], 24_000);
    let (all, total) = ordered(&r, [], None, 64);
    assert_eq!(all.len() as u64, total);
    assert!(all.contains(&B));
    let (two, t) = ordered(&r, [], Some(B), 2);
    assert_eq!((two[0], two.len(), t), (B, 2, total));
    // A first base the capture does not allow is not tried.
    let (v, _) = ordered(&r, [], Some(0x1010), 64);
    assert!(!v.contains(&0x1010));
    let recorded = KernelRecord {
        region_base: Some(B),
        ..r.clone()
    };
    assert_eq!(ordered(&recorded, [], None, 8), (Vec::new(), 0));
}

#[test]
fn no_pointer_no_base() {
    assert_eq!(derive(&record(&[7, 1000], 8000), []), Derivation::None);
    assert_eq!(derive(&record(&[B as i64], 0), []), Derivation::None);
}

#[test]
fn addresses_are_named_with_how_many_more() {
    let mut s = alloc::string::String::new();
    write_addresses(&mut s, &[0x10, 0x1010], 5).unwrap();
    assert_eq!(s, "0x10, 0x1010 (and 3 more)");
    s.clear();
    write_addresses(&mut s, &[0x10], 1).unwrap();
    assert_eq!(s, "0x10");
}

#[test]
fn huge_sizes_and_values_do_not_overflow() {
    for size in [u64::MAX, TOP, TOP - 1, 1] {
        let r = record(
            &[i64::MAX, i64::MIN, -1, (TOP - 16) as i64, LOWEST as i64],
            size,
        );
        let _ = derive(&r, []);
    }
}

#[test]
fn only_bases_whose_snapshot_holds_a_faulting_address_are_named() {
    // A 4000-byte buffer at B, the first allocation, in a 64 KiB
    // snapshot: B and the 15 pages below it are possible.
    let r = record(&[B as i64, 1000], 16 * PAGE);
    let (b, origin) = base(derive(&r, []));
    assert_eq!(b, B);
    assert_eq!(origin.alternatives().unwrap().total, 15);
    // An address 3 pages below B: B and the 2 bases above it leave it
    // out; the 13 at it and below hold it.
    let c = holding(&r, [], B - 3 * PAGE, Some(B)).unwrap();
    assert_eq!(c.total, 13);
    assert!(c.named().iter().all(|&x| x <= B - 3 * PAGE), "{c}");
    assert!(
        c.named().iter().all(|&x| B - 3 * PAGE - x < 16 * PAGE),
        "{c}"
    );
    // Near the end of the region at B: only B holds it.
    let end = B + 15 * PAGE + 100;
    let c = holding(&r, [], end, Some(B)).unwrap();
    assert_eq!(c.total, 0);
    let c = holding(&r, [], end, None).unwrap();
    assert_eq!((c.total, c.named()), (1, &[B][..]));
    // A stack address, far from every one: none.
    let c = holding(&r, [], 0x7ffc_1234_5678, Some(B)).unwrap();
    assert_eq!((c.total, c.named().len()), (0, 0));
    // Not derived: the rule does not apply.
    let mut recorded = r.clone();
    recorded.region_base = Some(B);
    assert_eq!(holding(&recorded, [], B, None), None);
}
