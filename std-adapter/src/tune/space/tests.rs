use super::*;

fn cfg(g: u32, b: u32, s: u32) -> LaunchConfig {
    LaunchConfig {
        grid: [g, 1, 1],
        block: [b, 1, 1],
        shared_mem: s,
    }
}

#[test]
fn the_product_is_read_in_mixed_radix_last_dimension_fastest() {
    let s = Space {
        dims: vec![
            Dimension::new("a", [1, 2, 3].map(|g| Setting::Grid([g, 1, 1]))),
            Dimension::new("b", [10, 20, 10].map(|b| Setting::Block([b, 1, 1]))),
            Dimension::new("c", [0, 5].map(Setting::SharedMem)),
        ],
    };
    // The repeated block is one value.
    assert_eq!(s.size(), 3 * 2 * 2);
    let base = cfg(9, 9, 9);
    assert_eq!(s.point(0, base).config, cfg(1, 10, 0));
    assert_eq!(s.point(1, base).config, cfg(1, 10, 5));
    assert_eq!(s.point(2, base).config, cfg(1, 20, 0));
    assert_eq!(s.point(11, base).config, cfg(3, 20, 5));
    let all: HashSet<String> = (0..s.size())
        .map(|i| crate::tune::rows::key(&s.point(i, base).config))
        .collect();
    assert_eq!(all.len(), 12);
    assert_eq!(s.shape(), "3 (a) x 2 (b) x 2 (c)");
}

#[test]
fn random_draws_are_distinct_seeded_and_capped() {
    for size in [1u64, 7, 100, 1 << 40] {
        for n in [1u64, 3, 50] {
            let a = draw(size, n, Sampler::Random(7));
            assert_eq!(a, draw(size, n, Sampler::Random(7)), "same seed");
            assert_eq!(a.len() as u64, n.min(size));
            let set: HashSet<u64> = a.iter().copied().collect();
            assert_eq!(set.len(), a.len(), "distinct");
            assert!(a.iter().all(|&i| i < size));
        }
    }
    assert_ne!(
        draw(1000, 20, Sampler::Random(1)),
        draw(1000, 20, Sampler::Random(2))
    );
    assert_eq!(draw(5, 9, Sampler::Grid), [0, 1, 2, 3, 4]);
}
