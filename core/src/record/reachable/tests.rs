extern crate std;

use proptest::prelude::*;

use super::*;

const BASE: u64 = 0x7e00_0000_0000;

fn put(mem: &mut [u8], off: usize, v: u64) {
    mem[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

fn run(allocs: &[(u64, u64)], mem: &[u8], roots: &[u64]) -> std::vec::Vec<bool> {
    let mut marks = std::vec![false; allocs.len()];
    let mut stack = std::vec![0u32; allocs.len()];
    close(
        allocs,
        BASE,
        mem,
        roots.iter().copied(),
        &mut marks,
        &mut stack,
    )
    .unwrap();
    marks
}

#[test]
fn an_array_of_pointers_reaches_the_buffers_it_names_and_nothing_else() {
    // 0: the table, 1..=3: buffers, 1 and 3 named by the table, 4: untouched.
    let allocs: std::vec::Vec<(u64, u64)> = (0..5).map(|i| (BASE + i * 0x100, 0x100)).collect();
    let mut mem = std::vec![0u8; 0x500];
    put(&mut mem, 0, BASE + 0x100);
    put(&mut mem, 8, BASE + 0x3f8);
    assert_eq!(
        run(&allocs, &mem, &[BASE]),
        [true, true, false, true, false]
    );
}

#[test]
fn a_cycle_ends_and_marks_each_allocation_once() {
    let allocs = [(BASE, 0x40), (BASE + 0x40, 0x40)];
    let mut mem = std::vec![0u8; 0x80];
    put(&mut mem, 0, BASE + 0x40);
    put(&mut mem, 0x40, BASE);
    put(&mut mem, 0x48, BASE + 0x10);
    assert_eq!(run(&allocs, &mem, &[BASE + 0x40]), [true, true]);
}

#[test]
fn end_pointers_unaligned_words_and_addresses_between_allocations_reach_nothing() {
    let allocs = [(BASE, 0x40), (BASE + 0x80, 0x40), (BASE + 0x100, 0x40)];
    let mut mem = std::vec![0u8; 0x140];
    put(&mut mem, 0, BASE + 0x40 + 0x80); // one past the end of allocation 1
    put(&mut mem, 8, BASE + 0x50); // the gap between 0 and 1
    put(&mut mem, 0x11, BASE + 0x100); // unaligned
    assert_eq!(run(&allocs, &mem, &[BASE]), [true, false, false]);
    assert_eq!(run(&allocs, &mem, &[BASE + 0x40]), [false, false, false]);
}

#[test]
fn words_past_the_snapshot_are_not_read() {
    let allocs = [(BASE, 0x40), (BASE + 0x40, 0x40)];
    // The snapshot stops inside allocation 0.
    let mut mem = std::vec![0u8; 0x10];
    put(&mut mem, 8, BASE + 0x40);
    assert_eq!(run(&allocs, &mem, &[BASE]), [true, true]);
    let mem = std::vec![0u8; 4];
    assert_eq!(run(&allocs, &mem, &[BASE]), [true, false]);
}

#[test]
fn unsorted_or_overlapping_allocations_and_short_scratch_are_errors() {
    let (mut m, mut s) = ([false; 2], [0u32; 2]);
    let e = close(
        &[(BASE, 0x40), (BASE + 0x20, 8)],
        BASE,
        &[],
        [],
        &mut m,
        &mut s,
    );
    assert_eq!(e, Err(ReachError::Unsorted { index: 1 }));
    let e = close(&[(u64::MAX, 2)], BASE, &[], [], &mut m, &mut s);
    assert_eq!(e, Err(ReachError::Unsorted { index: 0 }));
    let e = close(
        &[(BASE, 1), (BASE + 1, 1)],
        BASE,
        &[],
        [],
        &mut m[..1],
        &mut s,
    );
    assert_eq!(e, Err(ReachError::ScratchTooSmall { allocations: 2 }));
    assert_eq!(close(&[], BASE, &[], [BASE], &mut m, &mut s), Ok(0));
}

#[test]
fn ranges_merge_neighbours_within_the_gap_and_stay_within_the_cap() {
    let allocs = [(BASE, 0x10), (BASE + 0x20, 0x10), (BASE + 0x100, 0x10)];
    let mut out = Ranges::new();
    ranges(&allocs, &[true, true, true], BASE, 0x10, &mut out);
    assert_eq!(out.as_slice(), &[[0, 0x30], [0x100, 0x10]]);
    ranges(&allocs, &[true, false, true], BASE, 0x10, &mut out);
    assert_eq!(out.as_slice(), &[[0, 0x10], [0x100, 0x10]]);

    // 100 allocations, every other one marked, with growing gaps: the
    // closest are merged first, and every marked byte is held.
    let allocs: std::vec::Vec<(u64, u64)> = (0..200u64)
        .scan(BASE, |at, i| {
            let a = (*at, 0x10);
            *at += 0x10 + i * 16;
            Some(a)
        })
        .collect();
    let marks: std::vec::Vec<bool> = (0..200).map(|i| i % 2 == 0).collect();
    ranges(&allocs, &marks, BASE, 0, &mut out);
    assert_eq!(out.len(), MAX_REACHABLE_RANGES);
    check_ranges(&out, None).unwrap();
    for (a, _) in allocs.iter().zip(&marks).filter(|(_, m)| **m) {
        let off = a.0 - BASE;
        assert!(out.iter().any(|r| r[0] <= off && off + a.1 <= r[0] + r[1]));
    }
    // The widest gaps (the last allocations') are kept.
    let last = allocs[198].0 - BASE;
    assert_eq!(out.last(), Some(&[last, 0x10]));
}

#[test]
fn poison_fills_exactly_what_the_ranges_do_not_hold() {
    let mut mem = [7u8; 32];
    poison_outside(&mut mem, &[[4, 4], [8, 2], [30, 10]]);
    let want: std::vec::Vec<u8> = (0..32)
        .map(|i| {
            if (4..10).contains(&i) || i >= 30 {
                7
            } else {
                POISON
            }
        })
        .collect();
    assert_eq!(mem.as_slice(), want.as_slice());
    let mut mem = [7u8; 8];
    poison_outside(&mut mem, &[]);
    assert_eq!(mem, [POISON; 8]);
    assert_eq!(held(&[[4, 4], [8, 2]]), 6);
}

#[test]
fn ranges_are_checked_for_order_emptiness_wrapping_and_the_snapshot() {
    let bad = |index, problem| Err(RecordError::BadReachable { index, problem });
    assert_eq!(check_ranges(&[[0, 4], [4, 4]], Some(8)), Ok(()));
    assert_eq!(check_ranges(&[[0, 0]], None), bad(0, RangeProblem::Empty));
    assert_eq!(
        check_ranges(&[[0, 8], [4, 4]], None),
        bad(1, RangeProblem::Overlaps)
    );
    assert_eq!(
        check_ranges(&[[u64::MAX, 2]], None),
        bad(0, RangeProblem::Wraps)
    );
    assert_eq!(
        check_ranges(&[[0, 9]], Some(8)),
        bad(0, RangeProblem::PastSnapshot { snapshot: 8 })
    );
}

/// The closure by its definition: the least set holding the roots'
/// allocations and, for every allocation in it, those its aligned words
/// point into; found by repeating a full pass until nothing changes.
fn reference(allocs: &[(u64, u64)], mem: &[u8], roots: &[u64]) -> std::vec::Vec<bool> {
    let find = |v: u64| allocs.iter().position(|&(s, l)| v >= s && v - s < l);
    let mut marks = std::vec![false; allocs.len()];
    for &r in roots {
        if let Some(i) = find(r) {
            marks[i] = true;
        }
    }
    loop {
        let mut changed = false;
        for i in 0..allocs.len() {
            if !marks[i] {
                continue;
            }
            let (s, l) = allocs[i];
            for at in (s..s + l).filter(|a| a % 8 == 0 && a + 8 <= s + l) {
                let off = (at - BASE) as usize;
                if off + 8 > mem.len() {
                    continue;
                }
                let v = u64::from_le_bytes(mem[off..off + 8].try_into().unwrap());
                if let Some(j) = find(v)
                    && !marks[j]
                {
                    marks[j] = true;
                    changed = true;
                }
            }
        }
        if !changed {
            return marks;
        }
    }
}

/// Sorted, disjoint allocations from (gap, len) pairs, a snapshot over them
/// with `links` pointers (word index, target allocation, offset into it)
/// written into it, and the roots (allocation, offset).
fn case() -> impl Strategy<
    Value = (
        std::vec::Vec<(u64, u64)>,
        std::vec::Vec<u8>,
        std::vec::Vec<u64>,
    ),
> {
    (
        prop::collection::vec((0u64..3, 1u64..6), 1..24),
        prop::collection::vec(
            (
                any::<prop::sample::Index>(),
                any::<prop::sample::Index>(),
                0u64..64,
            ),
            0..40,
        ),
        prop::collection::vec((any::<prop::sample::Index>(), 0u64..80), 0..4),
        any::<u64>(),
    )
        .prop_map(|(shape, links, roots, noise)| {
            let mut allocs = std::vec::Vec::new();
            let mut at = BASE;
            for (gap, len) in shape {
                at += gap * 8;
                allocs.push((at, len * 8 + (noise % 3)));
                at += len * 8 + 8;
            }
            let end = (allocs.last().unwrap().0 + allocs.last().unwrap().1 - BASE) as usize;
            let mut mem = std::vec![0u8; end.div_ceil(8) * 8];
            // Noise that is not an address, so that the pointers decide.
            for (i, w) in mem.chunks_exact_mut(8).enumerate() {
                w.copy_from_slice(&(noise ^ i as u64).wrapping_mul(3).to_le_bytes());
                if u64::from_le_bytes(w.try_into().unwrap()).wrapping_sub(BASE) < end as u64 {
                    w.copy_from_slice(&0u64.to_le_bytes());
                }
            }
            let words = mem.len() / 8;
            for (word, target, off) in links {
                let (s, l) = allocs[target.index(allocs.len())];
                put(&mut mem, word.index(words) * 8, s + off % (l + 1));
            }
            let roots = roots
                .into_iter()
                .map(|(a, off)| allocs[a.index(allocs.len())].0 + off)
                .collect();
            (allocs, mem, roots)
        })
}

proptest! {
    /// Conservative and no more: every allocation reachable through aligned
    /// in-allocation words is marked, and only those; the same whatever the
    /// roots' order; the ranges hold every marked byte.
    #[test]
    fn the_closure_is_the_reachable_set_whatever_the_order((allocs, mem, roots) in case()) {
        let marks = run(&allocs, &mem, &roots);
        prop_assert_eq!(&marks, &reference(&allocs, &mem, &roots));
        let mut reversed = roots.clone();
        reversed.reverse();
        prop_assert_eq!(&marks, &run(&allocs, &mem, &reversed));
        let mut out = Ranges::new();
        ranges(&allocs, &marks, BASE, 16, &mut out);
        prop_assert!(check_ranges(&out, Some(mem.len() as u64)).is_ok());
        for (&(s, l), _) in allocs.iter().zip(&marks).filter(|(_, m)| **m) {
            let off = s - BASE;
            prop_assert!(out.iter().any(|r| r[0] <= off && off + l <= r[0] + r[1]));
        }
    }
}

fn reachable_record(ranges: &[[u64; 2]]) -> super::super::KernelRecord {
    let mut rec = super::super::KernelRecord::new("saxpy").unwrap();
    rec.push_arg(BASE).unwrap();
    rec.region_base = Some(BASE);
    rec.region_size = Some(1 << 30);
    rec.memory_size = Some(0x1000);
    rec.reachable = Some(ranges.iter().copied().collect());
    rec
}

#[test]
fn the_reachable_key_round_trips_and_its_absence_reads_as_a_whole_snapshot() {
    use super::super::{Generation, KernelRecord};
    let mut buf = [0u8; 4096];
    for ranges in [&[][..], &[[0, 0x100], [0x800, 0x800]][..]] {
        let rec = reachable_record(ranges);
        let n = rec.to_json(Generation::Reprise, &mut buf).unwrap();
        let json = core::str::from_utf8(&buf[..n]).unwrap();
        assert!(json.contains("\"Reachable\":["), "{json}");
        let again = KernelRecord::from_json(&buf[..n]).unwrap();
        assert_eq!(again.reachable.as_deref(), Some(ranges));
        assert_eq!(again, rec);
        // LLVM's key sets have no such key: what LLVM reads is unchanged.
        let n = rec.to_json(Generation::LlvmCurrent, &mut buf).unwrap();
        let llvm = KernelRecord::from_json(&buf[..n]).unwrap();
        assert_eq!(llvm.reachable, None);
    }
    let mut rec = reachable_record(&[]);
    rec.reachable = None;
    let n = rec.to_json(Generation::Reprise, &mut buf).unwrap();
    assert!(
        !core::str::from_utf8(&buf[..n])
            .unwrap()
            .contains("Reachable")
    );
}

#[test]
fn a_descriptor_with_bad_reachable_ranges_is_refused_reading_and_writing() {
    use super::super::{Generation, KernelRecord};
    let mut buf = [0u8; 4096];
    let rec = reachable_record(&[[0x800, 0x900]]);
    let past = Err(RecordError::BadReachable {
        index: 0,
        problem: RangeProblem::PastSnapshot { snapshot: 0x1000 },
    });
    assert_eq!(rec.to_json(Generation::Reprise, &mut buf).map(|_| ()), past);
    let good = reachable_record(&[[0x800, 0x100]]);
    let n = good.to_json(Generation::Reprise, &mut buf).unwrap();
    let json = core::str::from_utf8(&buf[..n]).unwrap();
    for (reachable, want) in [
        ("[[2048,2304]]", past),
        (
            "[[0,16],[8,16]]",
            Err(RecordError::BadReachable {
                index: 1,
                problem: RangeProblem::Overlaps,
            }),
        ),
        ("[[0,16,3]]", Err(RecordError::BadValue("Reachable"))),
    ] {
        let bad = json.replace("[[2048,256]]", reachable);
        assert_ne!(bad, json);
        let got = KernelRecord::from_json(bad.as_bytes()).map(|_| ());
        assert_eq!(got, want, "{bad}");
    }
    let many: std::string::String = (0..=MAX_REACHABLE_RANGES)
        .map(|i| std::format!("[{},1]", i * 2))
        .collect::<std::vec::Vec<_>>()
        .join(",");
    let bad = json.replace("[[2048,256]]", &std::format!("[{many}]"));
    assert_eq!(
        KernelRecord::from_json(bad.as_bytes()).map(|_| ()),
        Err(RecordError::TooManyRanges {
            count: MAX_REACHABLE_RANGES as u64 + 1,
            max: MAX_REACHABLE_RANGES
        })
    );
}

#[test]
fn the_largest_record_with_the_most_ranges_still_fits_the_descriptor_buffer() {
    use super::super::{Generation, KernelRecord, MAX_ARG_DATA, MAX_ARGS, MAX_JSON_LEN};
    let name: std::string::String = core::iter::repeat_n('\u{1}', 512).collect();
    let mut rec = KernelRecord::new(&name).unwrap();
    for _ in 0..MAX_ARGS - 1 {
        rec.push_arg(i64::MIN as u64).unwrap();
    }
    rec.push_arg_bytes(&[0xab; MAX_ARG_DATA]).unwrap();
    rec.args_outside = (0..MAX_ARGS as u8).collect();
    rec.args_in_globals = (0..MAX_ARGS as u8).collect();
    rec.region_base = Some(u64::MAX / 2);
    rec.region_size = Some(super::super::MAX_REGION_SIZE);
    rec.memory_size = Some(super::super::MAX_REGION_SIZE);
    rec.launch_seq = Some(u64::MAX);
    rec.reachable = Some(
        (0..MAX_REACHABLE_RANGES as u64)
            .map(|i| [(1 << 40) + i * (1 << 30), (1 << 29) + 1])
            .collect(),
    );
    // Every pointer argument's allocation (each value is 1 byte above
    // the base).
    rec.arg_allocations = (0..MAX_ARGS as u64 - 1)
        .map(|i| [i, 0, super::super::MAX_REGION_SIZE])
        .collect();
    let mut buf = std::vec![0u8; MAX_JSON_LEN];
    let n = rec.to_json(Generation::Reprise, &mut buf).unwrap();
    assert!(n > 16 * 1024, "{n}");
    assert_eq!(KernelRecord::from_json(&buf[..n]).unwrap(), rec);
}

#[test]
fn poison_is_a_finite_number_in_every_float_type_and_no_canonical_address() {
    use crate::compare::DType;
    for dtype in [DType::F16, DType::Bf16, DType::F32, DType::F64] {
        let bytes = [POISON; 8];
        match dtype.value(&bytes[..dtype.size()]) {
            crate::compare::Value::Float(v) => {
                assert!(v.is_finite() && v.abs() > 6e4, "{dtype:?}: {v}")
            }
            other => panic!("{dtype:?}: {other:?}"),
        }
    }
    // x86-64 addresses are canonical when bits 63..47 are all equal.
    let p = u64::from_le_bytes([POISON; 8]);
    assert!(p >> 47 != 0 && p >> 47 != (1 << 17) - 1, "{p:#x}");
}
