//! The parsers for the variables' values: switches, counts, sizes, globs.

use crate::error::{Error, Result};

/// The configuration error of `var` set to `value`.
pub(crate) fn bad(var: &'static str, value: &str, problem: impl Into<String>) -> Error {
    Error::Config {
        var,
        value: value.to_string(),
        problem: problem.into(),
    }
}

pub(super) fn parse_bool(var: &'static str, v: &str) -> Result<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Ok(true),
        "0" | "false" | "off" | "no" | "" => Ok(false),
        _ => Err(bad(var, v, "expected 1/0, true/false, on/off or yes/no")),
    }
}

pub(super) fn parse_count(var: &'static str, v: &str) -> Result<u64> {
    v.trim()
        .parse::<u64>()
        .map_err(|_| bad(var, v, "expected a non-negative whole number"))
}

/// Parses a byte size: a whole number with an optional `K`, `M`, `G` or `T`
/// suffix (powers of 1024; `KiB`, `MB` and the like are accepted too).
pub fn parse_size(var: &'static str, v: &str) -> Result<u64> {
    let t = v.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let malformed = || {
        bad(
            var,
            v,
            "expected bytes with an optional K, M, G or T suffix",
        )
    };
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(malformed()),
    };
    let n: u64 = num.parse().map_err(|_| malformed())?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| bad(var, v, "size does not fit in 64 bits"))
}

/// Whether `name` matches the glob `pattern` (`*` any run, `?` one char).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests;
