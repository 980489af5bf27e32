use super::*;

#[test]
fn a_name_is_found_by_the_same_bytes_only() {
    let names = Names::default();
    let a = vec![7u8; 4096];
    let mut b = a.clone();
    b[4095] = 8;
    names.insert(Quick::of(&a), ChunkHash::of(&a));
    assert_eq!(names.get(&Quick::of(&a)), Some(ChunkHash::of(&a)));
    assert_eq!(names.get(&Quick::of(&b)), None);
    // A prefix of the same bytes is another chunk.
    assert_eq!(names.get(&Quick::of(&a[..4000])), None);
}

#[test]
fn the_index_is_bounded() {
    let names = Names::default();
    for i in 0..MAX_NAMES as u64 + 10 {
        let bytes = i.to_le_bytes();
        names.insert(Quick::of(&bytes), ChunkHash::of(&bytes));
    }
    assert!(names.len() <= MAX_NAMES, "{} names", names.len());
    assert!(names.len() >= 10);
}
