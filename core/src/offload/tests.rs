//! A section as clang 16 wrote it, binaries one after another, ELF section
//! lookup and lying offsets and sizes.

use super::*;

/// The `.llvm.offloading` section clang 16 wrote for a C program offloaded
/// to x86_64-pc-linux-gnu: its header, entry and strings (the image
/// replaced by 8 bytes).
fn clang16_like() -> [u8; 0x98] {
    let mut b = [0u8; 0x98];
    b[..4].copy_from_slice(&MAGIC);
    b[4..8].copy_from_slice(&1u32.to_le_bytes());
    b[8..16].copy_from_slice(&0x98u64.to_le_bytes());
    b[16..24].copy_from_slice(&0x20u64.to_le_bytes());
    b[24..32].copy_from_slice(&0x28u64.to_le_bytes());
    // entry at 0x20: object, openmp, flags 0, strings 0x48 x2, image 0x90 x8
    b[0x20..0x22].copy_from_slice(&1u16.to_le_bytes());
    b[0x22..0x24].copy_from_slice(&1u16.to_le_bytes());
    b[0x28..0x30].copy_from_slice(&0x48u64.to_le_bytes());
    b[0x30..0x38].copy_from_slice(&2u64.to_le_bytes());
    b[0x38..0x40].copy_from_slice(&0x90u64.to_le_bytes());
    b[0x40..0x48].copy_from_slice(&8u64.to_le_bytes());
    // string pairs: (0x82 "triple", 0x69 "x86_64-pc-linux-gnu"), (0x7d "arch", 0x68 "")
    b[0x48..0x50].copy_from_slice(&0x82u64.to_le_bytes());
    b[0x50..0x58].copy_from_slice(&0x69u64.to_le_bytes());
    b[0x58..0x60].copy_from_slice(&0x7du64.to_le_bytes());
    b[0x60..0x68].copy_from_slice(&0x68u64.to_le_bytes());
    b[0x69..0x7c].copy_from_slice(b"x86_64-pc-linux-gnu");
    b[0x7d..0x81].copy_from_slice(b"arch");
    b[0x82..0x88].copy_from_slice(b"triple");
    b[0x90..0x98].copy_from_slice(b"\x7fELFxxxx");
    b
}

#[test]
fn reads_what_clang_16_wrote() {
    let b = clang16_like();
    let mut it = entries(&b);
    let e = it.next().unwrap().unwrap();
    assert!(it.next().is_none());
    assert_eq!(
        (e.format, e.producer, e.flags),
        (ImageFormat::Object, Producer::OpenMp, 0)
    );
    assert_eq!(e.triple(), Some("x86_64-pc-linux-gnu"));
    assert_eq!(e.arch(), Some(""));
    assert_eq!(e.image, b"\x7fELFxxxx");
    assert_eq!(e.offset, 0x90);
}

#[cfg(feature = "alloc")]
#[test]
fn several_binaries_one_after_another() {
    let mut two = alloc::vec::Vec::new();
    let a = write_one(ImageFormat::Object, "x86_64-pc-linux-gnu", "", b"host");
    let b = write_one(
        ImageFormat::Cubin,
        "nvptx64-nvidia-cuda",
        "sm_80",
        b"cubin!!",
    );
    two.extend_from_slice(&a);
    two.resize(two.len().next_multiple_of(8), 0);
    let second = two.len();
    two.extend_from_slice(&b);
    let got: alloc::vec::Vec<_> = entries(&two).map(|e| e.unwrap()).collect();
    assert_eq!(got.len(), 2);
    assert_eq!(
        (got[1].format, got[1].arch()),
        (ImageFormat::Cubin, Some("sm_80"))
    );
    assert_eq!(got[1].image, b"cubin!!");
    assert_eq!(got[1].offset, second + (got[1].offset - second));
}

#[test]
fn lies_are_errors() {
    let good = clang16_like();
    // Truncated anywhere: an error or fewer entries, never a panic.
    for cut in 0..good.len() {
        let _ = entries(&good[..cut]).count();
    }
    let mut b = good;
    b[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        entries(&b).next(),
        Some(Err(OffloadError::OutOfBounds { field: "size", .. }))
    ));
    let mut b = good;
    b[0x40..0x48].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        entries(&b).next(),
        Some(Err(OffloadError::OutOfBounds { field: "image", .. }))
    ));
    let mut b = good;
    b[0x30..0x38].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        entries(&b).next(),
        Some(Err(OffloadError::OutOfBounds {
            field: "string table",
            ..
        }))
    ));
    let mut b = good;
    b[0x48..0x50].copy_from_slice(&0x97u64.to_le_bytes());
    let e = entries(&b).next().unwrap().unwrap();
    assert_eq!(e.triple(), None, "a key without a NUL is no key");
    assert!(e.strings().any(|s| s.is_err()));
    assert_eq!(
        entries(b"not an offload binary").next(),
        Some(Err(OffloadError::BadMagic { offset: 0 }))
    );
    assert_eq!(entries(&[]).next(), None);
}

#[cfg(feature = "alloc")]
#[test]
fn finds_sections_of_elf_files() {
    assert_eq!(elf_section(b"not elf", ".llvm.offloading"), Ok(None));
    // A minimal ELF64 with a section-name table and one named section.
    let mut elf = alloc::vec![0u8; 64];
    elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
    let names = b"\0.shstrtab\0.llvm.offloading\0";
    let names_at = elf.len();
    elf.extend_from_slice(names);
    let data_at = elf.len();
    elf.extend_from_slice(b"payload!");
    let shoff = elf.len().next_multiple_of(8);
    elf.resize(shoff, 0);
    let section = |name: u32, off: usize, size: usize| {
        let mut h = [0u8; 64];
        h[..4].copy_from_slice(&name.to_le_bytes());
        h[0x18..0x20].copy_from_slice(&(off as u64).to_le_bytes());
        h[0x20..0x28].copy_from_slice(&(size as u64).to_le_bytes());
        h
    };
    elf.extend_from_slice(&[0u8; 64]);
    elf.extend_from_slice(&section(1, names_at, names.len()));
    elf.extend_from_slice(&section(11, data_at, 8));
    elf[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
    elf[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
    elf[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
    elf[0x3e..0x40].copy_from_slice(&1u16.to_le_bytes());
    assert_eq!(
        elf_section(&elf, ".llvm.offloading"),
        Ok(Some(&b"payload!"[..]))
    );
    assert_eq!(elf_section(&elf, ".text"), Ok(None));
    // A section whose contents lie outside the file.
    let mut bad = elf.clone();
    let last = bad.len() - 64;
    bad[last + 0x20..last + 0x28].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(
        elf_section(&bad, ".llvm.offloading"),
        Err(OffloadError::BadElf("section contents"))
    );
    for cut in 0..elf.len() {
        let _ = elf_section(&elf[..cut], ".llvm.offloading");
    }
}

/// An offload binary of `entries` entries that share one image of
/// `image_len` bytes and one string table of `pairs`.
#[cfg(feature = "alloc")]
fn sharing(entries: usize, image_len: usize, pairs: &[(&[u8], &[u8])]) -> alloc::vec::Vec<u8> {
    let strings_at = HEADER + entries * ENTRY;
    let text_at = strings_at + pairs.len() * 16;
    let mut table = alloc::vec::Vec::new();
    let mut text = alloc::vec::Vec::new();
    for (k, v) in pairs {
        for s in [k, v] {
            table.extend_from_slice(&((text_at + text.len()) as u64).to_le_bytes());
            text.extend_from_slice(s);
        }
    }
    let image_at = (text_at + text.len()).next_multiple_of(8);
    let size = image_at + image_len;
    let mut b = alloc::vec::Vec::with_capacity(size);
    b.extend_from_slice(&MAGIC);
    b.extend_from_slice(&1u32.to_le_bytes());
    for v in [size, HEADER, entries * ENTRY] {
        b.extend_from_slice(&(v as u64).to_le_bytes());
    }
    for _ in 0..entries {
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        for v in [strings_at, pairs.len(), image_at, image_len] {
            b.extend_from_slice(&(v as u64).to_le_bytes());
        }
    }
    b.extend_from_slice(&table);
    b.extend_from_slice(&text);
    b.resize(size, 0xee);
    b
}

#[cfg(feature = "alloc")]
#[test]
fn thousands_of_entries_sharing_an_image_stop_at_the_limit() {
    let pairs: &[(&[u8], &[u8])] = &[(b"triple\0", b"x86_64-pc-linux-gnu\0")];
    let b = sharing(MAX_ENTRIES * 8, 4096, pairs);
    let mut read = 0;
    let mut last = None;
    for e in entries(&b) {
        match e {
            Ok(e) => {
                read += 1;
                assert_eq!(e.triple(), Some("x86_64-pc-linux-gnu"));
            }
            Err(e) => last = Some(e),
        }
    }
    assert_eq!(read, MAX_ENTRIES, "the entries up to the limit read");
    let e = last.expect("an error past the limit");
    assert_eq!(
        e,
        OffloadError::TooMany {
            what: "entries",
            limit: 1024
        }
    );
    assert!(
        alloc::format!("{e}").contains("more than 1024 entries (the limit)"),
        "{e}"
    );
    // Exactly the limit reads whole.
    let b = sharing(MAX_ENTRIES, 16, pairs);
    assert_eq!(entries(&b).filter(|e| e.is_ok()).count(), MAX_ENTRIES);
    assert!(entries(&b).all(|e| e.is_ok()));
}

#[cfg(feature = "alloc")]
#[test]
fn shared_images_add_up_to_a_limit() {
    // 100 entries on one 1 MiB image: 100 MiB of images in 1 MiB.
    let b = sharing(100, 1 << 20, &[]);
    let read: alloc::vec::Vec<_> = entries(&b).collect();
    assert_eq!(read.iter().filter(|e| e.is_ok()).count(), 64);
    assert_eq!(
        read.last(),
        Some(&Err(OffloadError::ImagesTooLarge { limit: 64 << 20 }))
    );
    let text = alloc::format!("{}", read.last().unwrap().as_ref().unwrap_err());
    assert!(
        text.contains("more than 67108864 bytes (the limit"),
        "{text}"
    );
    // One entry's image as large as the input is fine, however large.
    let b = sharing(1, (64 << 20) + 1, &[]);
    assert!(entries(&b).all(|e| e.is_ok()));
}

#[cfg(feature = "alloc")]
#[test]
fn strings_are_bounded_and_keys_compared_exactly() {
    let long = alloc::vec![b'x'; MAX_STRING_LEN];
    let mut longest = long.clone();
    longest.push(0);
    let mut too_long = long.clone();
    too_long.extend_from_slice(b"x\0");
    let pairs: &[(&[u8], &[u8])] = &[
        (b"triplex\0", b"no\0"),
        (b"arch\0", &too_long),
        (b"arch\0", b"sm_90\0"),
        (b"triple\0", &longest),
        (b"triple\0", b"second\0"),
    ];
    let b = sharing(1, 8, pairs);
    let e = entries(&b).next().unwrap().unwrap();
    // `triplex` is no `triple`; the first value that is a string wins.
    assert_eq!(e.triple().map(str::len), Some(MAX_STRING_LEN));
    // A value past the length limit is no string; the next `arch` is.
    assert_eq!(e.arch(), Some("sm_90"));
    let bad: alloc::vec::Vec<_> = e.strings().filter_map(Result::err).collect();
    assert_eq!(bad.len(), 1);
    assert!(alloc::format!("{}", bad[0]).contains("of at most 4096 bytes"));
    // A key at the very end without its NUL is no key.
    let b = sharing(1, 0, &[(b"triple\0", b"x\0"), (b"arch", b"")]);
    let e = entries(&b).next().unwrap().unwrap();
    assert_eq!((e.triple(), e.arch()), (Some("x"), None));
    // More string pairs than the limit: an error.
    let many: alloc::vec::Vec<(&[u8], &[u8])> = (0..=MAX_STRINGS)
        .map(|_| (&b"k\0"[..], &b"v\0"[..]))
        .collect();
    let b = sharing(1, 8, &many);
    assert_eq!(
        entries(&b).next(),
        Some(Err(OffloadError::TooMany {
            what: "string pairs in one entry",
            limit: MAX_STRINGS
        }))
    );
    let b = sharing(1, 8, &many[1..]);
    assert_eq!(entries(&b).next().unwrap().unwrap().strings().count(), 256);
}

#[cfg(feature = "alloc")]
#[test]
fn section_names_are_compared_exactly() {
    // Thousands of headers naming one long string that starts like the
    // section's name: none is the section, and each costs the name's
    // length.
    let mut elf = alloc::vec![0u8; 64];
    elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
    let mut names = b"\0.llvm.offloading".to_vec();
    names.resize(200_000, b'x');
    let names_at = elf.len();
    elf.extend_from_slice(&names);
    let shoff = elf.len().next_multiple_of(8);
    elf.resize(shoff, 0);
    let section = |name: u32, off: usize, size: usize| {
        let mut h = [0u8; 64];
        h[..4].copy_from_slice(&name.to_le_bytes());
        h[0x18..0x20].copy_from_slice(&(off as u64).to_le_bytes());
        h[0x20..0x28].copy_from_slice(&(size as u64).to_le_bytes());
        h
    };
    elf.extend_from_slice(&[0u8; 64]);
    elf.extend_from_slice(&section(0, names_at, names.len()));
    let headers = 20_000u16;
    for _ in 2..headers {
        elf.extend_from_slice(&section(1, names_at, 8));
    }
    elf[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
    elf[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
    elf[0x3c..0x3e].copy_from_slice(&headers.to_le_bytes());
    elf[0x3e..0x40].copy_from_slice(&1u16.to_le_bytes());
    assert_eq!(elf_section(&elf, ".llvm.offloading"), Ok(None));
    // The name running to the table's end, without a NUL, still names it
    // (the name table cut right after the name).
    let mut short = elf.clone();
    let last = short.len() - 64;
    let first = shoff + 64;
    short[first + 0x20..first + 0x28].copy_from_slice(&17u64.to_le_bytes());
    short[last..last + 4].copy_from_slice(&1u32.to_le_bytes());
    assert_eq!(
        elf_section(&short, ".llvm.offloading"),
        Ok(Some(&short[names_at..names_at + 8]))
    );
}
