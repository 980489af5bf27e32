//! Finding the globals of binary images: cubins (ELF, `e_machine` 190) and
//! fat binaries holding cubins or PTX.
//!
//! A cubin's device globals are `STT_OBJECT` symbols in its `.nv.global`
//! (zero-initialized) and `.nv.global.init` (initialized) sections. A fat
//! binary is a sequence of containers (magic `0xBA55ED50`), each a 16-byte
//! header and entries of PTX or ELF; compressed entries are skipped, so a
//! fat binary of compressed cubins reports no globals (`fatbinary` compresses
//! PTX by default, not cubins).

use object::elf;
use object::read::elf::{ElfFile64, FileHeader};
use object::{Endianness, Object, ObjectSection, ObjectSymbol};

use reprise_core::image::{EM_CUDA, ImageKind, sniff};

/// Names of the device globals a cubin defines; none when `image` is not a
/// 64-bit little-endian CUDA ELF file.
pub fn elf_globals(image: &[u8]) -> Vec<String> {
    let Ok(file) = ElfFile64::<Endianness>::parse(image) else {
        return Vec::new();
    };
    if file.elf_header().e_machine(file.endian()).0 != EM_CUDA {
        return Vec::new();
    }
    let mut names = Vec::new();
    for sym in file.symbols() {
        if sym.elf_symbol().st_type() != elf::STT_OBJECT {
            continue;
        }
        let in_globals = sym
            .section_index()
            .and_then(|i| file.section_by_index(i).ok())
            .and_then(|s| s.name().ok())
            .is_some_and(|n| n == ".nv.global" || n.starts_with(".nv.global."));
        if let (true, Ok(name)) = (in_globals, sym.name())
            && !name.is_empty()
        {
            names.push(name.to_owned());
        }
    }
    names
}

/// Names of the kernels a cubin defines (global `STT_FUNC` symbols with a
/// `.text.NAME` section of their own); none when `image` is not a 64-bit
/// little-endian CUDA ELF file.
pub fn elf_kernels(image: &[u8]) -> Vec<String> {
    let Ok(file) = ElfFile64::<Endianness>::parse(image) else {
        return Vec::new();
    };
    if file.elf_header().e_machine(file.endian()).0 != EM_CUDA {
        return Vec::new();
    }
    file.symbols()
        .filter(|sym| sym.elf_symbol().st_type() == elf::STT_FUNC && sym.is_global())
        .filter_map(|sym| {
            let name = sym.name().ok()?;
            let section = file.section_by_index(sym.section_index()?).ok()?;
            (section.name().ok()? == format!(".text.{name}")).then(|| name.to_owned())
        })
        .collect()
}

const FATBIN_MAGIC: u32 = 0xBA55_ED50;
const FATBIN_HEADER: usize = 16;
const ENTRY_MIN: usize = 32;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The payloads of every entry of every container in a fat binary, in order;
/// stops at the first malformed header.
pub fn fatbin_entries(image: &[u8]) -> Vec<&[u8]> {
    fatbin_entry_list(image)
        .into_iter()
        .map(|e| e.payload)
        .collect()
}

/// One entry of a fat binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FatbinEntry<'a> {
    /// 1: PTX, 2: cubin (ELF).
    pub kind: u16,
    /// The SM architecture it is for (90 for sm_90).
    pub arch: u32,
    /// The payload as stored (possibly compressed).
    pub payload: &'a [u8],
}

/// Every entry of every container in a fat binary, in order; stops at the
/// first malformed header.
pub fn fatbin_entry_list(image: &[u8]) -> Vec<FatbinEntry<'_>> {
    let mut out = Vec::new();
    let mut rest = image;
    while u32_at(rest, 0) == Some(FATBIN_MAGIC) {
        let Some((header, body)) = container(rest) else {
            break;
        };
        let mut entries = body;
        while entries.len() >= ENTRY_MIN {
            // kind u16, version u16, header size u32, padded payload size u64,
            // stored (possibly compressed) payload size u32, ...
            let (Some(hsize), Some(padded), Some(size)) =
                (u32_at(entries, 4), u64_at(entries, 8), u32_at(entries, 16))
            else {
                break;
            };
            let hsize = hsize as usize;
            let Some(next) = usize::try_from(padded)
                .ok()
                .and_then(|p| hsize.checked_add(p))
                .filter(|&n| hsize >= ENTRY_MIN && n <= entries.len())
            else {
                break;
            };
            // An uncompressed entry may leave the stored size 0: then the
            // padded size is all there is (PTX is NUL-padded, ELF ignores
            // the tail).
            let padded = next - hsize;
            let payload_len = match size as usize {
                0 => padded,
                n => n.min(padded),
            };
            out.push(FatbinEntry {
                kind: u16_at(entries, 0).unwrap_or(0),
                // kind, version, header size, padded size, stored size,
                // reserved, minor and major version come first.
                arch: u32_at(entries, 28).unwrap_or(0),
                payload: &entries[hsize..hsize + payload_len],
            });
            entries = &entries[next..];
        }
        rest = &rest[header..];
    }
    out
}

/// Splits one container off the front of `image`: its total length and its
/// entries.
fn container(image: &[u8]) -> Option<(usize, &[u8])> {
    let hsize = usize::from(u16_at(image, 6)?).max(FATBIN_HEADER);
    let fat = usize::try_from(u64_at(image, 8)?).ok()?;
    let end = hsize.checked_add(fat)?;
    Some((end, image.get(hsize..end)?))
}

/// Names of the device globals of the PTX and uncompressed cubins inside a
/// fat binary, each once.
pub fn fatbin_globals(image: &[u8]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for payload in fatbin_entries(image) {
        let found = match sniff(payload) {
            ImageKind::Elf { .. } => elf_globals(payload),
            ImageKind::Ptx => {
                let text = payload.split(|&b| b == 0).next().unwrap_or_default();
                crate::ptx::globals(&String::from_utf8_lossy(text))
                    .into_iter()
                    .map(|g| g.name)
                    .collect()
            }
            _ => Vec::new(),
        };
        for n in found {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    names
}

/// Whether a fat binary has entries but none whose globals can be read:
/// every entry is compressed (or otherwise neither PTX nor an ELF file), so
/// [`fatbin_globals`] finds nothing even where the image has globals.
pub fn fatbin_globals_unreadable(image: &[u8]) -> bool {
    let entries = fatbin_entries(image);
    !entries.is_empty()
        && entries
            .iter()
            .all(|p| !matches!(sniff(p), ImageKind::Elf { .. } | ImageKind::Ptx))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal cubin-like ELF: sections `.nv.global` (NOBITS),
    /// `.nv.global.init`, `.nv.constant0.k` and `.text.k`, and symbols
    /// `launches`, `bias` (globals), `konst` (a constant) and `k` (a function).
    pub(crate) fn cubin() -> Vec<u8> {
        let shstr = b"\0.nv.global\0.nv.global.init\0.nv.constant0.k\0.text.k\0.symtab\0.strtab\0.shstrtab\0";
        let name_at = |s: &str| {
            let pat = [s.as_bytes(), b"\0"].concat();
            shstr.windows(pat.len()).position(|w| w == pat).unwrap() as u32
        };
        let strtab = b"\0launches\0bias\0konst\0k\0";
        // (name, info, shndx, size)
        let syms: [(u32, u8, u16, u64); 5] = [
            (0, 0, 0, 0),
            (1, 0x11, 1, 4),   // launches: GLOBAL OBJECT in .nv.global
            (10, 0x11, 2, 4),  // bias: GLOBAL OBJECT in .nv.global.init
            (15, 0x11, 3, 8),  // konst: GLOBAL OBJECT in .nv.constant0.k
            (21, 0x12, 4, 16), // k: GLOBAL FUNC in .text.k
        ];
        let mut symtab = Vec::new();
        for (name, info, shndx, size) in syms {
            symtab.extend_from_slice(&name.to_le_bytes());
            symtab.push(info);
            symtab.push(0);
            symtab.extend_from_slice(&shndx.to_le_bytes());
            symtab.extend_from_slice(&0u64.to_le_bytes());
            symtab.extend_from_slice(&size.to_le_bytes());
        }
        let mut data = vec![0u8; 64];
        let place = |bytes: &[u8], data: &mut Vec<u8>| {
            while !data.len().is_multiple_of(8) {
                data.push(0);
            }
            let at = data.len() as u64;
            data.extend_from_slice(bytes);
            (at, bytes.len() as u64)
        };
        let init = place(&[0, 0, 0, 0x3f], &mut data);
        let konst = place(&[0; 8], &mut data);
        let text = place(&[0; 16], &mut data);
        let sym = place(&symtab, &mut data);
        let str_ = place(strtab, &mut data);
        let shs = place(shstr, &mut data);
        while !data.len().is_multiple_of(8) {
            data.push(0);
        }
        let shoff = data.len() as u64;
        let mut header = |name: &str, ty: u32, (off, size): (u64, u64), link_info: [u32; 2]| {
            let name = if name.is_empty() { 0 } else { name_at(name) };
            let entsize: u64 = if ty == 2 { 24 } else { 0 };
            data.extend_from_slice(&name.to_le_bytes());
            data.extend_from_slice(&ty.to_le_bytes());
            data.extend_from_slice(&0u64.to_le_bytes()); // flags
            data.extend_from_slice(&0u64.to_le_bytes()); // addr
            data.extend_from_slice(&off.to_le_bytes());
            data.extend_from_slice(&size.to_le_bytes());
            data.extend_from_slice(&link_info[0].to_le_bytes());
            data.extend_from_slice(&link_info[1].to_le_bytes());
            data.extend_from_slice(&8u64.to_le_bytes()); // addralign
            data.extend_from_slice(&entsize.to_le_bytes());
        };
        header("", 0, (0, 0), [0, 0]);
        header(".nv.global", 8, (init.0, 4), [0, 0]); // NOBITS
        header(".nv.global.init", 1, init, [0, 0]);
        header(".nv.constant0.k", 1, konst, [0, 0]);
        header(".text.k", 1, text, [0, 0]);
        header(".symtab", 2, sym, [6, 1]); // strings in 6, first global 1
        header(".strtab", 3, str_, [0, 0]);
        header(".shstrtab", 3, shs, [0, 0]);
        let h = &mut data[..64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 2; // 64-bit
        h[5] = 1; // little-endian
        h[6] = 1; // version
        h[16..18].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        h[18..20].copy_from_slice(&EM_CUDA.to_le_bytes());
        h[20..24].copy_from_slice(&1u32.to_le_bytes());
        h[40..48].copy_from_slice(&shoff.to_le_bytes());
        h[52..54].copy_from_slice(&64u16.to_le_bytes()); // ehsize
        h[58..60].copy_from_slice(&64u16.to_le_bytes()); // shentsize
        h[60..62].copy_from_slice(&8u16.to_le_bytes()); // shnum
        h[62..64].copy_from_slice(&7u16.to_le_bytes()); // shstrndx
        data
    }

    /// A fat binary of `payloads` (kind 1 = PTX, 2 = ELF), in one container.
    pub(crate) fn fatbin(payloads: &[(u16, &[u8])]) -> Vec<u8> {
        let mut body = Vec::new();
        for (kind, p) in payloads {
            let padded = p.len().next_multiple_of(8);
            let mut e = [0u8; 64];
            e[..2].copy_from_slice(&kind.to_le_bytes());
            e[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
            e[4..8].copy_from_slice(&64u32.to_le_bytes());
            e[8..16].copy_from_slice(&(padded as u64).to_le_bytes());
            e[16..20].copy_from_slice(&(p.len() as u32).to_le_bytes());
            body.extend_from_slice(&e);
            body.extend_from_slice(p);
            body.resize(body.len() + padded - p.len(), 0);
        }
        let mut out = Vec::new();
        out.extend_from_slice(&FATBIN_MAGIC.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&16u16.to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    #[test]
    fn cubin_globals_are_data_symbols_in_nv_global() {
        let c = cubin();
        assert_eq!(
            sniff(&c),
            ImageKind::Elf {
                machine: EM_CUDA,
                elf_type: 2
            }
        );
        assert_eq!(elf_globals(&c), ["launches", "bias"]);
        // Not a CUDA ELF.
        let mut other = c.clone();
        other[18] = 62;
        assert!(elf_globals(&other).is_empty());
        assert!(elf_globals(&c[..100]).is_empty());
        assert!(elf_globals(b"garbage").is_empty());
    }

    fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    /// Built from `saxpy.ptx` by ptxas and fatbinary of CUDA 13.0.
    #[test]
    fn real_cubin_and_fatbin() {
        let cubin = fixture("saxpy.sm_90.cubin");
        assert!(matches!(
            sniff(&cubin),
            ImageKind::Elf {
                machine: EM_CUDA,
                ..
            }
        ));
        let mut names = elf_globals(&cubin);
        names.sort();
        assert_eq!(names, ["bias", "launches"]);
        assert_eq!(elf_kernels(&cubin), ["saxpy"]);
        assert!(elf_kernels(b"\x7fELF not really").is_empty());
        let fatbin = fixture("saxpy.sm_90.fatbin");
        assert_eq!(sniff(&fatbin), ImageKind::Fatbin);
        let entries = fatbin_entries(&fatbin);
        assert_eq!(entries.len(), 2, "an sm_90 cubin and compressed PTX");
        assert_eq!(entries[0], &cubin[..]);
        let mut names = fatbin_globals(&fatbin);
        names.sort();
        assert_eq!(names, ["bias", "launches"]);
    }

    #[test]
    fn fatbin_globals_from_ptx_and_cubin_entries() {
        let ptx =
            b".version 7.0\n.visible .global .align 4 .u32 launches;\n.global .f32 only_ptx;\n\0";
        let zstd = [0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3];
        let f = fatbin(&[(1, ptx), (2, &cubin()), (2, &zstd)]);
        assert_eq!(sniff(&f), ImageKind::Fatbin);
        assert_eq!(fatbin_entries(&f).len(), 3);
        assert_eq!(fatbin_globals(&f), ["launches", "only_ptx", "bias"]);
        // Two containers back to back.
        let two = [
            f.clone(),
            fatbin(&[(1, b".version 7.0\n.global .u8 second;")]),
        ]
        .concat();
        assert_eq!(
            fatbin_globals(&two),
            ["launches", "only_ptx", "bias", "second"]
        );
        assert!(!fatbin_globals_unreadable(&f), "two entries are readable");
        // Only compressed entries: nothing can be listed, and that is known.
        let compressed = fatbin(&[(2, &zstd), (1, &zstd)]);
        assert!(fatbin_globals(&compressed).is_empty());
        assert!(fatbin_globals_unreadable(&compressed));
        assert!(!fatbin_globals_unreadable(&fatbin(&[])), "no entries");
        assert!(!fatbin_globals_unreadable(&fixture("saxpy.sm_90.fatbin")));
        // Truncated: whatever parses before the cut.
        assert!(fatbin_globals(&f[..40]).is_empty());
        assert!(fatbin_entries(&f[..f.len() - 1]).is_empty());
    }
}
