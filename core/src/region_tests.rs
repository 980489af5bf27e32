use super::*;

#[test]
fn rounds_to_sixteen_and_honours_larger_alignment() {
    let r = BumpRegion::new(0x10_0000, 1 << 20);
    assert_eq!(r.alloc(1, 1).unwrap(), 0x10_0000);
    assert_eq!(r.used(), 16);
    let b = r.alloc(17, 8).unwrap();
    assert_eq!(b, 0x10_0010);
    assert_eq!(r.used(), 48);
    let c = r.alloc(8, 4096).unwrap();
    assert_eq!(c, 0x10_1000);
    assert_eq!(r.used(), 0x1000 + 16);
}

#[test]
fn out_of_space_reports_request_and_room() {
    let r = BumpRegion::new(0, 64);
    r.alloc(48, 16).unwrap();
    let e = r.alloc(32, 16).unwrap_err();
    assert_eq!(
        e,
        AllocError::OutOfSpace {
            requested: 32,
            align: 16,
            available: 16
        }
    );
    // The failed allocation consumed nothing.
    assert_eq!(r.used(), 48);
    assert_eq!(r.alloc(16, 1).unwrap(), 48);
}

#[test]
fn zero_size_consumes_nothing() {
    let r = BumpRegion::new(0x1000, 64);
    assert_eq!(r.alloc(0, 1).unwrap(), 0x1000);
    assert_eq!(r.used(), 0);
    r.alloc(64, 1).unwrap();
    // Full region: zero-size still succeeds, pointing at the end.
    assert_eq!(r.alloc(0, 1).unwrap(), 0x1040);
    assert_eq!(r.used(), 64);
}

#[test]
fn bad_alignment_and_overflow_are_errors() {
    let r = BumpRegion::new(0, 1024);
    assert_eq!(
        r.alloc(1, 3).unwrap_err(),
        AllocError::BadAlignment { align: 3 }
    );
    assert!(matches!(
        r.alloc(u64::MAX, 1).unwrap_err(),
        AllocError::OutOfSpace { .. }
    ));
    let top = BumpRegion::new(u64::MAX - 32, 1 << 40);
    assert_eq!(top.capacity(), 32);
    assert!(top.alloc(1, 1 << 62).is_err());
}

#[test]
fn base_alignment_helper() {
    assert_eq!(align_recording_base(0), Some(0));
    assert_eq!(
        align_recording_base(0x7f00_0000_1234),
        Some(0x7f00_8000_0000)
    );
}

#[test]
fn set_used_and_contains() {
    let r = BumpRegion::new(0x1000, 256);
    r.set_used(32).unwrap();
    assert!(r.contains_used(0x1000));
    assert!(r.contains_used(0x101f));
    assert!(!r.contains_used(0x1020));
    assert!(r.set_used(257).is_err());
    assert_eq!(r.alloc(1, 1).unwrap(), 0x1020);
}

#[test]
fn local_chunks_allocate_privately_and_fall_back() {
    let r = BumpRegion::new(0x1000, 4096 + 256);
    let mut a = r.local(1024);
    let mut b = r.local(1024);
    let x = a.alloc(10, 1).unwrap();
    let y = b.alloc(10, 1).unwrap();
    assert_eq!((x, y), (0x1000, 0x1400), "each thread has its own chunk");
    assert_eq!(a.alloc(1, 256).unwrap(), 0x1100);
    assert_eq!(r.used(), 2048);
    // What fits the current chunk comes from it, whatever its size...
    assert_eq!(a.alloc(600, 16).unwrap(), 0x1110);
    // ...and what does not, if larger than half a chunk, comes from the
    // region itself without a new chunk.
    assert_eq!(a.alloc(700, 16).unwrap(), 0x1800);
    assert_eq!(r.used(), 2048 + 704);
    // Zero-size consumes nothing.
    let used = r.used();
    a.alloc(0, 1).unwrap();
    assert_eq!(r.used(), used);
    // Near the end, less than a chunk remains: allocations still succeed
    // from what is left, then fail with the region's error.
    let mut c = r.local(1024);
    assert!(c.alloc(16, 16).is_ok());
    assert_eq!(r.available(), 576);
    assert!(c.alloc(1000, 16).is_ok(), "the chunk's rest is usable");
    assert!(matches!(
        c.alloc(600, 16),
        Err(AllocError::OutOfSpace { available: 576, .. })
    ));
    // A new chunk no longer fits: a small allocation takes what is left.
    assert!(c.alloc(64, 16).is_ok());
    assert_eq!(r.available(), 512);
    assert_eq!(
        c.alloc(4, 3).unwrap_err(),
        AllocError::BadAlignment { align: 3 }
    );
}

#[test]
fn local_allocations_never_overlap_across_threads() {
    extern crate std;
    let r = BumpRegion::new(0, 1 << 24);
    let all = std::sync::Mutex::new(std::vec::Vec::new());
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (r, all) = (&r, &all);
            s.spawn(move || {
                let mut l = r.local(4096);
                let mut mine = std::vec::Vec::new();
                for i in 0..2000u64 {
                    let size = 1 + (i * 7 + t) % 100;
                    mine.push((l.alloc(size, 1 << (i % 6)).unwrap(), size));
                }
                all.lock().unwrap().extend(mine);
            });
        }
    });
    let mut v = all.into_inner().unwrap();
    v.sort();
    for w in v.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0, "overlap: {w:?}");
    }
    assert!(v.iter().all(|&(a, s)| a + s <= r.used()));
}

#[test]
fn a_freed_block_is_handed_out_again() {
    let r = BumpRegion::new(0x10_0000, 1 << 20);
    let a = r.alloc(100, 16).unwrap();
    let b = r.alloc(100, 16).unwrap();
    assert_eq!(r.used(), 224);
    r.free(a, 100).unwrap();
    assert_eq!(r.used(), 224, "a hole below the top stays in the prefix");
    assert_eq!(r.freed(), 112);
    // A smaller one takes the hole's start; the rest stays free.
    assert_eq!(r.alloc(40, 16).unwrap(), a);
    assert_eq!(r.freed(), 64);
    assert_eq!(r.alloc(64, 16).unwrap(), a + 48);
    assert_eq!(r.freed(), 0);
    assert_eq!(r.used(), 224, "nothing came from the bump pointer");
    // Larger than every hole: from the bump pointer.
    r.free(a, 40).unwrap();
    assert_eq!(r.alloc(64, 16).unwrap(), b + 112);
}

#[test]
fn reuse_honours_alignment_and_takes_the_smallest_block_that_fits() {
    let r = BumpRegion::new(0, 1 << 20);
    let big = r.alloc(4096, 16).unwrap();
    let _keep = r.alloc(16, 16).unwrap();
    let small = r.alloc(512, 16).unwrap();
    let _keep2 = r.alloc(16, 16).unwrap();
    r.free(big, 4096).unwrap();
    r.free(small, 512).unwrap();
    assert_eq!(r.alloc(300, 16).unwrap(), small, "best fit");
    // 256-aligned inside the big block: the head before it stays free.
    let x = r.alloc(100, 256).unwrap();
    assert_eq!(x % 256, 0);
    assert!(x >= big && x + 100 <= big + 4096);
    let before = r.used();
    let y = r.alloc(16, 16).unwrap();
    assert!(y < before, "the head or tail of the big block served it");
}

#[test]
fn freeing_the_top_shrinks_the_prefix_and_neighbours_merge() {
    let r = BumpRegion::new(0x1000, 1 << 16);
    let a = r.alloc(256, 16).unwrap();
    let b = r.alloc(256, 16).unwrap();
    let c = r.alloc(256, 16).unwrap();
    r.free(b, 256).unwrap();
    r.free(a, 256).unwrap();
    assert_eq!(r.freed(), 512, "a and b merged");
    assert_eq!(r.alloc(512, 16).unwrap(), a, "one block of both");
    r.free(a, 512).unwrap();
    r.free(c, 256).unwrap();
    assert_eq!(
        (r.used(), r.freed()),
        (0, 0),
        "c ended the prefix, then a+b did"
    );
    // An allocate/free loop stays where it began.
    for _ in 0..10_000 {
        let t = r.alloc(2 << 10, 256).unwrap();
        let u = r.alloc(100, 16).unwrap();
        r.free(t, 2 << 10).unwrap();
        r.free(u, 100).unwrap();
    }
    assert_eq!(r.used(), 0);
}

#[test]
fn frees_that_cannot_be_allocations_are_refused() {
    let r = BumpRegion::new(0x1000, 1 << 16);
    let a = r.alloc(64, 16).unwrap();
    let _b = r.alloc(64, 16).unwrap();
    let nope = |addr, size| AllocError::NotAllocated { addr, size };
    assert_eq!(r.free(0x10, 16), Err(nope(0x10, 16)), "below the base");
    assert_eq!(r.free(a + 8, 16), Err(nope(a + 8, 16)), "misaligned");
    assert_eq!(r.free(a, 4096), Err(nope(a, 4096)), "past the prefix");
    assert_eq!(r.free(a, u64::MAX), Err(nope(a, u64::MAX)));
    r.free(a, 64).unwrap();
    assert_eq!(r.free(a, 64), Err(nope(a, 64)), "freed twice");
    assert_eq!(
        r.free(a + 32, 16),
        Err(nope(a + 32, 16)),
        "inside a freed block"
    );
    assert_eq!(r.free(a, 0), Ok(()), "size 0 does nothing");
    assert_eq!(r.freed(), 64);
    extern crate std;
    use std::string::ToString;
    assert!(nope(a, 64).to_string().contains("not an allocation"));
}

#[test]
fn exhaustion_under_the_cap_and_room_made_by_freeing() {
    let r = BumpRegion::new(0, 1024);
    let a = r.alloc(512, 16).unwrap();
    let b = r.alloc(512, 16).unwrap();
    assert!(matches!(
        r.alloc(16, 16),
        Err(AllocError::OutOfSpace { available: 0, .. })
    ));
    r.free(a, 512).unwrap();
    assert!(
        matches!(r.alloc(600, 16), Err(AllocError::OutOfSpace { .. })),
        "the hole is too small and nothing is left at the end"
    );
    assert_eq!(r.alloc(500, 16).unwrap(), a);
    r.free(b, 512).unwrap();
    assert_eq!(r.available(), 512);
    assert_eq!(r.alloc(512, 16).unwrap(), b);
}

#[test]
fn a_full_free_list_forgets_the_smallest_block() {
    let r = BumpRegion::new(0, 1 << 20);
    // Holes of growing sizes with live blocks between them.
    let mut holes = [0u64; FREE_SLOTS + 1];
    for (i, h) in holes.iter_mut().enumerate() {
        *h = r.alloc(16 * (i as u64 + 1), 16).unwrap();
        r.alloc(16, 16).unwrap();
    }
    for (i, &h) in holes.iter().enumerate() {
        r.free(h, 16 * (i as u64 + 1)).unwrap();
    }
    let kept: u64 = (2..=FREE_SLOTS as u64 + 1).map(|n| 16 * n).sum();
    assert_eq!(r.freed(), kept, "the 16-byte hole was forgotten");
    assert_ne!(r.alloc(16, 16).unwrap(), holes[0]);
    r.set_used(0).unwrap();
    assert_eq!(r.freed(), 0, "a restored prefix has no freed blocks");
}

#[test]
fn threads_allocating_and_freeing_never_share_a_byte() {
    extern crate std;
    use std::vec::Vec;
    let r = BumpRegion::new(0, 1 << 24);
    let held = std::sync::Mutex::new(Vec::<(u64, u64)>::new());
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (r, held) = (&r, &held);
            s.spawn(move || {
                let mut mine = Vec::new();
                for i in 0..3000u64 {
                    let size = 16 + (i * 37 + t * 11) % 700;
                    let at = r.alloc(size, 1 << (i % 9)).unwrap();
                    mine.push((at, size));
                    if i % 3 != 0 {
                        let (a, n) = mine.swap_remove((i as usize * 7) % mine.len());
                        r.free(a, n).unwrap();
                    }
                }
                held.lock().unwrap().extend(mine);
            });
        }
    });
    let mut v = held.into_inner().unwrap();
    v.sort();
    for w in v.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0, "overlap: {w:?}");
    }
    let live: u64 = v.iter().map(|&(_, n)| n.div_ceil(16) * 16).sum();
    assert!(
        r.used() < live * 4,
        "freed memory was reused: {} used for {live} live",
        r.used()
    );
}
