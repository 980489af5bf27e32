//! Bad input: every case exits 2 with a message naming the file and the
//! problem, never a panic, never a huge allocation.

mod common;

use std::path::Path;

use common::*;
use reprise::core::record::{FORMAT_VERSION, Generation, MAX_REGION_SIZE};
use serde_json::json;

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

/// An LLVM-current capture (whose files reprise's own format shares).
fn current(dir: &Path) -> Fixture {
    llvm_fixture(dir, Generation::LlvmCurrent, BASE, 256)
}

/// Sets (or, with `null`, removes) top-level keys of a descriptor, as a
/// person editing it would. A descriptor turned into reprise's format gets
/// the image's checksum too, as reprise's writer always records checksums
/// (a reprise descriptor without them is refused), unless the edit says
/// what `Checksums` is.
fn set_keys(descriptor: &Path, keys: serde_json::Value) {
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(descriptor).unwrap()).unwrap();
    let map = v.as_object_mut().unwrap();
    for (k, x) in keys.as_object().unwrap() {
        if x.is_null() {
            map.remove(k);
        } else {
            map.insert(k.clone(), x.clone());
        }
    }
    if map.contains_key("RepriseFormat") && !map.contains_key("Checksums") {
        let image = std::fs::read(sibling(descriptor, "image")).unwrap();
        let sum = reprise_std::capture::checksum(&image);
        map.insert(
            "Checksums".into(),
            json!({ "image": format!("{sum:016x}") }),
        );
    }
    std::fs::write(descriptor, serde_json::to_vec(&v).unwrap()).unwrap();
}

/// The sibling file of `descriptor` with extension `ext`.
fn sibling(descriptor: &Path, ext: &str) -> std::path::PathBuf {
    let stem = descriptor.to_string_lossy();
    std::path::PathBuf::from(format!("{}.{ext}", stem.trim_end_matches(".json")))
}

/// The `error:` line of a run's stderr.
fn error_line(o: &std::process::Output) -> String {
    let (_, err) = text(o);
    err.lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line in:\n{err}"))
        .to_string()
}

#[test]
fn newer_format_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    // This build's own version, in a reprise descriptor, replays.
    set_keys(&f.descriptor, json!({ "RepriseFormat": FORMAT_VERSION }));
    assert_exit(&reprise(&["replay", "--verify", s(&f.descriptor)]), 0);

    set_keys(&f.descriptor, json!({ "RepriseFormat": 99 }));
    let want = format!(
        "{}: RepriseFormat 99 is newer than this reprise reads (up to {FORMAT_VERSION}); \
         upgrade reprise",
        f.descriptor.display()
    );
    for cmd in ["replay", "inspect"] {
        assert_error(&reprise(&[cmd, s(&f.descriptor)]), &[&want]);
    }
}

#[test]
fn grid_and_block_must_agree_with_teams_and_threads() {
    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    let reprise_keys = json!({
        "RepriseFormat": 1,
        "Grid": [8, 1, 1],
        "Block": [128, 1, 1],
        "NumTeams": 8,
        "NumThreads": 128,
    });
    set_keys(&f.descriptor, reprise_keys.clone());
    assert_exit(&reprise(&["replay", "--verify", s(&f.descriptor)]), 0);

    let name = f.descriptor.display().to_string();
    for (keys, needle) in [
        (
            json!({ "Grid": [7, 1, 1], "NumTeams": 2048 }),
            "Grid [7,1,1] disagrees with NumTeams 2048",
        ),
        (
            json!({ "Block": [64, 1, 1] }),
            "Block [64,1,1] disagrees with NumThreads 128",
        ),
        (
            json!({ "Grid": [0, 1, 1] }),
            "Grid [0,1,1]: every dimension must be at least 1",
        ),
        (
            json!({ "Block": [128, 0, 1] }),
            "Block [128,0,1]: every dimension must be at least 1",
        ),
        (
            json!({ "NumThreads": 0, "Block": null }),
            "NumThreads 0: must be at least 1",
        ),
    ] {
        set_keys(&f.descriptor, reprise_keys.clone());
        set_keys(&f.descriptor, keys);
        for cmd in ["replay", "inspect"] {
            assert_error(
                &reprise(&[cmd, s(&f.descriptor)]),
                &[&format!("{name}: {needle}")],
            );
        }
    }

    // In LLVM's formats 0 is a count LLVM did not record (no num_teams
    // clause): readable, and the host (whose kernels get no geometry)
    // replays it as it is; GPU executors ask for the count (gpu_cuda.rs).
    let dir = tempfile::tempdir().unwrap();
    let f = legacy(dir.path());
    set_keys(&f.descriptor, json!({ "NumTeamsClause": 0 }));
    assert_exit(&reprise(&["replay", "--verify", s(&f.descriptor)]), 0);
    assert_exit(&reprise(&["inspect", s(&f.descriptor)]), 0);
    assert_exit(
        &reprise(&["replay", "--verify", "--num-teams=2", s(&f.descriptor)]),
        0,
    );
}

#[test]
fn zero_teams_or_threads_overrides_are_option_errors() {
    let dir = tempfile::tempdir().unwrap();
    let f = legacy(dir.path());
    for (option, name) in [
        ("--num-teams=0", "--num-teams"),
        ("--num-threads=0", "--num-threads"),
    ] {
        // The command line refuses them when parsed...
        let out = reprise(&["replay", option, s(&f.descriptor)]);
        assert_exit(&out, 2);
        let line = error_line(&out);
        assert!(line.contains(name) && line.contains('0'), "{line}");
        assert!(!line.contains("axpy.json"), "{line}");
    }
    // ... and the library when replaying, as a problem of the option, not
    // of the capture's file, named as the library names it.
    let capture = reprise::Capture::open(&f.descriptor).unwrap();
    for (builder, want) in [
        (
            reprise::replay(&capture).num_teams(0),
            "ReplayOptions::num_teams 0: must be at least 1",
        ),
        (
            reprise::replay(&capture).num_threads(0),
            "ReplayOptions::num_threads 0: must be at least 1",
        ),
    ] {
        let err = reprise::block_on(std::future::IntoFuture::into_future(builder)).unwrap_err();
        assert_eq!(err.to_string(), want);
    }
}

#[test]
fn region_sizes_and_bases_are_checked() {
    // LLVM current: the snapshot's length is its file's.
    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    let input = sibling(&f.descriptor, "record_input");
    let len = std::fs::metadata(&input).unwrap().len();
    set_keys(&f.descriptor, json!({ "VAllocSize": 1024 }));
    assert_error(
        &reprise(&["replay", s(&f.descriptor)]),
        &[
            &format!("{}: the memory snapshot", f.descriptor.display()),
            &format!("{} is {len} bytes", input.display()),
            "larger than the recorded region (VAllocSize 1024 bytes)",
        ],
    );
    // reprise's own format says the snapshot's length itself.
    set_keys(
        &f.descriptor,
        json!({ "RepriseFormat": 1, "DeviceMemorySize": 4 << 20, "VAllocSize": 4096 }),
    );
    for cmd in ["replay", "inspect"] {
        assert_error(
            &reprise(&[cmd, s(&f.descriptor)]),
            &["DeviceMemorySize 4194304 is larger than VAllocSize 4096"],
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    let name = f.descriptor.display().to_string();
    for (keys, needle) in [
        (
            json!({ "VAllocSize": 1u64 << 62 }),
            format!(
                "VAllocSize 4611686018427387904 is larger than any address space reprise replays \
                 into ({MAX_REGION_SIZE} bytes at most)"
            ),
        ),
        (
            json!({ "VAllocAddr": 0xffff_ffff_fff0_0000u64, "VAllocSize": 1 << 30 }),
            "the region at 0xfffffffffff00000 of VAllocSize 1073741824 bytes runs past the end \
             of the address space"
                .to_string(),
        ),
        (
            json!({ "VAllocAddr": 0 }),
            "VAllocAddr 0: the region has no address".to_string(),
        ),
    ] {
        set_keys(&f.descriptor, keys);
        for cmd in ["replay", "inspect"] {
            assert_error(
                &reprise(&[cmd, s(&f.descriptor)]),
                &[&format!("{name}: {needle}")],
            );
        }
        set_keys(
            &f.descriptor,
            json!({ "VAllocAddr": BASE, "VAllocSize": 64u64 << 30 }),
        );
    }
    // LLVM's default 64 GiB reservation is fine.
    assert_exit(&reprise(&["replay", "--verify", s(&f.descriptor)]), 0);

    let dir = tempfile::tempdir().unwrap();
    let f = legacy(dir.path());
    set_keys(&f.descriptor, json!({ "BumpAllocVAStart": 0 }));
    assert_error(
        &reprise(&["replay", s(&f.descriptor)]),
        &["axpy.json: BumpAllocVAStart 0: the region has no address"],
    );
}

#[test]
fn backend_that_contradicts_the_image_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    set_keys(
        &f.descriptor,
        json!({ "RepriseFormat": 1, "Backend": "host" }),
    );
    assert_exit(&reprise(&["replay", "--verify", s(&f.descriptor)]), 0);

    set_keys(&f.descriptor, json!({ "Backend": "cuda" }));
    let image = sibling(&f.descriptor, "image");
    for backend in ["auto", "host", "cuda"] {
        assert_error(
            &reprise(&["replay", "--backend", backend, s(&f.descriptor)]),
            &[
                &format!("{}: Backend is \"cuda\"", f.descriptor.display()),
                &format!(
                    "the image {} is ELF x86-64 shared object, which runs on the host executor",
                    image.display()
                ),
            ],
        );
    }
}

#[test]
fn things_that_are_not_descriptors_say_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    let f = legacy(dir.path());
    for text in [
        &b"[1,2,3]"[..],
        b"\x7fELF\x02\x01garbage",
        b"",
        b"{\"foo\": 1}",
    ] {
        std::fs::write(&f.descriptor, text).unwrap();
        for cmd in ["replay", "inspect"] {
            let out = reprise(&[cmd, s(&f.descriptor)]);
            assert_error(
                &out,
                &[&format!(
                    "{}: not a capture descriptor: expected a JSON object with the keys Name, \
                     NumArgs,",
                    f.descriptor.display()
                )],
            );
            let line = error_line(&out);
            if text.starts_with(b"{") {
                assert!(line.ends_with("(this object has none of them)"), "{line}");
            } else {
                assert!(line.contains("(JSON error: "), "{line}");
            }
        }
    }
}

#[test]
fn bad_arg_sizes_name_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    set_keys(
        &f.descriptor,
        json!({ "RepriseFormat": 1, "ArgSizes": [8, 8, 100000, 8] }),
    );
    let out = reprise(&["replay", s(&f.descriptor)]);
    assert_error(
        &out,
        &[&format!(
            "{}: ArgSizes[2] is 100000, larger than the largest by-value argument (4096 bytes",
            f.descriptor.display()
        )],
    );
    assert!(!error_line(&out).contains("ArgData"));

    set_keys(&f.descriptor, json!({ "ArgSizes": [8, 8, 16, 8] }));
    assert_error(
        &reprise(&["replay", s(&f.descriptor)]),
        &["ArgSizes[2] is 16", "the descriptor has no ArgData"],
    );
    set_keys(&f.descriptor, json!({ "ArgSizes": [8, 8, 8] }));
    assert_error(
        &reprise(&["replay", s(&f.descriptor)]),
        &["NumArgs is 4 but ArgSizes has 3 entries"],
    );
}

#[test]
fn missing_output_says_whether_it_was_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    let output = sibling(&f.descriptor, "record_output");
    std::fs::remove_file(&output).unwrap();
    // LLVM current without output: recorded without saving it.
    assert_error(
        &reprise(&["replay", "--verify", s(&f.descriptor)]),
        &["(it was recorded without saving output)"],
    );
    // A descriptor that records the output's checksum: the file was lost.
    set_keys(
        &f.descriptor,
        json!({ "RepriseFormat": 1, "Checksums": { "output": "0123456789abcdef" } }),
    );
    let out = reprise(&["replay", "--verify", s(&f.descriptor)]);
    assert_error(
        &out,
        &[&format!(
            "{}: cannot verify: the recorded output file is missing, though the descriptor \
             records its checksum",
            output.display()
        )],
    );
    assert!(!error_line(&out).contains("recorded without saving output"));
}

#[test]
fn missing_globals_allowed_are_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let f = legacy(dir.path());
    let globals = dir.path().join("axpy.globals");
    std::fs::remove_file(&globals).unwrap();
    let out = reprise_env(
        &["replay", "--allow-missing-globals", s(&f.descriptor)],
        &[("RUST_LOG", "warn")],
    );
    assert_exit(&out, 0);
    let (_, err) = text(&out);
    assert!(err.contains("WARN"), "{err}");
    assert!(
        err.contains(&format!(
            "{}: globals file is missing; every global keeps the value the image gives it",
            globals.display()
        )),
        "{err}"
    );

    // With a recorded checksum, the file was lost: both messages say so.
    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    let globals = sibling(&f.descriptor, "globals");
    let sum = reprise_std::capture::checksum(&std::fs::read(&globals).unwrap());
    std::fs::remove_file(&globals).unwrap();
    set_keys(
        &f.descriptor,
        json!({ "RepriseFormat": 1, "Checksums": { "globals": format!("{sum:016x}") } }),
    );
    assert_error(
        &reprise(&["replay", s(&f.descriptor)]),
        &[&format!(
            "{}: globals file is missing, though the descriptor records its checksum",
            globals.display()
        )],
    );
    let out = reprise_env(
        &["replay", "--allow-missing-globals", s(&f.descriptor)],
        &[("RUST_LOG", "warn")],
    );
    assert_exit(&out, 0);
    let (_, err) = text(&out);
    assert!(
        err.contains("the descriptor records the file's checksum"),
        "{err}"
    );
}

#[test]
fn save_output_errors_name_the_destination() {
    // In this process (so the temporary file's name is known), at a base no
    // other test of this binary uses.
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(dir.path(), Generation::LlvmLegacy, BASE + (1 << 40), 64);
    let dest = dir.path().join("axpy.replay.output");
    // The temporary file cannot be created: a directory has its name.
    let tmp = dir.path().join(format!(
        "{}axpy.replay.output.{}",
        reprise_std::store::TEMP_PREFIX,
        std::process::id()
    ));
    std::fs::create_dir(&tmp).unwrap();
    let capture = reprise::Capture::open(&f.descriptor).unwrap();
    let err = reprise::block_on(std::future::IntoFuture::into_future(
        reprise::replay(&capture).save_output(true),
    ))
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("{}: create failed", dest.display())),
        "{text}"
    );
    assert!(!text.contains(reprise_std::store::TEMP_PREFIX), "{text}");
    assert!(!dest.exists());
}
