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

mod decoding;
mod encoding;
#[cfg(test)]
mod tests;

pub use decoding::{DecodeError, Decoder, Field, Global, decode};
pub use encoding::{EncodeError, encode, encode_into, encoded_len};

/// Which on-disk layout a globals blob uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// `name NUL u32 size bytes`, repeated (LLVM legacy, the seed).
    Seed,
    /// `u32 count`, then `u32 name_len, u64 size, name NUL, bytes` per global
    /// (LLVM current, reprise).
    Current,
}
