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
mod tests;
