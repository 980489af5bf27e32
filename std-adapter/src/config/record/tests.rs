use super::*;

#[test]
fn selection_skips_then_caps() {
    let c = RecordConfig::default().enabled(true).skip(1).max(2);
    let picks: Vec<bool> = (0..5)
        .scan(0, |rec, i| {
            let s = c.selects(i, *rec);
            *rec += s as u64;
            Some(s)
        })
        .collect();
    assert_eq!(picks, [false, true, true, false, false]);
}

#[test]
fn a_chosen_region_size_caps_and_the_default_follows_the_device() {
    let c = RecordConfig::default();
    assert!(!c.region_size_chosen());
    assert_eq!(c.region_capacity(Some(24 << 30)), 24 << 30);
    assert_eq!(c.region_capacity(Some(0)), DEFAULT_REGION_SIZE);
    assert_eq!(c.region_capacity(None), DEFAULT_REGION_SIZE);
    // Chosen, also when it equals the default.
    let one = c.clone().region_size(DEFAULT_REGION_SIZE);
    assert!(one.region_size_chosen());
    assert_eq!(one.region_capacity(Some(80 << 30)), 1 << 30);
    assert_ne!(one, c);
    let set = RecordConfig {
        region_size: 64 << 20,
        ..RecordConfig::default()
    };
    assert_eq!(set.region_capacity(Some(80 << 30)), 64 << 20);
}
