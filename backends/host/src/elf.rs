//! What an ELF shared object defines: its functions and writable data
//! symbols (the globals a recording saves), and where its code goes. These
//! only read the bytes (every malformed input is an error, never a panic):
//! nothing is loaded or run.

use object::{Object, ObjectSection, ObjectSymbol, SectionFlags, SectionIndex, SymbolKind};

/// The symbols of a host image.
pub struct Symbols {
    /// Defined, exported functions.
    pub functions: Vec<String>,
    /// Defined, exported, writable data objects with their sizes.
    pub data: Vec<(String, u64)>,
}

/// Reads the dynamic symbol table (the symbols `dlsym` can find).
pub fn symbols(bytes: &[u8]) -> Result<Symbols, String> {
    let file = object::File::parse(bytes)
        .map_err(|e| format!("the image is not a readable ELF file: {e}"))?;
    let writable = |idx: Option<SectionIndex>| {
        idx.and_then(|i| file.section_by_index(i).ok())
            .is_some_and(|s| matches!(s.flags(), SectionFlags::Elf { sh_flags } if sh_flags & u64::from(object::elf::SHF_WRITE) != 0))
    };
    let mut out = Symbols {
        functions: Vec::new(),
        data: Vec::new(),
    };
    for sym in file.dynamic_symbols() {
        if sym.is_undefined() || !sym.is_global() {
            continue;
        }
        let Ok(name) = sym.name() else { continue };
        if name.is_empty() {
            continue;
        }
        match sym.kind() {
            SymbolKind::Text => out.functions.push(name.to_string()),
            SymbolKind::Data if sym.size() > 0 && writable(sym.section_index()) => {
                out.data.push((name.to_string(), sym.size()))
            }
            _ => {}
        }
    }
    out.data.sort();
    out.data.dedup_by(|a, b| a.0 == b.0);
    Ok(out)
}

/// The names of every defined global symbol of the dynamic symbol table,
/// whatever the ELF file's machine (an AMD GPU code object's kernels are its
/// `NAME.kd` symbols, say).
pub fn dynamic_symbol_names(bytes: &[u8]) -> Result<Vec<String>, String> {
    let file = object::File::parse(bytes)
        .map_err(|e| format!("the image is not a readable ELF file: {e}"))?;
    Ok(file
        .dynamic_symbols()
        .filter(|s| !s.is_undefined() && s.is_global())
        .filter_map(|s| s.name().ok().filter(|n| !n.is_empty()).map(str::to_owned))
        .collect())
}

/// The executable loadable segments (`PT_LOAD` with `PF_X`): each one's
/// virtual address and size in memory, before the load bias is added.
pub fn executable_segments(bytes: &[u8]) -> Result<Vec<(u64, u64)>, String> {
    use object::read::elf::{ElfFile64, FileHeader, ProgramHeader};
    let file = ElfFile64::<object::Endianness>::parse(bytes)
        .map_err(|e| format!("the image is not a readable ELF file: {e}"))?;
    let endian = file.endian();
    let headers = file
        .elf_header()
        .program_headers(endian, bytes)
        .map_err(|e| format!("the image's program headers are unreadable: {e}"))?;
    Ok(headers
        .iter()
        .filter(|ph| {
            ph.p_type(endian) == object::elf::PT_LOAD
                && ph.p_flags(endian) & object::elf::PF_X != 0
                && ph.p_memsz(endian) > 0
        })
        .map(|ph| (ph.p_vaddr(endian), ph.p_memsz(endian)))
        .collect())
}
