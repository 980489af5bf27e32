//! The globals codec: device globals as `(name, bytes)` pairs in a file.
//!
//! Two layouts exist (all integers little-endian):
//!
//! - [`Layout::Seed`], the seed's (LLVM legacy): repeated until the end,
//!   `name bytes, NUL, u32 size, size bytes`; no count.
//! - [`Layout::Current`], LLVM's current one and reprise's own: `u32 count`,
//!   then per global `u32 name_len (including NUL), u64 size, name bytes, NUL,
//!   size bytes`.
//!
//! The encoder writes to any [`embedded_io::Write`] or into a slice and
//! knows its exact output length up front. The decoder borrows the input and yields
//! [`Global`]s that point into it; every malformed input is a [`DecodeError`],
//! never a panic or an out-of-bounds read.
//!
//! [`embedded_io::Write`]: https://docs.rs/embedded-io/0.7/embedded_io/trait.Write.html
//!
//! Round trip through a stack buffer:
//!
//! ```
//! use reprise_core::globals::{decode, encode_into, encoded_len, Layout};
//! let globals = [("counter", &[1u8, 0, 0, 0][..]), ("empty", &[][..]), ("table", &[7u8; 8][..])];
//! for layout in [Layout::Seed, Layout::Current] {
//!     let mut buf = [0u8; 128];
//!     let n = encode_into(layout, globals.iter().copied(), &mut buf).unwrap();
//!     assert_eq!(n, encoded_len(layout, globals.iter().copied()).unwrap());
//!     let decoded: Vec<_> = decode(layout, &buf[..n]).unwrap().map(|g| g.unwrap()).collect();
//!     // zero-size globals are skipped on write, as LLVM does
//!     assert_eq!(decoded.len(), 2);
//!     assert_eq!((decoded[0].name, decoded[0].bytes), ("counter", &[1u8, 0, 0, 0][..]));
//!     assert_eq!((decoded[1].name, decoded[1].bytes), ("table", &[7u8; 8][..]));
//! }
//! ```

use core::fmt;

/// Which on-disk layout a globals blob uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// `name NUL u32 size bytes`, repeated (LLVM legacy, the seed).
    Seed,
    /// `u32 count`, then `u32 name_len, u64 size, name NUL, bytes` per global
    /// (LLVM current, reprise).
    Current,
}

/// One decoded global, borrowing the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Global<'a> {
    /// The symbol name (non-empty, no NUL).
    pub name: &'a str,
    /// The recorded contents.
    pub bytes: &'a [u8],
    /// Offset of `bytes` within the decoded input.
    pub offset: usize,
}

/// The field a truncated input ended in.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The `u32` count header (current layout).
    Count,
    /// The `u32` name length (current layout).
    NameLength,
    /// The size field (`u32` seed, `u64` current).
    Size,
    /// The name bytes.
    Name,
    /// The global's contents.
    Payload,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Count => "count header",
            Field::NameLength => "name length",
            Field::Size => "size field",
            Field::Name => "name",
            Field::Payload => "contents",
        })
    }
}

/// Why a globals blob could not be decoded. Offsets are byte offsets into
/// the input where the offending entry or field starts.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The input ends inside `field`.
    Truncated {
        /// Where the field starts.
        offset: usize,
        /// The field that is cut short.
        field: Field,
    },
    /// A name has no terminating NUL (or, in the current layout, the NUL is
    /// not where the name length says).
    MissingNul {
        /// Where the name starts.
        offset: usize,
    },
    /// A name is not valid UTF-8.
    NonUtf8Name {
        /// Where the name starts.
        offset: usize,
    },
    /// A name is empty.
    EmptyName {
        /// Where the entry starts.
        offset: usize,
    },
    /// A size field is larger than the bytes that remain.
    SizeExceedsInput {
        /// Where the size field starts.
        offset: usize,
        /// The size the field claims.
        size: u64,
        /// Bytes remaining after the field.
        remaining: usize,
    },
    /// The count header says more globals than the body holds.
    CountMismatch {
        /// The count in the header.
        declared: u32,
        /// Globals found before the input ended.
        found: u32,
    },
    /// Bytes remain after the last global the count header announces.
    TrailingBytes {
        /// Where the extra bytes start.
        offset: usize,
        /// How many extra bytes there are.
        len: usize,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeError::Truncated { offset, field } => {
                write!(
                    f,
                    "truncated globals: input ends in the {field} at byte {offset}"
                )
            }
            DecodeError::MissingNul { offset } => {
                write!(f, "global name at byte {offset} is not NUL-terminated")
            }
            DecodeError::NonUtf8Name { offset } => {
                write!(f, "global name at byte {offset} is not UTF-8")
            }
            DecodeError::EmptyName { offset } => {
                write!(f, "global at byte {offset} has an empty name")
            }
            DecodeError::SizeExceedsInput {
                offset,
                size,
                remaining,
            } => write!(
                f,
                "global size {size} at byte {offset} exceeds the {remaining} bytes that remain"
            ),
            DecodeError::CountMismatch { declared, found } => write!(
                f,
                "globals header announces {declared} globals but the body holds {found}"
            ),
            DecodeError::TrailingBytes { offset, len } => {
                write!(
                    f,
                    "{len} unexpected bytes after the last global, at byte {offset}"
                )
            }
        }
    }
}

impl core::error::Error for DecodeError {}

/// Why a set of globals could not be encoded.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeError<E> {
    /// The writer failed.
    Write(E),
    /// A global has an empty name.
    EmptyName,
    /// A global's name contains a NUL byte.
    NulInName,
    /// The seed layout keeps its total in an `i32`; this set is larger.
    TooLarge {
        /// The total the set would need.
        total: u64,
    },
    /// The output slice is too small.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
}

impl<E: fmt::Debug> fmt::Display for EncodeError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::Write(e) => write!(f, "writing globals failed: {e:?}"),
            EncodeError::EmptyName => f.write_str("a global has an empty name"),
            EncodeError::NulInName => f.write_str("a global's name contains a NUL byte"),
            EncodeError::TooLarge { total } => write!(
                f,
                "globals total {total} bytes, above the seed layout's limit of {} bytes",
                i32::MAX
            ),
            EncodeError::BufferTooSmall { needed, available } => {
                write!(f, "globals need {needed} bytes, the buffer has {available}")
            }
        }
    }
}

impl<E: fmt::Debug> core::error::Error for EncodeError<E> {}

fn check_name<E>(name: &str) -> Result<(), EncodeError<E>> {
    if name.is_empty() {
        return Err(EncodeError::EmptyName);
    }
    if name.as_bytes().contains(&0) {
        return Err(EncodeError::NulInName);
    }
    Ok(())
}

fn entry_len<E>(layout: Layout, name: &str, size: usize) -> Result<u64, EncodeError<E>> {
    check_name(name)?;
    let header = match layout {
        Layout::Seed => 4,
        Layout::Current => {
            if name.len() >= u32::MAX as usize {
                return Err(EncodeError::TooLarge {
                    total: name.len() as u64,
                });
            }
            12
        }
    };
    Ok(header + name.len() as u64 + 1 + size as u64)
}

/// Exact number of bytes [`encode`] will write for `globals` in `layout`.
///
/// Fails on the same inputs as [`encode`] (other than writer errors).
pub fn encoded_len<'a, I>(
    layout: Layout,
    globals: I,
) -> Result<usize, EncodeError<core::convert::Infallible>>
where
    I: IntoIterator<Item = (&'a str, &'a [u8])>,
{
    let mut total: u64 = if layout == Layout::Current { 4 } else { 0 };
    let mut count: u64 = 0;
    for (name, bytes) in globals {
        if bytes.is_empty() {
            continue;
        }
        if layout == Layout::Seed && bytes.len() > u32::MAX as usize {
            return Err(EncodeError::TooLarge {
                total: bytes.len() as u64,
            });
        }
        total = total.saturating_add(entry_len(layout, name, bytes.len())?);
        count += 1;
    }
    if layout == Layout::Seed && total > i32::MAX as u64 {
        return Err(EncodeError::TooLarge { total });
    }
    if layout == Layout::Current && count > u32::MAX as u64 {
        return Err(EncodeError::TooLarge { total: count });
    }
    usize::try_from(total).map_err(|_| EncodeError::TooLarge { total })
}

impl<E> EncodeError<E> {
    /// Maps the writer error, keeping every other variant.
    fn map_write<F>(self, f: impl FnOnce(E) -> EncodeError<F>) -> EncodeError<F> {
        match self {
            EncodeError::Write(e) => f(e),
            EncodeError::EmptyName => EncodeError::EmptyName,
            EncodeError::NulInName => EncodeError::NulInName,
            EncodeError::TooLarge { total } => EncodeError::TooLarge { total },
            EncodeError::BufferTooSmall { needed, available } => {
                EncodeError::BufferTooSmall { needed, available }
            }
        }
    }
}

/// Encodes `globals` in `layout` to `out`; returns the bytes written.
///
/// Zero-size globals are skipped, as LLVM does. The iterator is walked twice
/// (once to validate and count), so it must be `Clone`. Nothing is written
/// when validation fails.
pub fn encode<'a, I, W>(
    layout: Layout,
    globals: I,
    out: &mut W,
) -> Result<usize, EncodeError<W::Error>>
where
    I: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
    W: embedded_io::Write,
{
    let total =
        encoded_len(layout, globals.clone()).map_err(|e| e.map_write(|never| match never {}))?;
    if layout == Layout::Current {
        let count = globals
            .clone()
            .into_iter()
            .filter(|(_, b)| !b.is_empty())
            .count() as u32;
        out.write_all(&count.to_le_bytes())
            .map_err(EncodeError::Write)?;
    }
    for (name, bytes) in globals {
        if bytes.is_empty() {
            continue;
        }
        match layout {
            Layout::Seed => {
                out.write_all(name.as_bytes()).map_err(EncodeError::Write)?;
                out.write_all(&[0]).map_err(EncodeError::Write)?;
                out.write_all(&(bytes.len() as u32).to_le_bytes())
                    .map_err(EncodeError::Write)?;
            }
            Layout::Current => {
                out.write_all(&(name.len() as u32 + 1).to_le_bytes())
                    .map_err(EncodeError::Write)?;
                out.write_all(&(bytes.len() as u64).to_le_bytes())
                    .map_err(EncodeError::Write)?;
                out.write_all(name.as_bytes()).map_err(EncodeError::Write)?;
                out.write_all(&[0]).map_err(EncodeError::Write)?;
            }
        }
        out.write_all(bytes).map_err(EncodeError::Write)?;
    }
    Ok(total)
}

/// A writer over a slice that never overflows (the length is checked first).
struct SliceWriter<'b> {
    buf: &'b mut [u8],
    pos: usize,
}

impl embedded_io::ErrorType for SliceWriter<'_> {
    type Error = embedded_io::ErrorKind;
}

impl embedded_io::Write for SliceWriter<'_> {
    fn write(&mut self, data: &[u8]) -> Result<usize, Self::Error> {
        let dst = self
            .buf
            .get_mut(self.pos..self.pos + data.len())
            .ok_or(embedded_io::ErrorKind::OutOfMemory)?;
        dst.copy_from_slice(data);
        self.pos += data.len();
        Ok(data.len())
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Encodes `globals` into `buf`; returns the bytes used.
///
/// Fails with [`EncodeError::BufferTooSmall`] (and writes nothing) when the
/// encoding does not fit.
pub fn encode_into<'a, I>(
    layout: Layout,
    globals: I,
    buf: &mut [u8],
) -> Result<usize, EncodeError<core::convert::Infallible>>
where
    I: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
{
    let needed = encoded_len(layout, globals.clone())?;
    if needed > buf.len() {
        return Err(EncodeError::BufferTooSmall {
            needed,
            available: buf.len(),
        });
    }
    let available = buf.len();
    let mut w = SliceWriter { buf, pos: 0 };
    encode(layout, globals, &mut w)
        .map_err(|e| e.map_write(|_| EncodeError::BufferTooSmall { needed, available }))
}

/// Starts decoding `input` in `layout`.
///
/// For the current layout the count header is read here, so an input too
/// short for it fails at once. The returned iterator yields each global or
/// the first error, after which it ends.
pub fn decode(layout: Layout, input: &[u8]) -> Result<Decoder<'_>, DecodeError> {
    Decoder::new(layout, input)
}

/// Zero-copy iterator over a globals blob. See [`decode`].
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    layout: Layout,
    input: &'a [u8],
    pos: usize,
    /// Count announced by the header (current layout).
    declared: Option<u32>,
    found: u32,
    done: bool,
}

fn read_u32(input: &[u8], at: usize) -> Option<u32> {
    let b = input.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn read_u64(input: &[u8], at: usize) -> Option<u64> {
    let b = input.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

impl<'a> Decoder<'a> {
    fn new(layout: Layout, input: &'a [u8]) -> Result<Self, DecodeError> {
        let (declared, pos) = match layout {
            Layout::Seed => (None, 0),
            Layout::Current => {
                let count = read_u32(input, 0).ok_or(DecodeError::Truncated {
                    offset: 0,
                    field: Field::Count,
                })?;
                (Some(count), 4)
            }
        };
        Ok(Decoder {
            layout,
            input,
            pos,
            declared,
            found: 0,
            done: false,
        })
    }

    /// Checks the whole input and returns how many globals it holds.
    pub fn validate(self) -> Result<usize, DecodeError> {
        let mut n = 0;
        for g in self {
            g?;
            n += 1;
        }
        Ok(n)
    }

    fn name_at(&self, start: usize, len: usize, entry: usize) -> Result<&'a str, DecodeError> {
        let bytes = &self.input[start..start + len];
        if bytes.is_empty() {
            return Err(DecodeError::EmptyName { offset: entry });
        }
        if bytes.contains(&0) {
            return Err(DecodeError::MissingNul { offset: start });
        }
        core::str::from_utf8(bytes).map_err(|_| DecodeError::NonUtf8Name { offset: start })
    }

    fn payload(&self, size_at: usize, start: usize, size: u64) -> Result<&'a [u8], DecodeError> {
        let remaining = self.input.len() - start;
        if size > remaining as u64 {
            return Err(DecodeError::SizeExceedsInput {
                offset: size_at,
                size,
                remaining,
            });
        }
        Ok(&self.input[start..start + size as usize])
    }

    fn next_seed(&mut self) -> Result<Global<'a>, DecodeError> {
        let entry = self.pos;
        let rest = &self.input[entry..];
        let nul = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or(DecodeError::MissingNul { offset: entry })?;
        let name = self.name_at(entry, nul, entry)?;
        let size_at = entry + nul + 1;
        let size = read_u32(self.input, size_at).ok_or(DecodeError::Truncated {
            offset: size_at,
            field: Field::Size,
        })?;
        let start = size_at + 4;
        let bytes = self.payload(size_at, start, size as u64)?;
        self.pos = start + bytes.len();
        Ok(Global {
            name,
            bytes,
            offset: start,
        })
    }

    fn next_current(&mut self) -> Result<Global<'a>, DecodeError> {
        let entry = self.pos;
        let name_len = read_u32(self.input, entry).ok_or(DecodeError::Truncated {
            offset: entry,
            field: Field::NameLength,
        })?;
        let size_at = entry + 4;
        let size = read_u64(self.input, size_at).ok_or(DecodeError::Truncated {
            offset: size_at,
            field: Field::Size,
        })?;
        let name_at = size_at + 8;
        if name_len <= 1 {
            return Err(DecodeError::EmptyName { offset: entry });
        }
        let remaining = self.input.len() - name_at;
        if name_len as usize > remaining {
            return Err(DecodeError::Truncated {
                offset: name_at,
                field: Field::Name,
            });
        }
        let text_len = name_len as usize - 1;
        if self.input[name_at + text_len] != 0 {
            return Err(DecodeError::MissingNul { offset: name_at });
        }
        let name = self.name_at(name_at, text_len, entry)?;
        let start = name_at + name_len as usize;
        let bytes = self.payload(size_at, start, size)?;
        self.pos = start + bytes.len();
        Ok(Global {
            name,
            bytes,
            offset: start,
        })
    }
}

impl<'a> Iterator for Decoder<'a> {
    type Item = Result<Global<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let at_end = self.pos >= self.input.len();
        if let Some(declared) = self.declared {
            if self.found == declared {
                self.done = true;
                return if at_end {
                    None
                } else {
                    Some(Err(DecodeError::TrailingBytes {
                        offset: self.pos,
                        len: self.input.len() - self.pos,
                    }))
                };
            }
            if at_end {
                self.done = true;
                return Some(Err(DecodeError::CountMismatch {
                    declared,
                    found: self.found,
                }));
            }
        } else if at_end {
            self.done = true;
            return None;
        }
        let item = match self.layout {
            Layout::Seed => self.next_seed(),
            Layout::Current => self.next_current(),
        };
        match item {
            Ok(g) => {
                self.found += 1;
                Some(Ok(g))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    fn enc(layout: Layout, g: &[(&str, &[u8])]) -> Vec<u8> {
        let n = encoded_len(layout, g.iter().copied()).unwrap();
        let mut v = std::vec![0u8; n];
        assert_eq!(encode_into(layout, g.iter().copied(), &mut v).unwrap(), n);
        v
    }

    #[test]
    fn seed_layout_bytes_exactly() {
        let v = enc(Layout::Seed, &[("ab", &[9, 8])]);
        assert_eq!(v, [b'a', b'b', 0, 2, 0, 0, 0, 9, 8]);
    }

    #[test]
    fn current_layout_bytes_exactly() {
        let v = enc(Layout::Current, &[("ab", &[9])]);
        assert_eq!(
            v,
            [
                1, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, b'a', b'b', 0, 9
            ]
        );
    }

    #[test]
    fn empty_set_current_is_just_a_zero_count() {
        let v = enc(Layout::Current, &[("z", &[])]);
        assert_eq!(v, [0, 0, 0, 0]);
        assert_eq!(decode(Layout::Current, &v).unwrap().validate(), Ok(0));
        assert_eq!(decode(Layout::Seed, &[]).unwrap().validate(), Ok(0));
    }

    #[test]
    fn encode_rejects_bad_names_and_small_buffers() {
        let mut buf = [0u8; 4];
        assert_eq!(
            encode_into(Layout::Seed, [("", &[1u8][..])], &mut buf),
            Err(EncodeError::EmptyName)
        );
        assert_eq!(
            encode_into(Layout::Seed, [("a\0b", &[1u8][..])], &mut buf),
            Err(EncodeError::NulInName)
        );
        assert_eq!(
            encode_into(Layout::Seed, [("abc", &[1u8][..])], &mut buf),
            Err(EncodeError::BufferTooSmall {
                needed: 9,
                available: 4
            })
        );
        // Nothing was written on failure.
        assert_eq!(buf, [0; 4]);
    }

    #[test]
    fn seed_total_above_i32_max_is_rejected() {
        // A zeroed allocation is mapped lazily: 1 GiB costs no memory here.
        let big = std::vec![0u8; 1 << 30];
        let two = [("a", &big[..]), ("b", &big[..])];
        assert_eq!(
            encoded_len(Layout::Seed, two),
            Err(EncodeError::TooLarge {
                total: 2 * ((1 << 30) + 6)
            })
        );
        // The current layout has 64-bit sizes and no such limit.
        assert_eq!(
            encoded_len(Layout::Current, two),
            Ok(4 + 2 * (12 + 2 + (1 << 30)))
        );
    }

    #[test]
    fn decode_errors() {
        use DecodeError::*;
        let first = |l, b: &[u8]| decode(l, b).and_then(|d| d.validate());
        assert_eq!(first(Layout::Seed, b"abc"), Err(MissingNul { offset: 0 }));
        assert_eq!(
            first(Layout::Seed, b"\0\x01\0\0\0x"),
            Err(EmptyName { offset: 0 })
        );
        assert_eq!(
            first(Layout::Seed, b"a\0\x01\0"),
            Err(Truncated {
                offset: 2,
                field: Field::Size
            })
        );
        assert_eq!(
            first(Layout::Seed, b"a\0\x05\0\0\0xy"),
            Err(SizeExceedsInput {
                offset: 2,
                size: 5,
                remaining: 2
            })
        );
        assert_eq!(
            first(Layout::Seed, b"\xff\xfe\0\x00\0\0\0"),
            Err(NonUtf8Name { offset: 0 })
        );
        assert_eq!(
            first(Layout::Current, &[1, 0]),
            Err(Truncated {
                offset: 0,
                field: Field::Count
            })
        );
        let good = enc(Layout::Current, &[("ab", &[9])]);
        let mut two = good.clone();
        two[0] = 2;
        assert_eq!(
            first(Layout::Current, &two),
            Err(CountMismatch {
                declared: 2,
                found: 1
            })
        );
        let mut trailing = good.clone();
        trailing.push(7);
        assert_eq!(
            first(Layout::Current, &trailing),
            Err(TrailingBytes {
                offset: good.len(),
                len: 1
            })
        );
        let mut no_nul = good.clone();
        no_nul[18] = b'c';
        assert_eq!(
            first(Layout::Current, &no_nul),
            Err(MissingNul { offset: 16 })
        );
        let mut empty = good.clone();
        empty[4] = 1;
        assert_eq!(first(Layout::Current, &empty), Err(EmptyName { offset: 4 }));
        let mut huge = good.clone();
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            first(Layout::Current, &huge),
            Err(SizeExceedsInput {
                offset: 8,
                size: u64::MAX,
                remaining: 1
            })
        );
        let mut long_name = good.clone();
        long_name[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            first(Layout::Current, &long_name),
            Err(Truncated {
                offset: 16,
                field: Field::Name
            })
        );
        assert_eq!(
            first(Layout::Current, &good[..10]),
            Err(Truncated {
                offset: 8,
                field: Field::Size
            })
        );
    }

    #[test]
    fn iterator_fuses_after_error() {
        let mut d = decode(Layout::Seed, b"abc").unwrap();
        assert!(matches!(d.next(), Some(Err(_))));
        assert!(d.next().is_none());
    }

    #[test]
    fn offsets_point_at_payloads() {
        let v = enc(Layout::Seed, &[("a", &[1, 2]), ("bb", &[3])]);
        let g: Vec<_> = decode(Layout::Seed, &v)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(&v[g[0].offset..g[0].offset + 2], &[1, 2]);
        assert_eq!(&v[g[1].offset..g[1].offset + 1], &[3]);
    }
}
