//! The reader's work bounded by its input: headers
//! that name the same bytes again are read once, overlapping ranges that
//! add up past the file are refused, distinct tables are capped, and names
//! sharing one long string cost what one does. Through [`parse`] alone:
//! the bounds are the reader's, whichever ELF library is under it.

use super::*;

/// How many distinct symbol tables a code object may have.
const MAX_SYMBOL_TABLES: u64 = 64;

/// `bytes` with `extra` section headers after its own (the header table
/// moved to the end, `e_shnum` counting them).
fn with_headers(bytes: &[u8], extra: impl IntoIterator<Item = [u8; 64]>) -> Vec<u8> {
    let shoff = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    let shnum = usize::from(u16::from_le_bytes(bytes[60..62].try_into().unwrap()));
    let own = bytes[shoff..shoff + shnum * 64].to_vec();
    let mut out = bytes.to_vec();
    let new_shoff = out.len() as u64;
    out.extend_from_slice(&own);
    let mut count = shnum;
    for h in extra {
        out.extend_from_slice(&h);
        count += 1;
    }
    out[40..48].copy_from_slice(&new_shoff.to_le_bytes());
    out[60..62].copy_from_slice(&u16::try_from(count).unwrap().to_le_bytes());
    out
}

/// Section header `index` of `bytes`.
fn header(bytes: &[u8], index: usize) -> [u8; 64] {
    let shoff = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    bytes[shoff + index * 64..shoff + (index + 1) * 64]
        .try_into()
        .unwrap()
}

/// `h` with type `kind`, offset `offset` and size `size`.
fn retarget(mut h: [u8; 64], kind: u32, offset: u64, size: u64) -> [u8; 64] {
    h[4..8].copy_from_slice(&kind.to_le_bytes());
    h[24..32].copy_from_slice(&offset.to_le_bytes());
    h[32..40].copy_from_slice(&size.to_le_bytes());
    h
}

fn offset_size(h: &[u8; 64]) -> (u64, u64) {
    (
        u64::from_le_bytes(h[24..32].try_into().unwrap()),
        u64::from_le_bytes(h[32..40].try_into().unwrap()),
    )
}

/// The default image with `n` more unnamed local symbols in `.dynsym`.
fn image_with_symbols(n: usize) -> Vec<u8> {
    let mut img = image();
    for _ in 0..n {
        img.sections[DYNSYM].data.extend(sym(0, 0, 0, 0, 0));
    }
    img.bytes()
}

#[test]
fn thousands_of_symtab_headers_on_one_table_read_it_once() {
    // 16,000 symbols named by 8,000 headers: 128 million symbols read
    // naively (about 5 GB), the one table once here.
    let bytes = image_with_symbols(16_000);
    let dynsym = header(&bytes, DYNSYM);
    let (offset, size) = offset_size(&dynsym);
    let hostile = with_headers(
        &bytes,
        (0..8_000).map(|_| retarget(dynsym, 2, offset, size)),
    );
    assert!(hostile.len() < 1 << 20);
    let once = parse(&bytes).unwrap();
    // Read 8,000 times, the table would be 128 million symbols (some 6 GB
    // of them), far past the time allowed.
    let started = std::time::Instant::now();
    let repeated = parse(&hostile).unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "the repeated table was read again: {:?}",
        started.elapsed()
    );
    // And the code object reads as it did with one header.
    assert_eq!(repeated, once);
}

#[test]
fn overlapping_symbol_tables_past_the_file_are_refused() {
    let bytes = image_with_symbols(200);
    let dynsym = header(&bytes, DYNSYM);
    let (offset, size) = offset_size(&dynsym);
    // Each header one symbol further in: every range distinct, together
    // about 100 times the table.
    let hostile = with_headers(
        &bytes,
        (0..200u64).map(|i| retarget(dynsym, 2, offset + 24 * i, size - 24 * i)),
    );
    let e = error_of(
        parse(&hostile),
        &[
            "symbol tables",
            "overlap",
            "limit",
            &format!("{} bytes", hostile.len()),
        ],
    );
    assert!(
        matches!(e, CodeObjectError::Overlapping { len, read, .. } if len == hostile.len() as u64 && read > len),
        "{e:?}"
    );
    // A few that fit in the file still read.
    let fine = with_headers(
        &bytes,
        (1..3u64).map(|i| retarget(dynsym, 2, offset + 24 * i, 24)),
    );
    assert!(parse(&fine).is_ok());
}

#[test]
fn distinct_symbol_tables_are_capped() {
    let bytes = image_with_symbols(100);
    let dynsym = header(&bytes, DYNSYM);
    let (offset, _) = offset_size(&dynsym);
    // One-symbol tables (the null symbol only): small, but more of them
    // than any code object has.
    let extra = |n: u64| (0..n).map(move |i| retarget(dynsym, 2, offset + 24 * i, 24));
    let hostile = with_headers(&bytes, extra(MAX_SYMBOL_TABLES));
    assert!(matches!(
        error_of(
            parse(&hostile),
            &["more distinct symbol tables than the limit of 64"]
        ),
        CodeObjectError::TooMany { limit: 64, .. }
    ));
    let fine = with_headers(&bytes, extra(MAX_SYMBOL_TABLES - 1));
    assert!(parse(&fine).is_ok(), "the limit itself reads");
}

#[test]
fn repeated_note_headers_read_the_note_once_and_overlapping_ones_are_refused() {
    let bytes = image().bytes();
    let note_header = header(&bytes, NOTE);
    let (offset, size) = offset_size(&note_header);
    let hostile = with_headers(
        &bytes,
        (0..5_000).map(|_| retarget(note_header, 7, offset, size)),
    );
    assert_eq!(parse(&hostile).unwrap(), parse(&bytes).unwrap());
    // A second copy of the note in other bytes is still a second note.
    let mut twice = bytes.clone();
    let copy = twice[offset as usize..(offset + size) as usize].to_vec();
    let at = twice.len() as u64;
    twice.extend_from_slice(&copy);
    let twice = with_headers(&twice, [retarget(note_header, 7, at, size)]);
    error_of(parse(&twice), &["a second code object metadata note"]);
    // Note sections overlapping past the file's length: a thousand other
    // notes before the metadata, each header one note further in.
    let mut img = image();
    let mut data = Vec::new();
    for _ in 0..1_000 {
        data.extend(note(b"GNU\0", 1, b""));
    }
    data.extend(img.sections[NOTE].data.clone());
    img.sections[NOTE].data = data;
    let bytes = img.bytes();
    let note_header = header(&bytes, NOTE);
    let (offset, size) = offset_size(&note_header);
    let hostile = with_headers(
        &bytes,
        (1..1_000u64).map(|i| retarget(note_header, 7, offset + 16 * i, size - 16 * i)),
    );
    error_of(
        parse(&hostile),
        &["note sections or segments", "overlap", "limit"],
    );
}

/// What the reader did before: scan for the NUL, then check the UTF-8.
fn naive(strings: &[u8], at: u32) -> Option<&str> {
    let rest = strings.get(usize::try_from(at).ok()?..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    core::str::from_utf8(&rest[..end]).ok()
}

/// The default image with the names `table` after its own and one more
/// variable `extra`, named by the string at `at` of `table`, at 0x1010.
fn image_with_name(table: &[u8], at: u32) -> Vec<u8> {
    let mut img = image();
    let own = img.sections[DYNSTR].data.len() as u32;
    img.sections[DYNSTR].data.extend_from_slice(table);
    img.sections[DYNSYM]
        .data
        .extend(sym(own + at, GLOBAL_OBJECT, RODATA as u16, 0x1010, 4));
    img.bytes()
}

#[test]
fn names_read_as_before_at_every_offset() {
    // Every table of up to 5 bytes over NUL, ASCII, a two-byte sequence's
    // lead and continuation, a three-byte lead and bytes never in UTF-8,
    // after the image's own names (which end in a NUL: a name in the table
    // is the table's alone).
    let alphabet = [0u8, b'a', 0xc3, 0xa9, 0xe2, 0x80, 0xff];
    let plain = parse(&image().bytes()).unwrap();
    let mut tables = vec![Vec::new()];
    let mut compared = 0;
    for _ in 0..5 {
        let mut longer = Vec::new();
        for t in &tables {
            for &b in &alphabet {
                let mut t = t.clone();
                t.push(b);
                longer.push(t);
            }
        }
        for t in &longer {
            for at in 0..t.len() as u32 + 2 {
                let read = parse(&image_with_name(t, at));
                match naive(t, at) {
                    // An empty name is no variable.
                    Some("") => assert_eq!(read.as_ref(), Ok(&plain), "{t:x?} at {at}"),
                    Some(name) => {
                        let co = read.unwrap_or_else(|e| panic!("{t:x?} at {at}: {e}"));
                        let v = co
                            .variable(name)
                            .unwrap_or_else(|| panic!("{t:x?} at {at}"));
                        assert_eq!(v.value, 0x1010, "{t:x?} at {at}");
                    }
                    None => assert!(
                        matches!(
                            read,
                            Err(CodeObjectError::BadSymbolName { offset }) if offset > 0
                        ),
                        "{t:x?} at {at}: {read:?}"
                    ),
                }
                compared += 1;
            }
        }
        tables = longer;
    }
    assert!(compared > 100_000);
    let text = "\0k.kd\0v\u{e9}r\0\u{2603}x\0".as_bytes();
    let name = |at| parse(&image_with_name(text, at)).map(|co| co.variables()[1].name.clone());
    assert_eq!(name(3).unwrap(), "kd");
    assert_eq!(name(7).unwrap(), "\u{e9}r");
    assert!(
        matches!(name(8), Err(CodeObjectError::BadSymbolName { .. })),
        "inside a character"
    );
    let mut img = image();
    img.sections[DYNSYM].data[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        img.parse(),
        Err(CodeObjectError::BadSymbolName { offset }) if offset > 0
    ));
}

#[test]
fn thousands_of_names_in_one_long_string_cost_one() {
    // 20,000 symbols named by the tails of one 200 KB string: 4 billion
    // bytes scanned naively. The first and the last are variables, the
    // others local symbols, their names found and checked all the same.
    let mut img = image();
    let mut strings = vec![0u8];
    strings.extend(std::iter::repeat_n(b'a', 200_000));
    strings.push(0);
    img.sections[DYNSTR].data = strings;
    let mut table = sym(0, 0, 0, 0, 0);
    for i in 0..20_000u32 {
        let info = if i == 0 || i == 19_999 {
            GLOBAL_OBJECT
        } else {
            0x01
        };
        table.extend(sym(1 + i, info, RODATA as u16, 0x1000, 8));
    }
    img.sections[DYNSYM].data = table;
    let bytes = img.bytes();
    let started = std::time::Instant::now();
    let co = parse(&bytes).unwrap();
    let names: Vec<usize> = co.variables().iter().map(|v| v.name.len()).collect();
    assert_eq!(names, [200_000, 180_001]);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn thousands_of_variables_named_by_one_long_string_are_refused() {
    // 20,000 variables named by the tails of one 200 KB string: 4 GB of
    // names to copy out of a file of 700 KB. The same name for all of them
    // reads, as one variable.
    let long = |offset: &dyn Fn(u32) -> u32| {
        let mut img = image();
        let mut strings = vec![0u8];
        strings.extend(std::iter::repeat_n(b'a', 200_000));
        strings.push(0);
        img.sections[DYNSTR].data = strings;
        let mut table = sym(0, 0, 0, 0, 0);
        for i in 0..20_000u32 {
            table.extend(sym(offset(i), GLOBAL_OBJECT, RODATA as u16, 0x1000, 8));
        }
        img.sections[DYNSYM].data = table;
        img.bytes()
    };
    let bytes = long(&|i| 1 + i);
    let started = std::time::Instant::now();
    let e = error_of(parse(&bytes), &["symbol names", "overlap", "limit"]);
    assert!(
        matches!(e, CodeObjectError::Overlapping { len, read, .. } if len == bytes.len() as u64 && read > len),
        "{e:?}"
    );
    let co = parse(&long(&|_| 1)).unwrap();
    assert_eq!(co.variables().len(), 1);
    assert_eq!(co.variables()[0].name.len(), 200_000);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}
