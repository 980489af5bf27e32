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
fn processor_table_names_the_current_gpus() {
    for (mach, name) in [
        (0x02c, "gfx900"),
        (0x02f, "gfx906"),
        (0x030, "gfx908"),
        (0x032, "gfx90c"),
        (0x03f, "gfx90a"),
        (0x040, "gfx940"),
        (0x04b, "gfx941"),
        (0x04c, "gfx942"),
        (0x033, "gfx1010"),
        (0x036, "gfx1030"),
        (0x045, "gfx1036"),
        (0x041, "gfx1100"),
        (0x044, "gfx1103"),
        (0x043, "gfx1150"),
        (0x04a, "gfx1151"),
        (0x048, "gfx1200"),
        (0x04e, "gfx1201"),
    ] {
        assert_eq!(target::processor_name(mach), Some(name));
    }
    // Every name is distinct.
    let mut names: Vec<_> = (0..=0xff).filter_map(target::processor_name).collect();
    let all = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), all);
}

#[test]
fn target_ids_print_and_parse() {
    let t = |xnack, sramecc| Target {
        processor: "gfx90a".into(),
        xnack,
        sramecc,
    };
    assert_eq!(t(Feature::Any, Feature::Any).to_string(), "gfx90a");
    assert_eq!(
        t(Feature::Unsupported, Feature::Unsupported).to_string(),
        "gfx90a"
    );
    assert_eq!(t(Feature::On, Feature::Any).to_string(), "gfx90a:xnack+");
    assert_eq!(
        t(Feature::On, Feature::Off).to_string(),
        "gfx90a:sramecc-:xnack+"
    );
    assert_eq!(
        Target::parse("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"),
        Some(t(Feature::Off, Feature::On))
    );
    assert_eq!(
        Target::parse("gfx90a:xnack+"),
        Some(t(Feature::On, Feature::Any))
    );
    assert_eq!(
        Target::parse("amdgcn-amd-amdhsa--gfx10-3-generic")
            .unwrap()
            .processor,
        "gfx10-3-generic"
    );
    assert_eq!(
        Target::parse("gfx90a:tgsplit+"),
        Some(t(Feature::Any, Feature::Any))
    );
    for bad in [
        "",
        ":xnack+",
        "gfx90a:xnack",
        "amdgcn-amd-amdhsa",
        "amdgcn-amd-amdhsa--",
    ] {
        assert_eq!(Target::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn runs_on_matches_processor_and_required_features() {
    let t = |xnack, sramecc| Target {
        processor: "gfx90a".into(),
        xnack,
        sramecc,
    };
    let agent = "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-";
    assert!(t(Feature::Any, Feature::Any).runs_on(agent));
    assert!(t(Feature::Off, Feature::On).runs_on(agent));
    assert!(t(Feature::Unsupported, Feature::On).runs_on(agent));
    assert!(!t(Feature::On, Feature::Any).runs_on(agent));
    assert!(!t(Feature::Any, Feature::Off).runs_on(agent));
    assert!(!t(Feature::On, Feature::Any).runs_on("gfx90a"));
    assert!(!t(Feature::Any, Feature::Any).runs_on("amdgcn-amd-amdhsa--gfx90c"));
    assert!(!t(Feature::Any, Feature::Any).runs_on(""));
}

#[test]
fn metadata_errors_name_their_place() {
    let kernel_without = |missing: &str| {
        let mut pairs = vec![
            (".name", M::Str("k")),
            (".symbol", M::Str("k.kd")),
            (".kernarg_segment_size", M::U(16)),
            (".kernarg_segment_align", M::U(8)),
            (".group_segment_fixed_size", M::U(0)),
            (".private_segment_fixed_size", M::U(0)),
        ];
        pairs.retain(|(k, _)| *k != missing);
        M::map(vec![("amdhsa.kernels", M::Arr(vec![M::map(pairs)]))])
    };
    for key in [
        ".name",
        ".symbol",
        ".kernarg_segment_size",
        ".kernarg_segment_align",
        ".group_segment_fixed_size",
        ".private_segment_fixed_size",
    ] {
        let e = parse_metadata(&kernel_without(key).bytes()).unwrap_err();
        assert_eq!(
            e,
            CodeObjectError::Metadata {
                path: format!("amdhsa.kernels[0]{key}"),
                reason: "missing"
            }
        );
    }
    let cases: Vec<(M, &str, &str)> = vec![
        (M::Arr(vec![]), "(root)", "not a map"),
        (
            M::map(vec![("amdhsa.version", M::Arr(vec![M::U(1)]))]),
            "amdhsa.version",
            "not a sequence",
        ),
        (
            M::map(vec![(
                "amdhsa.version",
                M::Arr(vec![M::U(1), M::U(1 << 40)]),
            )]),
            "amdhsa.version",
            "not two unsigned",
        ),
        (
            M::map(vec![("amdhsa.target", M::U(1))]),
            "amdhsa.target",
            "not a UTF-8 string",
        ),
        (
            M::map(vec![("amdhsa.kernels", M::U(1))]),
            "amdhsa.kernels",
            "not a sequence",
        ),
        (
            M::map(vec![("amdhsa.kernels", M::Arr(vec![M::U(1)]))]),
            "amdhsa.kernels[0]",
            "not a map",
        ),
        (
            M::map(vec![(
                "amdhsa.kernels",
                M::Arr(vec![M::map(vec![(".args", M::U(0))])]),
            )]),
            "amdhsa.kernels[0].args",
            "not a sequence",
        ),
        (
            M::map(vec![(
                "amdhsa.kernels",
                M::Arr(vec![M::map(vec![(".args", M::Arr(vec![M::U(0)]))])]),
            )]),
            "amdhsa.kernels[0].args[0]",
            "not a map",
        ),
        (
            M::map(vec![(
                "amdhsa.kernels",
                M::Arr(vec![M::map(vec![(
                    ".args",
                    M::Arr(vec![
                        arg(0, 8, "by_value"),
                        M::map(vec![(".size", M::U(4)), (".value_kind", M::Str("x"))]),
                    ]),
                )])]),
            )]),
            "amdhsa.kernels[0].args[1].offset",
            "missing",
        ),
        (
            M::map(vec![(
                "amdhsa.kernels",
                M::Arr(vec![M::map(vec![(
                    ".args",
                    M::Arr(vec![M::map(vec![
                        (".offset", M::U(1 << 32)),
                        (".size", M::U(4)),
                        (".value_kind", M::Str("x")),
                    ])]),
                )])]),
            )]),
            "amdhsa.kernels[0].args[0].offset",
            "out of range",
        ),
        (
            M::map(vec![(
                "amdhsa.kernels",
                M::Arr(vec![M::map(vec![(
                    ".args",
                    M::Arr(vec![M::map(vec![
                        (".offset", M::Str("0")),
                        (".size", M::U(4)),
                        (".value_kind", M::Str("x")),
                    ])]),
                )])]),
            )]),
            "amdhsa.kernels[0].args[0].offset",
            "not an unsigned integer",
        ),
        (
            M::map(vec![(
                "amdhsa.kernels",
                M::Arr(vec![M::map(vec![(
                    ".args",
                    M::Arr(vec![M::map(vec![
                        (".offset", M::U(0)),
                        (".size", M::U(4)),
                        (".value_kind", M::U(1)),
                    ])]),
                )])]),
            )]),
            "amdhsa.kernels[0].args[0].value_kind",
            "not a UTF-8 string",
        ),
    ];
    for (meta, path, reason) in cases {
        let e = parse_metadata(&meta.bytes()).unwrap_err();
        let text = e.to_string();
        assert!(text.contains(path), "{text:?} does not name {path:?}");
        assert!(text.contains(reason), "{text:?} does not say {reason:?}");
    }
    // Through a whole code object, the errors are the same.
    let img = Image::new(&kernel_without(".symbol"));
    error_of(img.parse(), &["amdhsa.kernels[0].symbol", "missing"]);
}

#[test]
fn metadata_without_kernels_or_version_reads() {
    let m = parse_metadata(&M::map(vec![]).bytes()).unwrap();
    assert_eq!(
        m,
        Metadata {
            version: None,
            target: None,
            kernels: Vec::new()
        }
    );
    // Negative-fixint-free non-negative ints count as unsigned.
    let m = parse_metadata(b"\x81\xaeamdhsa.version\x92\xd0\x01\x02").unwrap();
    assert_eq!(m.version, Some([1, 2]));
    let e = parse_metadata(b"\x81\xaeamdhsa.version\x92\xff\x02").unwrap_err();
    assert!(e.to_string().contains("amdhsa.version"));
}

/// `msgpack::read` on `bytes`.
fn mp(bytes: &[u8]) -> Result<Value<'_>, CodeObjectError> {
    msgpack::read(bytes, 100)
}

#[test]
fn msgpack_scalars() {
    assert_eq!(mp(b"\x00").unwrap(), Value::Uint(0));
    assert_eq!(mp(b"\x7f").unwrap(), Value::Uint(127));
    assert_eq!(mp(b"\xff").unwrap(), Value::Int(-1));
    assert_eq!(mp(b"\xe0").unwrap(), Value::Int(-32));
    assert_eq!(mp(b"\xc0").unwrap(), Value::Nil);
    assert_eq!(mp(b"\xc2").unwrap(), Value::Bool(false));
    assert_eq!(mp(b"\xc3").unwrap(), Value::Bool(true));
    assert_eq!(mp(b"\xcc\xff").unwrap(), Value::Uint(255));
    assert_eq!(mp(b"\xcd\x01\x02").unwrap(), Value::Uint(0x102));
    assert_eq!(
        mp(b"\xce\x01\x02\x03\x04").unwrap(),
        Value::Uint(0x0102_0304)
    );
    assert_eq!(
        mp(b"\xcf\xff\xff\xff\xff\xff\xff\xff\xff").unwrap(),
        Value::Uint(u64::MAX)
    );
    assert_eq!(mp(b"\xd0\x80").unwrap(), Value::Int(-128));
    assert_eq!(mp(b"\xd1\xff\xfe").unwrap(), Value::Int(-2));
    assert_eq!(
        mp(b"\xd2\x7f\xff\xff\xff").unwrap(),
        Value::Int(i32::MAX.into())
    );
    assert_eq!(mp(b"\xd3\x80\0\0\0\0\0\0\0").unwrap(), Value::Int(i64::MIN));
    assert_eq!(mp(b"\xca\x3f\x80\0\0").unwrap(), Value::Float(1.0));
    assert_eq!(
        mp(&[&[0xcb][..], &2.5f64.to_bits().to_be_bytes()].concat()).unwrap(),
        Value::Float(2.5)
    );
    assert_eq!(mp(b"\xa3abc").unwrap(), Value::Str(b"abc"));
    assert_eq!(mp(b"\xd9\x01x").unwrap(), Value::Str(b"x"));
    assert_eq!(mp(b"\xda\0\x01x").unwrap(), Value::Str(b"x"));
    assert_eq!(mp(b"\xdb\0\0\0\x01x").unwrap(), Value::Str(b"x"));
    assert_eq!(mp(b"\xc4\x02ab").unwrap(), Value::Bin(b"ab"));
    assert_eq!(mp(b"\xc5\0\x01a").unwrap(), Value::Bin(b"a"));
    assert_eq!(mp(b"\xc6\0\0\0\x01a").unwrap(), Value::Bin(b"a"));
    assert_eq!(mp(b"\xd4\x05a").unwrap(), Value::Ext(5, b"a"));
    assert_eq!(
        mp(b"\xd8\xff0123456789abcdef").unwrap(),
        Value::Ext(-1, b"0123456789abcdef")
    );
    assert_eq!(mp(b"\xc7\x01\x02a").unwrap(), Value::Ext(2, b"a"));
    assert_eq!(mp(b"\xc8\0\x01\x02a").unwrap(), Value::Ext(2, b"a"));
    assert_eq!(mp(b"\xc9\0\0\0\x01\x02a").unwrap(), Value::Ext(2, b"a"));
    // Trailing bytes after the value are left alone.
    assert_eq!(mp(b"\x01\x02").unwrap(), Value::Uint(1));
    assert_eq!(mp(b"\xa1\xff").unwrap().as_str(), None, "not UTF-8");
    assert_eq!(Value::Int(-1).as_u64(), None);
    assert_eq!(Value::Int(7).as_u64(), Some(7));
}

#[test]
fn msgpack_containers() {
    assert_eq!(
        mp(b"\x92\x01\xa1a").unwrap(),
        Value::Array(vec![Value::Uint(1), Value::Str(b"a")])
    );
    assert_eq!(
        mp(b"\xdc\0\x01\xc0").unwrap(),
        Value::Array(vec![Value::Nil])
    );
    assert_eq!(
        mp(b"\xdd\0\0\0\x01\xc0").unwrap(),
        Value::Array(vec![Value::Nil])
    );
    let map = mp(b"\x82\xa1a\x01\xa1a\x02").unwrap();
    assert_eq!(
        map.get("a"),
        Some(&Value::Uint(1)),
        "the first of a key wins"
    );
    assert_eq!(map.get("b"), None);
    assert_eq!(Value::Nil.get("a"), None);
    assert_eq!(
        mp(b"\xde\0\x01\x01\x02").unwrap(),
        Value::Map(vec![(Value::Uint(1), Value::Uint(2))])
    );
    assert_eq!(
        mp(b"\xdf\0\0\0\x01\x01\x02").unwrap(),
        Value::Map(vec![(Value::Uint(1), Value::Uint(2))])
    );
}

/// The reason of a MessagePack error, checked to be at `offset`.
fn mp_error(bytes: &[u8], offset: u64) -> &'static str {
    match mp(bytes).unwrap_err() {
        CodeObjectError::MsgPack { offset: at, reason } => {
            assert_eq!(at, offset, "{bytes:x?}: {reason}");
            reason
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn msgpack_truncated() {
    for bytes in [
        &b""[..],
        b"\xcc",
        b"\xcd\x01",
        b"\xce\x01\x02\x03",
        b"\xcf\x01",
        b"\xd0",
        b"\xd3\x01",
        b"\xca\0\0",
        b"\xcb\0",
        b"\xa2a",
        b"\xd9",
        b"\xd9\x02a",
        b"\xda\0",
        b"\xdb\0\0\0\x02a",
        b"\xc4\x01",
        b"\xc6\0\0\0\x02a",
        b"\xc7\x01",
        b"\xc7\x01\x02",
        b"\xd4",
        b"\xd4\x01",
        b"\xd8\x01abc",
        b"\xdc\0",
        b"\xdd\0\0",
        b"\xde\0",
        b"\xdf\0\0\0",
    ] {
        assert!(mp_error(bytes, 100).contains("truncated"), "{bytes:x?}");
    }
    // Inside a container, the offset is the inner value's.
    assert!(mp_error(b"\x92\x01\xcd\x01", 102).contains("truncated"));
    assert!(mp_error(b"\x81\xa1a\xa5abc", 103).contains("truncated"));
    assert!(mp_error(b"\xc1", 100).contains("0xc1"));
}

#[test]
fn msgpack_huge_counts_are_refused_before_allocating() {
    for bytes in [
        &b"\xdd\xff\xff\xff\xff"[..],
        b"\xdf\xff\xff\xff\xff\x01\x02",
        b"\xdc\xff\xff\x01\x02\x03",
        b"\xde\x00\x02\x01\x02\x03",
        b"\x9f\x01",
        b"\x8f\x01",
    ] {
        assert_eq!(
            mp_error(bytes, 100),
            "more elements than bytes left",
            "{bytes:x?}"
        );
    }
    for bytes in [
        &b"\xdb\xff\xff\xff\xff"[..],
        b"\xc6\xff\xff\xff\xff",
        b"\xc9\xff\xff\xff\xff\x01",
    ] {
        assert!(mp_error(bytes, 100).contains("truncated"), "{bytes:x?}");
    }
}

#[test]
fn msgpack_nesting_is_limited() {
    let nested = |depth: usize| {
        let mut bytes = vec![0x91; depth];
        bytes.push(0xc0);
        bytes
    };
    let deepest = nested(MAX_DEPTH);
    let mut v = mp(&deepest).unwrap();
    for _ in 0..MAX_DEPTH {
        let Value::Array(mut items) = v else {
            panic!("not an array")
        };
        v = items.pop().unwrap();
    }
    assert_eq!(v, Value::Nil);
    assert_eq!(
        mp_error(&nested(MAX_DEPTH + 1), 100 + MAX_DEPTH as u64),
        "containers nested too deep"
    );
    // Far deeper input fails the same, without going deeper.
    assert_eq!(
        mp_error(&nested(100_000), 100 + MAX_DEPTH as u64),
        "containers nested too deep"
    );
    let mut maps = [0x81, 0x00].repeat(MAX_DEPTH + 1);
    maps.push(0xc0);
    assert_eq!(
        mp_error(&maps, 100 + 2 * MAX_DEPTH as u64),
        "containers nested too deep"
    );
}

#[test]
fn errors_are_send_sync_errors() {
    fn is_error<E: core::error::Error + Send + Sync + 'static>() {}
    is_error::<CodeObjectError>();
}
