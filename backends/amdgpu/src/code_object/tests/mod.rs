//! The reader on hand-built bytes: every error path, MessagePack's edge
//! cases, the target's encodings.

use super::msgpack::{self, MAX_DEPTH, Value};
use super::*;

/// A MessagePack value to encode.
enum M {
    Map(Vec<(M, M)>),
    Arr(Vec<M>),
    Str(&'static str),
    U(u64),
}

impl M {
    /// A map of string keys.
    fn map(pairs: Vec<(&'static str, M)>) -> M {
        M::Map(pairs.into_iter().map(|(k, v)| (M::Str(k), v)).collect())
    }

    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            M::Map(pairs) => {
                out.push(0xde);
                out.extend_from_slice(&(pairs.len() as u16).to_be_bytes());
                for (k, v) in pairs {
                    k.encode(out);
                    v.encode(out);
                }
            }
            M::Arr(items) => {
                out.push(0xdc);
                out.extend_from_slice(&(items.len() as u16).to_be_bytes());
                for v in items {
                    v.encode(out);
                }
            }
            M::Str(s) => {
                out.push(0xd9);
                out.push(s.len() as u8);
                out.extend_from_slice(s.as_bytes());
            }
            M::U(v) => {
                out.push(0xcf);
                out.extend_from_slice(&v.to_be_bytes());
            }
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }
}

/// An argument's metadata map.
fn arg(offset: u64, size: u64, kind: &'static str) -> M {
    M::map(vec![
        (".offset", M::U(offset)),
        (".size", M::U(size)),
        (".value_kind", M::Str(kind)),
    ])
}

/// The metadata of one kernel `k` (symbol `k.kd`) with one explicit and
/// one hidden argument, for `target`.
fn metadata(target: Option<&'static str>) -> M {
    let kernel = M::map(vec![
        (".name", M::Str("k")),
        (".symbol", M::Str("k.kd")),
        (".kernarg_segment_size", M::U(16)),
        (".kernarg_segment_align", M::U(8)),
        (".group_segment_fixed_size", M::U(32)),
        (".private_segment_fixed_size", M::U(4)),
        (
            ".args",
            M::Arr(vec![
                arg(0, 8, "global_buffer"),
                arg(8, 4, "hidden_block_count_x"),
            ]),
        ),
    ]);
    let mut top = vec![
        ("amdhsa.version", M::Arr(vec![M::U(1), M::U(2)])),
        ("amdhsa.kernels", M::Arr(vec![kernel])),
    ];
    if let Some(t) = target {
        top.push(("amdhsa.target", M::Str(t)));
    }
    M::map(top)
}

/// A note record of owner `name`, type `kind`, aligned to 4.
fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(name.len() as u32).to_le_bytes());
    out.extend_from_slice(&(desc.len() as u32).to_le_bytes());
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(name);
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
    out.extend_from_slice(desc);
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
    out
}

/// An ELF64 symbol.
fn sym(name: u32, info: u8, shndx: u16, value: u64, size: u64) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&name.to_le_bytes());
    out.push(info);
    out.push(0);
    out.extend_from_slice(&shndx.to_le_bytes());
    out.extend_from_slice(&value.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    out
}

/// A section to lay out.
struct Sec {
    kind: u32,
    addr: u64,
    data: Vec<u8>,
    link: u32,
    align: u64,
    entsize: u64,
}

/// The section indexes of [`Image::new`]'s sections.
const NOTE: usize = 1;
const DYNSYM: usize = 2;
const DYNSTR: usize = 3;
const RODATA: usize = 4;

/// The parts of a code object, laid out by [`Image::bytes`].
struct Image {
    header: [u8; 64],
    sections: Vec<Sec>,
}

/// `STT_OBJECT | STB_GLOBAL << 4`.
const GLOBAL_OBJECT: u8 = 0x11;

impl Image {
    /// A gfx90a (xnack any, sramecc any) v5 code object holding
    /// `metadata`, the descriptor `k.kd` and the variables `var` (8 bytes)
    /// and `local` (a local symbol, no variable).
    fn new(metadata: &M) -> Image {
        let mut header = [0u8; 64];
        header[..4].copy_from_slice(b"\x7fELF");
        header[4] = 2;
        header[5] = 1;
        header[6] = 1;
        header[7] = 64;
        header[8] = 3;
        header[16..18].copy_from_slice(&3u16.to_le_bytes());
        header[18..20].copy_from_slice(&224u16.to_le_bytes());
        header[20..24].copy_from_slice(&1u32.to_le_bytes());
        header[48..52].copy_from_slice(&0x53fu32.to_le_bytes());
        header[52..54].copy_from_slice(&64u16.to_le_bytes());
        header[58..60].copy_from_slice(&64u16.to_le_bytes());
        let strings = b"\0k.kd\0var\0local\0".to_vec();
        let mut symbols = sym(0, 0, 0, 0, 0);
        symbols.extend(sym(1, GLOBAL_OBJECT, RODATA as u16, 0x1040, 64));
        symbols.extend(sym(6, GLOBAL_OBJECT, RODATA as u16, 0x1000, 8));
        symbols.extend(sym(10, 0x01, RODATA as u16, 0x1008, 4));
        let mut rodata = vec![0u8; 0x80];
        rodata[0x40..0x44].copy_from_slice(&32u32.to_le_bytes());
        rodata[0x44..0x48].copy_from_slice(&4u32.to_le_bytes());
        rodata[0x48..0x4c].copy_from_slice(&16u32.to_le_bytes());
        let empty = |kind| Sec {
            kind,
            addr: 0,
            data: Vec::new(),
            link: 0,
            align: 0,
            entsize: 0,
        };
        Image {
            header,
            sections: vec![
                empty(0),
                Sec {
                    kind: 7,
                    align: 4,
                    data: note(b"AMDGPU\0", 32, &metadata.bytes()),
                    ..empty(7)
                },
                Sec {
                    kind: 11,
                    data: symbols,
                    link: DYNSTR as u32,
                    align: 8,
                    entsize: 24,
                    ..empty(11)
                },
                Sec {
                    data: strings,
                    ..empty(3)
                },
                Sec {
                    addr: 0x1000,
                    data: rodata,
                    align: 64,
                    ..empty(1)
                },
            ],
        }
    }

    /// The file: the header, the sections' data, the section headers.
    fn bytes(&self) -> Vec<u8> {
        let mut out = self.header.to_vec();
        let mut offsets = Vec::new();
        for s in &self.sections {
            while !out.len().is_multiple_of(8) {
                out.push(0);
            }
            offsets.push(out.len() as u64);
            out.extend_from_slice(&s.data);
        }
        while !out.len().is_multiple_of(8) {
            out.push(0);
        }
        let shoff = out.len() as u64;
        for (s, offset) in self.sections.iter().zip(offsets) {
            let mut h = [0u8; 64];
            h[4..8].copy_from_slice(&s.kind.to_le_bytes());
            h[16..24].copy_from_slice(&s.addr.to_le_bytes());
            h[24..32].copy_from_slice(&offset.to_le_bytes());
            h[32..40].copy_from_slice(&(s.data.len() as u64).to_le_bytes());
            h[40..44].copy_from_slice(&s.link.to_le_bytes());
            h[48..56].copy_from_slice(&s.align.to_le_bytes());
            h[56..64].copy_from_slice(&s.entsize.to_le_bytes());
            out.extend_from_slice(&h);
        }
        out[40..48].copy_from_slice(&shoff.to_le_bytes());
        out[60..62].copy_from_slice(&(self.sections.len() as u16).to_le_bytes());
        out
    }

    fn parse(&self) -> Result<CodeObject, CodeObjectError> {
        parse(&self.bytes())
    }
}

/// The default image.
fn image() -> Image {
    Image::new(&metadata(Some("amdgcn-amd-amdhsa--gfx90a")))
}

/// `parse`'s error on `bytes`, its message checked to hold `words`.
fn error_of(result: Result<CodeObject, CodeObjectError>, words: &[&str]) -> CodeObjectError {
    let e = result.expect_err("refused");
    let text = e.to_string();
    for w in words {
        assert!(text.contains(w), "{text:?} does not say {w:?}");
    }
    e
}

#[test]
fn the_hand_built_image_reads() {
    let co = image().parse().unwrap();
    assert_eq!(co.target().to_string(), "gfx90a");
    assert_eq!(co.code_object_version(), Some(5));
    assert_eq!(co.metadata_version(), Some([1, 2]));
    let k = co.kernel("k").unwrap();
    assert_eq!(k.symbol, "k.kd");
    assert_eq!(
        (
            k.kernarg_segment_size,
            k.kernarg_segment_align,
            k.group_segment_fixed_size,
            k.private_segment_fixed_size
        ),
        (16, 8, 32, 4)
    );
    assert_eq!(k.explicit_args().count(), 1);
    assert_eq!(k.hidden_args().count(), 1);
    assert_eq!(k.hidden_arg("hidden_block_count_x").unwrap().offset, 8);
    assert_eq!(
        k.descriptor,
        Some(KernelDescriptor {
            value: 0x1040,
            group_segment_fixed_size: 32,
            private_segment_fixed_size: 4,
            kernarg_size: 16,
        })
    );
    assert_eq!(
        co.variables(),
        [VariableSymbol {
            name: "var".into(),
            value: 0x1000,
            size: 8
        }]
    );
    assert!(
        co.variable("local").is_none(),
        "local symbols are no variables"
    );
}

#[test]
fn header_errors() {
    error_of(parse(b""), &["not an ELF file"]);
    error_of(parse(b"MZ\0\0"), &["not an ELF file"]);
    error_of(
        parse(b"\x7fELF\x02\x01"),
        &["truncated ELF header", "64 bytes at offset 0"],
    );
    let mut img = image();
    img.header[4] = 1;
    assert_eq!(
        error_of(img.parse(), &["ELF64"]),
        CodeObjectError::NotElf64 { class: 1 }
    );
    let mut img = image();
    img.header[5] = 2;
    assert_eq!(
        error_of(img.parse(), &["little-endian"]),
        CodeObjectError::NotLittleEndian { data: 2 }
    );
    let mut img = image();
    img.header[18..20].copy_from_slice(&62u16.to_le_bytes());
    assert_eq!(
        error_of(img.parse(), &["e_machine 62", "EM_AMDGPU (224)"]),
        CodeObjectError::WrongMachine { machine: 62 }
    );
    let mut img = image();
    img.header[7] = 65;
    assert_eq!(
        error_of(img.parse(), &["EI_OSABI 65"]),
        CodeObjectError::WrongOsAbi { os_abi: 65 }
    );
    let mut img = image();
    img.header[8] = 0;
    assert_eq!(
        error_of(img.parse(), &["v2"]),
        CodeObjectError::UnsupportedAbiVersion { abi_version: 0 }
    );
    for reserved in [0x000, 0x001, 0x027, 0x049, 0x04d, 0x0ff] {
        let mut img = image();
        img.header[48..52].copy_from_slice(&(0x500u32 | reserved).to_le_bytes());
        let want = format!("EF_AMDGPU_MACH 0x{reserved:03x}");
        assert_eq!(
            error_of(img.parse(), &[&want]),
            CodeObjectError::UnknownProcessor { mach: reserved }
        );
    }
}

#[test]
fn table_errors() {
    let mut img = image();
    img.header[58..60].copy_from_slice(&40u16.to_le_bytes());
    error_of(img.parse(), &["e_shentsize"]);

    let mut bytes = image().bytes();
    bytes[40..48].copy_from_slice(&(u64::MAX - 8).to_le_bytes());
    error_of(parse(&bytes), &["truncated section header table"]);

    let mut bytes = image().bytes();
    bytes[60..62].copy_from_slice(&u16::MAX.to_le_bytes());
    error_of(parse(&bytes), &["truncated section header table"]);

    let mut img = image();
    img.header[32..40].copy_from_slice(&64u64.to_le_bytes());
    img.header[56..58].copy_from_slice(&1u16.to_le_bytes());
    img.header[54..56].copy_from_slice(&32u16.to_le_bytes());
    error_of(img.parse(), &["e_phentsize"]);
    img.header[54..56].copy_from_slice(&56u16.to_le_bytes());
    img.header[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
    error_of(img.parse(), &["truncated program header table"]);

    // A section's data past the end of the file.
    let mut bytes = image().bytes();
    let shoff = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    let note_header = shoff + NOTE * 64;
    bytes[note_header + 24..note_header + 32].copy_from_slice(&u64::MAX.to_le_bytes());
    error_of(parse(&bytes), &["truncated section"]);
}

#[test]
fn extended_section_count_reads() {
    let mut bytes = image().bytes();
    let shoff = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    let count = u16::from_le_bytes(bytes[60..62].try_into().unwrap());
    bytes[60..62].copy_from_slice(&0u16.to_le_bytes());
    bytes[shoff + 32..shoff + 40].copy_from_slice(&u64::from(count).to_le_bytes());
    assert!(parse(&bytes).unwrap().kernel("k").is_some());
}

#[test]
fn note_errors() {
    let mut img = image();
    img.sections[NOTE].data = note(b"AMDGPU\0", 31, b"\x80");
    error_of(img.parse(), &["no code object metadata"]);

    let mut img = image();
    img.sections[NOTE].data = note(b"AMDGP\0", 32, b"\x80");
    error_of(img.parse(), &["no code object metadata"]);

    let mut img = image();
    let one = img.sections[NOTE].data.clone();
    img.sections[NOTE].data.extend(one);
    assert!(matches!(
        error_of(img.parse(), &["a second code object metadata note"]),
        CodeObjectError::DuplicateMetadata { .. }
    ));

    // A descriptor size past the end of the section.
    let mut img = image();
    img.sections[NOTE].data[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    error_of(img.parse(), &["truncated note"]);
    let mut img = image();
    img.sections[NOTE].data[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
    error_of(img.parse(), &["truncated note"]);
    // Half a note header after the note.
    let mut img = image();
    img.sections[NOTE].data.extend_from_slice(&[0; 8]);
    error_of(img.parse(), &["truncated note", "12 bytes"]);

    // Other owners' notes are skipped; metadata still found after them.
    let mut img = image();
    let mut data = note(b"GNU\0", 32, b"\x01\x02\x03");
    data.extend(img.sections[NOTE].data.clone());
    img.sections[NOTE].data = data;
    assert!(img.parse().is_ok());
}

#[test]
fn notes_come_from_pt_note_without_sections() {
    let meta = metadata(None).bytes();
    let data = note(b"AMDGPU\0", 32, &meta);
    let mut bytes = image().header.to_vec();
    bytes[40..48].copy_from_slice(&0u64.to_le_bytes());
    bytes[60..62].copy_from_slice(&0u16.to_le_bytes());
    bytes[32..40].copy_from_slice(&64u64.to_le_bytes());
    bytes[54..56].copy_from_slice(&56u16.to_le_bytes());
    bytes[56..58].copy_from_slice(&1u16.to_le_bytes());
    let mut ph = [0u8; 56];
    ph[0..4].copy_from_slice(&4u32.to_le_bytes());
    ph[8..16].copy_from_slice(&120u64.to_le_bytes());
    ph[32..40].copy_from_slice(&(data.len() as u64).to_le_bytes());
    ph[48..56].copy_from_slice(&4u64.to_le_bytes());
    bytes.extend_from_slice(&ph);
    bytes.extend_from_slice(&data);
    let co = parse(&bytes).unwrap();
    let k = co.kernel("k").unwrap();
    assert_eq!(k.descriptor, None, "no symbols without sections");
    assert!(co.variables().is_empty());
}

#[test]
fn symbol_errors() {
    let mut img = image();
    img.sections[DYNSYM].entsize = 0;
    error_of(img.parse(), &["sh_entsize is not 24"]);

    let mut img = image();
    img.sections[DYNSYM].data.push(0);
    error_of(img.parse(), &["whole number of symbols"]);

    let mut img = image();
    img.sections[DYNSYM].link = RODATA as u32;
    error_of(img.parse(), &["sh_link names no string table"]);
    img.sections[DYNSYM].link = 1000;
    error_of(img.parse(), &["sh_link names no string table"]);

    // A name past the end of the string table, one without its NUL, one
    // that is not UTF-8.
    for strings in [b"\0k.kd".as_slice(), b"\0k.kd\0v\xffr\0local\0"] {
        let mut img = image();
        img.sections[DYNSTR].data = strings.to_vec();
        assert!(matches!(
            error_of(img.parse(), &["is not a NUL-terminated UTF-8 string"]),
            CodeObjectError::BadSymbolName { .. }
        ));
    }
    let mut img = image();
    img.sections[DYNSYM].data[24..28].copy_from_slice(&1000u32.to_le_bytes());
    error_of(img.parse(), &["NUL-terminated"]);

    // The descriptor outside its section, and in a section that is not.
    let mut img = image();
    img.sections[DYNSYM].data[24 + 8..24 + 16].copy_from_slice(&0x1050u64.to_le_bytes());
    error_of(img.parse(), &["kernel descriptor", "outside its section"]);
    let mut img = image();
    img.sections[DYNSYM].data[24 + 8..24 + 16].copy_from_slice(&0x10u64.to_le_bytes());
    error_of(img.parse(), &["outside its section"]);
    let mut img = image();
    img.sections[DYNSYM].data[24 + 6..24 + 8].copy_from_slice(&77u16.to_le_bytes());
    error_of(img.parse(), &["names no section"]);

    // In a NOBITS section or a special one: no descriptor, no error.
    let mut img = image();
    img.sections[DYNSYM].data[24 + 6..24 + 8].copy_from_slice(&0xfff1u16.to_le_bytes());
    assert_eq!(img.parse().unwrap().kernels()[0].descriptor, None);
    let mut img = image();
    img.sections[RODATA].kind = 8;
    assert_eq!(img.parse().unwrap().kernels()[0].descriptor, None);
}

#[test]
fn target_must_agree_with_the_metadata() {
    for (flags, named) in [
        (0x53f, "amdgcn-amd-amdhsa--gfx90a"),
        (0xb3f, "amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+"),
        (0x036, "amdgcn-amd-amdhsa--gfx1030"),
    ] {
        let mut img = Image::new(&metadata(Some(named)));
        img.header[48..52].copy_from_slice(&(flags as u32).to_le_bytes());
        let co = img.parse().unwrap();
        assert_eq!(co.metadata_target(), Some(named));
    }
    for (flags, named) in [
        (0x53f, "amdgcn-amd-amdhsa--gfx942"),
        (0x53f, "amdgcn-amd-amdhsa--gfx90a:xnack+"),
        (0xb3f, "amdgcn-amd-amdhsa--gfx90a:xnack+"),
        (0xb3f, "amdgcn-amd-amdhsa--gfx90a"),
        (0x53f, "amdgcn-amd-amdhsa--gfx90a:xnack"),
        (0x53f, "amdgcn-amd-amdhsa-"),
    ] {
        let mut img = Image::new(&metadata(Some(named)));
        img.header[48..52].copy_from_slice(&(flags as u32).to_le_bytes());
        assert!(
            matches!(
                error_of(img.parse(), &["amdhsa.target", named]),
                CodeObjectError::TargetMismatch { .. }
            ),
            "{named}"
        );
    }
    // No amdhsa.target (v3): the header alone.
    let img = Image::new(&metadata(None));
    assert_eq!(img.parse().unwrap().metadata_target(), None);
}

#[test]
fn code_object_versions() {
    for (abi, version) in [(1u8, Some(3)), (2, Some(4)), (3, Some(5)), (4, Some(6))] {
        let mut img = Image::new(&metadata(None));
        img.header[8] = abi;
        assert_eq!(img.parse().unwrap().code_object_version(), version);
    }
    // A later ABI: the metadata's [1, 2] is v5 or v6, unknown.
    let mut img = Image::new(&metadata(None));
    img.header[8] = 9;
    assert_eq!(img.parse().unwrap().code_object_version(), None);
}

#[test]
fn e_flags_features() {
    let t = |flags, abi| Target::from_e_flags(flags, abi).unwrap();
    // v4 and later: two bits each.
    for (bits, xnack) in [
        (0x000, Feature::Unsupported),
        (0x100, Feature::Any),
        (0x200, Feature::Off),
        (0x300, Feature::On),
    ] {
        assert_eq!(t(0x03f | bits, 3).xnack, xnack);
        assert_eq!(t(0x03f | bits << 2, 3).sramecc, xnack);
    }
    // v3: one bit each.
    assert_eq!(t(0x13f, 1).xnack, Feature::On);
    assert_eq!(t(0x13f, 1).sramecc, Feature::Any);
    assert_eq!(t(0x23f, 1).sramecc, Feature::On);
    assert_eq!(t(0x03f, 1).xnack, Feature::Any);
    // The generic version byte is no part of the processor.
    assert_eq!(t(0x0100_0051, 4).processor, "gfx9-generic");
}

#[test]
fn errors_are_send_sync_errors() {
    fn is_error<E: core::error::Error + Send + Sync + 'static>() {}
    is_error::<CodeObjectError>();
}

mod bounds;
mod messagepack;
mod metadata;
