//! Reading a section's offload binaries: [`entries`] iterates over their
//! [`Entry`]s, every offset and size checked against the bytes given.

use super::{
    ENTRY, HEADER, ImageFormat, MAGIC, MAX_ENTRIES, MAX_STRING_LEN, MAX_STRINGS, MIN_IMAGES_LIMIT,
    OffloadError, Producer,
};

/// One entry of an offload binary: an image and what it is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// What the image is.
    pub format: ImageFormat,
    /// Who made it.
    pub producer: Producer,
    /// LLVM's flags field.
    pub flags: u32,
    /// The image.
    pub image: &'a [u8],
    /// Offset of the image in the input.
    pub offset: usize,
    binary: &'a [u8],
    strings: (u64, u64),
}

impl<'a> Entry<'a> {
    /// The value of string `key` (`triple`, `arch`), if the entry has one:
    /// of the first pair whose key is `key` and whose value is a string.
    /// Each key is compared in the time of `key`'s length.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        let (at, count) = self.strings;
        let key = key.as_bytes();
        (0..count).find_map(|i| {
            let pair = at.checked_add(i.saturating_mul(16))?;
            let k = usize::try_from(read_u64(self.binary, pair, "string table").ok()?).ok()?;
            let matches = self.binary.get(k..k.checked_add(key.len())?) == Some(key)
                && self.binary.get(k + key.len()) == Some(&0);
            if !matches {
                return None;
            }
            let value = read_u64(self.binary, pair.checked_add(8)?, "string table").ok()?;
            string(self.binary, value).ok()
        })
    }

    /// The target triple (`x86_64-pc-linux-gnu`, `nvptx64-nvidia-cuda`,
    /// `amdgcn-amd-amdhsa`).
    pub fn triple(&self) -> Option<&'a str> {
        self.get("triple")
    }

    /// The architecture (`sm_80`, `gfx90a`; empty for the host).
    pub fn arch(&self) -> Option<&'a str> {
        self.get("arch")
    }

    /// Every (key, value) string pair, in order.
    pub fn strings(&self) -> impl Iterator<Item = Result<(&'a str, &'a str), OffloadError>> + '_ {
        let (at, count) = self.strings;
        (0..count).map(move |i| {
            let pair = at
                .checked_add(i.saturating_mul(16))
                .ok_or(OffloadError::OutOfBounds {
                    field: "string table",
                    value: at,
                    size: self.binary.len() as u64,
                })?;
            let key = read_u64(self.binary, pair, "string table")?;
            let value = read_u64(self.binary, pair + 8, "string table")?;
            Ok((string(self.binary, key)?, string(self.binary, value)?))
        })
    }
}

pub(super) fn read_u64(b: &[u8], at: u64, field: &'static str) -> Result<u64, OffloadError> {
    let at = usize::try_from(at).map_err(|_| OffloadError::OutOfBounds {
        field,
        value: at,
        size: b.len() as u64,
    })?;
    let bytes = b
        .get(at..at.saturating_add(8))
        .filter(|s| s.len() == 8)
        .ok_or(OffloadError::Truncated { offset: at, field })?;
    let mut v = [0u8; 8];
    v.copy_from_slice(bytes);
    Ok(u64::from_le_bytes(v))
}

pub(super) fn read_u32(b: &[u8], at: usize, field: &'static str) -> Result<u32, OffloadError> {
    let bytes = b
        .get(at..at.saturating_add(4))
        .filter(|s| s.len() == 4)
        .ok_or(OffloadError::Truncated { offset: at, field })?;
    Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

pub(super) fn read_u16(b: &[u8], at: usize, field: &'static str) -> Result<u16, OffloadError> {
    let bytes = b
        .get(at..at.saturating_add(2))
        .filter(|s| s.len() == 2)
        .ok_or(OffloadError::Truncated { offset: at, field })?;
    Ok(u16::from_le_bytes([bytes[0], bytes[1]]))
}

fn string(b: &[u8], at: u64) -> Result<&str, OffloadError> {
    let start = usize::try_from(at)
        .ok()
        .filter(|&s| s < b.len())
        .ok_or(OffloadError::BadString { offset: at })?;
    let rest = &b[start..];
    let len = rest[..rest.len().min(MAX_STRING_LEN + 1)]
        .iter()
        .position(|&c| c == 0)
        .ok_or(OffloadError::BadString { offset: at })?;
    core::str::from_utf8(&b[start..start + len]).map_err(|_| OffloadError::BadString { offset: at })
}

/// Every entry of every offload binary in `section` (one binary after
/// another, each 8-byte aligned), in order. After an error the iterator
/// ends.
pub fn entries(section: &[u8]) -> Entries<'_> {
    Entries {
        section,
        at: 0,
        binary: None,
        failed: false,
        read: 0,
        images: 0,
    }
}

/// The iterator [`entries`] returns.
#[derive(Debug, Clone)]
pub struct Entries<'a> {
    section: &'a [u8],
    /// Where the next binary starts.
    at: usize,
    /// The binary being read: its start, bytes, and the next entry's index
    /// and the entry count.
    binary: Option<(usize, &'a [u8], u64, u64, u64)>,
    failed: bool,
    /// How many entries were read.
    read: usize,
    /// What their images add up to.
    images: u64,
}

impl<'a> Entries<'a> {
    fn open_binary(&mut self) -> Result<bool, OffloadError> {
        // Padding to the next binary is zeros.
        while self.at < self.section.len() && self.section[self.at] == 0 {
            self.at += 1;
        }
        if self.at >= self.section.len() {
            return Ok(false);
        }
        let start = self.at;
        let rest = &self.section[start..];
        if rest.len() < 4 || rest[..4] != MAGIC {
            return Err(OffloadError::BadMagic { offset: start });
        }
        if rest.len() < HEADER {
            return Err(OffloadError::Truncated {
                offset: start,
                field: "header",
            });
        }
        let size = read_u64(rest, 8, "header")?;
        let entry_offset = read_u64(rest, 16, "header")?;
        let entry_size = read_u64(rest, 24, "header")?;
        let _ = read_u32(rest, 4, "header")?; // the version: every one so far reads alike
        let len = usize::try_from(size)
            .ok()
            .filter(|&n| n >= HEADER && n <= rest.len())
            .ok_or(OffloadError::OutOfBounds {
                field: "size",
                value: size,
                size: rest.len() as u64,
            })?;
        let binary = &rest[..len];
        if entry_offset
            .checked_add(entry_size)
            .is_none_or(|end| end > size)
        {
            return Err(OffloadError::OutOfBounds {
                field: "entry table",
                value: entry_offset,
                size,
            });
        }
        let count = entry_size / ENTRY as u64;
        self.binary = Some((start, binary, entry_offset, 0, count));
        // The next binary starts 8-byte aligned after this one.
        self.at = start + len.next_multiple_of(8).min(rest.len());
        Ok(true)
    }

    fn read_entry(start: usize, binary: &'a [u8], at: u64) -> Result<Entry<'a>, OffloadError> {
        let size = binary.len() as u64;
        let at = usize::try_from(at).map_err(|_| OffloadError::OutOfBounds {
            field: "entry",
            value: at,
            size,
        })?;
        if binary.len().saturating_sub(at) < ENTRY {
            return Err(OffloadError::Truncated {
                offset: start + at,
                field: "entry",
            });
        }
        let format = ImageFormat::from_code(read_u16(binary, at, "entry")?);
        let producer = Producer::from_code(read_u16(binary, at + 2, "entry")?);
        let flags = read_u32(binary, at + 4, "entry")?;
        let strings_at = read_u64(binary, at as u64 + 8, "entry")?;
        let strings = read_u64(binary, at as u64 + 16, "entry")?;
        let image_at = read_u64(binary, at as u64 + 24, "entry")?;
        let image_size = read_u64(binary, at as u64 + 32, "entry")?;
        if strings_at
            .checked_add(strings.saturating_mul(16))
            .is_none_or(|end| end > size)
            || strings > size / 16
        {
            return Err(OffloadError::OutOfBounds {
                field: "string table",
                value: strings_at,
                size,
            });
        }
        if strings > MAX_STRINGS {
            return Err(OffloadError::TooMany {
                what: "string pairs in one entry",
                limit: MAX_STRINGS,
            });
        }
        let end = image_at
            .checked_add(image_size)
            .filter(|&e| e <= size)
            .ok_or(OffloadError::OutOfBounds {
                field: "image",
                value: image_at,
                size,
            })?;
        let image = &binary[image_at as usize..end as usize];
        Ok(Entry {
            format,
            producer,
            flags,
            image,
            offset: start + image_at as usize,
            binary,
            strings: (strings_at, strings),
        })
    }
}

impl<'a> Entries<'a> {
    /// `entry`, counted: an error past [`MAX_ENTRIES`] entries or when the
    /// images read add up to more than the limit.
    fn bounded(
        &mut self,
        entry: Result<Entry<'a>, OffloadError>,
    ) -> Result<Entry<'a>, OffloadError> {
        let entry = entry?;
        self.read += 1;
        if self.read > MAX_ENTRIES {
            return Err(OffloadError::TooMany {
                what: "entries",
                limit: MAX_ENTRIES as u64,
            });
        }
        let limit = MIN_IMAGES_LIMIT.max(self.section.len() as u64);
        self.images = self.images.saturating_add(entry.image.len() as u64);
        if self.images > limit {
            return Err(OffloadError::ImagesTooLarge { limit });
        }
        Ok(entry)
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>, OffloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        loop {
            if let Some((start, binary, table, index, count)) = self.binary
                && index < count
            {
                self.binary = Some((start, binary, table, index + 1, count));
                let r = self.bounded(Self::read_entry(
                    start,
                    binary,
                    table + index * ENTRY as u64,
                ));
                self.failed = r.is_err();
                return Some(r);
            }
            self.binary = None;
            match self.open_binary() {
                Ok(true) => continue,
                Ok(false) => return None,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
    }
}
