//! Captures that LLVM 16's offloading runtime really writes, replayed
//! unmodified: real OpenMP programs compiled with Debian's clang-16 for the
//! host offload target, recorded by LLVM 16's libomptarget
//! (`LIBOMPTARGET_RECORD=1`), replayed with `--image` naming the
//! application binary (LLVM 16 saves no image) and `--allow-missing-globals`
//! (nor globals), the region base derived (nor its base).
//!
//! The committed fixtures (`fixtures/llvm16/`, made by
//! `scripts/make-llvm16-fixtures.sh`) need LLVM 16's `libomp.so.5` and
//! `libomptarget.so.16` (which needs `libLLVM-16.so.1`) at replay time, and
//! recording afresh needs clang-16 and its tools: where they are missing the
//! tests skip with a message naming what is missing, unless
//! `REPRISE_REQUIRE_LLVM16=1` (set by CI) makes that a failure.

mod common;

use std::path::Path;
use std::process::Command;

use common::llvm16::*;
use common::*;

#[test]
fn committed_llvm16_captures_replay_unmodified() {
    if need(runtime(), "committed_llvm16_captures_replay_unmodified").is_none() {
        return;
    }
    for (program, want) in [("saxpy", 0), ("two", 0), ("update", 1)] {
        let dir = fixtures().join(program);
        let bin = dir.join(program);
        is_what_llvm16_writes(&dir, &bin);
        for d in descriptors(&dir) {
            let out = replay(&d, &bin, &[]);
            assert_exit(&out, want);
            let (stdout, _) = text(&out);
            assert!(stdout.contains("host executor"), "{stdout}");
            assert!(
                stdout.contains("region base 0x") && stdout.contains("derived"),
                "{stdout}"
            );
            if want == 1 {
                // The kernel read a global the application changed: never
                // a silent pass.
                assert!(stdout.contains("verification: FAIL"), "{stdout}");
            }
        }
    }
}

#[test]
fn freshly_recorded_llvm16_captures_replay_unmodified() {
    if need(
        compiler(),
        "freshly_recorded_llvm16_captures_replay_unmodified",
    )
    .is_none()
    {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    for (program, want, captures) in [
        ("saxpy", 0, 1),
        ("clauses", 0, 1),
        ("many", 0, 1),
        ("two", 0, 2),
        ("update", 1, 1),
    ] {
        let dir = root.path().join(program);
        std::fs::create_dir(&dir).unwrap();
        let bin = record(program, &dir);
        is_what_llvm16_writes(&dir, &bin);
        let ds = descriptors(&dir);
        assert_eq!(ds.len(), captures, "{program}");
        for d in &ds {
            let out = replay(d, &bin, &[]);
            let (stdout, stderr) = text(&out);
            assert_eq!(
                out.status.code(),
                Some(want),
                "{program}: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
                d.display()
            );
            let json = std::fs::read_to_string(d).unwrap();
            match program {
                "clauses" => {
                    assert!(json.contains("\"NumTeamsClause\":4"), "{json}");
                    assert!(json.contains("\"ThreadLimitClause\":64"), "{json}");
                }
                "many" => assert!(json.contains("\"NumArgs\":11"), "{json}"),
                _ => {}
            }
        }
        // inspect agrees: with the binary, complete; without it, what replay
        // would refuse and the option that supplies it.
        for d in &ds {
            let out = reprise(&["inspect", "--image", s(&bin), s(d)]);
            assert_exit(&out, 0);
            let (stdout, _) = text(&out);
            assert!(stdout.contains("status    complete"), "{stdout}");
            assert!(stdout.contains("base derived"), "{stdout}");
            let out = reprise(&["inspect", s(d)]);
            assert_exit(&out, 1);
            assert!(text(&out).0.contains("--image PATH"), "{}", text(&out).0);
            assert_error(&reprise(&["replay", s(d)]), &["--image PATH"]);
        }
    }
}

#[test]
fn the_two_kernels_of_one_process_derive_the_same_base() {
    if need(
        runtime(),
        "the_two_kernels_of_one_process_derive_the_same_base",
    )
    .is_none()
    {
        return;
    }
    let dir = fixtures().join("two");
    let bin = dir.join("two");
    let ds = descriptors(&dir);
    let base = |d: &Path| {
        let c = reprise::Capture::open_with(
            d,
            reprise::OpenOptions::new()
                .allow_missing_globals(true)
                .image(&bin),
        )
        .unwrap();
        (c.region_base().unwrap(), c.base_origin().unwrap())
    };
    let (a, how_a) = base(&ds[0]);
    let (b, how_b) = base(&ds[1]);
    assert_eq!(a, b, "one process, one region");
    assert_eq!(a % 4096, 0x10, "a malloc'd region: a page + 16 bytes");
    for how in [how_a, how_b] {
        assert_eq!(
            how,
            reprise::capture::BaseOrigin::Derived {
                evidence: reprise::capture::base::Evidence::Only,
                agreeing: 1,
                disagreeing: 0
            }
        );
    }
    // Alone, the second kernel's capture allows several bases, and none
    // is where a buffer starts: refused, naming them and the option.
    let alone = tempfile::tempdir().unwrap();
    let second = &ds[1];
    let stem = second.file_stem().unwrap().to_string_lossy().into_owned();
    for ext in ["json", "memory", "original.output"] {
        std::fs::copy(
            dir.join(format!("{stem}.{ext}")),
            alone.path().join(format!("{stem}.{ext}")),
        )
        .unwrap();
    }
    let lone = alone.path().join(format!("{stem}.json"));
    let out = replay(&lone, &bin, &["--max-base-tries", "0"]);
    let given = format!("{a:#x}");
    assert_error(
        &out,
        &["nothing to tell them apart", &given, "--region-base ADDR"],
    );
    // Given, the base makes it replay.
    assert_exit(&replay(&lone, &bin, &["--region-base", &given]), 0);
}

#[test]
fn a_capture_whose_base_cannot_be_derived_asks_for_it() {
    if need(
        runtime(),
        "a_capture_whose_base_cannot_be_derived_asks_for_it",
    )
    .is_none()
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = fixtures().join("saxpy");
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dir.path().join(p.file_name().unwrap())).unwrap();
    }
    let d = descriptors(dir.path()).remove(0);
    // No argument that could point into the region.
    edit_descriptor(&d, |r| {
        for p in r.arg_ptrs.iter_mut() {
            *p = 7;
        }
    });
    let bin = dir.path().join("saxpy");
    let out = replay(&d, &bin, &[]);
    assert_error(
        &out,
        &[s(&d), "records no region address", "--region-base ADDR"],
    );
    let out = reprise(&["inspect", "--image", s(&bin), s(&d)]);
    assert_exit(&out, 1);
    assert!(
        text(&out).0.contains("--region-base ADDR"),
        "{}",
        text(&out).0
    );
}

#[test]
fn an_image_whose_library_is_missing_is_named_with_the_library() {
    if need(
        runtime(),
        "an_image_whose_library_is_missing_is_named_with_the_library",
    )
    .is_none()
    {
        return;
    }
    // An x86-64 image that needs a library nobody has any more.
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("libreprisegone.so");
    shared_object("int gone(void) { return 1; }\n", &lib, &[]);
    let image = dir.path().join("needs.so");
    let src = fixtures().join("saxpy");
    let d = descriptors(&src).remove(0);
    let kernel = reprise::Capture::open_with(
        &d,
        reprise::OpenOptions::new()
            .allow_missing_globals(true)
            .image(src.join("saxpy")),
    )
    .unwrap()
    .record
    .name
    .to_string();
    let code = format!("int gone(void); void {kernel}(void) {{ gone(); }}\n");
    let lib_dir = format!("-L{}", dir.path().display());
    shared_object(&code, &image, &[&lib_dir, "-lreprisegone"]);
    std::fs::remove_file(&lib).unwrap();
    let out = replay(&d, &image, &[]);
    assert_error(&out, &["libreprisegone.so", &image.display().to_string()]);
}

#[test]
fn extract_lists_and_writes_every_entry_of_a_binary_for_three_targets() {
    if need(
        compiler(),
        "extract_lists_and_writes_every_entry_of_a_binary_for_three_targets",
    )
    .is_none()
    {
        return;
    }
    let rocm = Path::new("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode");
    if need(
        if rocm.join("ocml.bc").exists() {
            Ok(())
        } else {
            Err(format!(
                "{} is missing (Debian's rocm-device-libs)",
                rocm.display()
            ))
        },
        "extract_lists_and_writes_every_entry_of_a_binary_for_three_targets",
    )
    .is_none()
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openmp/saxpy.c");
    // x86-64 and an AMD GPU (gfx90a) in one binary, with Debian's ROCm
    // device libraries. (An NVIDIA GPU's cubin needs CUDA's ptxas, which
    // Debian does not have: its PTX is built alone and packed below.)
    let app = dir.path().join("saxpy");
    let st = Command::new("clang-16")
        .args([
            "-fopenmp",
            "-fopenmp-targets=x86_64-pc-linux-gnu,amdgcn-amd-amdhsa",
            "-Xopenmp-target=amdgcn-amd-amdhsa",
            "-march=gfx90a",
        ])
        .arg(format!("--rocm-device-lib-path={}", rocm.display()))
        .arg("-O2")
        .arg(&src)
        .arg("-o")
        .arg(&app)
        .status()
        .unwrap();
    assert!(st.success(), "building for x86-64 and gfx90a");
    let ptx = dir.path().join("saxpy.sm_80.s");
    let st = Command::new("clang-16")
        .args([
            "-fopenmp",
            "-fopenmp-targets=nvptx64-nvidia-cuda",
            "-Xopenmp-target=nvptx64-nvidia-cuda",
            "-march=sm_80",
            "--offload-device-only",
            "-S",
            "-O2",
        ])
        .arg(&src)
        .arg("-o")
        .arg(&ptx)
        .status()
        .unwrap();
    assert!(st.success(), "building PTX for sm_80");
    let packed = dir.path().join("nvptx.bin");
    let st = Command::new("clang-offload-packager-16")
        .arg("-o")
        .arg(&packed)
        .arg(format!(
            "--image=file={},triple=nvptx64-nvidia-cuda,arch=sm_80,kind=openmp",
            ptx.display()
        ))
        .status()
        .unwrap();
    assert!(st.success(), "packing the PTX");
    // The three in one .llvm.offloading section, as clang would write them.
    let section = dir.path().join("section.bin");
    let st = Command::new("objcopy")
        .arg(format!(
            "--dump-section=.llvm.offloading={}",
            section.display()
        ))
        .arg(&app)
        .status()
        .unwrap();
    assert!(st.success());
    let mut all = std::fs::read(&section).unwrap();
    all.resize(all.len().next_multiple_of(8), 0);
    all.extend_from_slice(&std::fs::read(&packed).unwrap());
    std::fs::write(&section, &all).unwrap();
    let app3 = dir.path().join("saxpy3");
    let st = Command::new("objcopy")
        .arg(format!(
            "--update-section=.llvm.offloading={}",
            section.display()
        ))
        .arg(&app)
        .arg(&app3)
        .status()
        .unwrap();
    assert!(st.success());

    let out_dir = dir.path().join("images");
    let out = reprise(&["extract", s(&app3), "--dir", s(&out_dir)]);
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    for (triple, kind) in [
        ("x86_64-pc-linux-gnu", "ELF x86-64 shared object"),
        ("amdgcn-amd-amdhsa", "AMD GPU code object"),
        ("nvptx64-nvidia-cuda", "PTX"),
    ] {
        let line = stdout
            .lines()
            .find(|l| l.contains(triple))
            .unwrap_or_else(|| panic!("no {triple} entry:\n{stdout}"));
        assert!(line.contains(kind), "{line}");
        assert!(line.contains("__omp_offloading_"), "its kernel: {line}");
    }
    assert!(stdout.contains("3 device image(s)"), "{stdout}");
    let written: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for want in [
        "saxpy3.x86_64-pc-linux-gnu.so",
        "saxpy3.amdgcn-amd-amdhsa.gfx90a.hsaco",
        "saxpy3.nvptx64-nvidia-cuda.sm_80.ptx",
    ] {
        assert!(
            written.iter().any(|w| w == want),
            "{want} not in {written:?}"
        );
    }
    // A capture of that kernel: three entries define it, so the executor
    // must be named; the host's then replays.
    let rec_dir = dir.path().join("rec");
    std::fs::create_dir(&rec_dir).unwrap();
    let out = Command::new(&app)
        .current_dir(&rec_dir)
        .env("LD_LIBRARY_PATH", LIB)
        .env("LIBOMPTARGET_RECORD", "1")
        .env("LIBOMPTARGET_RR_SAVE_OUTPUT", "1")
        .env("LIBOMPTARGET_RR_DEVMEM_SIZE", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    let d = descriptors(&rec_dir).remove(0);
    assert_error(
        &replay(&d, &app3, &[]),
        &[
            "more than one entry",
            "amdgcn-amd-amdhsa gfx90a",
            "nvptx64-nvidia-cuda sm_80",
        ],
    );
    assert_exit(&replay(&d, &app3, &["--backend", "host"]), 0);
}

#[test]
fn an_image_that_ends_the_process_is_no_pass() {
    if need(runtime(), "an_image_that_ends_the_process_is_no_pass").is_none() {
        return;
    }
    // A copy: --save-output writes beside the capture.
    let dir = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(fixtures().join("saxpy")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dir.path().join(p.file_name().unwrap())).unwrap();
    }
    let d = descriptors(dir.path()).remove(0);
    let kernel = reprise_std::capture::read_descriptor(&d)
        .unwrap()
        .name
        .to_string();
    // A kernel that calls exit(0), one that calls exit(1), and a
    // constructor that calls _exit(0): the replay never finished.
    for (name, code) in [
        (
            "exit0",
            format!("#include <stdlib.h>\nvoid {kernel}(void) {{ exit(0); }}\n"),
        ),
        (
            "exit1",
            format!("#include <stdlib.h>\nvoid {kernel}(void) {{ exit(1); }}\n"),
        ),
        (
            "ctor",
            format!(
                "#include <unistd.h>\n__attribute__((constructor)) static void c(void) \
                 {{ _exit(0); }}\nvoid {kernel}(void) {{}}\n"
            ),
        ),
    ] {
        let image = dir.path().join(format!("{name}.so"));
        shared_object(&code, &image, &[]);
        for extra in [&[][..], &["--save-output"], &["--repetitions", "3"]] {
            let out = replay(&d, &image, extra);
            assert_error(&out, &[s(&image), "before the replay finished"]);
            assert!(!text(&out).0.contains("verification: PASS"), "{name}");
        }
    }
}
