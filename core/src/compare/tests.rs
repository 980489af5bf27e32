extern crate std;

use std::vec::Vec;

use super::*;

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f64s(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn run(t: Tolerance, e: &[u8], a: &[u8]) -> Comparison {
    let mut c = Comparer::new(t);
    c.feed(e, a);
    c.finish()
}

#[test]
fn bytes_are_compared_exactly_by_default() {
    let r = run(Tolerance::EXACT, &[1, 2, 3, 4], &[1, 9, 3, 7]);
    assert_eq!((r.elements, r.bytes, r.mismatches), (4, 4, 2));
    assert_eq!(r.first[0].offset, 1);
    assert_eq!(r.first[0].expected, Value::Int(2));
    assert_eq!(r.first[1].actual, Value::Int(7));
    assert!(run(Tolerance::EXACT, &[5; 100], &[5; 100]).is_match());
}

#[test]
fn relative_and_absolute_tolerances_combine_as_allclose() {
    let e = f64s(&[100.0, 0.0, 1e-9]);
    let a = f64s(&[100.001, 1e-12, 2e-9]);
    // Values only: all three differ.
    assert_eq!(run(Tolerance::elements(DType::F64), &e, &a).mismatches, 3);
    // rtol 2e-5 covers the first (0.001 <= 2e-5 * 100).
    let r = run(Tolerance::elements(DType::F64).rtol(2e-5), &e, &a);
    assert_eq!(r.mismatches, 2);
    assert_eq!(r.first[0].index, 1);
    // atol 1e-8 covers the other two.
    assert!(
        run(
            Tolerance::elements(DType::F64).rtol(2e-5).atol(1e-8),
            &e,
            &a
        )
        .is_match()
    );
    // The largest differences are reported, relative ones infinite where
    // 0 became something else.
    let r = run(Tolerance::elements(DType::F64), &e, &a);
    assert!((r.max_abs - 0.001).abs() < 1e-12, "{}", r.max_abs);
    assert_eq!(r.max_rel, f64::INFINITY);
}

#[test]
fn nan_infinities_and_signed_zeros() {
    let t = Tolerance::elements(DType::F32).rtol(1.0).atol(1.0);
    let nan = f32s(&[f32::NAN]);
    assert_eq!(run(t, &nan, &nan).mismatches, 1, "NaN != NaN by default");
    assert!(run(t.nan_equal(true), &nan, &nan).is_match());
    // A NaN is never a number, whatever the tolerance.
    assert_eq!(run(t.nan_equal(true), &nan, &f32s(&[1.0])).mismatches, 1);
    // Infinities match exactly: sign included, and not within a tolerance.
    let inf = f32s(&[f32::INFINITY]);
    assert!(run(t, &inf, &inf).is_match());
    assert_eq!(run(t, &inf, &f32s(&[f32::NEG_INFINITY])).mismatches, 1);
    assert_eq!(run(t, &inf, &f32s(&[f32::MAX])).mismatches, 1);
    // Signed zeros are equal, even with no tolerance.
    assert!(
        run(
            Tolerance::elements(DType::F32),
            &f32s(&[0.0]),
            &f32s(&[-0.0])
        )
        .is_match()
    );
    // Payloads of NaN differ in bits but are all NaN.
    let other_nan = f32s(&[f32::from_bits(0x7fc0_0001)]);
    assert!(run(t.nan_equal(true), &nan, &other_nan).is_match());
}

#[test]
fn ulps_count_representable_values_across_zero() {
    let one = 1.0f32.to_le_bytes();
    let next = f32::from_bits(1.0f32.to_bits() + 1).to_le_bytes();
    assert_eq!(DType::F32.ulps(&one, &next), Some(1));
    // The smallest subnormals on each side of zero are 2 apart (via 0).
    let tiny = f32::from_bits(1).to_le_bytes();
    let neg_tiny = (-f32::from_bits(1)).to_le_bytes();
    assert_eq!(DType::F32.ulps(&tiny, &neg_tiny), Some(2));
    assert_eq!(
        DType::F32.ulps(&0.0f32.to_le_bytes(), &(-0.0f32).to_le_bytes()),
        Some(0)
    );
    assert_eq!(DType::F32.ulps(&f32::NAN.to_le_bytes(), &one), None);
    // f64, f16 and bf16 likewise; integers count their difference.
    let d = 1.0f64.to_le_bytes();
    let d2 = f64::from_bits(1.0f64.to_bits() + 3).to_le_bytes();
    assert_eq!(DType::F64.ulps(&d, &d2), Some(3));
    assert_eq!(
        DType::F16.ulps(&0x0001u16.to_le_bytes(), &0x8001u16.to_le_bytes()),
        Some(2)
    );
    assert_eq!(
        DType::Bf16.ulps(&0x3f80u16.to_le_bytes(), &0x3f82u16.to_le_bytes()),
        Some(2)
    );
    assert_eq!(
        DType::F16.ulps(&0x7e00u16.to_le_bytes(), &0x3c00u16.to_le_bytes()),
        None
    );
    assert_eq!(
        DType::I32.ulps(&(-5i32).to_le_bytes(), &7i32.to_le_bytes()),
        Some(12)
    );
    // As a tolerance.
    let t = Tolerance::elements(DType::F32).ulps(1);
    assert!(run(t, &one, &next).is_match());
    let far = f32::from_bits(1.0f32.to_bits() + 2).to_le_bytes();
    assert_eq!(run(t, &one, &far).mismatches, 1);
}

#[test]
fn half_precision_and_bfloat16_convert_exactly() {
    assert_eq!(f16_to_f64(0x3c00), 1.0);
    assert_eq!(f16_to_f64(0xc000), -2.0);
    assert_eq!(f16_to_f64(0x7bff), 65504.0);
    assert_eq!(f16_to_f64(0x0001), 2f64.powi(-24)); // smallest subnormal
    assert_eq!(f16_to_f64(0x03ff), 1023.0 * 2f64.powi(-24)); // largest subnormal
    assert_eq!(f16_to_f64(0x0400), 2f64.powi(-14)); // smallest normal
    assert_eq!(f16_to_f64(0x7c00), f64::INFINITY);
    assert_eq!(f16_to_f64(0xfc00), f64::NEG_INFINITY);
    assert!(f16_to_f64(0x7c01).is_nan());
    assert_eq!(f16_to_f64(0x8000).to_bits(), (-0.0f64).to_bits());
    assert_eq!(
        DType::Bf16.value(&0x3f80u16.to_le_bytes()),
        Value::Float(1.0)
    );
    assert_eq!(
        DType::Bf16.value(&0xc0a0u16.to_le_bytes()),
        Value::Float(-5.0)
    );
    // Every f16 converts to the f32 the same bits make through f32's own
    // rules (checked against a second, independent route).
    for h in 0..=u16::MAX {
        let got = f16_to_f64(h);
        let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
        let (e, m) = (i32::from((h >> 10) & 0x1f), f64::from(h & 0x3ff));
        let want = match e {
            0 => sign * m * 2f64.powi(-24),
            31 if m == 0.0 => sign * f64::INFINITY,
            31 => f64::NAN,
            _ => sign * (1024.0 + m) * 2f64.powi(e - 25),
        };
        assert!(
            got == want || (got.is_nan() && want.is_nan()),
            "{h:#06x}: {got} vs {want}"
        );
    }
}

#[test]
fn integers_compare_as_integers() {
    let e: Vec<u8> = [i64::MAX, -3, 0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let a: Vec<u8> = [i64::MAX - 1, -3, 2]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let r = run(Tolerance::elements(DType::I64), &e, &a);
    assert_eq!(r.mismatches, 2);
    assert_eq!(r.first[0].expected, Value::Int(i128::from(i64::MAX)));
    assert!(run(Tolerance::elements(DType::I64).atol(2.0), &e, &a).is_match());
    let u = run(Tolerance::elements(DType::U8), &[255, 0], &[0, 255]);
    assert_eq!(u.mismatches, 2);
    assert_eq!(u.max_abs, 255.0);
    let s = run(Tolerance::elements(DType::I8), &[0xff], &[0x01]);
    assert_eq!(s.first[0].expected, Value::Int(-1));
}

#[test]
fn ranges_and_offsets() {
    let e = f32s(&[1.0, 2.0, 3.0, 4.0]);
    let a = f32s(&[1.0, 2.5, 3.0, 9.0]);
    let mut c = Comparer::new(Tolerance::elements(DType::F32));
    c.range(1000);
    c.feed(&e[..8], &a[..8]);
    c.range(5000);
    c.feed(&e[8..], &a[8..]);
    let r = c.finish();
    assert_eq!(r.mismatches, 2);
    assert_eq!((r.first[0].offset, r.first[0].index), (1004, 1));
    assert_eq!((r.first[1].offset, r.first[1].index), (5004, 1));
    // A range that ends inside an element compares its last bytes exactly.
    let mut c = Comparer::new(Tolerance::elements(DType::F32));
    c.feed(&[0, 0, 128, 63, 7, 8], &[0, 0, 128, 63, 7, 9]);
    let r = c.finish();
    assert_eq!((r.elements, r.bytes, r.mismatches), (3, 6, 1));
    assert_eq!(r.first[0].offset, 5);
}

#[test]
fn only_the_first_mismatches_are_listed_all_are_counted() {
    let r = run(Tolerance::EXACT, &[0; 1000], &[1; 1000]);
    assert_eq!(r.mismatches, 1000);
    assert_eq!(r.first.len(), MAX_LISTED);
    assert_eq!(r.first[MAX_LISTED - 1].offset, MAX_LISTED as u64 - 1);
}

#[test]
fn dtype_names_round_trip() {
    for (t, name) in DTYPES {
        assert_eq!(name.parse::<DType>(), Ok(t));
        assert_eq!(std::format!("{t}"), name);
    }
    assert_eq!("f8".parse::<DType>(), Err(UnknownDType));
}

proptest::proptest! {
    /// However the bytes are cut into chunks, the result is the same.
    #[test]
    fn chunking_does_not_change_the_result(
        pairs in proptest::collection::vec((proptest::prelude::any::<u32>(), 0u32..4), 0..200),
        cuts in proptest::collection::vec(0usize..803, 0..8),
        dtype in 0usize..12,
    ) {
        let dtype = DTYPES[dtype].0;
        let e: Vec<u8> = pairs.iter().flat_map(|p| p.0.to_le_bytes()).collect();
        // Some elements changed in their low bits.
        let a: Vec<u8> = pairs.iter().flat_map(|p| (p.0 ^ p.1).to_le_bytes()).collect();
        let t = Tolerance::elements(dtype).rtol(1e-3).ulps(2);
        let whole = run(t, &e, &a);
        let mut c = Comparer::new(t);
        let mut cuts: Vec<usize> = cuts.into_iter().map(|x| x.min(e.len())).collect();
        cuts.sort_unstable();
        let mut at = 0;
        for cut in cuts.into_iter().chain([e.len()]) {
            c.feed(&e[at..cut], &a[at..cut]);
            at = cut;
        }
        let pieces = c.finish();
        // (Debug, since NaN values are unequal to themselves.)
        proptest::prop_assert_eq!(std::format!("{whole:?}"), std::format!("{pieces:?}"));
        proptest::prop_assert_eq!(whole.bytes, e.len() as u64);
    }
}
