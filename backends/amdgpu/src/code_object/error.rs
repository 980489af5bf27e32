//! What can be wrong with a code object, and where.

/// Why [`parse`](super::parse) (or [`parse_metadata`](super::parse_metadata))
/// refused its input. Offsets are byte offsets in the code object (for
/// [`parse_metadata`](super::parse_metadata), in the bytes it was given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeObjectError {
    /// The bytes do not start with the ELF magic `\x7fELF`.
    #[error("not an ELF file (no \\x7fELF magic at offset 0)")]
    NotElf,
    /// The ELF class (`EI_CLASS`) is not 2 (ELF64).
    #[error("not an ELF64 file: EI_CLASS {class} at offset 4")]
    NotElf64 {
        /// The class byte found.
        class: u8,
    },
    /// The data encoding (`EI_DATA`) is not 1 (little-endian).
    #[error("not a little-endian ELF file: EI_DATA {data} at offset 5")]
    NotLittleEndian {
        /// The encoding byte found.
        data: u8,
    },
    /// `e_machine` is not `EM_AMDGPU` (224).
    #[error(
        "not an AMDGPU code object: e_machine {machine} (0x{machine:x}) at offset 18, \
         expected EM_AMDGPU (224)"
    )]
    WrongMachine {
        /// The machine found.
        machine: u16,
    },
    /// The OS ABI (`EI_OSABI`) is not `ELFOSABI_AMDGPU_HSA` (64): a PAL or
    /// Mesa object, which the HSA runtime does not load.
    #[error(
        "not an HSA code object: EI_OSABI {os_abi} at offset 7, expected \
         ELFOSABI_AMDGPU_HSA (64)"
    )]
    WrongOsAbi {
        /// The OS ABI byte found.
        os_abi: u8,
    },
    /// `EI_ABIVERSION` 0, code object v2, whose metadata is YAML in another
    /// note; only v3 and later are read.
    #[error(
        "unsupported code object version: EI_ABIVERSION {abi_version} at offset 8 \
         (code object v2); v3 and later are read"
    )]
    UnsupportedAbiVersion {
        /// The ABI version byte found.
        abi_version: u8,
    },
    /// The `EF_AMDGPU_MACH` field of `e_flags` names no processor this
    /// reader knows.
    #[error("unknown AMDGPU processor: EF_AMDGPU_MACH 0x{mach:03x} in e_flags (offset 48)")]
    UnknownProcessor {
        /// The field's value (`e_flags & 0xff`).
        mach: u32,
    },
    /// A structure runs past the end of the bytes.
    #[error(
        "truncated {what}: {needed} bytes at offset {offset} run past the end of \
         the {len} bytes"
    )]
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
    #[error("malformed {what} at offset {offset}: {reason}")]
    Malformed {
        /// What was being read.
        what: &'static str,
        /// Where it starts.
        offset: u64,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A symbol name is not a NUL-terminated UTF-8 string inside its table.
    #[error(
        "the name of the symbol at offset {offset} is not a NUL-terminated UTF-8 \
         string inside its string table"
    )]
    BadSymbolName {
        /// The file offset of the symbol table entry.
        offset: u64,
    },
    /// The distinct byte ranges read as one kind of table add up to more
    /// than the file's length: its headers name overlapping ranges (each
    /// distinct range is read once; a header repeating one adds nothing).
    /// A bound on the work a small file can ask for.
    #[error(
        "the {what} overlap: their distinct byte ranges add up to {read} bytes or more, \
         past the file's {len} bytes (the limit: each range is read once)"
    )]
    Overlapping {
        /// Which tables: `symbol tables and their string tables`.
        what: &'static str,
        /// The bytes they add up to, at least.
        read: u64,
        /// The file's length, the limit.
        len: u64,
    },
    /// More of something than any code object holds.
    #[error("more {what} than the limit of {limit}")]
    TooMany {
        /// What: `distinct symbol tables`.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// No `NT_AMDGPU_METADATA` note (owner "AMDGPU", type 32).
    #[error("no code object metadata (an \"AMDGPU\" note of type NT_AMDGPU_METADATA, 32)")]
    NoMetadata,
    /// A second `NT_AMDGPU_METADATA` note: which one holds is unclear.
    #[error("a second code object metadata note, its descriptor at offset {offset}")]
    DuplicateMetadata {
        /// Where the second note's descriptor starts.
        offset: u64,
    },
    /// The metadata is not well-formed MessagePack.
    #[error("bad MessagePack metadata at offset {offset}: {reason}")]
    MsgPack {
        /// Where the offending value starts.
        offset: u64,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The metadata is MessagePack, but not the code object metadata: a key
    /// missing, a value of the wrong type or out of range.
    #[error("bad code object metadata: {path}: {reason}")]
    Metadata {
        /// Which value: `amdhsa.kernels[1].args[2].offset`.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The metadata's `amdhsa.target` names another target than the ELF
    /// header.
    #[error("the ELF header's target {header} is not the metadata's amdhsa.target {metadata}")]
    TargetMismatch {
        /// The target of the ELF header, in target-id syntax.
        header: String,
        /// The metadata's `amdhsa.target`.
        metadata: String,
    },
}

#[cfg(test)]
mod tests {
    use super::CodeObjectError as E;

    /// Every variant's message, byte for byte.
    #[test]
    fn every_message_is_pinned() {
        let cases = [
            (E::NotElf, "not an ELF file (no \\x7fELF magic at offset 0)"),
            (
                E::NotElf64 { class: 1 },
                "not an ELF64 file: EI_CLASS 1 at offset 4",
            ),
            (
                E::NotLittleEndian { data: 2 },
                "not a little-endian ELF file: EI_DATA 2 at offset 5",
            ),
            (
                E::WrongMachine { machine: 62 },
                "not an AMDGPU code object: e_machine 62 (0x3e) at offset 18, expected \
                 EM_AMDGPU (224)",
            ),
            (
                E::WrongOsAbi { os_abi: 0 },
                "not an HSA code object: EI_OSABI 0 at offset 7, expected ELFOSABI_AMDGPU_HSA \
                 (64)",
            ),
            (
                E::UnsupportedAbiVersion { abi_version: 0 },
                "unsupported code object version: EI_ABIVERSION 0 at offset 8 (code object v2); \
                 v3 and later are read",
            ),
            (
                E::UnknownProcessor { mach: 0x1f },
                "unknown AMDGPU processor: EF_AMDGPU_MACH 0x01f in e_flags (offset 48)",
            ),
            (
                E::Truncated {
                    what: "section header table",
                    offset: 64,
                    needed: 640,
                    len: 100,
                },
                "truncated section header table: 640 bytes at offset 64 run past the end of the \
                 100 bytes",
            ),
            (
                E::Malformed {
                    what: "symbol table",
                    offset: 512,
                    reason: "entry size 20, not 24",
                },
                "malformed symbol table at offset 512: entry size 20, not 24",
            ),
            (
                E::BadSymbolName { offset: 600 },
                "the name of the symbol at offset 600 is not a NUL-terminated UTF-8 string \
                 inside its string table",
            ),
            (
                E::Overlapping {
                    what: "symbol tables and their string tables",
                    read: 4096,
                    len: 1000,
                },
                "the symbol tables and their string tables overlap: their distinct byte ranges \
                 add up to 4096 bytes or more, past the file's 1000 bytes (the limit: each range \
                 is read once)",
            ),
            (
                E::TooMany {
                    what: "distinct symbol tables",
                    limit: 64,
                },
                "more distinct symbol tables than the limit of 64",
            ),
            (
                E::NoMetadata,
                "no code object metadata (an \"AMDGPU\" note of type NT_AMDGPU_METADATA, 32)",
            ),
            (
                E::DuplicateMetadata { offset: 800 },
                "a second code object metadata note, its descriptor at offset 800",
            ),
            (
                E::MsgPack {
                    offset: 12,
                    reason: "truncated string",
                },
                "bad MessagePack metadata at offset 12: truncated string",
            ),
            (
                E::Metadata {
                    path: "amdhsa.kernels[1].args[2].offset".into(),
                    reason: "missing",
                },
                "bad code object metadata: amdhsa.kernels[1].args[2].offset: missing",
            ),
            (
                E::TargetMismatch {
                    header: "gfx90a".into(),
                    metadata: "amdgcn-amd-amdhsa--gfx908".into(),
                },
                "the ELF header's target gfx90a is not the metadata's amdhsa.target \
                 amdgcn-amd-amdhsa--gfx908",
            ),
        ];
        for (e, message) in &cases {
            assert_eq!(e.to_string(), *message, "{e:?}");
            assert!(core::error::Error::source(e).is_none(), "{e:?}");
        }
    }
}
