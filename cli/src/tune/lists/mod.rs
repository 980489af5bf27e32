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

/// The items of a comma-separated list, trimmed; an empty one is refused.
fn items(list: &str) -> impl Iterator<Item = Result<&str, String>> {
    list.split(',').map(move |item| match item.trim() {
        "" => Err(format!("{list:?}: an empty item")),
        item => Ok(item),
    })
}

/// The values of a 1-D list (`--shared-mem`): items are numbers (with
/// K/M suffixes) or ranges.
pub fn values(list: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for item in items(list) {
        let item = item?;
        if let Some((a, b)) = item.split_once("..") {
            out.extend(range(item, a, b)?);
        } else {
            out.push(number(item)?);
        }
        if out.len() > MAX_CONFIGS {
            return Err(format!("{list:?}: more than {MAX_CONFIGS} values"));
        }
    }
    Ok(out)
}

/// The dimensions of a grid or block list (`--num-teams`,
/// `--num-threads`): each item a range of x (y = z = 1), or `X`, `XxY` or
/// `XxYxZ`.
pub fn dims(list: &str) -> Result<Vec<[u32; 3]>, String> {
    let mut out = Vec::new();
    for item in items(list) {
        let item = item?;
        if let Some((a, b)) = item.split_once("..") {
            out.extend(range(item, a, b)?.into_iter().map(|x| [x, 1, 1]));
        } else {
            let parts: Vec<&str> = item.split('x').collect();
            if parts.len() > 3 {
                return Err(format!("{item:?}: at most three dimensions (XxYxZ)"));
            }
            let mut d = [1u32; 3];
            for (i, p) in parts.iter().enumerate() {
                d[i] = number(p)?;
            }
            out.push(d);
        }
        if out.len() > MAX_CONFIGS {
            return Err(format!("{list:?}: more than {MAX_CONFIGS} values"));
        }
    }
    Ok(out)
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
