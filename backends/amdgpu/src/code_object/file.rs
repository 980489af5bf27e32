//! The ELF64 little-endian file of a code object, read through the
//! `object` crate (the ELF reader of every backend): the header, the
//! section and program header tables, notes and symbols.
//!
//! `object` checks that every table, section, segment and note it hands
//! out lies inside the bytes it was given (offset plus size, without
//! overflow), and never allocates for them. What it leaves to its caller,
//! this module adds: [`CodeObjectError`]s that say what and where; a
//! table's or note's byte range that several headers name is read once,
//! and the ranges read add up to no more than the file
//! ([`CodeObjectError::Overlapping`]); at most [`MAX_SYMBOL_TABLES`]
//! distinct symbol tables; and symbol names found in time that does not
//! grow with how many names share one string ([`Strings`]: `object`'s
//! string table scans from each name's offset to its NUL).
//!
//! Layouts and values from the ELF specification (the gABI) and
//! AMDGPUUsage.rst: "ELF Header" (table "AMDGPU ELF Header": `EI_OSABI`
//! `ELFOSABI_AMDGPU_HSA` = 64, `EI_ABIVERSION` `ELFABIVERSION_AMDGPU_HSA_V3`
//! = 1 ... `_V6` = 4, `e_machine` `EM_AMDGPU` = 224) and "Note Records"
//! (table "AMDGPU Code Object V3 and Above Note Records": name "AMDGPU",
//! type `NT_AMDGPU_METADATA` = 32, "Metadata in Message Pack binary
//! format"), as LLVM's `llvm/include/llvm/BinaryFormat/ELF.h` defines them.

use object::LittleEndian as LE;
use object::ReadRef;
use object::elf::{self, FileHeader64, ProgramHeader64, SectionHeader64, Sym64};
use object::read::elf::{FileHeader, NoteIterator, ProgramHeader, SectionHeader, Sym};

use super::CodeObjectError;

/// The ELF64 little-endian header, as `object` lays it out.
type Header = FileHeader64<LE>;
/// A section header.
type Section = SectionHeader64<LE>;
/// A program header.
type Segment = ProgramHeader64<LE>;

/// `ELFOSABI_AMDGPU_HSA` (`object` names no AMDGPU OS ABI).
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `NT_AMDGPU_METADATA` (nor this note type).
pub const NT_AMDGPU_METADATA: elf::NoteType = elf::NoteType(32);

/// The ELF64 header's size.
const EHDR_SIZE: u64 = size_of::<Header>() as u64;
/// An ELF64 section header's size.
const SHDR_SIZE: u64 = size_of::<Section>() as u64;
/// An ELF64 program header's size.
const PHDR_SIZE: u64 = size_of::<Segment>() as u64;
/// An ELF64 symbol's size.
const SYM_SIZE: u64 = size_of::<Sym64<LE>>() as u64;
/// A note header's size (`namesz`, `descsz`, `type`).
const NHDR_SIZE: usize = size_of::<elf::NoteHeader64<LE>>();

/// A `Truncated` error: `needed` bytes at `offset` of the `len` there are.
fn truncated(what: &'static str, offset: u64, needed: u64, len: usize) -> CodeObjectError {
    CodeObjectError::Truncated {
        what,
        offset,
        needed,
        len: len as u64,
    }
}

/// The `len` bytes at `offset` of `bytes`, or why not.
fn slice<'a>(
    bytes: &'a [u8],
    offset: u64,
    len: u64,
    what: &'static str,
) -> Result<&'a [u8], CodeObjectError> {
    // `object` hands out an empty slice for an empty range wherever it is;
    // a range that starts past the end is refused here all the same.
    if offset > bytes.len() as u64 {
        return Err(truncated(what, offset, len, bytes.len()));
    }
    bytes
        .read_bytes_at(offset, len)
        .map_err(|()| truncated(what, offset, len, bytes.len()))
}

/// The little-endian `u32` at `at` in `b` (0 past the end: callers check
/// lengths first).
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..)
        .and_then(|b| b.first_chunk::<4>())
        .map_or(0, |b| u32::from_le_bytes(*b))
}

/// A symbol of `.symtab` or `.dynsym`.
#[derive(Debug, Clone, Copy)]
pub struct Symbol<'a> {
    /// Its name.
    pub name: &'a str,
    /// `ELF64_ST_TYPE(st_info)`.
    pub kind: elf::SymbolType,
    /// `ELF64_ST_BIND(st_info)`.
    pub bind: elf::SymbolBind,
    /// `st_shndx`.
    pub shndx: elf::SymbolSection,
    /// `st_value`.
    pub value: u64,
    /// `st_size`.
    pub size: u64,
}

/// An ELF64 little-endian file, its header and header tables checked.
pub struct Elf<'a> {
    /// The whole file.
    bytes: &'a [u8],
    /// `EI_OSABI`.
    pub os_abi: u8,
    /// `EI_ABIVERSION`.
    pub abi_version: u8,
    /// `e_machine`.
    pub machine: u16,
    /// `e_flags`.
    pub flags: u32,
    /// `e_shoff`: where the section headers are.
    shoff: u64,
    /// The section headers (none when `e_shoff` is 0).
    sections: &'a [Section],
    /// The program headers (none when `e_phoff` or `e_phnum` is 0).
    segments: &'a [Segment],
}

impl<'a> Elf<'a> {
    /// Reads the header and the section and program header tables.
    pub fn read(bytes: &'a [u8]) -> Result<Self, CodeObjectError> {
        if bytes.get(..4) != Some(elf::ELFMAG.as_slice()) {
            return Err(CodeObjectError::NotElf);
        }
        let header: &Header = bytes
            .read_at(0)
            .map_err(|()| truncated("ELF header", 0, EHDR_SIZE, bytes.len()))?;
        let ident = header.e_ident();
        if ident.class != elf::ELFCLASS64 {
            return Err(CodeObjectError::NotElf64 {
                class: ident.class.0,
            });
        }
        if ident.data != elf::ELFDATA2LSB {
            return Err(CodeObjectError::NotLittleEndian { data: ident.data.0 });
        }
        let shoff = header.e_shoff(LE);
        if shoff != 0 && u64::from(header.e_shentsize(LE)) != SHDR_SIZE {
            return Err(CodeObjectError::Malformed {
                what: "ELF header",
                offset: 58,
                reason: "e_shentsize is not 64",
            });
        }
        let sections = header.section_headers(LE, bytes).map_err(|_| {
            // What the table needs: `e_shnum` headers, or (when that is 0)
            // section 0, whose `sh_size` is then the count (gABI,
            // "Sections").
            let needed = match header.shnum(LE, bytes) {
                Ok(n) => u64::from(n) * SHDR_SIZE,
                Err(_) => match header.section_0(LE, bytes) {
                    Ok(Some(first)) => first.sh_size(LE).saturating_mul(SHDR_SIZE),
                    _ => SHDR_SIZE,
                },
            };
            truncated("section header table", shoff, needed, bytes.len())
        })?;
        let phoff = header.e_phoff(LE);
        if phoff != 0 && header.e_phnum(LE) != 0 && u64::from(header.e_phentsize(LE)) != PHDR_SIZE {
            return Err(CodeObjectError::Malformed {
                what: "ELF header",
                offset: 54,
                reason: "e_phentsize is not 56",
            });
        }
        let segments = header.program_headers(LE, bytes).map_err(|_| {
            let count = header.phnum(LE, bytes).unwrap_or(header.e_phnum(LE).into());
            let needed = u64::from(count) * PHDR_SIZE;
            truncated("program header table", phoff, needed, bytes.len())
        })?;
        Ok(Self {
            bytes,
            os_abi: ident.os_abi.0,
            abi_version: ident.abi_version,
            machine: header.e_machine(LE).0,
            flags: header.e_flags(LE).0,
            shoff,
            sections,
            segments,
        })
    }

    /// Where section header `index` is in the file.
    fn header_at(&self, index: usize) -> u64 {
        self.shoff + index as u64 * SHDR_SIZE
    }

    /// The bytes of `section` in the file (none for `SHT_NOBITS`).
    fn section_data(&self, section: &Section) -> Result<&'a [u8], CodeObjectError> {
        match section.file_range(LE) {
            None => Ok(&[]),
            Some((offset, size)) => slice(self.bytes, offset, size, "section"),
        }
    }

    /// Every note's descriptor of owner "AMDGPU" and type `kind`, with its
    /// offset in the file: from the `SHT_NOTE` sections, or from the
    /// `PT_NOTE` segments when there are no sections. Each distinct byte
    /// range is read once (headers that repeat one add nothing), and the
    /// ranges read may add up to no more than the file's length.
    pub fn amdgpu_notes(
        &self,
        kind: elf::NoteType,
    ) -> Result<Vec<(u64, &'a [u8])>, CodeObjectError> {
        let mut out = Vec::new();
        let mut read = Ranges::new("note sections or segments", self.bytes.len());
        if self.sections.is_empty() {
            for segment in self.segments {
                if segment.p_type(LE) != elf::PT_NOTE {
                    continue;
                }
                let (offset, size) = segment.file_range(LE);
                let data = slice(self.bytes, offset, size, "note segment")?;
                if read.first_time(offset, size)? {
                    notes(data, offset, segment.p_align(LE), kind, &mut out)?;
                }
            }
        } else {
            for section in self.sections {
                if section.sh_type(LE) != elf::SHT_NOTE {
                    continue;
                }
                let data = self.section_data(section)?;
                let offset = section.sh_offset(LE);
                if read.first_time(offset, data.len() as u64)? {
                    notes(data, offset, section.sh_addralign(LE), kind, &mut out)?;
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
        for kind in [elf::SHT_DYNSYM, elf::SHT_SYMTAB] {
            for (index, section) in self.sections.iter().enumerate() {
                if section.sh_type(LE) != kind {
                    continue;
                }
                let malformed = |reason| CodeObjectError::Malformed {
                    what: "symbol table section header",
                    offset: self.header_at(index),
                    reason,
                };
                if section.sh_entsize(LE) != SYM_SIZE {
                    return Err(malformed("sh_entsize is not 24"));
                }
                if !section.sh_size(LE).is_multiple_of(SYM_SIZE) {
                    return Err(malformed("sh_size is not a whole number of symbols"));
                }
                let strtab = usize::try_from(section.sh_link(LE))
                    .ok()
                    .and_then(|i| self.sections.get(i))
                    .filter(|s| s.sh_type(LE) == elf::SHT_STRTAB)
                    .ok_or_else(|| malformed("sh_link names no string table"))?;
                let strings = self.section_data(strtab)?;
                let table = self.section_data(section)?;
                let strings_range = (strtab.sh_offset(LE), strings.len() as u64);
                let at = section.sh_offset(LE);
                if !tables.insert((at, table.len() as u64, strings_range)) {
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
                let symbols: &[Sym64<LE>] = object::pod::slice_from_all_bytes(table)
                    .map_err(|()| malformed("sh_size is not a whole number of symbols"))?;
                table_symbols(at, symbols, names, &mut out)?;
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
        shndx: elf::SymbolSection,
        value: u64,
        len: u64,
        what: &'static str,
    ) -> Result<Option<(u64, &'a [u8])>, CodeObjectError> {
        let Some(index) = shndx.index() else {
            return Ok(None);
        };
        let index = usize::from(index);
        let Some(section) = self.sections.get(index) else {
            return Err(CodeObjectError::Malformed {
                what,
                offset: 0,
                reason: "its symbol's section index names no section",
            });
        };
        let Some((file_offset, size)) = section.file_range(LE) else {
            return Ok(None);
        };
        let inside = value
            .checked_sub(section.sh_addr(LE))
            .filter(|start| start.checked_add(len).is_some_and(|end| end <= size));
        let Some(start) = inside else {
            return Err(CodeObjectError::Malformed {
                what,
                offset: self.header_at(index),
                reason: "its symbol's value is outside its section",
            });
        };
        let offset = file_offset
            .checked_add(start)
            .ok_or_else(|| truncated(what, file_offset, len, self.bytes.len()))?;
        Ok(Some((offset, slice(self.bytes, offset, len, what)?)))
    }
}

/// Appends to `out` the symbols of `table` (at file offset `at`), its
/// null symbol left out, their names from `names`.
fn table_symbols<'a>(
    at: u64,
    table: &'a [Sym64<LE>],
    names: &mut Strings<'a>,
    out: &mut Vec<Symbol<'a>>,
) -> Result<(), CodeObjectError> {
    out.reserve(table.len().saturating_sub(1));
    for (i, sym) in table.iter().enumerate().skip(1) {
        let offset = at + i as u64 * SYM_SIZE;
        let name = names
            .get(sym.st_name(LE))
            .ok_or(CodeObjectError::BadSymbolName { offset })?;
        out.push(Symbol {
            name,
            kind: sym.st_type(),
            bind: sym.st_bind(),
            shndx: sym.st_shndx(LE),
            value: sym.st_value(LE),
            size: sym.st_size(LE),
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
/// cost what one does). `object`'s `StringTable::get` finds each name's
/// NUL anew, from its offset: kept here for that.
struct Strings<'a> {
    bytes: &'a [u8],
    /// Where the NULs are, in order.
    nuls: Vec<usize>,
    /// For each string (up to a NUL, by the NUL's index in `nuls`) looked
    /// up so far: where its longest UTF-8 tail starts, and that tail.
    tails: std::collections::HashMap<usize, (usize, &'a str)>,
}

impl<'a> Strings<'a> {
    /// The table `bytes`.
    fn new(bytes: &'a [u8]) -> Self {
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
    fn get(&mut self, at: u32) -> Option<&'a str> {
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
/// Notes are aligned to 4 bytes, or to 8 when their section or segment is
/// (any other alignment is taken as 4, as it was before `object` read
/// them: `object` refuses an alignment above 4 that is not 8).
fn notes<'a>(
    data: &'a [u8],
    base: u64,
    align: u64,
    kind: elf::NoteType,
    out: &mut Vec<(u64, &'a [u8])>,
) -> Result<(), CodeObjectError> {
    let align = if align == 8 { 8 } else { 4 };
    let mut iter = NoteIterator::<Header>::new(LE, align as u64, data)
        .map_err(|_| truncated("note", base, 0, data.len()))?;
    // Where the next note starts in `data`.
    let mut pos = 0usize;
    loop {
        let note = match iter.next() {
            Ok(Some(note)) => note,
            Ok(None) => return Ok(()),
            Err(_) => {
                return Err(CodeObjectError::Truncated {
                    what: "note",
                    offset: base + pos as u64,
                    needed: note_size(data, pos, align),
                    len: base + data.len() as u64,
                });
            }
        };
        let desc_start = align_up(pos + NHDR_SIZE + note.n_namesz(LE) as usize, align);
        if note.name() == b"AMDGPU" && note.n_type(LE) == kind {
            out.push((base + desc_start as u64, note.desc()));
        }
        pos = align_up(desc_start + note.n_descsz(LE) as usize, align);
    }
}

/// The bytes that the note at `pos` in `data` says it takes, up to the end
/// of its descriptor: its header's when even that is cut.
fn note_size(data: &[u8], pos: usize, align: usize) -> u64 {
    let Some(header) = data.get(pos..).filter(|h| h.len() >= NHDR_SIZE) else {
        return NHDR_SIZE as u64;
    };
    let align = align as u64;
    let name_end = NHDR_SIZE as u64 + u64::from(u32_at(header, 0));
    let desc_start = name_end.next_multiple_of(align);
    desc_start.saturating_add(u64::from(u32_at(header, 4)))
}
