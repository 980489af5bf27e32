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
//! size is checked against the bytes given. Nor does the work grow past
//! the input: at most [`MAX_ENTRIES`] entries, whose images add up to at
//! most the input's length (or [`MIN_IMAGES_LIMIT`]), each with at most
//! [`MAX_STRINGS`] strings of at most [`MAX_STRING_LEN`] bytes.
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

mod elf;
mod kinds;
mod reader;
#[cfg(test)]
mod tests;
#[cfg(feature = "alloc")]
mod writer;

pub use elf::elf_section;
pub use kinds::{ImageFormat, Producer};
pub use reader::{Entries, Entry, entries};
#[cfg(feature = "alloc")]
pub use writer::write_one;

/// The offload binary's magic bytes.
pub const MAGIC: [u8; 4] = [0x10, 0xff, 0x10, 0xad];

const HEADER: usize = 32;
const ENTRY: usize = 40;

/// How many entries [`entries`] reads from one input, all its binaries
/// together. LLVM writes one per target triple and architecture.
pub const MAX_ENTRIES: usize = 1024;

/// How many string pairs one entry may have. LLVM writes `triple` and
/// `arch` (and a few more in later versions).
pub const MAX_STRINGS: u64 = 256;

/// How long a string of an entry may be, its NUL left out. Triples,
/// architectures and feature lists are far shorter.
pub const MAX_STRING_LEN: usize = 4096;

/// What the entries' images may add up to, at least: the limit is the
/// larger of this and the input's length. An image that several entries
/// share counts once for each, as each is one more image to write out or
/// look into.
pub const MIN_IMAGES_LIMIT: u64 = 64 << 20;

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
    /// More of something than the limit: entries ([`MAX_ENTRIES`]), or
    /// string pairs in one entry ([`MAX_STRINGS`]).
    TooMany {
        /// What: `entries`, `string pairs in one entry`.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// The entries' images add up to more than the limit: the larger of
    /// the input's length and [`MIN_IMAGES_LIMIT`] (entries that share an
    /// image each count it).
    ImagesTooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
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
                "the offload binary's string at byte {offset} is not a NUL-terminated UTF-8 string \
                 of at most {MAX_STRING_LEN} bytes"
            ),
            OffloadError::BadElf(what) => write!(f, "the ELF file's {what} cannot be read"),
            OffloadError::TooMany { what, limit } => {
                write!(
                    f,
                    "the offload binary holds more than {limit} {what} (the limit)"
                )
            }
            OffloadError::ImagesTooLarge { limit } => write!(
                f,
                "the offload binary's entries' images add up to more than {limit} bytes (the \
                 limit: the larger of its size and {MIN_IMAGES_LIMIT} bytes; an image that \
                 several entries share counts for each)"
            ),
        }
    }
}

impl core::error::Error for OffloadError {}
