//! Comparing a replay's output with the recorded one: byte for byte (the
//! default), or element by element within a tolerance.
//!
//! Outputs are large and arrive in chunks, so a [`Comparer`] is fed pairs
//! of equally long chunks (recorded, replayed) and keeps what it needs: an
//! element split across two chunks is put together. Ranges of the region
//! are compared one after another ([`Comparer::range`]).
//!
//! Element rules, for a [`Tolerance`] with a [`DType`]:
//! - NaN equals NaN only with [`Tolerance::nan_equal`] (even two NaNs of
//!   the same bits); a NaN never equals a number;
//! - infinities must match exactly (sign included);
//! - signed zeros are equal;
//! - otherwise two values match when they are equal, or when
//!   `|actual - expected| <= atol + rtol * |expected|`, or when they are at
//!   most [`Tolerance::ulps`] representable values apart.
//!
//! ```
//! use reprise_core::compare::{Comparer, DType, Tolerance};
//! let expected: Vec<u8> = [1.0f32, 2.0, 3.0].iter().flat_map(|v| v.to_le_bytes()).collect();
//! let actual: Vec<u8> = [1.0f32, 2.000001, 3.5].iter().flat_map(|v| v.to_le_bytes()).collect();
//! let mut c = Comparer::new(Tolerance::elements(DType::F32).rtol(1e-5));
//! c.feed(&expected, &actual);
//! let report = c.finish();
//! assert_eq!((report.elements, report.mismatches), (3, 1));
//! assert_eq!(report.first[0].offset, 8); // the third element
//! assert_eq!(report.max_abs, 0.5);
//! ```

mod value;

#[cfg(test)]
mod tests;

pub use value::{DTYPES, DType, UnknownDType, Value, f16_to_f64};

/// How many mismatches a [`Comparison`] lists (the rest are counted).
pub const MAX_LISTED: usize = 32;

/// What counts as equal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// The element type; `None` compares bytes exactly (and ignores the
    /// other fields).
    pub dtype: Option<DType>,
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Representable values two elements may lie apart (integers: their
    /// difference).
    pub ulps: Option<u64>,
    /// Whether a NaN equals a NaN.
    pub nan_equal: bool,
}

impl Tolerance {
    /// Byte for byte.
    pub const EXACT: Tolerance = Tolerance {
        dtype: None,
        rtol: 0.0,
        atol: 0.0,
        ulps: None,
        nan_equal: false,
    };

    /// Elements of `dtype`, equal in value (no tolerance yet).
    pub const fn elements(dtype: DType) -> Self {
        Tolerance {
            dtype: Some(dtype),
            ..Tolerance::EXACT
        }
    }

    /// With relative tolerance `rtol`.
    pub const fn rtol(self, rtol: f64) -> Self {
        Tolerance { rtol, ..self }
    }

    /// With absolute tolerance `atol`.
    pub const fn atol(self, atol: f64) -> Self {
        Tolerance { atol, ..self }
    }

    /// With a distance of at most `ulps` representable values.
    pub const fn ulps(self, ulps: u64) -> Self {
        Tolerance {
            ulps: Some(ulps),
            ..self
        }
    }

    /// With NaN equal to NaN.
    pub const fn nan_equal(self, nan_equal: bool) -> Self {
        Tolerance { nan_equal, ..self }
    }

    /// Whether this is byte for byte.
    pub const fn is_exact(&self) -> bool {
        self.dtype.is_none()
    }

    /// Bytes per compared element (1 for bytes).
    pub const fn element_size(&self) -> usize {
        match self.dtype {
            Some(t) => t.size(),
            None => 1,
        }
    }
}

/// One element that did not match.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mismatch {
    /// Byte offset of the element, as the ranges' offsets count (from the
    /// region base, for a replay).
    pub offset: u64,
    /// Its index among the elements of its range.
    pub index: u64,
    /// The recorded value.
    pub expected: Value,
    /// The replayed value.
    pub actual: Value,
}

/// What a comparison found.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The element type (`None`: bytes).
    pub dtype: Option<DType>,
    /// Elements compared (bytes, byte for byte).
    pub elements: u64,
    /// Bytes compared.
    pub bytes: u64,
    /// Elements that did not match.
    pub mismatches: u64,
    /// The largest absolute difference between finite values.
    pub max_abs: f64,
    /// The largest relative difference, `|actual - expected| / |expected|`,
    /// between finite values (infinite where a 0 became something else).
    pub max_rel: f64,
    /// The first mismatches, at most [`MAX_LISTED`].
    pub first: heapless::Vec<Mismatch, MAX_LISTED>,
}

impl Comparison {
    /// Whether everything compared matched.
    pub fn is_match(&self) -> bool {
        self.mismatches == 0
    }
}

/// A comparison under way: fed chunk by chunk, range by range.
#[derive(Debug, Clone)]
pub struct Comparer {
    tolerance: Tolerance,
    report: Comparison,
    /// Where the next byte fed is.
    offset: u64,
    /// Where the current range started.
    range_start: u64,
    /// Part of an element fed so far: recorded and replayed bytes.
    carry: ([u8; 8], [u8; 8], usize),
}

impl Comparer {
    /// A comparison under `tolerance`, starting at offset 0.
    pub fn new(tolerance: Tolerance) -> Self {
        Comparer {
            tolerance,
            report: Comparison {
                dtype: tolerance.dtype,
                elements: 0,
                bytes: 0,
                mismatches: 0,
                max_abs: 0.0,
                max_rel: 0.0,
                first: heapless::Vec::new(),
            },
            offset: 0,
            range_start: 0,
            carry: ([0; 8], [0; 8], 0),
        }
    }

    /// Starts a range at `offset`: what the previous one left of a partial
    /// element is compared byte for byte first.
    pub fn range(&mut self, offset: u64) {
        self.flush();
        self.offset = offset;
        self.range_start = offset;
    }

    /// Compares `actual` with `expected`, the next bytes of the range
    /// (equally long; the shorter one's length counts if they are not).
    pub fn feed(&mut self, expected: &[u8], actual: &[u8]) {
        let n = expected.len().min(actual.len());
        let (expected, actual) = (&expected[..n], &actual[..n]);
        self.report.bytes += n as u64;
        if self.tolerance.is_exact() {
            self.exact(expected, actual);
            return;
        }
        let size = self.tolerance.element_size();
        let mut at = 0;
        // Finish an element the previous chunk began.
        let (mut e, mut a, mut have) = self.carry;
        if have > 0 {
            let take = (size - have).min(n);
            e[have..have + take].copy_from_slice(&expected[..take]);
            a[have..have + take].copy_from_slice(&actual[..take]);
            have += take;
            at = take;
            if have == size {
                let offset = self.offset - (size - take) as u64;
                self.element(offset, &e[..size], &a[..size]);
                have = 0;
            }
            self.carry = (e, a, have);
            self.offset += take as u64;
            if have > 0 {
                return;
            }
        }
        let whole = (n - at) / size * size;
        // Equal bytes are equal values, except NaNs (unequal unless
        // `nan_equal`, whatever their bits).
        let float = self.tolerance.dtype.is_some_and(DType::is_float);
        for (ec, ac) in expected[at..at + whole]
            .chunks_exact(size)
            .zip(actual[at..at + whole].chunks_exact(size))
        {
            if ec != ac || (float && !self.tolerance.nan_equal) {
                self.element(self.offset, ec, ac);
            } else {
                self.report.elements += 1;
            }
            self.offset += size as u64;
        }
        at += whole;
        let rest = n - at;
        if rest > 0 {
            e[..rest].copy_from_slice(&expected[at..]);
            a[..rest].copy_from_slice(&actual[at..]);
            self.carry = (e, a, rest);
            self.offset += rest as u64;
        }
    }

    /// The comparison's result (a partial element left over is compared
    /// byte for byte).
    pub fn finish(mut self) -> Comparison {
        self.flush();
        self.report
    }

    fn flush(&mut self) {
        let (e, a, have) = self.carry;
        if have > 0 {
            self.carry.2 = 0;
            let at = self.offset;
            self.offset -= have as u64;
            self.exact(&e[..have], &a[..have]);
            self.offset = at;
        }
    }

    fn exact(&mut self, expected: &[u8], actual: &[u8]) {
        self.report.elements += expected.len() as u64;
        if expected == actual {
            self.offset += expected.len() as u64;
            return;
        }
        for (i, (e, a)) in expected.iter().zip(actual).enumerate() {
            if e != a {
                let offset = self.offset + i as u64;
                self.mismatch(
                    offset,
                    offset - self.range_start,
                    Value::Int(i128::from(*e)),
                    Value::Int(i128::from(*a)),
                );
            }
        }
        self.offset += expected.len() as u64;
    }

    /// One element of the tolerance's type whose bytes differ.
    fn element(&mut self, offset: u64, e: &[u8], a: &[u8]) {
        self.report.elements += 1;
        let Some(dtype) = self.tolerance.dtype else {
            return;
        };
        let (ev, av) = (dtype.value(e), dtype.value(a));
        if !self.matches(dtype, ev, av, e, a) {
            let size = dtype.size() as u64;
            self.mismatch(offset, (offset - self.range_start) / size, ev, av);
        }
    }

    fn matches(&mut self, dtype: DType, ev: Value, av: Value, e: &[u8], a: &[u8]) -> bool {
        let t = self.tolerance;
        let (x, y) = (ev.as_f64(), av.as_f64());
        if x.is_nan() || y.is_nan() {
            return x.is_nan() && y.is_nan() && t.nan_equal;
        }
        if x.is_infinite() || y.is_infinite() {
            return x == y;
        }
        let diff = match (ev, av) {
            (Value::Int(p), Value::Int(q)) => p.abs_diff(q) as f64,
            _ => (y - x).abs(),
        };
        let rel = if diff == 0.0 {
            0.0
        } else if x == 0.0 {
            f64::INFINITY
        } else {
            diff / x.abs()
        };
        self.report.max_abs = self.report.max_abs.max(diff);
        self.report.max_rel = self.report.max_rel.max(rel);
        diff == 0.0
            || diff <= t.atol + t.rtol * x.abs()
            || t.ulps
                .is_some_and(|u| dtype.ulps(e, a).is_some_and(|d| d <= u))
    }

    fn mismatch(&mut self, offset: u64, index: u64, expected: Value, actual: Value) {
        self.report.mismatches += 1;
        let _ = self.report.first.push(Mismatch {
            offset,
            index,
            expected,
            actual,
        });
    }
}
