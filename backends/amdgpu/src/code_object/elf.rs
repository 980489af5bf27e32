//! The ELF64 little-endian structures of a code object: the header, the
//! section and program headers, notes and symbols. Every offset and size
//! read from the file is checked against the file before it is used.
//!
//! Layouts from the ELF specification (the gABI) and AMDGPUUsage.rst:
//! "ELF Header" (table "AMDGPU ELF Header": `EI_OSABI`
//! `ELFOSABI_AMDGPU_HSA` = 64, `EI_ABIVERSION` `ELFABIVERSION_AMDGPU_HSA_V3`
//! = 1 ... `_V6` = 4, `e_machine` `EM_AMDGPU` = 224) and "Note Records"
//! (table "AMDGPU Code Object V3 and Above Note Records": name "AMDGPU",
//! type `NT_AMDGPU_METADATA` = 32, "Metadata in Message Pack binary
//! format"); the values as LLVM's `llvm/include/llvm/BinaryFormat/ELF.h`
//! defines them.

use super::CodeObjectError;

/// `EM_AMDGPU`.
pub const EM_AMDGPU: u16 = 224;
/// `ELFOSABI_AMDGPU_HSA`.
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `NT_AMDGPU_METADATA`.
pub const NT_AMDGPU_METADATA: u32 = 32;

/// `SHT_SYMTAB`.
const SHT_SYMTAB: u32 = 2;
/// `SHT_STRTAB`.
const SHT_STRTAB: u32 = 3;
/// `SHT_NOTE`.
const SHT_NOTE: u32 = 7;
/// `SHT_NOBITS`.
const SHT_NOBITS: u32 = 8;
/// `SHT_DYNSYM`.
const SHT_DYNSYM: u32 = 11;
/// `PT_NOTE`.
const PT_NOTE: u32 = 4;
/// `SHN_LORESERVE`: section indexes from here on are special.
const SHN_LORESERVE: u16 = 0xff00;

/// The ELF64 header's size.
const EHDR_SIZE: u64 = 64;
/// An ELF64 section header's size.
const SHDR_SIZE: u64 = 64;
/// An ELF64 program header's size.
const PHDR_SIZE: u64 = 56;
/// An ELF64 symbol's size.
const SYM_SIZE: u64 = 24;

/// `bytes[offset..offset + len]`, or why not.
pub fn slice<'a>(
    bytes: &'a [u8],
    offset: u64,
    len: u64,
    what: &'static str,
) -> Result<&'a [u8], CodeObjectError> {
    let truncated = || CodeObjectError::Truncated {
        what,
        offset,
        needed: len,
        len: bytes.len() as u64,
    };
    let end = offset.checked_add(len).ok_or_else(truncated)?;
    let (Ok(start), Ok(end)) = (usize::try_from(offset), usize::try_from(end)) else {
        return Err(truncated());
    };
    bytes.get(start..end).ok_or_else(truncated)
}

/// The little-endian `u16` at `at` in `b` (0 past the end: callers check
/// lengths first).
fn u16_at(b: &[u8], at: usize) -> u16 {
    let mut out = [0; 2];
    if let Some(s) = b.get(at..at + 2) {
        out.copy_from_slice(s);
    }
    u16::from_le_bytes(out)
}

/// The little-endian `u32` at `at` in `b` (0 past the end).
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut out = [0; 4];
    if let Some(s) = b.get(at..at + 4) {
        out.copy_from_slice(s);
    }
    u32::from_le_bytes(out)
}

/// The little-endian `u64` at `at` in `b` (0 past the end).
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut out = [0; 8];
    if let Some(s) = b.get(at..at + 8) {
        out.copy_from_slice(s);
    }
    u64::from_le_bytes(out)
}

/// A section header, the fields used.
#[derive(Debug, Clone, Copy)]
pub struct Section {
    /// `sh_type`.
    pub kind: u32,
    /// `sh_addr`.
    pub addr: u64,
    /// `sh_offset`.
    pub offset: u64,
    /// `sh_size`.
    pub size: u64,
    /// `sh_link`.
    pub link: u32,
    /// `sh_addralign`.
    pub align: u64,
    /// `sh_entsize`.
    pub entsize: u64,
    /// Where the header is in the file.
    pub header_at: u64,
}

/// A program header, the fields used.
#[derive(Debug, Clone, Copy)]
struct Segment {
    /// `p_type`.
    kind: u32,
    /// `p_offset`.
    offset: u64,
    /// `p_filesz`.
    size: u64,
    /// `p_align`.
    align: u64,
}

/// A symbol of `.symtab` or `.dynsym`.
#[derive(Debug, Clone, Copy)]
pub struct Symbol<'a> {
    /// Its name.
    pub name: &'a str,
    /// `ELF64_ST_TYPE(st_info)`.
    pub kind: u8,
    /// `ELF64_ST_BIND(st_info)`.
    pub bind: u8,
    /// `st_shndx`.
    pub shndx: u16,
    /// `st_value`.
    pub value: u64,
    /// `st_size`.
    pub size: u64,
}

/// An ELF64 little-endian file, its header checked.
pub struct Elf<'a> {
    /// The whole file.
    pub bytes: &'a [u8],
    /// `EI_OSABI`.
    pub os_abi: u8,
    /// `EI_ABIVERSION`.
    pub abi_version: u8,
    /// `e_machine`.
    pub machine: u16,
    /// `e_flags`.
    pub flags: u32,
    /// The section headers (none when `e_shoff` is 0).
    pub sections: Vec<Section>,
    /// The program headers (none when `e_phoff` is 0).
    segments: Vec<Segment>,
}

impl<'a> Elf<'a> {
    /// Reads the header and the section and program header tables.
    pub fn read(bytes: &'a [u8]) -> Result<Self, CodeObjectError> {
        if bytes.get(..4) != Some(b"\x7fELF".as_slice()) {
            return Err(CodeObjectError::NotElf);
        }
        let header = slice(bytes, 0, EHDR_SIZE, "ELF header")?;
        if header[4] != 2 {
            return Err(CodeObjectError::NotElf64 { class: header[4] });
        }
        if header[5] != 1 {
            return Err(CodeObjectError::NotLittleEndian { data: header[5] });
        }
        let mut elf = Self {
            bytes,
            os_abi: header[7],
            abi_version: header[8],
            machine: u16_at(header, 18),
            flags: u32_at(header, 48),
            sections: Vec::new(),
            segments: Vec::new(),
        };
        let phoff = u64_at(header, 32);
        let shoff = u64_at(header, 40);
        let phentsize = u64::from(u16_at(header, 54));
        let phnum = u64::from(u16_at(header, 56));
        let shentsize = u64::from(u16_at(header, 58));
        let mut shnum = u64::from(u16_at(header, 60));
        if shoff != 0 {
            if shentsize != SHDR_SIZE {
                return Err(CodeObjectError::Malformed {
                    what: "ELF header",
                    offset: 58,
                    reason: "e_shentsize is not 64",
                });
            }
            if shnum == 0 {
                // More sections than e_shnum holds: the count is section
                // 0's sh_size (gABI, "Sections").
                let first = slice(bytes, shoff, SHDR_SIZE, "section header table")?;
                shnum = u64_at(first, 32);
            }
            let table = slice(
                bytes,
                shoff,
                shnum.saturating_mul(SHDR_SIZE),
                "section header table",
            )?;
            elf.sections = table
                .chunks_exact(SHDR_SIZE as usize)
                .enumerate()
                .map(|(i, h)| Section {
                    kind: u32_at(h, 4),
                    addr: u64_at(h, 16),
                    offset: u64_at(h, 24),
                    size: u64_at(h, 32),
                    link: u32_at(h, 40),
                    align: u64_at(h, 48),
                    entsize: u64_at(h, 56),
                    header_at: shoff + i as u64 * SHDR_SIZE,
                })
                .collect();
        }
        if phoff != 0 && phnum != 0 {
            if phentsize != PHDR_SIZE {
                return Err(CodeObjectError::Malformed {
                    what: "ELF header",
                    offset: 54,
                    reason: "e_phentsize is not 56",
                });
            }
            let table = slice(bytes, phoff, phnum * PHDR_SIZE, "program header table")?;
            elf.segments = table
                .chunks_exact(PHDR_SIZE as usize)
                .map(|h| Segment {
                    kind: u32_at(h, 0),
                    offset: u64_at(h, 8),
                    size: u64_at(h, 32),
                    align: u64_at(h, 48),
                })
                .collect();
        }
        Ok(elf)
    }

    /// The bytes of `section` in the file (none for `SHT_NOBITS`).
    pub fn section_data(&self, section: &Section) -> Result<&'a [u8], CodeObjectError> {
        if section.kind == SHT_NOBITS {
            return Ok(&[]);
        }
        slice(self.bytes, section.offset, section.size, "section")
    }

    /// Every note's descriptor of owner "AMDGPU" and type `kind`, with its
    /// offset in the file: from the `SHT_NOTE` sections, or from the
    /// `PT_NOTE` segments when there are no sections. Each distinct byte
    /// range is read once (headers that repeat one add nothing), and the
    /// ranges read may add up to no more than the file's length.
    pub fn amdgpu_notes(&self, kind: u32) -> Result<Vec<(u64, &'a [u8])>, CodeObjectError> {
        let mut out = Vec::new();
        let mut read = Ranges::new("note sections or segments", self.bytes.len());
        if self.sections.is_empty() {
            for segment in self.segments.iter().filter(|s| s.kind == PT_NOTE) {
                let data = slice(self.bytes, segment.offset, segment.size, "note segment")?;
                if read.first_time(segment.offset, segment.size)? {
                    notes(data, segment.offset, segment.align, kind, &mut out)?;
                }
            }
        } else {
            for section in self.sections.iter().filter(|s| s.kind == SHT_NOTE) {
                let data = self.section_data(section)?;
                if read.first_time(section.offset, data.len() as u64)? {
                    notes(data, section.offset, section.align, kind, &mut out)?;
                }
            }
        }
        Ok(out)
    }

    /// The symbols of every `SHT_DYNSYM` section, then of every
    /// `SHT_SYMTAB` one, each table's null symbol left out.
    ///
    /// Bounded by the file: a table that another header already named
    /// (the same bytes, with the same string table) is read once; the
    /// tables read and their distinct string tables may add up to no more
    /// than the file's length ([`CodeObjectError::Overlapping`]: they would
    /// have to overlap), and there may be at most [`MAX_SYMBOL_TABLES`]
    /// distinct ones ([`CodeObjectError::TooMany`]). So at most one symbol
    /// per 24 bytes of the file is returned, and each name is found and
    /// checked in time that does not grow with the number of symbols.
    pub fn symbols(&self) -> Result<Vec<Symbol<'a>>, CodeObjectError> {
        let mut out = Vec::new();
        let mut budget = Ranges::new("symbol tables and their string tables", self.bytes.len());
        let mut tables = std::collections::HashSet::new();
        let mut strtabs: std::collections::HashMap<(u64, u64), Strings<'a>> =
            std::collections::HashMap::new();
        for kind in [SHT_DYNSYM, SHT_SYMTAB] {
            for section in self.sections.iter().filter(|s| s.kind == kind) {
                let malformed = |reason| CodeObjectError::Malformed {
                    what: "symbol table section header",
                    offset: section.header_at,
                    reason,
                };
                if section.entsize != SYM_SIZE {
                    return Err(malformed("sh_entsize is not 24"));
                }
                if !section.size.is_multiple_of(SYM_SIZE) {
                    return Err(malformed("sh_size is not a whole number of symbols"));
                }
                let strtab = usize::try_from(section.link)
                    .ok()
                    .and_then(|i| self.sections.get(i))
                    .filter(|s| s.kind == SHT_STRTAB)
                    .ok_or_else(|| malformed("sh_link names no string table"))?;
                let strings = self.section_data(strtab)?;
                let table = self.section_data(section)?;
                let strings_range = (strtab.offset, strings.len() as u64);
                if !tables.insert((section.offset, table.len() as u64, strings_range)) {
                    continue;
                }
                if tables.len() > MAX_SYMBOL_TABLES {
                    return Err(CodeObjectError::TooMany {
                        what: "distinct symbol tables",
                        limit: MAX_SYMBOL_TABLES as u64,
                    });
                }
                // Every table read counts; each string table once.
                budget.add(table.len() as u64)?;
                let names = match strtabs.entry(strings_range) {
                    std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::hash_map::Entry::Vacant(e) => {
                        budget.add(strings_range.1)?;
                        e.insert(Strings::new(strings))
                    }
                };
                table_symbols(section.offset, table, names, &mut out)?;
            }
        }
        Ok(out)
    }

    /// The `len` bytes at `value` in the image, for a symbol defined in
    /// section `shndx`: where they are in the file, and the bytes. `None`
    /// when the symbol has no section of its own or its section takes no
    /// room in the file (`SHT_NOBITS`); an error when the bytes are not
    /// all inside the section and the file.
    pub fn symbol_bytes(
        &self,
        shndx: u16,
        value: u64,
        len: u64,
        what: &'static str,
    ) -> Result<Option<(u64, &'a [u8])>, CodeObjectError> {
        if shndx == 0 || shndx >= SHN_LORESERVE {
            return Ok(None);
        }
        let Some(section) = self.sections.get(usize::from(shndx)) else {
            return Err(CodeObjectError::Malformed {
                what,
                offset: 0,
                reason: "its symbol's section index names no section",
            });
        };
        if section.kind == SHT_NOBITS {
            return Ok(None);
        }
        let inside = value.checked_sub(section.addr).filter(|start| {
            start
                .checked_add(len)
                .is_some_and(|end| end <= section.size)
        });
        let Some(start) = inside else {
            return Err(CodeObjectError::Malformed {
                what,
                offset: section.header_at,
                reason: "its symbol's value is outside its section",
            });
        };
        let offset = section
            .offset
            .checked_add(start)
            .ok_or(CodeObjectError::Truncated {
                what,
                offset: section.offset,
                needed: len,
                len: self.bytes.len() as u64,
            })?;
        Ok(Some((offset, slice(self.bytes, offset, len, what)?)))
    }
}

/// Appends to `out` the symbols of `table` (at file offset `at`), its
/// null symbol left out, their names from `names`.
fn table_symbols<'a>(
    at: u64,
    table: &'a [u8],
    names: &mut Strings<'a>,
    out: &mut Vec<Symbol<'a>>,
) -> Result<(), CodeObjectError> {
    out.reserve((table.len() / SYM_SIZE as usize).saturating_sub(1));
    for (i, entry) in table.chunks_exact(SYM_SIZE as usize).enumerate().skip(1) {
        let offset = at + i as u64 * SYM_SIZE;
        let name = names
            .get(u32_at(entry, 0))
            .ok_or(CodeObjectError::BadSymbolName { offset })?;
        let info = entry[4];
        out.push(Symbol {
            name,
            kind: info & 0xf,
            bind: info >> 4,
            shndx: u16_at(entry, 6),
            value: u64_at(entry, 8),
            size: u64_at(entry, 16),
        });
    }
    Ok(())
}

/// How many distinct symbol tables a code object may have. LLVM writes
/// two (`.dynsym` and `.symtab`).
pub const MAX_SYMBOL_TABLES: usize = 64;

/// The bytes one kind of table was read from: each distinct range once,
/// all of them together no more than the file's length.
struct Ranges {
    what: &'static str,
    file_len: u64,
    total: u64,
    seen: std::collections::HashSet<(u64, u64)>,
}

impl Ranges {
    fn new(what: &'static str, file_len: usize) -> Self {
        Self {
            what,
            file_len: file_len as u64,
            total: 0,
            seen: std::collections::HashSet::new(),
        }
    }

    /// Whether the `len` bytes at `offset` are read for the first time
    /// (then counted); an error when they take what was read past the
    /// file's length.
    fn first_time(&mut self, offset: u64, len: u64) -> Result<bool, CodeObjectError> {
        if !self.seen.insert((offset, len)) {
            return Ok(false);
        }
        self.add(len)?;
        Ok(true)
    }

    /// Counts `len` more bytes read.
    fn add(&mut self, len: u64) -> Result<(), CodeObjectError> {
        self.total = self.total.saturating_add(len);
        if self.total > self.file_len {
            return Err(CodeObjectError::Overlapping {
                what: self.what,
                read: self.total,
                len: self.file_len,
            });
        }
        Ok(())
    }
}

/// A string table with its NULs found once, so that finding and checking a
/// name takes time that does not grow with how many names share its bytes
/// (a name is the NUL-terminated UTF-8 string at any offset of the table,
/// and names share tails: thousands of symbols named from one long string
/// cost what one does).
pub struct Strings<'a> {
    bytes: &'a [u8],
    /// Where the NULs are, in order.
    nuls: Vec<usize>,
    /// For each string (up to a NUL, by the NUL's index in `nuls`) looked
    /// up so far: where its longest UTF-8 tail starts, and that tail.
    tails: std::collections::HashMap<usize, (usize, &'a str)>,
}

impl<'a> Strings<'a> {
    /// The table `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            nuls: bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == 0)
                .map(|(i, _)| i)
                .collect(),
            tails: std::collections::HashMap::new(),
        }
    }

    /// The NUL-terminated UTF-8 string at `at`, if there is one.
    pub fn get(&mut self, at: u32) -> Option<&'a str> {
        let at = usize::try_from(at).ok()?;
        let index = self.nuls.partition_point(|&n| n < at);
        let end = *self.nuls.get(index)?;
        let start = index.checked_sub(1).map_or(0, |i| self.nuls[i] + 1);
        let bytes = self.bytes;
        let (from, tail) = *self
            .tails
            .entry(index)
            .or_insert_with(|| utf8_tail(bytes, start, end));
        // A tail of `bytes[start..end]` is UTF-8 exactly when it starts
        // inside the longest UTF-8 tail, on a character boundary.
        tail.get(at.checked_sub(from)?..)
    }
}

/// The longest tail of `bytes[start..end]` that is UTF-8, and where it
/// starts: right after the last invalid sequence, since a tail starting
/// before that holds the sequence (or starts inside it, on a continuation
/// byte). Takes time linear in `end - start`.
fn utf8_tail(bytes: &[u8], start: usize, end: usize) -> (usize, &str) {
    let mut pos = start;
    loop {
        match core::str::from_utf8(&bytes[pos..end]) {
            Ok(tail) => return (pos, tail),
            Err(e) => {
                let after = pos + e.valid_up_to();
                pos = e.error_len().map_or(end, |n| after + n);
            }
        }
    }
}

/// Rounds `n` up to a multiple of `align` (a power of two), saturating.
fn align_up(n: usize, align: usize) -> usize {
    n.checked_add(align - 1)
        .map_or(usize::MAX, |n| n & !(align - 1))
}

/// Appends to `out` the descriptors, with their file offsets, of the notes
/// in `data` (at file offset `base`) owned by "AMDGPU" of type `kind`.
/// Notes are aligned to 4 bytes, or to 8 when their section or segment is.
fn notes<'a>(
    data: &'a [u8],
    base: u64,
    align: u64,
    kind: u32,
    out: &mut Vec<(u64, &'a [u8])>,
) -> Result<(), CodeObjectError> {
    let align = if align == 8 { 8 } else { 4 };
    let mut pos = 0usize;
    while pos < data.len() {
        let at = base + pos as u64;
        let truncated = |needed: u64| CodeObjectError::Truncated {
            what: "note",
            offset: at,
            needed,
            len: base + data.len() as u64,
        };
        let Some(header) = data.get(pos..pos + 12) else {
            return Err(truncated(12));
        };
        let namesz = u32_at(header, 0) as usize;
        let descsz = u32_at(header, 4) as usize;
        let note_kind = u32_at(header, 8);
        let name_start = pos + 12;
        let name_end = name_start.checked_add(namesz);
        let desc_start = name_end.map(|e| align_up(e, align));
        let desc_end = desc_start.and_then(|s| s.checked_add(descsz));
        let (Some(name_end), Some(desc_start), Some(desc_end)) = (name_end, desc_start, desc_end)
        else {
            return Err(truncated(u64::MAX));
        };
        let (Some(name), Some(desc)) = (
            data.get(name_start..name_end),
            data.get(desc_start..desc_end),
        ) else {
            return Err(truncated((desc_end - pos) as u64));
        };
        let owner = name.split(|&b| b == 0).next().unwrap_or(name);
        if owner == b"AMDGPU" && note_kind == kind {
            out.push((base + desc_start as u64, desc));
        }
        pos = align_up(desc_end, align);
    }
    Ok(())
}
