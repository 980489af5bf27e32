//! A small MessagePack reader, for the code object metadata (the
//! `NT_AMDGPU_METADATA` note's descriptor, AMDGPUUsage.rst "Code Object V3
//! Metadata": "the metadata is represented as a single MessagePack
//! formatted binary BLOB").
//!
//! Every format of the MessagePack specification is read (the first bytes
//! as LLVM's `llvm/BinaryFormat/MsgPack.def` lists them). Strings and
//! binaries borrow from the input. Bounded on every side: a length is
//! checked against the bytes left before anything is read or allocated, an
//! array or map claiming more elements than bytes are left (each takes one
//! at least) is refused up front, containers nest at most [`MAX_DEPTH`]
//! deep, and a container's storage grows with the elements actually read,
//! never with the count it claims.
//!
//! Why not `rmpv` (1.3.1, `decode::read_value_ref_with_max_depth`, its
//! source read for this): it would keep the allocation bounds (strings and
//! binaries borrowed after their length is checked against the bytes left;
//! arrays and maps grown element by element, never preallocated by their
//! count; the owned reader caps a preallocation at 64 KiB), but not what
//! the errors say: its error names no offset (a `Cursor` tells where
//! reading stopped, not where the offending value began, which
//! [`CodeObjectError::MsgPack`] and its tests give), a lying count is
//! found out only when the input runs dry rather than refused at its
//! container, its depth counts scalars and counts each container twice,
//! and it reads the reserved byte 0xc1 as `nil` instead of refusing it.
//! Mapping those back would take a second reader; this one is 200 lines.

use super::CodeObjectError;

/// How deep containers may nest (the metadata nests four deep:
/// top map, `amdhsa.kernels` array, kernel map, `.args` array, arg map).
pub const MAX_DEPTH: usize = 16;

/// A MessagePack value, its strings and binaries borrowed.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// `nil`.
    Nil,
    /// `true` or `false`.
    Bool(bool),
    /// A positive fixint or a `uint 8/16/32/64`.
    Uint(u64),
    /// A negative fixint or an `int 8/16/32/64`.
    Int(i64),
    /// A `float 32` (widened) or `float 64`.
    Float(f64),
    /// A string's bytes (not checked to be UTF-8 here).
    Str(&'a [u8]),
    /// A binary.
    Bin(&'a [u8]),
    /// An extension: its type and data.
    Ext(i8, &'a [u8]),
    /// An array.
    Array(Vec<Value<'a>>),
    /// A map, its pairs in the order read.
    Map(Vec<(Value<'a>, Value<'a>)>),
}

impl<'a> Value<'a> {
    /// The value as an unsigned integer (a non-negative `int` too).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Self::Uint(v) => Some(v),
            Self::Int(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as a UTF-8 string.
    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            Self::Str(s) => core::str::from_utf8(s).ok(),
            _ => None,
        }
    }

    /// The value of the first pair whose key is the string `key`, when this
    /// is a map.
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        match self {
            Self::Map(pairs) => pairs
                .iter()
                .find(|(k, _)| matches!(k, Self::Str(s) if *s == key.as_bytes()))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Reads the first value in `bytes` (what follows it is left alone; the
/// note's descriptor holds one). `base` is the offset of `bytes` in the
/// file, for the errors.
pub fn read(bytes: &[u8], base: u64) -> Result<Value<'_>, CodeObjectError> {
    let mut reader = Reader {
        bytes,
        pos: 0,
        base,
    };
    reader.value(0)
}

/// A cursor over the input.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Reader<'a> {
    /// An error at the input offset `at`.
    fn error(&self, at: usize, reason: &'static str) -> CodeObjectError {
        CodeObjectError::MsgPack {
            offset: self.base.saturating_add(at as u64),
            reason,
        }
    }

    /// The bytes left.
    fn left(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    /// The next `n` bytes, consumed; `start` is where the value began.
    fn take(&mut self, n: usize, start: usize) -> Result<&'a [u8], CodeObjectError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| self.error(start, "truncated: runs past the end of the metadata"))?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    /// A big-endian unsigned integer of `n` (1, 2, 4 or 8) bytes.
    fn uint(&mut self, n: usize, start: usize) -> Result<u64, CodeObjectError> {
        let bytes = self.take(n, start)?;
        Ok(bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    /// A length field of `n` bytes, as a `usize`.
    fn len(&mut self, n: usize, start: usize) -> Result<usize, CodeObjectError> {
        let len = self.uint(n, start)?;
        usize::try_from(len).map_err(|_| self.error(start, "length out of range"))
    }

    /// The value at the cursor, `depth` containers deep.
    fn value(&mut self, depth: usize) -> Result<Value<'a>, CodeObjectError> {
        let start = self.pos;
        let first = self.take(1, start)?[0];
        Ok(match first {
            0x00..=0x7f => Value::Uint(u64::from(first)),
            0x80..=0x8f => self.map(usize::from(first & 0x0f), depth, start)?,
            0x90..=0x9f => self.array(usize::from(first & 0x0f), depth, start)?,
            0xa0..=0xbf => Value::Str(self.take(usize::from(first & 0x1f), start)?),
            0xc0 => Value::Nil,
            0xc1 => return Err(self.error(start, "0xc1 is no MessagePack format")),
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            0xc4..=0xc6 => {
                let n = self.len(1 << (first - 0xc4), start)?;
                Value::Bin(self.take(n, start)?)
            }
            0xc7..=0xc9 => {
                let n = self.len(1 << (first - 0xc7), start)?;
                let kind = self.take(1, start)?[0] as i8;
                Value::Ext(kind, self.take(n, start)?)
            }
            0xca => Value::Float(f64::from(f32::from_bits(self.uint(4, start)? as u32))),
            0xcb => Value::Float(f64::from_bits(self.uint(8, start)?)),
            0xcc..=0xcf => Value::Uint(self.uint(1 << (first - 0xcc), start)?),
            0xd0..=0xd3 => {
                let n = 1usize << (first - 0xd0);
                let raw = self.uint(n, start)?;
                // Sign-extend from n bytes.
                let shift = 64 - 8 * n as u32;
                Value::Int(((raw << shift) as i64) >> shift)
            }
            0xd4..=0xd8 => {
                let kind = self.take(1, start)?[0] as i8;
                Value::Ext(kind, self.take(1 << (first - 0xd4), start)?)
            }
            0xd9..=0xdb => {
                let n = self.len(1 << (first - 0xd9), start)?;
                Value::Str(self.take(n, start)?)
            }
            0xdc | 0xdd => {
                let n = self.len(if first == 0xdc { 2 } else { 4 }, start)?;
                self.array(n, depth, start)?
            }
            0xde | 0xdf => {
                let n = self.len(if first == 0xde { 2 } else { 4 }, start)?;
                self.map(n, depth, start)?
            }
            0xe0..=0xff => Value::Int(i64::from(first as i8)),
        })
    }

    /// Refuses a container `depth` deep holding `count` elements of at
    /// least one byte each, when it nests too deep or the bytes left cannot
    /// hold it.
    fn check_container(
        &self,
        count: usize,
        depth: usize,
        start: usize,
    ) -> Result<(), CodeObjectError> {
        if depth >= MAX_DEPTH {
            return Err(self.error(start, "containers nested too deep"));
        }
        if count > self.left() {
            return Err(self.error(start, "more elements than bytes left"));
        }
        Ok(())
    }

    /// An array of `count` values.
    fn array(
        &mut self,
        count: usize,
        depth: usize,
        start: usize,
    ) -> Result<Value<'a>, CodeObjectError> {
        self.check_container(count, depth, start)?;
        let mut items = Vec::new();
        for _ in 0..count {
            items.push(self.value(depth + 1)?);
        }
        Ok(Value::Array(items))
    }

    /// A map of `count` pairs.
    fn map(
        &mut self,
        count: usize,
        depth: usize,
        start: usize,
    ) -> Result<Value<'a>, CodeObjectError> {
        self.check_container(count.saturating_mul(2), depth, start)?;
        let mut pairs = Vec::new();
        for _ in 0..count {
            let key = self.value(depth + 1)?;
            let value = self.value(depth + 1)?;
            pairs.push((key, value));
        }
        Ok(Value::Map(pairs))
    }
}
