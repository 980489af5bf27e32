//! Writing an offload binary of one entry ([`write_one`]), for tests and
//! fixtures.

use super::{ENTRY, HEADER, ImageFormat, MAGIC};

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
