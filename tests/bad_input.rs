//! Bad input: every case exits 2 with a message naming the file and the
//! problem, never a panic, never a huge allocation.

mod common;

use std::path::Path;

use common::*;
use reprise::core::record::Generation;

const BASE: u64 = 0x1539_4000_0000;

fn legacy(dir: &Path) -> Fixture {
    llvm_fixture(dir, Generation::LlvmLegacy, BASE, 256)
}

#[test]
fn missing_sibling_files() {
    for (ext, needle) in [
        ("memory", "memory snapshot is missing"),
        ("image", "axpy.image: read failed"),
        ("globals", "globals file is missing"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let f = legacy(dir.path());
        std::fs::remove_file(dir.path().join(format!("axpy.{ext}"))).unwrap();
        let out = reprise(&["replay", s(&f.descriptor)]);
        assert_error(&out, &[&format!("axpy.{ext}"), needle]);
    }
    let out = reprise(&["replay", "/nonexistent/k.json"]);
    assert_error(&out, &["/nonexistent/k.json", "open failed"]);
}

#[test]
fn truncated_snapshot_and_mismatched_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let f = legacy(dir.path());
    let mem = dir.path().join("axpy.memory");
    let bytes = std::fs::read(&mem).unwrap();
    std::fs::write(&mem, &bytes[..bytes.len() - 7]).unwrap();
    let out = reprise(&["replay", s(&f.descriptor)]);
    assert_error(&out, &["axpy.memory", "DeviceMemorySize", "truncated"]);

    // LLVM current has no length in the descriptor: input and output
    // snapshots of different lengths are the tell.
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmCurrent, BASE, 256);
    let stem = f
        .descriptor
        .to_string_lossy()
        .trim_end_matches(".json")
        .to_string();
    let out_path = format!("{stem}.record_output");
    let bytes = std::fs::read(&out_path).unwrap();
    std::fs::write(&out_path, &bytes[..100]).unwrap();
    let out = reprise(&["replay", "--verify", s(&f.descriptor)]);
    assert_error(
        &out,
        &[".record_output", "recorded output snapshot is 100 bytes"],
    );
}

#[test]
fn lying_size_fields_cost_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let f = legacy(dir.path());
    edit_descriptor(&f.descriptor, |r| r.memory_size = Some(1 << 60));
    let start = std::time::Instant::now();
    let out = reprise(&["replay", s(&f.descriptor)]);
    assert_error(
        &out,
        &["axpy.memory", "DeviceMemorySize = 1152921504606846976"],
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(5));

    // A reserved size far beyond anything mappable: the replay falls back to
    // the snapshot's size.
    let dir2 = tempfile::tempdir().unwrap();
    let f2 = llvm_fixture(dir2.path(), Generation::LlvmCurrent, BASE, 256);
    edit_descriptor(&f2.descriptor, |r| r.region_size = Some(1 << 62));
    assert_exit(&reprise(&["replay", "--verify", s(&f2.descriptor)]), 0);

    // A globals size field far beyond the file.
    let dir = tempfile::tempdir().unwrap();
    let f = legacy(dir.path());
    let mut g = b"alpha\0".to_vec();
    g.extend_from_slice(&u32::MAX.to_le_bytes());
    g.extend_from_slice(&[0; 4]);
    std::fs::write(dir.path().join("axpy.globals"), &g).unwrap();
    let out = reprise(&["replay", s(&f.descriptor)]);
    assert_error(&out, &["axpy.globals", "size 4294967295", "exceeds"]);

    // A descriptor that is not a descriptor at all, and a gigantic one.
    std::fs::write(&f.descriptor, b"{\"Name\": \"axpy\", \"NumArgs\": ").unwrap();
    assert_error(
        &reprise(&["replay", s(&f.descriptor)]),
        &["axpy.json", "invalid descriptor JSON"],
    );
    let big = std::fs::File::create(&f.descriptor).unwrap();
    big.set_len(1 << 40).unwrap();
    assert_error(
        &reprise(&["inspect", s(&f.descriptor)]),
        &["axpy.json", "more than any descriptor"],
    );
}

#[test]
fn too_many_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let f = legacy(dir.path());
    let zeros = vec!["0"; 200].join(",");
    let json = format!(
        r#"{{"ArgOffsets":[{zeros}],"ArgPtrs":[{zeros}],"BumpAllocVAStart":{BASE},"DeviceId":0,"DeviceMemorySize":2096,"LoopTripCount":0,"Name":"axpy","NumArgs":200,"NumTeamsClause":1,"ThreadLimitClause":1}}"#
    );
    std::fs::write(&f.descriptor, json).unwrap();
    let out = reprise(&["replay", s(&f.descriptor)]);
    assert_error(
        &out,
        &[
            "axpy.json",
            "200 kernel arguments, more than the supported 128",
        ],
    );
}

#[test]
fn kernel_and_globals_absent_or_different() {
    let dir = tempfile::tempdir().unwrap();
    let f = legacy(dir.path());
    edit_descriptor(&f.descriptor, |r| {
        r.name = heapless::String::try_from("no_such_kernel").unwrap()
    });
    // The legacy naming follows the descriptor's path, not its Name key.
    let out = reprise(&["replay", s(&f.descriptor)]);
    assert_error(
        &out,
        &[
            "axpy.image",
            "kernel `no_such_kernel` is not a function in the image",
            "axpy",
        ],
    );

    let dir = tempfile::tempdir().unwrap();
    let f = legacy(dir.path());
    let g = [("beta", &[0u8; 4][..])];
    write_seed_globals(dir.path(), &g);
    assert_error(
        &reprise(&["replay", s(&f.descriptor)]),
        &["axpy.globals", "`beta` is absent from the image"],
    );
    let g = [("alpha", &[0u8; 8][..])];
    write_seed_globals(dir.path(), &g);
    assert_error(
        &reprise(&["replay", s(&f.descriptor)]),
        &["axpy.globals", "`alpha` has 8 bytes, the image's has 4"],
    );
}

fn write_seed_globals(dir: &Path, g: &[(&str, &[u8])]) {
    use reprise::core::globals::{Layout, encode_into, encoded_len};
    let mut blob = vec![0u8; encoded_len(Layout::Seed, g.iter().copied()).unwrap()];
    encode_into(Layout::Seed, g.iter().copied(), &mut blob).unwrap();
    std::fs::write(dir.join("axpy.globals"), blob).unwrap();
}

fn elf_header(machine: u16) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..4].copy_from_slice(b"\x7fELF");
    h[4] = 2;
    h[5] = 1;
    h[16] = 3;
    h[18..20].copy_from_slice(&machine.to_le_bytes());
    h
}

#[test]
fn images_no_executor_runs() {
    let cases: [(&[u8], &[&str], &str); 5] = [
        (b"just some text", &["not ELF, PTX"], "auto"),
        (
            b"BC\xc0\xde\x35\x14\0\0",
            &["LLVM bitcode", "JIT images are not supported"],
            "auto",
        ),
        (&elf_header(183), &["machine 183"], "auto"),
        (
            &elf_header(190),
            &["machine 190", "host executor runs x86-64 only"],
            "host",
        ),
        (b"just some text", &["not an ELF shared object"], "host"),
    ];
    for (image, needles, backend) in cases {
        let dir = tempfile::tempdir().unwrap();
        let f = legacy(dir.path());
        std::fs::write(dir.path().join("axpy.image"), image).unwrap();
        let out = reprise(&["replay", "--backend", backend, s(&f.descriptor)]);
        let mut all = vec!["axpy.image"];
        all.extend_from_slice(needles);
        assert_error(&out, &all);
    }
}

#[test]
fn checksum_mismatch_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = reprise::RecordConfig::default()
        .enabled(true)
        .dir(dir.path())
        .region_size(16 << 20)
        .fsync(false);
    let written = record_axpy(config, 128, 1);
    let c = reprise_std::Capture::open(&written[0]).unwrap();
    let mut bytes = std::fs::read(&c.paths.input).unwrap();
    bytes[3] ^= 1;
    std::fs::write(&c.paths.input, bytes).unwrap();
    let out = reprise(&["replay", s(&written[0])]);
    assert_error(&out, &[".record_input", "checksum mismatch"]);
    assert_exit(&reprise(&["replay", "--no-checksums", s(&written[0])]), 0);
}

#[test]
fn region_address_already_mapped_is_reported() {
    use reprise::core::exec::{DeviceRegion, Executor, RegionRequest};
    let dir = tempfile::tempdir().unwrap();
    let exec = reprise::HostExecutor::new().unwrap();
    // Hold a region in this process, then replay a capture recorded there.
    let held = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmLegacy, held.base(), 64);
    let capture = reprise::Capture::open(&f.descriptor).unwrap();
    let err = reprise::block_on(std::future::IntoFuture::into_future(reprise::replay(
        &capture,
    )))
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&format!("{:#x}", held.base())), "{text}");
    let cause = std::error::Error::source(&err)
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(cause.contains("already mapped"), "{cause}");
    drop(held);
    // Once released, the same capture replays.
    let ok = reprise::block_on(std::future::IntoFuture::into_future(
        reprise::replay(&capture).verify(true),
    ))
    .unwrap();
    assert!(ok.verification.unwrap().is_match());
}

#[test]
fn region_address_taken_in_the_replaying_process_exits_2() {
    // Without address randomisation the executable is mapped at a known
    // address; a capture recorded "there" cannot get its region.
    let Ok(out) = std::process::Command::new("setarch")
        .args(["x86_64", "-R", "true"])
        .output()
    else {
        eprintln!("skipped: setarch is not installed");
        return;
    };
    if !out.status.success() {
        eprintln!("skipped: this machine refuses to disable address randomisation");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmLegacy, 0x5555_5555_4000, 64);
    let out = std::process::Command::new("setarch")
        .args(["x86_64", "-R"])
        .arg(reprise_bin())
        .args(["replay", s(&f.descriptor)])
        .output()
        .unwrap();
    assert_error(&out, &["0x555555554000", "already mapped"]);
}
