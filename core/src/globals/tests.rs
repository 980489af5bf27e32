//! Exact bytes of both layouts, encoder refusals and every decode error.

use super::*;
extern crate std;
use std::vec::Vec;

fn enc(layout: Layout, g: &[(&str, &[u8])]) -> Vec<u8> {
    let n = encoded_len(layout, g.iter().copied()).unwrap();
    let mut v = std::vec![0u8; n];
    assert_eq!(encode_into(layout, g.iter().copied(), &mut v).unwrap(), n);
    v
}

#[test]
fn seed_layout_bytes_exactly() {
    let v = enc(Layout::Seed, &[("ab", &[9, 8])]);
    assert_eq!(v, [b'a', b'b', 0, 2, 0, 0, 0, 9, 8]);
}

#[test]
fn current_layout_bytes_exactly() {
    let v = enc(Layout::Current, &[("ab", &[9])]);
    assert_eq!(
        v,
        [
            1, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, b'a', b'b', 0, 9
        ]
    );
}

#[test]
fn empty_set_current_is_just_a_zero_count() {
    let v = enc(Layout::Current, &[("z", &[])]);
    assert_eq!(v, [0, 0, 0, 0]);
    assert_eq!(decode(Layout::Current, &v).unwrap().validate(), Ok(0));
    assert_eq!(decode(Layout::Seed, &[]).unwrap().validate(), Ok(0));
}

#[test]
fn encode_rejects_bad_names_and_small_buffers() {
    let mut buf = [0u8; 4];
    assert_eq!(
        encode_into(Layout::Seed, [("", &[1u8][..])], &mut buf),
        Err(EncodeError::EmptyName)
    );
    assert_eq!(
        encode_into(Layout::Seed, [("a\0b", &[1u8][..])], &mut buf),
        Err(EncodeError::NulInName)
    );
    assert_eq!(
        encode_into(Layout::Seed, [("abc", &[1u8][..])], &mut buf),
        Err(EncodeError::BufferTooSmall {
            needed: 9,
            available: 4
        })
    );
    // Nothing was written on failure.
    assert_eq!(buf, [0; 4]);
}

#[test]
fn seed_total_above_i32_max_is_rejected() {
    // A zeroed allocation is mapped lazily: 1 GiB costs no memory here.
    let big = std::vec![0u8; 1 << 30];
    let two = [("a", &big[..]), ("b", &big[..])];
    assert_eq!(
        encoded_len(Layout::Seed, two),
        Err(EncodeError::TooLarge {
            total: 2 * ((1 << 30) + 6)
        })
    );
    // The current layout has 64-bit sizes and no such limit.
    assert_eq!(
        encoded_len(Layout::Current, two),
        Ok(4 + 2 * (12 + 2 + (1 << 30)))
    );
}

#[test]
fn decode_errors() {
    use DecodeError::*;
    let first = |l, b: &[u8]| decode(l, b).and_then(|d| d.validate());
    assert_eq!(first(Layout::Seed, b"abc"), Err(MissingNul { offset: 0 }));
    assert_eq!(
        first(Layout::Seed, b"\0\x01\0\0\0x"),
        Err(EmptyName { offset: 0 })
    );
    assert_eq!(
        first(Layout::Seed, b"a\0\x01\0"),
        Err(Truncated {
            offset: 2,
            field: Field::Size
        })
    );
    assert_eq!(
        first(Layout::Seed, b"a\0\x05\0\0\0xy"),
        Err(SizeExceedsInput {
            offset: 2,
            size: 5,
            remaining: 2
        })
    );
    assert_eq!(
        first(Layout::Seed, b"\xff\xfe\0\x00\0\0\0"),
        Err(NonUtf8Name { offset: 0 })
    );
    assert_eq!(
        first(Layout::Current, &[1, 0]),
        Err(Truncated {
            offset: 0,
            field: Field::Count
        })
    );
    let good = enc(Layout::Current, &[("ab", &[9])]);
    let mut two = good.clone();
    two[0] = 2;
    assert_eq!(
        first(Layout::Current, &two),
        Err(CountMismatch {
            declared: 2,
            found: 1
        })
    );
    let mut trailing = good.clone();
    trailing.push(7);
    assert_eq!(
        first(Layout::Current, &trailing),
        Err(TrailingBytes {
            offset: good.len(),
            len: 1
        })
    );
    let mut no_nul = good.clone();
    no_nul[18] = b'c';
    assert_eq!(
        first(Layout::Current, &no_nul),
        Err(MissingNul { offset: 16 })
    );
    let mut empty = good.clone();
    empty[4] = 1;
    assert_eq!(first(Layout::Current, &empty), Err(EmptyName { offset: 4 }));
    let mut huge = good.clone();
    huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(
        first(Layout::Current, &huge),
        Err(SizeExceedsInput {
            offset: 8,
            size: u64::MAX,
            remaining: 1
        })
    );
    let mut long_name = good.clone();
    long_name[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(
        first(Layout::Current, &long_name),
        Err(Truncated {
            offset: 16,
            field: Field::Name
        })
    );
    assert_eq!(
        first(Layout::Current, &good[..10]),
        Err(Truncated {
            offset: 8,
            field: Field::Size
        })
    );
}

#[test]
fn iterator_fuses_after_error() {
    let mut d = decode(Layout::Seed, b"abc").unwrap();
    assert!(matches!(d.next(), Some(Err(_))));
    assert!(d.next().is_none());
}

#[test]
fn offsets_point_at_payloads() {
    let v = enc(Layout::Seed, &[("a", &[1, 2]), ("bb", &[3])]);
    let g: Vec<_> = decode(Layout::Seed, &v)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(&v[g[0].offset..g[0].offset + 2], &[1, 2]);
    assert_eq!(&v[g[1].offset..g[1].offset + 1], &[3]);
}
