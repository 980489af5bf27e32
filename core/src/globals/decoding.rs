//! The decoder: [`decode`] and its zero-copy [`Decoder`], the [`Global`]s
//! it yields and its [`DecodeError`].

use core::fmt;

use super::Layout;

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
