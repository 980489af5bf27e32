//! `--shard K/N`: a stable slice of a corpus. A capture belongs to shard
//! `xxh3(name) % N`, its name being its descriptor's path relative to the
//! directory it was found in, so the N shards cover every capture exactly
//! once, whatever order the captures were found in and wherever each
//! shard runs.

use std::fmt;
use std::str::FromStr;

/// Shard `index` of `count` (`index` from 0, as `SLURM_ARRAY_TASK_ID`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard's number, `0..count`.
    pub index: u64,
    /// How many shards there are.
    pub count: u64,
}

impl Shard {
    /// The whole corpus: shard 0 of 1.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Whether the capture named `name` is in this shard.
    pub fn holds(&self, name: &str) -> bool {
        of(name, self.count) == self.index
    }
}

/// The shard of `count` that the capture named `name` belongs to.
pub fn of(name: &str, count: u64) -> u64 {
    reprise::core::record::checksum(name.as_bytes()) % count.max(1)
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let form = "K/N, shard K of N with K from 0 to N-1 (as SLURM_ARRAY_TASK_ID): \
                    0/4 is the first of 4";
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not {form}"))?;
        let number = |t: &str, what: &str| {
            t.trim()
                .parse::<u64>()
                .map_err(|_| format!("{s:?}: {what} {t:?} is not a whole number; expected {form}"))
        };
        let (index, count) = (number(k, "K")?, number(n, "N")?);
        if count == 0 {
            return Err(format!(
                "{s:?}: N must be at least 1 (0/1 is the whole corpus)"
            ));
        }
        if index >= count {
            return Err(format!(
                "{s:?}: K must be below N: the {count} shard(s) are numbered 0 to {}",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
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
}
