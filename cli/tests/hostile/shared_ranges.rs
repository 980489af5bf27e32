//! Small files that describe the same bytes many times over (issue 20,
//! classes 10 and 11): an AMD code object under 1 MB with thousands of
//! `SHT_SYMTAB` section headers that all point at one table, and an LLVM
//! offload binary under 1 MB with thousands of entries sharing one image.
//! Read naively, each made `reprise` allocate gigabytes; every command that
//! reads them must end within the time limit and a 2 GB address-space
//! limit, cleanly: a result or an error that names the file and the limit.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::run_within;
use reprise::core::record::Generation;

/// About 2 GB of address space (`prlimit --as=2000000000`), in KiB.
const TWO_GB_KIB: u64 = 2_000_000_000 / 1024;

/// How long one command may take on these inputs (each is under 1 MB).
const QUICK: Duration = Duration::from_secs(10);

const GFX90A: &[u8] = include_bytes!("../../../backends/amdgpu/fixtures/saxpy_mixed.gfx90a.hsaco");

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The gfx90a fixture with a symbol table of `symbols` unnamed symbols
/// appended, and `headers` more `SHT_SYMTAB` section headers after its
/// own, the `i`th pointing at that table `i * shift` bytes in (all at the
/// very same bytes when `shift` is 0), linked to the fixture's `.strtab`.
fn code_object_with_symtabs(symbols: usize, headers: usize, shift: u64) -> Vec<u8> {
    let mut out = GFX90A.to_vec();
    let shoff = u64_at(&out, 40) as usize;
    let shnum = usize::from(u16_at(&out, 60));
    let own: Vec<u8> = out[shoff..shoff + shnum * 64].to_vec();
    let symtab = (0..shnum)
        .map(|i| &own[i * 64..(i + 1) * 64])
        .find(|h| u32_at(h, 4) == 2)
        .expect("the fixture has a .symtab")
        .to_vec();
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
    let table_at = out.len() as u64;
    // Unnamed local symbols (name 0: the empty string): no variables.
    out.resize(out.len() + symbols * 24, 0);
    let new_shoff = out.len() as u64;
    out.extend_from_slice(&own);
    for i in 0..headers as u64 {
        let mut h = symtab.clone();
        let size = (symbols as u64 * 24).saturating_sub(i * shift);
        h[24..32].copy_from_slice(&(table_at + i * shift).to_le_bytes());
        h[32..40].copy_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&h);
    }
    out[40..48].copy_from_slice(&new_shoff.to_le_bytes());
    let count = u16::try_from(shnum + headers).expect("fewer than 65536 sections");
    out[60..62].copy_from_slice(&count.to_le_bytes());
    out
}

/// An LLVM offload binary of `entries` entries that all share one
/// `amdgcn-amd-amdhsa` `gfx90a` image: the gfx90a fixture padded with
/// zeros to `image_len` bytes.
fn offload_sharing_one_image(entries: usize, image_len: usize) -> Vec<u8> {
    let strings_at = 32 + entries * 40;
    let mut text = Vec::new();
    let pair = |key: &str, value: &str, text: &mut Vec<u8>| {
        let base = strings_at + 32;
        let k = base + text.len();
        text.extend_from_slice(key.as_bytes());
        text.push(0);
        let v = base + text.len();
        text.extend_from_slice(value.as_bytes());
        text.push(0);
        (k as u64, v as u64)
    };
    let triple = pair("triple", "amdgcn-amd-amdhsa", &mut text);
    let arch = pair("arch", "gfx90a", &mut text);
    let image_at = (strings_at + 32 + text.len()).next_multiple_of(8);
    let size = image_at + image_len;
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&[0x10, 0xff, 0x10, 0xad]);
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&(size as u64).to_le_bytes());
    out.extend_from_slice(&32u64.to_le_bytes());
    out.extend_from_slice(&((entries * 40) as u64).to_le_bytes());
    for _ in 0..entries {
        out.extend_from_slice(&1u16.to_le_bytes()); // IMG_Object
        out.extend_from_slice(&1u16.to_le_bytes()); // OFK_OpenMP
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(strings_at as u64).to_le_bytes());
        out.extend_from_slice(&2u64.to_le_bytes());
        out.extend_from_slice(&(image_at as u64).to_le_bytes());
        out.extend_from_slice(&(image_len as u64).to_le_bytes());
    }
    for (k, v) in [triple, arch] {
        out.extend_from_slice(&k.to_le_bytes());
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&text);
    out.resize(image_at, 0);
    out.extend_from_slice(GFX90A);
    out.resize(size, 0);
    out
}

/// Runs `reprise ARGS` in `dir` under 2 GB of address space and checks it
/// ended by itself within [`QUICK`] with one of `codes`, no panic; returns
/// stdout and stderr together.
fn bounded(dir: &Path, args: &[&str], codes: &[i32], case: &str) -> String {
    let started = Instant::now();
    let out = run_within(dir, args, TWO_GB_KIB);
    let took = started.elapsed();
    let (stdout, stderr) = text(&out);
    let code = out.status.code().unwrap_or_else(|| {
        panic!(
            "{case}: {args:?} was killed by a signal ({:?})\nstderr:\n{stderr}",
            out.status
        )
    });
    assert!(
        codes.contains(&code),
        "{case}: {args:?}: exit {code}, expected one of {codes:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        !stderr.contains("panicked") && !stderr.contains("memory allocation"),
        "{case}: {args:?}:\n{stderr}"
    );
    assert!(
        took < QUICK,
        "{case}: {args:?} took {took:?} on an input under 1 MB"
    );
    format!("{stdout}{stderr}")
}

#[test]
fn a_code_object_with_thousands_of_symtab_headers_on_one_table_reads_once() {
    let root = tempfile::tempdir().unwrap();
    // 16,000 symbols under 8,000 headers: 128 million symbols read
    // naively (5 GB), 16,000 read once.
    let hostile = code_object_with_symtabs(16_000, 8_000, 0);
    assert!(hostile.len() < 1 << 20, "{} bytes", hostile.len());
    let (capture, _) = llvm_saxpy_capture(
        root.path(),
        Generation::LlvmCurrent,
        &hostile,
        0x1534_f7e0_0000,
        64,
        256,
    );
    let all = bounded(root.path(), &["inspect", s(&capture)], &[0, 1], "shared");
    // The one table is read: the kernels are there, as in the fixture.
    assert!(
        all.contains("gfx90a (code object v5): saxpy (288 kernarg bytes), mixed"),
        "{all}"
    );

    // 2,000 headers on overlapping ranges, each 24 bytes further in: the
    // symbol tables hold more symbols than the file has room for, an error
    // that says so (inspect shows it in place of the kernels).
    let dir = root.path().join("overlapping");
    std::fs::create_dir(&dir).unwrap();
    let hostile = code_object_with_symtabs(16_000, 2_000, 24);
    assert!(hostile.len() < 1 << 20, "{} bytes", hostile.len());
    let (capture, _) = llvm_saxpy_capture(
        &dir,
        Generation::LlvmCurrent,
        &hostile,
        0x1534_f7e0_0000,
        64,
        256,
    );
    let all = bounded(&dir, &["inspect", s(&capture)], &[0, 1], "overlapping");
    assert!(
        all.contains("unreadable AMDGPU code object") && all.contains("symbol tables"),
        "{all}"
    );
    assert!(all.contains("the file's"), "names no limit: {all}");
}

#[test]
fn an_offload_binary_with_thousands_of_entries_on_one_image_is_refused_cleanly() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    let (capture, _) = llvm_saxpy_capture(
        dir,
        Generation::LlvmCurrent,
        GFX90A,
        0x1534_f7e0_0000,
        64,
        256,
    );
    // 8,000 entries on one 600 KB image, 4.8 GB copied naively: past the
    // limit on what the entries' images add up to (64 MiB for a file this
    // small), an image shared counting for each entry.
    let big = dir.join("big.offload");
    let bytes = offload_sharing_one_image(8_000, 600_000);
    assert!(bytes.len() < 1 << 20, "{} bytes", bytes.len());
    std::fs::write(&big, &bytes).unwrap();
    // 8,000 entries on the 7 KB image, 56 MB in all: past the limit on
    // entries.
    let many = dir.join("many.offload");
    std::fs::write(&many, offload_sharing_one_image(8_000, GFX90A.len())).unwrap();
    let out = dir.join("out");
    for (file, limit) in [
        (&big, "more than 67108864 bytes"),
        (&many, "more than 1024 entries"),
    ] {
        let f = s(file);
        let cases: [(&[&str], &[i32]); 4] = [
            (&["extract", "--list", f], &[2]),
            (&["extract", f, "--dir", s(&out)], &[2]),
            (&["inspect", "--image", f, s(&capture)], &[1, 2]),
            (&["replay", "--image", f, s(&capture)], &[2]),
        ];
        for (args, codes) in cases {
            let all = bounded(dir, args, codes, f);
            assert!(
                all.contains(f) && all.contains(limit),
                "{args:?}: names neither the file nor the limit ({limit}):\n{all}"
            );
        }
    }
    assert!(
        !out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(),
        "images written from a refused file"
    );

    // 500 entries sharing the 7 KB image: within every limit, the image
    // read once, each entry listed with its kernels.
    let fine = dir.join("fine.offload");
    std::fs::write(&fine, offload_sharing_one_image(500, GFX90A.len())).unwrap();
    let all = bounded(dir, &["extract", "--list", s(&fine)], &[0], "fine");
    assert_eq!(
        all.matches("kernels: saxpy, mixed").count(),
        500,
        "every entry listed with its kernels:\n{all}"
    );
    assert!(all.contains("500 device image(s)"), "{all}");
}
