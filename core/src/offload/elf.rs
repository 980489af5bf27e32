//! Finding a section ([`elf_section`]) of the ELF file that holds offload
//! binaries.
//!
//! Read by hand, not through `object` as the backends read ELF: `object`
//! links `alloc` whatever its features, and `core/embedded`, which has no
//! allocator, then fails to link ("no global memory allocator found").

use super::OffloadError;
use super::reader::{read_u16, read_u32, read_u64};

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
        // Compared in the time of `name`'s length, not of what follows in
        // the table (every header may name the same long string).
        let Some(rest) = names.get(name_at as usize..) else {
            continue;
        };
        let here = rest.get(..name.len()) == Some(name.as_bytes())
            && rest.get(name.len()).is_none_or(|&c| c == 0);
        if here {
            return contents(offset, size).map(Some);
        }
    }
    Ok(None)
}
