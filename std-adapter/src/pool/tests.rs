use super::*;

#[test]
fn reuses_buffers_that_fit() {
    let pool = BufferPool::<Vec<u8>>::new(2);
    let mut made = 0;
    let mut make = |n| -> Result<Vec<u8>, ()> {
        made += 1;
        Ok(vec![0; n])
    };
    let a = pool.get(3 << 20, &mut make).unwrap();
    assert_eq!(a.len(), 3 << 20);
    pool.put(a);
    // Slightly larger: still fits the rounded buffer? No, 3 MiB + 1 needs 4 MiB.
    let b = pool.get((3 << 20) - 100, &mut make).unwrap();
    assert_eq!(b.len(), 3 << 20, "reused");
    pool.put(b);
    let c = pool.get(100, &mut make).unwrap();
    assert_eq!(c.len(), 4096, "a 3 MiB buffer is not wasted on 100 bytes");
    assert_eq!(made, 2);
    pool.put(c);
    pool.put(vec![0; 10]);
    assert_eq!(pool.idle(), 2, "keeps at most two, the larger ones");
}

#[test]
fn rounding() {
    assert_eq!(rounded_len(0), Some(4096));
    assert_eq!(rounded_len(5000), Some(8192));
    assert_eq!(rounded_len(GRANULE + 1), Some(2 * GRANULE));
}

#[test]
fn lengths_that_cannot_be_rounded_do_not_overflow() {
    assert_eq!(rounded_len(usize::MAX), None);
    assert_eq!(rounded_len(usize::MAX - GRANULE + 2), None);
    assert_eq!(
        rounded_len(usize::MAX - GRANULE + 1),
        Some(usize::MAX - GRANULE + 1)
    );
    let pool = BufferPool::<Vec<u8>>::new(1);
    let asked = pool.get(usize::MAX, Err::<Vec<u8>, _>).unwrap_err();
    assert_eq!(asked, usize::MAX, "make is asked for the length itself");
}
