use super::*;
use crate::tune::report::csv;
use reprise::tune::rows::key;

/// The configurations of `shard`, in the sweep's order.
fn slice(all: &[LaunchConfig], s: Shard) -> Vec<LaunchConfig> {
    all.iter().copied().filter(|c| s.holds(&key(c))).collect()
}

fn c(g: u32, b: u32) -> LaunchConfig {
    LaunchConfig {
        grid: [g, 1, 1],
        block: [b, 1, 1],
        shared_mem: 0,
    }
}

#[test]
fn the_slices_hold_every_configuration_once() {
    let recorded = c(128, 256);
    let mut lists = Vec::new();
    for g in [64, 128, 256, 512] {
        for b in [128, 256, 512, 1024] {
            lists.push(c(g, b));
        }
    }
    let all = full_list(&lists, recorded);
    assert_eq!(all.len(), 16);
    assert_eq!(all[0], recorded);
    for n in 1..=7 {
        let mut seen = Vec::new();
        for k in 0..n {
            seen.extend(slice(&all, Shard { index: k, count: n }));
        }
        seen.sort_by_key(key);
        let mut want = all.clone();
        want.sort_by_key(key);
        assert_eq!(seen, want, "{n} shards");
    }
    // Reordered lists: the same slices.
    let mut reversed = lists.clone();
    reversed.reverse();
    let again = full_list(&reversed, recorded);
    let s = Shard { index: 1, count: 3 };
    let mut x = slice(&all, s);
    let mut y = slice(&again, s);
    x.sort_by_key(key);
    y.sort_by_key(key);
    assert_eq!(x, y);
}

#[test]
fn rows_that_differ_in_compile_setting_key_apart_and_old_rows_read_as_before() {
    let old = r#"{"grid":[4,1,1],"block":[256,1,1],"shared_mem":0,"recorded":true,"status":"verified","detail":null,"times_ns":[5]}"#;
    let r: Row = serde_json::from_str(old).unwrap();
    assert_eq!(r.compile(), None);
    assert_eq!(r.key(), key(&r.config()));
    let mut jit = r.clone();
    jit.jit = Some("MAX_REGISTERS=32".into());
    let mut level = r.clone();
    level.opt_level = Some(2);
    assert_eq!(level.compile().as_deref(), Some("O2"));
    let keys: std::collections::HashSet<String> =
        [&r, &jit, &level].map(Row::key).into_iter().collect();
    assert_eq!(keys.len(), 3);
    let back: Row = serde_json::from_str(&serde_json::to_string(&level).unwrap()).unwrap();
    assert_eq!(back, level);
}

#[test]
fn the_ranking_is_by_median_then_differs_then_the_rest() {
    let row = |g, status: &str, t: &[u64]| Row {
        grid: [g, 1, 1],
        block: [1, 1, 1],
        shared_mem: 0,
        recorded: g == 2,
        status: status.into(),
        detail: None,
        times_ns: t.to_vec(),
        jit: None,
        registers: None,
        spills: None,
        opt_level: None,
    };
    let rows = vec![
        row(1, "refused", &[]),
        row(2, "verified", &[30, 10, 20]),
        row(3, "differs", &[1]),
        row(4, "verified", &[5, 5]),
    ];
    let order: Vec<LaunchConfig> = (1..=4).map(|g| c(g, 1)).collect();
    let r = ranking(&rows, &order);
    let grids: Vec<u32> = r.iter().map(|r| r.grid[0]).collect();
    assert_eq!(grids, [4, 2, 3, 1]);
    let text = csv(&r);
    assert!(text.lines().nth(1).unwrap().starts_with("1,4,"), "{text}");
    assert!(text.contains(",4.0000,"), "speed-up 20/5: {text}");
}
