//! The encoder: [`encoded_len`], [`encode`] to a writer and [`encode_into`]
//! a slice, and their [`EncodeError`].

use core::fmt;

use super::Layout;

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
