//! Element types: their sizes, their values as numbers, and the distance
//! in units in the last place between two floating-point values.

use core::fmt;
use core::str::FromStr;

/// What the compared bytes hold: little-endian elements of one type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE 754 half precision.
    F16,
    /// bfloat16 (the upper half of an `f32`).
    Bf16,
    /// IEEE 754 single precision.
    F32,
    /// IEEE 754 double precision.
    F64,
    /// Signed integers.
    I8,
    /// Signed integers.
    I16,
    /// Signed integers.
    I32,
    /// Signed integers.
    I64,
    /// Unsigned integers.
    U8,
    /// Unsigned integers.
    U16,
    /// Unsigned integers.
    U32,
    /// Unsigned integers.
    U64,
}

/// Every type, with the name [`DType`]'s `FromStr` and `Display` use.
pub const DTYPES: [(DType, &str); 12] = [
    (DType::F16, "f16"),
    (DType::Bf16, "bf16"),
    (DType::F32, "f32"),
    (DType::F64, "f64"),
    (DType::I8, "i8"),
    (DType::I16, "i16"),
    (DType::I32, "i32"),
    (DType::I64, "i64"),
    (DType::U8, "u8"),
    (DType::U16, "u16"),
    (DType::U32, "u32"),
    (DType::U64, "u64"),
];

impl DType {
    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 => 1,
            DType::F16 | DType::Bf16 | DType::I16 | DType::U16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }

    /// Whether the type is a floating-point one.
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::Bf16 | DType::F32 | DType::F64)
    }

    /// The element in `bytes` (exactly [`DType::size`] of them).
    pub fn value(self, bytes: &[u8]) -> Value {
        let mut b = [0u8; 8];
        b[..bytes.len()].copy_from_slice(bytes);
        let raw = u64::from_le_bytes(b);
        match self {
            DType::F16 => Value::Float(f16_to_f64(raw as u16)),
            DType::Bf16 => Value::Float(f64::from(f32::from_bits((raw as u32) << 16))),
            DType::F32 => Value::Float(f64::from(f32::from_bits(raw as u32))),
            DType::F64 => Value::Float(f64::from_bits(raw)),
            DType::I8 => Value::Int(i128::from(raw as u8 as i8)),
            DType::I16 => Value::Int(i128::from(raw as u16 as i16)),
            DType::I32 => Value::Int(i128::from(raw as u32 as i32)),
            DType::I64 => Value::Int(i128::from(raw as i64)),
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => Value::Int(i128::from(raw)),
        }
    }

    /// How many representable values lie between the elements `a` and `b`
    /// (0 when equal, signed zeros included; across zero, the steps on
    /// both sides count). For integers, their difference. `None` when
    /// either is a NaN.
    pub fn ulps(self, a: &[u8], b: &[u8]) -> Option<u64> {
        let bits = |x: &[u8]| {
            let mut w = [0u8; 8];
            w[..x.len()].copy_from_slice(x);
            u64::from_le_bytes(w)
        };
        let (x, y) = (bits(a), bits(b));
        // Sign-magnitude bits to a line on which adjacent floats are
        // adjacent integers (-0.0 and +0.0 both at 0).
        let ordered = |v: u64, width: u32| -> Option<i128> {
            let sign = 1u64 << (width - 1);
            let magnitude = v & (sign - 1);
            let exp_mask = match width {
                16 if self == DType::Bf16 => 0x7f80,
                16 => 0x7c00,
                32 => 0x7f80_0000,
                _ => 0x7ff0_0000_0000_0000,
            };
            if magnitude & exp_mask == exp_mask && magnitude & !exp_mask != 0 {
                return None; // NaN
            }
            let m = i128::from(magnitude);
            Some(if v & sign != 0 { -m } else { m })
        };
        let line = |v: u64| match self {
            DType::F16 | DType::Bf16 => ordered(v & 0xffff, 16),
            DType::F32 => ordered(v & 0xffff_ffff, 32),
            DType::F64 => ordered(v, 64),
            _ => match self.value(&v.to_le_bytes()[..self.size()]) {
                Value::Int(i) => Some(i),
                Value::Float(_) => None,
            },
        };
        let d = line(x)?.abs_diff(line(y)?);
        Some(u64::try_from(d).unwrap_or(u64::MAX))
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = DTYPES
            .iter()
            .find(|(t, _)| t == self)
            .map_or("?", |(_, n)| n);
        f.write_str(name)
    }
}

/// A name that is no [`DType`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownDType;

impl fmt::Display for UnknownDType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not an element type (f16, bf16, f32, f64, i8..i64, u8..u64)")
    }
}

impl core::error::Error for UnknownDType {}

impl FromStr for DType {
    type Err = UnknownDType;

    fn from_str(s: &str) -> Result<Self, UnknownDType> {
        DTYPES
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(t, _)| *t)
            .ok_or(UnknownDType)
    }
}

/// One element's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// A floating-point element, widened exactly to `f64`.
    Float(f64),
    /// An integer element.
    Int(i128),
}

impl Value {
    /// The value as an `f64` (integers beyond 2^53 rounded).
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Float(v) => v,
            Value::Int(i) => i as f64,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Float(v) => write!(f, "{v:e}"),
            Value::Int(i) => write!(f, "{i}"),
        }
    }
}

/// An IEEE 754 half-precision value, exactly.
pub fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = (h >> 10) & 0x1f;
    let frac = f64::from(h & 0x3ff);
    match exp {
        0 => sign * frac * (1.0 / (1u64 << 24) as f64), // subnormal: frac * 2^-24
        0x1f if frac == 0.0 => sign * f64::INFINITY,
        0x1f => f64::NAN,
        e => {
            let scale = if e >= 15 {
                (1u64 << (e - 15)) as f64
            } else {
                1.0 / (1u64 << (15 - e)) as f64
            };
            sign * (1.0 + frac / 1024.0) * scale
        }
    }
}
