//! A capture's files missing, short or lying: sibling files gone, snapshots
//! cut short, size fields and argument counts far beyond the files, kernels
//! and globals the image lacks, images no executor runs, and a checksum that
//! does not match.

use std::path::Path;

use reprise::core::record::{Generation, MAX_REGION_SIZE};

use crate::common::*;
use crate::{BASE, legacy};

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
    assert_error(&out, &["/nonexistent/k.json: no such file"]);
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

    // A reserved size no address space can hold is refused (see
    // `region_sizes_and_bases_are_checked`); the largest accepted one, which
    // cannot be mapped at this base, falls back to the snapshot's size.
    let dir2 = tempfile::tempdir().unwrap();
    let f2 = llvm_fixture(dir2.path(), Generation::LlvmCurrent, BASE, 256);
    edit_descriptor(&f2.descriptor, |r| r.region_size = Some(MAX_REGION_SIZE));
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
        // A cubin forced onto the host: refused before any executor opens.
        (
            &elf_header(190),
            &[
                "the image is CUDA cubin (ELF), which runs on the cuda executor, not on the host \
                 executor that --backend asks for",
            ],
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
        .fsync(false)
        .format(reprise::CaptureFormat::Raw);
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
fn a_pseudo_file_in_place_of_a_snapshot_is_refused_not_read_for_ever() {
    let dir = tempfile::tempdir().unwrap();
    let config = reprise::RecordConfig::default()
        .enabled(true)
        .dir(dir.path())
        .format(reprise::CaptureFormat::Raw);
    let d = record_axpy(config, 256, 1).remove(0);
    let rec = reprise::core::KernelRecord::from_json(&std::fs::read(&d).unwrap()).unwrap();
    let input = reprise_std::CapturePaths::new(&d, rec.generation).input;
    // A regular file of length 0 that reads on for hundreds of GiB.
    std::fs::remove_file(&input).unwrap();
    std::os::unix::fs::symlink("/proc/self/pagemap", &input).unwrap();
    for args in [
        vec!["inspect", d.to_str().unwrap()],
        vec!["list", dir.path().to_str().unwrap()],
        vec!["replay", d.to_str().unwrap()],
    ] {
        let out = output_within(
            std::process::Command::new(reprise_bin()).args(&args),
            std::time::Duration::from_secs(60),
        );
        assert!(
            matches!(out.status.code(), Some(1 | 2)),
            "{args:?}: {:?}",
            text(&out)
        );
        let (stdout, stderr) = text(&out);
        assert!(
            stdout.contains("procfs") || stderr.contains("procfs"),
            "{args:?}: {stdout}{stderr}"
        );
    }
}
