//! The recording allocator under eight threads at once: no two allocations
//! overlap, every one lies inside the region and honours its alignment,
//! through the shared pointer and through per-thread chunks mixed.

use std::sync::Arc;

use reprise_core::region::BumpRegion;

const BASE: u64 = 0x7000_0000_0000;

/// Allocations of varied sizes and alignments, made by `threads` threads
/// at once; returns every (start, size, align) handed out.
fn hammer(region: &Arc<BumpRegion>, threads: u64, per_thread: u64) -> Vec<(u64, u64, u64)> {
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let region = region.clone();
            std::thread::spawn(move || {
                let mut local = region.local(4096);
                let mut got = Vec::new();
                let mut x = t.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                for i in 0..per_thread {
                    // xorshift: sizes 0..300 bytes, alignments 1..256.
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let size = x % 300;
                    let align = 1u64 << ((x >> 32) % 9);
                    // Half through the shared pointer, half through chunks.
                    let r = if i % 2 == 0 {
                        region.alloc(size, align)
                    } else {
                        local.alloc(size, align)
                    };
                    match r {
                        Ok(at) => got.push((at, size, align)),
                        Err(_) => break,
                    }
                }
                got
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|h| h.join().expect("an allocating thread"))
        .collect()
}

#[test]
fn eight_threads_never_get_overlapping_ranges() {
    let capacity = 64 << 20;
    let region = Arc::new(BumpRegion::new(BASE, capacity));
    let mut all = hammer(&region, 8, 20_000);
    assert_eq!(all.len(), 8 * 20_000, "the region had room for all");
    all.sort_unstable();
    for &(at, size, align) in &all {
        assert_eq!(at % align, 0, "{at:#x} is not {align}-aligned");
        assert!(at >= BASE && at + size <= BASE + capacity);
    }
    // A zero-size allocation owns no byte (its address may be the next
    // allocation's, as documented): only the others must not overlap.
    all.retain(|a| a.1 > 0);
    for w in all.windows(2) {
        let ((a, a_size, _), (b, _, _)) = (w[0], w[1]);
        assert!(a + a_size <= b, "{a:#x}+{a_size} overlaps {b:#x}");
    }
    // Everything handed out is inside the snapshot.
    let (last, size, _) = *all.last().unwrap();
    assert!(last + size <= BASE + region.used());
}

#[test]
fn eight_threads_running_out_share_the_last_bytes_without_overlap() {
    // A region too small for everyone: some allocations fail, and those
    // that succeed still never overlap or leave the region.
    let capacity = 1 << 20;
    let region = Arc::new(BumpRegion::new(BASE, capacity));
    let mut all = hammer(&region, 8, 20_000);
    assert!(all.len() < 8 * 20_000, "the region should have run out");
    all.sort_unstable();
    assert!(
        all.iter()
            .all(|&(at, size, _)| at + size <= BASE + capacity)
    );
    all.retain(|a| a.1 > 0);
    for w in all.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0, "{:?} overlaps {:?}", w[0], w[1]);
    }
    assert!(
        all.iter()
            .all(|&(at, size, _)| at + size <= BASE + capacity)
    );
    assert!(region.used() <= capacity);
}
