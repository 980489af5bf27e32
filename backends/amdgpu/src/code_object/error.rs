//! What can be wrong with a code object, and where.

use core::fmt;

/// Why [`parse`](super::parse) (or [`parse_metadata`](super::parse_metadata))
/// refused its input. Offsets are byte offsets in the code object (for
/// [`parse_metadata`](super::parse_metadata), in the bytes it was given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeObjectError {
    /// The bytes do not start with the ELF magic `\x7fELF`.
    NotElf,
    /// The ELF class (`EI_CLASS`) is not 2 (ELF64).
    NotElf64 {
        /// The class byte found.
        class: u8,
    },
    /// The data encoding (`EI_DATA`) is not 1 (little-endian).
    NotLittleEndian {
        /// The encoding byte found.
        data: u8,
    },
    /// `e_machine` is not `EM_AMDGPU` (224).
    WrongMachine {
        /// The machine found.
        machine: u16,
    },
    /// The OS ABI (`EI_OSABI`) is not `ELFOSABI_AMDGPU_HSA` (64): a PAL or
    /// Mesa object, which the HSA runtime does not load.
    WrongOsAbi {
        /// The OS ABI byte found.
        os_abi: u8,
    },
    /// `EI_ABIVERSION` 0, code object v2, whose metadata is YAML in another
    /// note; only v3 and later are read.
    UnsupportedAbiVersion {
        /// The ABI version byte found.
        abi_version: u8,
    },
    /// The `EF_AMDGPU_MACH` field of `e_flags` names no processor this
    /// reader knows.
    UnknownProcessor {
        /// The field's value (`e_flags & 0xff`).
        mach: u32,
    },
    /// A structure runs past the end of the bytes.
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Where it starts.
        offset: u64,
        /// How many bytes it needs.
        needed: u64,
        /// How many bytes there are in all.
        len: u64,
    },
    /// A table's or structure's own fields do not hold together (an entry
    /// size that is not the ELF64 one, a string table that is not one).
    Malformed {
        /// What was being read.
        what: &'static str,
        /// Where it starts.
        offset: u64,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A symbol name is not a NUL-terminated UTF-8 string inside its table.
    BadSymbolName {
        /// The file offset of the symbol table entry.
        offset: u64,
    },
    /// The distinct byte ranges read as one kind of table add up to more
    /// than the file's length: its headers name overlapping ranges (each
    /// distinct range is read once; a header repeating one adds nothing).
    /// A bound on the work a small file can ask for.
    Overlapping {
        /// Which tables: `symbol tables and their string tables`.
        what: &'static str,
        /// The bytes they add up to, at least.
        read: u64,
        /// The file's length, the limit.
        len: u64,
    },
    /// More of something than any code object holds.
    TooMany {
        /// What: `distinct symbol tables`.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// No `NT_AMDGPU_METADATA` note (owner "AMDGPU", type 32).
    NoMetadata,
    /// A second `NT_AMDGPU_METADATA` note: which one holds is unclear.
    DuplicateMetadata {
        /// Where the second note's descriptor starts.
        offset: u64,
    },
    /// The metadata is not well-formed MessagePack.
    MsgPack {
        /// Where the offending value starts.
        offset: u64,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The metadata is MessagePack, but not the code object metadata: a key
    /// missing, a value of the wrong type or out of range.
    Metadata {
        /// Which value: `amdhsa.kernels[1].args[2].offset`.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The metadata's `amdhsa.target` names another target than the ELF
    /// header.
    TargetMismatch {
        /// The target of the ELF header, in target-id syntax.
        header: String,
        /// The metadata's `amdhsa.target`.
        metadata: String,
    },
}

impl fmt::Display for CodeObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotElf => write!(f, "not an ELF file (no \\x7fELF magic at offset 0)"),
            Self::NotElf64 { class } => {
                write!(f, "not an ELF64 file: EI_CLASS {class} at offset 4")
            }
            Self::NotLittleEndian { data } => {
                write!(
                    f,
                    "not a little-endian ELF file: EI_DATA {data} at offset 5"
                )
            }
            Self::WrongMachine { machine } => write!(
                f,
                "not an AMDGPU code object: e_machine {machine} (0x{machine:x}) at offset 18, \
                 expected EM_AMDGPU (224)"
            ),
            Self::WrongOsAbi { os_abi } => write!(
                f,
                "not an HSA code object: EI_OSABI {os_abi} at offset 7, expected \
                 ELFOSABI_AMDGPU_HSA (64)"
            ),
            Self::UnsupportedAbiVersion { abi_version } => write!(
                f,
                "unsupported code object version: EI_ABIVERSION {abi_version} at offset 8 \
                 (code object v2); v3 and later are read"
            ),
            Self::UnknownProcessor { mach } => write!(
                f,
                "unknown AMDGPU processor: EF_AMDGPU_MACH 0x{mach:03x} in e_flags (offset 48)"
            ),
            Self::Truncated {
                what,
                offset,
                needed,
                len,
            } => write!(
                f,
                "truncated {what}: {needed} bytes at offset {offset} run past the end of \
                 the {len} bytes"
            ),
            Self::Malformed {
                what,
                offset,
                reason,
            } => write!(f, "malformed {what} at offset {offset}: {reason}"),
            Self::BadSymbolName { offset } => write!(
                f,
                "the name of the symbol at offset {offset} is not a NUL-terminated UTF-8 \
                 string inside its string table"
            ),
            Self::Overlapping { what, read, len } => write!(
                f,
                "the {what} overlap: their distinct byte ranges add up to {read} bytes or more, \
                 past the file's {len} bytes (the limit: each range is read once)"
            ),
            Self::TooMany { what, limit } => {
                write!(f, "more {what} than the limit of {limit}")
            }
            Self::NoMetadata => write!(
                f,
                "no code object metadata (an \"AMDGPU\" note of type NT_AMDGPU_METADATA, 32)"
            ),
            Self::DuplicateMetadata { offset } => write!(
                f,
                "a second code object metadata note, its descriptor at offset {offset}"
            ),
            Self::MsgPack { offset, reason } => {
                write!(f, "bad MessagePack metadata at offset {offset}: {reason}")
            }
            Self::Metadata { path, reason } => {
                write!(f, "bad code object metadata: {path}: {reason}")
            }
            Self::TargetMismatch { header, metadata } => write!(
                f,
                "the ELF header's target {header} is not the metadata's amdhsa.target {metadata}"
            ),
        }
    }
}

impl core::error::Error for CodeObjectError {}
