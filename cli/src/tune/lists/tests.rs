use super::*;

#[test]
fn lists_ranges_and_dimensions() {
    assert_eq!(values("1,2,5").unwrap(), [1, 2, 5]);
    assert_eq!(values("32..256").unwrap(), [32, 64, 128, 256]);
    assert_eq!(values("32..300").unwrap(), [32, 64, 128, 256]);
    assert_eq!(values("48..200").unwrap(), [48, 96, 192]);
    assert_eq!(values("64..256:64").unwrap(), [64, 128, 192, 256]);
    assert_eq!(values("1K,2k..4K").unwrap(), [1024, 2048, 4096]);
    assert_eq!(values("7..7").unwrap(), [7]);
    assert_eq!(
        dims("128,32x4,8x8x2,64..128").unwrap(),
        [[128, 1, 1], [32, 4, 1], [8, 8, 2], [64, 1, 1], [128, 1, 1]]
    );
}

#[test]
fn bad_lists_say_what_is_wrong() {
    for (list, want) in [
        ("", "an empty item"),
        ("1,,2", "an empty item"),
        ("0", "must be at least 1"),
        ("64..32", "ends before it starts"),
        ("a", "is not a number"),
        ("1..8:0", "must be at least 1"),
        ("5000000M", "too large"),
        ("1..100000:1", "more than 4096"),
    ] {
        let e = values(list).unwrap_err();
        assert!(e.contains(want), "{list}: {e}");
    }
    assert!(dims("1x2x3x4").unwrap_err().contains("at most three"));
    assert!(dims("4x0").unwrap_err().contains("at least 1"));
    // A range of doublings ends; so does the largest u32 range.
    assert_eq!(values("1..4294967295").unwrap().len(), 32);
}
