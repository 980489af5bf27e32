use super::*;

#[test]
fn a_reservation_past_the_budget_stops_recording_for_good() {
    let dir = tempfile::tempdir().unwrap();
    let b = DiskBudget::new(dir.path(), Some(1000));
    assert!(b.reserve(600));
    assert!(!b.reserve(600), "600 + 600 could pass 1000");
    let why = b.stopped().unwrap().to_string();
    assert!(
        why.contains("disk budget") && why.contains("--max-disk"),
        "{why}"
    );
    // Stopped is stopped: even a capture that fits now is refused.
    b.settle(600, 100);
    assert_eq!(b.used(), 100);
    assert!(!b.reserve(10));
    assert_eq!(b.stopped(), Some(why.as_str()));
}

#[test]
fn written_bytes_count_against_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let b = DiskBudget::new(dir.path(), Some(1000));
    for _ in 0..3 {
        assert!(b.reserve(300));
        b.settle(300, 300);
    }
    assert_eq!(b.used(), 900);
    assert!(!b.reserve(200));
    assert!(b.stopped().is_some());
}

#[test]
fn the_free_space_kept_stops_recording() {
    let dir = tempfile::tempdir().unwrap();
    let b = DiskBudget::new(dir.path(), None);
    let Some((free, floor)) = free_space(dir.path()) else {
        eprintln!("skipped: the temporary directory's file system does not report its size");
        return;
    };
    assert!(floor > 0);
    assert!(b.reserve(1), "a byte fits ({free} free)");
    assert!(
        !b.reserve(free),
        "a capture as large as the free space does not"
    );
    assert!(
        b.stopped().unwrap().contains("5% of its size"),
        "{:?}",
        b.stopped()
    );
}

#[test]
fn a_refused_try_stops_nothing_and_reserves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let b = DiskBudget::new(dir.path(), Some(1000));
    assert!(b.try_reserve(800).is_ok());
    assert!(b.try_reserve(800).is_err());
    assert_eq!(b.pending(), 800);
    assert!(b.stopped().is_none());
    // The pending capture turns out small: the next one fits.
    b.settle(800, 50);
    assert!(b.try_reserve(800).is_ok());
}

#[test]
fn estimates_cover_the_files_and_more() {
    assert!(estimate(1 << 20, 1 << 20, 100, 5000) > (2 << 20) + 5100);
    assert_eq!(estimate(u64::MAX, 1, 0, 0), u64::MAX);
}

#[test]
fn the_free_space_kept_is_a_share_up_to_a_cap() {
    assert_eq!(kept_free(16 << 20), (16 << 20) / 100 * MIN_FREE_PERCENT);
    assert_eq!(kept_free(40 << 30), (40 << 30) / 100 * MIN_FREE_PERCENT);
    assert_eq!(kept_free(252 << 30), MAX_FREE_KEPT);
    assert_eq!(kept_free(20 << 50), MAX_FREE_KEPT);
    assert_eq!(kept_free(0), 0);
}
