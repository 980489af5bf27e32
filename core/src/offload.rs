//! LLVM's offload binaries: the container in which `clang -fopenmp
//! -fopenmp-targets=...` (and `clang-offload-packager`) puts device images,
//! in an application's `.llvm.offloading` section, one entry per target
//! triple and architecture.
//!
//! The layout (`llvm/include/llvm/Object/OffloadBinary.h`; all integers
//! little-endian): a 32-byte header (`magic 10 FF 10 AD`, `u32 version`,
//! `u64 size` of the whole binary, `u64 entry offset`, `u64 entry size`),
//! entries of 40 bytes (`u16 image kind`, `u16 offload kind`, `u32 flags`,
//! `u64 string table offset`, `u64 string count`, `u64 image offset`, `u64
//! image size`), a string table of (`u64 key offset`, `u64 value offset`)
//! pairs whose offsets point to NUL-terminated strings (`triple`, `arch`,
//! ...), all offsets from the start of the binary. A section holds one
//! binary after another, each starting 8-byte aligned.
//!
//! Reading never panics and never reads out of bounds: every offset and
//! size is checked against the bytes given.
//!
//! ```
//! # #[cfg(feature = "alloc")] {
//! use reprise_core::offload::{self, ImageFormat};
//! // One entry: an x86-64 shared object for the host.
//! let image = b"\x7fELF...";
//! let bin = offload::write_one(ImageFormat::Object, "x86_64-pc-linux-gnu", "", image);
//! let entries: Vec<_> = offload::entries(&bin).map(|e| e.unwrap()).collect();
//! assert_eq!(entries.len(), 1);
//! assert_eq!(entries[0].triple(), Some("x86_64-pc-linux-gnu"));
//! assert_eq!(entries[0].arch(), Some(""));
//! assert_eq!(entries[0].image, image);
//! # }
//! ```

use core::fmt;

/// The offload binary's magic bytes.
pub const MAGIC: [u8; 4] = [0x10, 0xff, 0x10, 0xad];

const HEADER: usize = 32;
const ENTRY: usize = 40;

/// What kind of image an entry holds (LLVM's `ImageKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// An object or shared object (an ELF file: x86-64, cubin, AMD GPU code
    /// object).
    Object,
    /// LLVM bitcode.
    Bitcode,
    /// A CUDA cubin.
    Cubin,
    /// A CUDA fat binary.
    Fatbinary,
    /// PTX text.
    Ptx,
    /// A value this reader does not know.
    Other(u16),
}

impl ImageFormat {
    /// From LLVM's numbering.
    pub const fn from_code(code: u16) -> Self {
        match code {
            1 => ImageFormat::Object,
            2 => ImageFormat::Bitcode,
            3 => ImageFormat::Cubin,
            4 => ImageFormat::Fatbinary,
            5 => ImageFormat::Ptx,
            other => ImageFormat::Other(other),
        }
    }

    /// LLVM's numbering.
    pub const fn code(self) -> u16 {
        match self {
            ImageFormat::Object => 1,
            ImageFormat::Bitcode => 2,
            ImageFormat::Cubin => 3,
            ImageFormat::Fatbinary => 4,
            ImageFormat::Ptx => 5,
            ImageFormat::Other(c) => c,
        }
    }
}

impl fmt::Display for ImageFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageFormat::Object => f.write_str("object"),
            ImageFormat::Bitcode => f.write_str("bitcode"),
            ImageFormat::Cubin => f.write_str("cubin"),
            ImageFormat::Fatbinary => f.write_str("fatbinary"),
            ImageFormat::Ptx => f.write_str("ptx"),
            ImageFormat::Other(c) => write!(f, "image kind {c}"),
        }
    }
}

/// Who made an entry (LLVM's `OffloadKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Producer {
    /// OpenMP offloading.
    OpenMp,
    /// CUDA.
    Cuda,
    /// HIP.
    Hip,
    /// A value this reader does not know.
    Other(u16),
}

impl Producer {
    const fn from_code(code: u16) -> Self {
        match code {
            1 => Producer::OpenMp,
            2 => Producer::Cuda,
            4 => Producer::Hip,
            other => Producer::Other(other),
        }
    }
}

impl fmt::Display for Producer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Producer::OpenMp => f.write_str("openmp"),
            Producer::Cuda => f.write_str("cuda"),
            Producer::Hip => f.write_str("hip"),
            Producer::Other(c) => write!(f, "offload kind {c}"),
        }
    }
}

/// Why an offload binary (or the ELF file holding one) cannot be read.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffloadError {
    /// The bytes at `offset` are not an offload binary.
    BadMagic {
        /// Where the binary should start.
        offset: usize,
    },
    /// A field runs past the end of the input.
    Truncated {
        /// Where the field starts.
        offset: usize,
        /// Which field.
        field: &'static str,
    },
    /// An offset or size points outside the binary.
    OutOfBounds {
        /// Which field.
        field: &'static str,
        /// Its value.
        value: u64,
        /// The binary's size.
        size: u64,
    },
    /// A string of the string table has no NUL or is not UTF-8.
    BadString {
        /// Where it starts, in the binary.
        offset: u64,
    },
    /// An ELF file's section headers cannot be read.
    BadElf(&'static str),
}

impl fmt::Display for OffloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            OffloadError::BadMagic { offset } => {
                write!(
                    f,
                    "no offload binary at byte {offset} (no 10 FF 10 AD magic)"
                )
            }
            OffloadError::Truncated { offset, field } => {
                write!(
                    f,
                    "the offload binary ends inside its {field} (at byte {offset})"
                )
            }
            OffloadError::OutOfBounds { field, value, size } => write!(
                f,
                "the offload binary's {field} ({value}) points outside its {size} bytes"
            ),
            OffloadError::BadString { offset } => write!(
                f,
                "the offload binary's string at byte {offset} is not a NUL-terminated UTF-8 string"
            ),
            OffloadError::BadElf(what) => write!(f, "the ELF file's {what} cannot be read"),
        }
    }
}

impl core::error::Error for OffloadError {}

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
    /// The value of string `key` (`triple`, `arch`), if the entry has one.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.strings()
            .filter_map(Result::ok)
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
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

fn read_u64(b: &[u8], at: u64, field: &'static str) -> Result<u64, OffloadError> {
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

fn read_u32(b: &[u8], at: usize, field: &'static str) -> Result<u32, OffloadError> {
    let bytes = b
        .get(at..at.saturating_add(4))
        .filter(|s| s.len() == 4)
        .ok_or(OffloadError::Truncated { offset: at, field })?;
    Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

fn read_u16(b: &[u8], at: usize, field: &'static str) -> Result<u16, OffloadError> {
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
    let len = b[start..]
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
                let r = Self::read_entry(start, binary, table + index * ENTRY as u64);
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

/// The contents of the section named `name` of a 64-bit little-endian ELF
/// file, `Ok(None)` when it has none (or is no such ELF file).
pub fn elf_section<'a>(elf: &'a [u8], name: &str) -> Result<Option<&'a [u8]>, OffloadError> {
    if elf.len() < 64 || elf[..4] != *b"\x7fELF" || elf[4] != 2 || elf[5] != 1 {
        return Ok(None);
    }
    let u64_at =
        |at: usize| read_u64(elf, at as u64, "header").map_err(|_| OffloadError::BadElf("header"));
    let u16_at =
        |at: usize| read_u16(elf, at, "header").map_err(|_| OffloadError::BadElf("header"));
    let shoff = u64_at(0x28)?;
    let shentsize = u64::from(u16_at(0x3a)?);
    let shnum = u64::from(u16_at(0x3c)?);
    let shstrndx = u64::from(u16_at(0x3e)?);
    if shoff == 0 || shnum == 0 {
        return Ok(None);
    }
    if shentsize < 64 {
        return Err(OffloadError::BadElf("section header size"));
    }
    let header = |i: u64| -> Result<(u32, u64, u64), OffloadError> {
        let at = shoff
            .checked_add(
                i.checked_mul(shentsize)
                    .ok_or(OffloadError::BadElf("section headers"))?,
            )
            .filter(|&a| a.checked_add(64).is_some_and(|e| e <= elf.len() as u64))
            .ok_or(OffloadError::BadElf("section headers"))?;
        let at = at as usize;
        let name =
            read_u32(elf, at, "section").map_err(|_| OffloadError::BadElf("section headers"))?;
        let offset = u64_at(at + 0x18)?;
        let size = u64_at(at + 0x20)?;
        Ok((name, offset, size))
    };
    let contents = |offset: u64, size: u64| -> Result<&'a [u8], OffloadError> {
        let end = offset
            .checked_add(size)
            .filter(|&e| e <= elf.len() as u64)
            .ok_or(OffloadError::BadElf("section contents"))?;
        Ok(&elf[offset as usize..end as usize])
    };
    let (_, str_off, str_size) = header(shstrndx)?;
    let names = contents(str_off, str_size)?;
    for i in 0..shnum {
        let (name_at, offset, size) = header(i)?;
        let Some(rest) = names.get(name_at as usize..) else {
            continue;
        };
        let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
        if &rest[..end] == name.as_bytes() {
            return contents(offset, size).map(Some);
        }
    }
    Ok(None)
}

/// An offload binary of one entry, as `clang-offload-packager` writes it
/// (for tests and fixtures). Needs an allocator.
#[cfg(feature = "alloc")]
pub fn write_one(
    format: ImageFormat,
    triple: &str,
    arch: &str,
    image: &[u8],
) -> alloc::vec::Vec<u8> {
    use alloc::vec::Vec;
    // header, entry, two string pairs, the strings, then the image 8-aligned.
    let strings_at = HEADER + ENTRY;
    let text_at = strings_at + 32;
    let mut text = Vec::new();
    let mut put = |s: &str| {
        let at = text_at + text.len();
        text.extend_from_slice(s.as_bytes());
        text.push(0);
        at as u64
    };
    let (triple_key, triple_value) = (put("triple"), put(triple));
    let (arch_key, arch_value) = (put("arch"), put(arch));
    let image_at = (text_at + text.len()).next_multiple_of(8);
    let size = image_at + image.len();
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&(size as u64).to_le_bytes());
    out.extend_from_slice(&(HEADER as u64).to_le_bytes());
    out.extend_from_slice(&(ENTRY as u64).to_le_bytes());
    out.extend_from_slice(&format.code().to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // OpenMP
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(strings_at as u64).to_le_bytes());
    out.extend_from_slice(&2u64.to_le_bytes());
    out.extend_from_slice(&(image_at as u64).to_le_bytes());
    out.extend_from_slice(&(image.len() as u64).to_le_bytes());
    for v in [triple_key, triple_value, arch_key, arch_value] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&text);
    out.resize(image_at, 0);
    out.extend_from_slice(image);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `.llvm.offloading` section clang 16 wrote for a C program offloaded
    /// to x86_64-pc-linux-gnu: its header, entry and strings (the image
    /// replaced by 8 bytes).
    fn clang16_like() -> [u8; 0x98] {
        let mut b = [0u8; 0x98];
        b[..4].copy_from_slice(&MAGIC);
        b[4..8].copy_from_slice(&1u32.to_le_bytes());
        b[8..16].copy_from_slice(&0x98u64.to_le_bytes());
        b[16..24].copy_from_slice(&0x20u64.to_le_bytes());
        b[24..32].copy_from_slice(&0x28u64.to_le_bytes());
        // entry at 0x20: object, openmp, flags 0, strings 0x48 x2, image 0x90 x8
        b[0x20..0x22].copy_from_slice(&1u16.to_le_bytes());
        b[0x22..0x24].copy_from_slice(&1u16.to_le_bytes());
        b[0x28..0x30].copy_from_slice(&0x48u64.to_le_bytes());
        b[0x30..0x38].copy_from_slice(&2u64.to_le_bytes());
        b[0x38..0x40].copy_from_slice(&0x90u64.to_le_bytes());
        b[0x40..0x48].copy_from_slice(&8u64.to_le_bytes());
        // string pairs: (0x82 "triple", 0x69 "x86_64-pc-linux-gnu"), (0x7d "arch", 0x68 "")
        b[0x48..0x50].copy_from_slice(&0x82u64.to_le_bytes());
        b[0x50..0x58].copy_from_slice(&0x69u64.to_le_bytes());
        b[0x58..0x60].copy_from_slice(&0x7du64.to_le_bytes());
        b[0x60..0x68].copy_from_slice(&0x68u64.to_le_bytes());
        b[0x69..0x7c].copy_from_slice(b"x86_64-pc-linux-gnu");
        b[0x7d..0x81].copy_from_slice(b"arch");
        b[0x82..0x88].copy_from_slice(b"triple");
        b[0x90..0x98].copy_from_slice(b"\x7fELFxxxx");
        b
    }

    #[test]
    fn reads_what_clang_16_wrote() {
        let b = clang16_like();
        let mut it = entries(&b);
        let e = it.next().unwrap().unwrap();
        assert!(it.next().is_none());
        assert_eq!(
            (e.format, e.producer, e.flags),
            (ImageFormat::Object, Producer::OpenMp, 0)
        );
        assert_eq!(e.triple(), Some("x86_64-pc-linux-gnu"));
        assert_eq!(e.arch(), Some(""));
        assert_eq!(e.image, b"\x7fELFxxxx");
        assert_eq!(e.offset, 0x90);
    }

    #[cfg(feature = "alloc")]
    #[test]
    fn several_binaries_one_after_another() {
        let mut two = alloc::vec::Vec::new();
        let a = write_one(ImageFormat::Object, "x86_64-pc-linux-gnu", "", b"host");
        let b = write_one(
            ImageFormat::Cubin,
            "nvptx64-nvidia-cuda",
            "sm_80",
            b"cubin!!",
        );
        two.extend_from_slice(&a);
        two.resize(two.len().next_multiple_of(8), 0);
        let second = two.len();
        two.extend_from_slice(&b);
        let got: alloc::vec::Vec<_> = entries(&two).map(|e| e.unwrap()).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(
            (got[1].format, got[1].arch()),
            (ImageFormat::Cubin, Some("sm_80"))
        );
        assert_eq!(got[1].image, b"cubin!!");
        assert_eq!(got[1].offset, second + (got[1].offset - second));
    }

    #[test]
    fn lies_are_errors() {
        let good = clang16_like();
        // Truncated anywhere: an error or fewer entries, never a panic.
        for cut in 0..good.len() {
            let _ = entries(&good[..cut]).count();
        }
        let mut b = good;
        b[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            entries(&b).next(),
            Some(Err(OffloadError::OutOfBounds { field: "size", .. }))
        ));
        let mut b = good;
        b[0x40..0x48].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            entries(&b).next(),
            Some(Err(OffloadError::OutOfBounds { field: "image", .. }))
        ));
        let mut b = good;
        b[0x30..0x38].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            entries(&b).next(),
            Some(Err(OffloadError::OutOfBounds {
                field: "string table",
                ..
            }))
        ));
        let mut b = good;
        b[0x48..0x50].copy_from_slice(&0x97u64.to_le_bytes());
        let e = entries(&b).next().unwrap().unwrap();
        assert_eq!(e.triple(), None, "a key without a NUL is no key");
        assert!(e.strings().any(|s| s.is_err()));
        assert_eq!(
            entries(b"not an offload binary").next(),
            Some(Err(OffloadError::BadMagic { offset: 0 }))
        );
        assert_eq!(entries(&[]).next(), None);
    }

    #[cfg(feature = "alloc")]
    #[test]
    fn finds_sections_of_elf_files() {
        assert_eq!(elf_section(b"not elf", ".llvm.offloading"), Ok(None));
        // A minimal ELF64 with a section-name table and one named section.
        let mut elf = alloc::vec![0u8; 64];
        elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
        let names = b"\0.shstrtab\0.llvm.offloading\0";
        let names_at = elf.len();
        elf.extend_from_slice(names);
        let data_at = elf.len();
        elf.extend_from_slice(b"payload!");
        let shoff = elf.len().next_multiple_of(8);
        elf.resize(shoff, 0);
        let section = |name: u32, off: usize, size: usize| {
            let mut h = [0u8; 64];
            h[..4].copy_from_slice(&name.to_le_bytes());
            h[0x18..0x20].copy_from_slice(&(off as u64).to_le_bytes());
            h[0x20..0x28].copy_from_slice(&(size as u64).to_le_bytes());
            h
        };
        elf.extend_from_slice(&[0u8; 64]);
        elf.extend_from_slice(&section(1, names_at, names.len()));
        elf.extend_from_slice(&section(11, data_at, 8));
        elf[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
        elf[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        elf[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
        elf[0x3e..0x40].copy_from_slice(&1u16.to_le_bytes());
        assert_eq!(
            elf_section(&elf, ".llvm.offloading"),
            Ok(Some(&b"payload!"[..]))
        );
        assert_eq!(elf_section(&elf, ".text"), Ok(None));
        // A section whose contents lie outside the file.
        let mut bad = elf.clone();
        let last = bad.len() - 64;
        bad[last + 0x20..last + 0x28].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            elf_section(&bad, ".llvm.offloading"),
            Err(OffloadError::BadElf("section contents"))
        );
        for cut in 0..elf.len() {
            let _ = elf_section(&elf[..cut], ".llvm.offloading");
        }
    }
}
