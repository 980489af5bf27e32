//! What an ELF shared object defines: its functions and writable data
//! symbols (the globals a recording saves), and where its code goes. These
//! only read the bytes (every malformed input is an error, never a panic):
//! nothing is loaded or run.

use object::{Object, ObjectSection, ObjectSymbol, SectionFlags, SectionIndex, SymbolKind};
use reprise_core::image::{self, EM_X86_64, ImageKind};

/// `e_type` of a shared object (and of a position-independent executable).
const ET_DYN: u16 = 3;

/// The symbols of a host image.
pub struct Symbols {
    /// Defined, exported functions.
    pub functions: Vec<String>,
    /// Defined, exported, writable data objects with their sizes.
    pub data: Vec<(String, u64)>,
}

/// Checks that `bytes` are what the host executor loads: a 64-bit
/// little-endian ELF shared object (`ET_DYN`; a position-independent
/// executable is one too) for x86-64, whole (every loadable segment's
/// bytes and the section headers inside the file), and returns its
/// symbols. The one check of the image, made by loading and by `inspect`
/// and `replay` before anything runs: the reason says what is wrong.
pub fn shared_object(bytes: &[u8]) -> Result<Symbols, BadImageReason> {
    match image::sniff(bytes) {
        ImageKind::Elf {
            machine: EM_X86_64,
            elf_type: ET_DYN,
        } => {}
        ImageKind::Elf {
            machine: EM_X86_64,
            elf_type,
        } => return Err(BadImageReason::NotSharedObject { elf_type }),
        kind @ ImageKind::Elf { machine, .. } => {
            return Err(BadImageReason::WrongMachine { machine, kind });
        }
        other => return Err(BadImageReason::NotElf(other)),
    }
    segments_in_file(bytes)?;
    symbols(bytes)
}

/// Why bytes are not an image the host executor loads: what the ELF checks
/// ([`shared_object`] and the readers here) find.
///
/// ```
/// use reprise_host::elf::{BadImageReason, shared_object};
/// let e = shared_object(b"just some text").err().unwrap();
/// assert!(matches!(e, BadImageReason::NotElf(_)));
/// assert!(e.to_string().starts_with("the image is not an ELF shared object"), "{e}");
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadImageReason {
    /// An x86-64 ELF file, but not a shared object (an executable, an
    /// object file).
    #[error(
        "the image is an x86-64 ELF file but not a shared object (ELF type {elf_type}, {}; link \
         it with -shared)",
        elf_type_name(*elf_type)
    )]
    NotSharedObject {
        /// Its `e_type`.
        elf_type: u16,
    },
    /// An ELF file for another machine.
    #[error(
        "the image is an ELF file for machine {machine} ({kind}), but the host executor runs \
         x86-64 only"
    )]
    WrongMachine {
        /// Its `e_machine`.
        machine: u16,
        /// What it is.
        kind: ImageKind,
    },
    /// No ELF file at all.
    #[error("the image is not an ELF shared object (it looks like: {0})")]
    NotElf(ImageKind),
    /// Part of the ELF file cannot be read (a damaged or truncated file).
    #[error("{} (truncated?): {error}", unreadable_text(*part))]
    Unreadable {
        /// Which part.
        part: ElfPart,
        /// The ELF reader's account of it.
        #[source]
        error: ElfReadError,
    },
    /// A loadable segment takes bytes past the end of the file.
    #[error(
        "the image is truncated: a loadable segment takes bytes {offset}..{} of a {len}-byte file",
        offset.saturating_add(*size)
    )]
    Truncated {
        /// Where its bytes start in the file.
        offset: u64,
        /// How many bytes it takes from the file.
        size: u64,
        /// The file's length.
        len: u64,
    },
    /// A symbol the image exports has a name no C string can hold (a NUL
    /// byte inside it).
    #[error("the image's symbol {0:?} has a NUL byte in its name")]
    SymbolName(String),
}

/// A part of an ELF file ([`BadImageReason::Unreadable`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElfPart {
    /// The file as a whole: its header, section headers or symbol tables.
    File,
    /// Its program headers.
    ProgramHeaders,
}

/// What the ELF reader could not read ([`BadImageReason::Unreadable`]), in
/// its words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ElfReadError(object::read::Error);

/// What [`BadImageReason::Unreadable`] says of `part`.
fn unreadable_text(part: ElfPart) -> &'static str {
    match part {
        ElfPart::File => "the image is not a readable ELF file",
        ElfPart::ProgramHeaders => "the image's program headers are unreadable",
    }
}

/// `part` of the file cannot be read: `error` says why.
fn unreadable(part: ElfPart) -> impl Fn(object::read::Error) -> BadImageReason {
    move |error| BadImageReason::Unreadable {
        part,
        error: ElfReadError(error),
    }
}

fn elf_type_name(t: u16) -> &'static str {
    match t {
        0 => "ET_NONE",
        1 => "ET_REL, an object file",
        2 => "ET_EXEC, an executable",
        4 => "ET_CORE, a core dump",
        _ => "unknown",
    }
}

/// A 64-bit ELF file's byte order and its program headers, to be read in it.
type ProgramHeaders<'a> = (
    object::Endianness,
    &'a [object::elf::ProgramHeader64<object::Endianness>],
);

/// The program headers of a 64-bit ELF file (for [`segments_in_file`] and
/// [`executable_segments`]): the file or its headers unreadable is the
/// reason.
fn program_headers(bytes: &[u8]) -> Result<ProgramHeaders<'_>, BadImageReason> {
    use object::read::elf::{ElfFile64, FileHeader};
    let file = ElfFile64::<object::Endianness>::parse(bytes).map_err(unreadable(ElfPart::File))?;
    let endian = file.endian();
    let headers = file
        .elf_header()
        .program_headers(endian, bytes)
        .map_err(unreadable(ElfPart::ProgramHeaders))?;
    Ok((endian, headers))
}

/// Every loadable segment's file bytes lie inside the file: a truncated
/// image is refused before the dynamic loader maps past its end.
fn segments_in_file(bytes: &[u8]) -> Result<(), BadImageReason> {
    use object::read::elf::ProgramHeader;
    let (endian, headers) = program_headers(bytes)?;
    let len = bytes.len() as u64;
    for ph in headers {
        if ph.p_type(endian) != object::elf::PT_LOAD {
            continue;
        }
        let (offset, size) = (ph.p_offset(endian), ph.p_filesz(endian));
        if offset.checked_add(size).is_none_or(|end| end > len) {
            return Err(BadImageReason::Truncated { offset, size, len });
        }
    }
    Ok(())
}

/// What an image defines, for a message about a kernel it lacks: `" (it
/// defines: a, b)"`, at most 12 names, or nothing.
pub fn defined_hint(functions: &[String]) -> String {
    let mut names: Vec<&str> = functions.iter().map(String::as_str).take(12).collect();
    names.sort_unstable();
    if names.is_empty() {
        String::new()
    } else {
        format!(" (it defines: {})", names.join(", "))
    }
}

/// Reads the dynamic symbol table (the symbols `dlsym` can find).
pub fn symbols(bytes: &[u8]) -> Result<Symbols, BadImageReason> {
    let file = object::File::parse(bytes).map_err(unreadable(ElfPart::File))?;
    let writable = |idx: Option<SectionIndex>| {
        idx.and_then(|i| file.section_by_index(i).ok())
            .is_some_and(|s| matches!(s.flags(), SectionFlags::Elf { sh_flags, .. } if sh_flags.contains(object::elf::SHF_WRITE)))
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
pub fn dynamic_symbol_names(bytes: &[u8]) -> Result<Vec<String>, BadImageReason> {
    let file = object::File::parse(bytes).map_err(unreadable(ElfPart::File))?;
    Ok(file
        .dynamic_symbols()
        .filter(|s| !s.is_undefined() && s.is_global())
        .filter_map(|s| s.name().ok().filter(|n| !n.is_empty()).map(str::to_owned))
        .collect())
}

/// The executable loadable segments (`PT_LOAD` with `PF_X`): each one's
/// virtual address and size in memory, before the load bias is added.
pub fn executable_segments(bytes: &[u8]) -> Result<Vec<(u64, u64)>, BadImageReason> {
    use object::read::elf::ProgramHeader;
    let (endian, headers) = program_headers(bytes)?;
    Ok(headers
        .iter()
        .filter(|ph| {
            ph.p_type(endian) == object::elf::PT_LOAD
                && ph.p_flags(endian).contains(object::elf::PF_X)
                && ph.p_memsz(endian) > 0
        })
        .map(|ph| (ph.p_vaddr(endian), ph.p_memsz(endian)))
        .collect())
}
