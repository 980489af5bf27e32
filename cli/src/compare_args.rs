//! The comparison options `replay --verify`, `tune` and `diff` share, and
//! how a comparison's result is shown.

use clap::Args;
use reprise::compare::{Comparison, DType, MAX_LISTED, Tolerance, Value};
use reprise::{CompareSpec, OutputRange};

use crate::ui::human_bytes;

/// How outputs are compared: byte for byte unless `--dtype` says what the
/// bytes hold.
#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Compare elements of this type instead of bytes: f16, bf16, f32, f64,
    /// i8, i16, i32, i64, u8, u16, u32 or u64 (little-endian). Without a
    /// tolerance, elements must be equal in value (signed zeros are;
    /// NaNs are not, unless --nan-equal).
    #[arg(long, value_name = "TYPE", help_heading = "Comparison")]
    pub dtype: Option<DType>,
    /// Relative tolerance: equal when |replayed - recorded| <= atol + rtol
    /// * |recorded| (needs --dtype).
    #[arg(long, value_name = "X", requires = "dtype", value_parser = tolerance, help_heading = "Comparison")]
    pub rtol: Option<f64>,
    /// Absolute tolerance (needs --dtype).
    #[arg(long, value_name = "X", requires = "dtype", value_parser = tolerance, help_heading = "Comparison")]
    pub atol: Option<f64>,
    /// Equal when at most N representable values apart (integers: when
    /// they differ by at most N; needs --dtype).
    #[arg(
        long,
        value_name = "N",
        requires = "dtype",
        help_heading = "Comparison"
    )]
    pub ulps: Option<u64>,
    /// A NaN equals a NaN (needs --dtype). Infinities must always match
    /// exactly.
    #[arg(long, requires = "dtype", help_heading = "Comparison")]
    pub nan_equal: bool,
    /// Compare only LEN bytes from OFFSET, offsets from the region base
    /// (decimal, or hexadecimal with 0x); may be repeated.
    #[arg(long, value_name = "OFFSET:LEN", value_parser = byte_range, help_heading = "Comparison")]
    pub range: Vec<(u64, u64)>,
    /// Compare only the allocation argument N points into, as the
    /// recorder made it (a capture that records no allocations, LLVM's:
    /// from the argument to the next buffer another argument points to, or
    /// to the end of the snapshot); may be repeated. The output says which
    /// bytes each compared.
    #[arg(long, value_name = "N", help_heading = "Comparison")]
    pub arg: Vec<usize>,
    // The help's 32 is MAX_LISTED (tests/first_use.rs checks the two agree).
    /// How many differences to list, 0 to 32 (the most the comparison
    /// keeps).
    #[arg(long, value_name = "K", default_value_t = 10, value_parser = clap::value_parser!(u16).range(0..=MAX_LISTED as i64), help_heading = "Comparison")]
    pub mismatches: u16,
}

impl CompareArgs {
    /// These options as a command line gives them, for a child that
    /// compares as this command does.
    pub fn as_flags(&self) -> Vec<String> {
        let mut f = Vec::new();
        if let Some(d) = self.dtype {
            f.push(format!("--dtype={d}"));
        }
        for (name, v) in [("rtol", self.rtol), ("atol", self.atol)] {
            if let Some(v) = v {
                f.push(format!("--{name}={v}"));
            }
        }
        if let Some(u) = self.ulps {
            f.push(format!("--ulps={u}"));
        }
        if self.nan_equal {
            f.push("--nan-equal".into());
        }
        f.extend(
            self.range
                .iter()
                .map(|(o, l)| format!("--range={o:#x}:{l}")),
        );
        f.extend(self.arg.iter().map(|n| format!("--arg={n}")));
        f.push(format!("--mismatches={}", self.mismatches));
        f
    }

    /// Whether any comparison option was given (they ask for a comparison).
    pub fn given(&self) -> bool {
        self.dtype.is_some() || !self.range.is_empty() || !self.arg.is_empty()
    }

    /// What counts as equal.
    pub fn tolerance(&self) -> Tolerance {
        match self.dtype {
            None => Tolerance::EXACT,
            Some(t) => Tolerance {
                dtype: Some(t),
                rtol: self.rtol.unwrap_or(0.0),
                atol: self.atol.unwrap_or(0.0),
                ulps: self.ulps,
                nan_equal: self.nan_equal,
            },
        }
    }

    /// The library's comparison these give.
    pub fn spec(&self) -> CompareSpec {
        let ranges = self
            .range
            .iter()
            .map(|&(offset, len)| OutputRange::Bytes { offset, len })
            .chain(self.arg.iter().map(|&i| OutputRange::Arg(i)))
            .collect();
        CompareSpec {
            tolerance: self.tolerance(),
            ranges,
        }
    }

    /// One line per `--arg`, saying which bytes it compares of the
    /// capture `record` (its region at `base`, a snapshot of `len` bytes)
    /// and what bounded them: `--arg 2: 0x7f0000009d00..0x7f0000013940
    /// (40000 bytes at offset 0x9d00): its allocation, as recorded`. None
    /// when no `--arg` was given, or it does not resolve (which the
    /// comparison reports).
    pub fn arg_lines(
        &self,
        record: &reprise::core::record::KernelRecord,
        base: u64,
        len: u64,
    ) -> Vec<String> {
        if self.arg.is_empty() {
            return Vec::new();
        }
        let spans =
            reprise::replayer::arg_spans(&self.spec(), record, base, len).unwrap_or_default();
        spans
            .iter()
            .map(|s| {
                format!(
                    "--arg {}: {:#x}..{:#x} ({} bytes at offset {:#x}): {}",
                    s.index,
                    base + s.offset,
                    base + s.offset + s.len,
                    s.len,
                    s.offset,
                    s.bound
                )
            })
            .collect()
    }

    /// The lines that say what `c` found: a summary (`PASS`/`FAIL` after
    /// `what`), then the first differences, with their addresses when the
    /// region's `base` is known, the expected side called "recorded" and
    /// the other "replayed".
    pub fn report(
        &self,
        what: &str,
        c: &Comparison,
        ranges: &[(u64, u64)],
        base: Option<u64>,
    ) -> Vec<String> {
        self.report_sides(what, c, ranges, base, ["recorded", "replayed"])
    }

    /// [`CompareArgs::report`], naming the two sides `sides`.
    pub fn report_sides(
        &self,
        what: &str,
        c: &Comparison,
        ranges: &[(u64, u64)],
        base: Option<u64>,
        [expected, actual]: [&str; 2],
    ) -> Vec<String> {
        let at = |offset: u64| match base {
            Some(b) => format!("offset {offset:#x} (address {:#x})", b + offset),
            None => format!("offset {offset:#x}"),
        };
        let t = self.tolerance();
        let compared = human_bytes(c.bytes);
        let over = if self.range.is_empty() && self.arg.is_empty() {
            String::new()
        } else {
            format!(
                " over {} range{}",
                ranges.len(),
                if ranges.len() == 1 { "" } else { "s" }
            )
        };
        let mut lines = Vec::new();
        match t.dtype {
            None if c.is_match() => lines.push(format!(
                "{what}: PASS ({compared} compared{over}, all equal)"
            )),
            None => {
                let first = c.first.first().map_or(0, |m| m.offset);
                lines.push(format!(
                    "{what}: FAIL: {} of {} bytes differ{over}; first difference at {}",
                    c.mismatches,
                    c.bytes,
                    at(first)
                ));
            }
            Some(dtype) => {
                let tol = tolerance_text(&t);
                let (within, beyond) = match &tol {
                    Some(x) => (format!("within {x}"), format!("beyond {x}")),
                    None => ("in value".to_string(), "in value".to_string()),
                };
                let largest = format!(
                    "largest difference {} absolute, {} relative",
                    number(c.max_abs),
                    number(c.max_rel)
                );
                if c.is_match() {
                    lines.push(format!(
                        "{what}: PASS ({} {dtype} elements in {compared}{over} equal {within}; \
                         {largest})",
                        c.elements
                    ));
                } else {
                    lines.push(format!(
                        "{what}: FAIL: {} of {} {dtype} elements{over} differ {beyond}; {largest}",
                        c.mismatches, c.elements
                    ));
                }
            }
        }
        let shown = usize::from(self.mismatches).min(c.first.len());
        for m in &c.first[..shown] {
            let at = at(m.offset);
            lines.push(match t.dtype {
                None => format!(
                    "  {at}: {expected} {:#04x}, {actual} {:#04x}",
                    m.expected.as_f64() as u8,
                    m.actual.as_f64() as u8
                ),
                Some(dtype) => format!(
                    "  [{}] {at}: {expected} {}, {actual} {}",
                    m.index,
                    value_text(m.expected, dtype),
                    value_text(m.actual, dtype)
                ),
            });
        }
        if c.mismatches > shown as u64 && shown > 0 {
            lines.push(format!(
                "  ... {} more (--mismatches K lists up to {MAX_LISTED})",
                c.mismatches - shown as u64
            ));
        }
        lines
    }
}

/// "rtol 1e-5, 2 ulps, NaN equal to NaN"; `None` for equality in value.
fn tolerance_text(t: &Tolerance) -> Option<String> {
    let mut parts = Vec::new();
    if t.rtol > 0.0 {
        parts.push(format!("rtol {:e}", t.rtol));
    }
    if t.atol > 0.0 {
        parts.push(format!("atol {:e}", t.atol));
    }
    if let Some(u) = t.ulps {
        parts.push(format!("{u} ulps"));
    }
    if t.nan_equal {
        parts.push("NaN equal to NaN".into());
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// An element's value as its type prints it (an `f32` with an `f32`'s
/// digits).
fn value_text(v: Value, dtype: DType) -> String {
    match (v, dtype) {
        (Value::Float(x), DType::F64) => x.to_string(),
        (Value::Float(x), _) => (x as f32).to_string(),
        (Value::Int(i), _) => i.to_string(),
    }
}

/// A difference for people: `0`, `1.5e-7`, `inf`.
fn number(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.is_infinite() {
        "inf".into()
    } else {
        format!("{v:.3e}")
    }
}

/// A tolerance: finite and not negative.
fn tolerance(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number (1e-5, say)"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{s}: a tolerance is a finite number of at least 0"));
    }
    Ok(v)
}

/// `OFFSET:LEN`, each decimal or 0x-hexadecimal.
fn byte_range(s: &str) -> Result<(u64, u64), String> {
    use crate::open_args::number;
    let (o, l) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?} is not OFFSET:LEN (0x1000:4096, say)"))?;
    match (number(o), number(l)) {
        (Some(o), Some(l)) if l > 0 => Ok((o, l)),
        (Some(_), Some(_)) => Err(format!("{s}: an empty range compares nothing")),
        _ => Err(format!("{s:?} is not OFFSET:LEN (0x1000:4096, say)")),
    }
}
