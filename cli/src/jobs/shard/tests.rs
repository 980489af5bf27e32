use super::*;

#[test]
fn shards_parse_and_refuse_what_is_not_one() {
    assert_eq!("3/4".parse(), Ok(Shard { index: 3, count: 4 }));
    assert_eq!("0/1".parse(), Ok(Shard::ALL));
    for bad in ["x", "4/4", "1/0", "-1/2", "1/", "/2", "a/b", "1/2/3"] {
        assert!(bad.parse::<Shard>().is_err(), "{bad}");
    }
    assert!("4/4".parse::<Shard>().unwrap_err().contains("below N"));
    assert!("1/0".parse::<Shard>().unwrap_err().contains("at least 1"));
}

#[test]
fn every_name_is_in_exactly_one_shard() {
    let names: Vec<String> = (0..500).map(|i| format!("d{}/k{i}.json", i % 7)).collect();
    for count in 1..=9 {
        let mut sizes = vec![0usize; count as usize];
        for n in &names {
            let holders: Vec<u64> = (0..count)
                .filter(|&index| Shard { index, count }.holds(n))
                .collect();
            assert_eq!(holders.len(), 1, "{n} in shards {holders:?} of {count}");
            sizes[holders[0] as usize] += 1;
        }
        // Spread, not all in one.
        assert!(
            sizes.iter().all(|&s| s > 500 / count as usize / 3),
            "{sizes:?}"
        );
    }
}
