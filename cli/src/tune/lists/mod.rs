//! The value lists of `reprise tune`: `a,b,c`, `a..b` (doubling from a to
//! b), `a..b:step`, and 3-D items `XxYxZ` for grids and blocks.

/// The most configurations one sweep may have.
pub const MAX_CONFIGS: usize = 4096;

/// A parsed grid or block list (one argument, many values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimList(pub Vec<[u32; 3]>);

/// A parsed list of sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueList(pub Vec<u32>);

/// [`dims`] for an argument.
pub fn dim_list(list: &str) -> Result<DimList, String> {
    dims(list).map(DimList)
}

/// [`values`] for an argument.
pub fn value_list(list: &str) -> Result<ValueList, String> {
    values(list).map(ValueList)
}

/// The values of the comma-separated `list`, each item trimmed and giving
/// its own through `item`; an empty item, or more than [`MAX_CONFIGS`]
/// values, is refused.
fn each<T>(list: &str, item: impl Fn(&str) -> Result<Vec<T>, String>) -> Result<Vec<T>, String> {
    let mut out = Vec::new();
    for i in list.split(',') {
        match i.trim() {
            "" => return Err(format!("{list:?}: an empty item")),
            i => out.extend(item(i)?),
        }
        if out.len() > MAX_CONFIGS {
            return Err(format!("{list:?}: more than {MAX_CONFIGS} values"));
        }
    }
    Ok(out)
}

/// The values of a 1-D list (`--shared-mem`): items are numbers (with
/// K/M suffixes) or ranges.
pub fn values(list: &str) -> Result<Vec<u32>, String> {
    each(list, |item| match item.split_once("..") {
        Some((a, b)) => range(item, a, b),
        None => Ok(vec![number(item)?]),
    })
}

/// The dimensions of a grid or block list (`--num-teams`,
/// `--num-threads`): each item a range of x (y = z = 1), or `X`, `XxY` or
/// `XxYxZ`.
pub fn dims(list: &str) -> Result<Vec<[u32; 3]>, String> {
    each(list, |item| {
        if let Some((a, b)) = item.split_once("..") {
            return Ok(range(item, a, b)?.into_iter().map(|x| [x, 1, 1]).collect());
        }
        let parts: Vec<&str> = item.split('x').collect();
        if parts.len() > 3 {
            return Err(format!("{item:?}: at most three dimensions (XxYxZ)"));
        }
        let mut d = [1u32; 3];
        for (i, p) in parts.iter().enumerate() {
            d[i] = number(p)?;
        }
        Ok(vec![d])
    })
}

/// `a..b` (a, 2a, 4a, ... up to b) or `a..b:step` (a, a + step, ...).
fn range(item: &str, a: &str, b: &str) -> Result<Vec<u32>, String> {
    let (b, step) = match b.split_once(':') {
        Some((b, s)) => (b, Some(number(s)?)),
        None => (b, None),
    };
    let (a, b) = (number(a)?, number(b)?);
    if a > b {
        return Err(format!("{item:?}: the range ends before it starts"));
    }
    let mut out = Vec::new();
    let mut v = u64::from(a);
    while v <= u64::from(b) {
        out.push(v as u32);
        if out.len() > MAX_CONFIGS {
            return Err(format!("{item:?}: more than {MAX_CONFIGS} values"));
        }
        v = match step {
            Some(s) => v + u64::from(s),
            None => v * 2,
        };
    }
    Ok(out)
}

/// A count of at least 1: decimal, with K (1024) or M suffixes.
fn number(s: &str) -> Result<u32, String> {
    let s = s.trim();
    let (digits, scale) = match s.char_indices().last() {
        Some((i, 'K' | 'k')) => (&s[..i], 1024u64),
        Some((i, 'M' | 'm')) => (&s[..i], 1024 * 1024),
        _ => (s, 1),
    };
    let v: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a number"))?;
    let v = v
        .checked_mul(scale)
        .filter(|&v| v <= u64::from(u32::MAX))
        .ok_or_else(|| format!("{s}: too large"))?;
    if v == 0 {
        return Err(format!("{s}: must be at least 1"));
    }
    Ok(v as u32)
}

#[cfg(test)]
mod tests;
