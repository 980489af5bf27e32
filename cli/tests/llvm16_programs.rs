//! OpenMP programs written as users write them, recorded by LLVM 16's own
//! libomptarget and replayed unmodified: scalars of 64 Ki or more passed
//! by value beside pointers, reductions, array sections that start inside
//! their arrays, `num_teams`/`thread_limit` over large mappings, C++
//! templates and lambdas, and a kernel launched several times of which
//! LLVM keeps only the last capture. The region base each derives is
//! checked against the evidence the capture holds; where the capture
//! cannot tell, the refusal names the candidates and `--region-base`, and
//! one of them verifies. Never a FAIL from a guessed base.
//!
//! Skipped with a message where clang-16 or LLVM 16's runtime is missing,
//! unless `REPRISE_REQUIRE_LLVM16=1` (CI).

mod common;

use std::path::Path;

use common::llvm16::*;
use common::*;

/// The addresses in the refusal or hint `text`: the candidates it names.
fn candidates(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_hexdigit() && c != 'x')
        .filter(|w| {
            w.strip_prefix("0x")
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .is_some_and(in_mmap_area)
        })
        .map(str::to_string)
        .collect()
}

/// The region base `replay`'s stdout says it used.
fn base_used(stdout: &str) -> u64 {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("region base 0x"))
        .unwrap_or_else(|| panic!("no derived base:\n{stdout}"));
    let hex = line["region base 0x".len()..].split(':').next().unwrap();
    u64::from_str_radix(hex, 16).unwrap()
}

/// Whether `v` lies where Linux places x86-64 mappings: below the top of
/// user space, less up to 1 TiB of mmap randomization and what the program
/// mapped since (so 0x7e... as well as 0x7f...), far above the scalars
/// these programs pass (100000, 1.25f's bits, 1 << 40) and below a
/// double's bits (3.0 = 0x4008...).
fn in_mmap_area(v: u64) -> bool {
    (0x5000_0000_0000..0x8000_0000_0000).contains(&v)
}

#[test]
fn programs_with_scalars_sections_teams_and_templates_replay_with_bases_derived() {
    if need(
        compiler(),
        "programs_with_scalars_sections_teams_and_templates_replay_with_bases_derived",
    )
    .is_none()
    {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    for (program, captures) in [
        ("scalars", 1),
        ("reduction", 1),
        ("section", 1),
        ("teams", 1),
        ("templates", 2),
    ] {
        let (dir, bin, ds) = recorded_in(root.path(), program);
        assert_eq!(ds.len(), captures, "{program}");
        // The process's first allocation is the region base: the lowest
        // pointer of all its captures, a page + 0x10.
        let records: Vec<_> = ds
            .iter()
            .map(|d| reprise_std::capture::read_descriptor(d).unwrap())
            .collect();
        let first = records
            .iter()
            .flat_map(|r| r.arg_ptrs.iter().map(|&p| p as u64))
            .filter(|&p| in_mmap_area(p))
            .min()
            .unwrap();
        assert_eq!(first % 4096, 0x10, "{program}: {first:#x}");
        for (d, r) in ds.iter().zip(&records) {
            let out = replay(d, &bin, &[]);
            let (stdout, stderr) = text(&out);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{program}: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
                d.display()
            );
            assert!(stdout.contains("verification: PASS"), "{stdout}");
            assert_eq!(base_used(&stdout), first, "{program}:\n{stdout}");
            // inspect agrees, and shows no scalar as a region pointer.
            let out = reprise(&["inspect", "--image", s(&bin), s(d)]);
            assert_exit(&out, 0);
            let (stdout, _) = text(&out);
            assert!(stdout.contains("status    complete"), "{stdout}");
            for (i, &p) in r.arg_ptrs.iter().enumerate() {
                let line = stdout
                    .lines()
                    .find(|l| l.starts_with(&format!("  [{i:>3}]")))
                    .unwrap();
                let pointer = in_mmap_area(p as u64);
                assert_eq!(
                    line.contains("-> region +"),
                    pointer && r.arg_offsets[i] == 0,
                    "{program}: {line}"
                );
            }
            match program {
                // 100000, 1.25f, 3.0 and 1 << 40 by value.
                "scalars" => {
                    for v in [100_000i64, 0x3fa0_0000, 0x4008_0000_0000_0000, 1 << 40] {
                        assert!(r.arg_ptrs.contains(&v), "{program}: {:?}", r.arg_ptrs);
                    }
                }
                // a[3000:500] and b[1000:500]: the kernel's pointers lie
                // below what LLVM allocated.
                "section" => assert!(r.arg_offsets.iter().all(|&o| o < 0), "{r:?}"),
                "teams" => {
                    assert_eq!((r.grid[0], r.block[0]), (8, 128), "{r:?}");
                }
                _ => {}
            }
        }
        // list, given the binary, finds every capture complete.
        let out = reprise(&["list", "--image", s(&bin), s(&dir)]);
        assert_exit(&out, 0);
        assert!(
            text(&out)
                .0
                .contains(&format!("{captures} capture(s) (0 incomplete)")),
            "{}",
            text(&out).0
        );
    }
}

/// Replays `d` with each candidate base named in `refusal`; returns those
/// that verified.
fn verifying(d: &Path, bin: &Path, refusal: &str) -> Vec<String> {
    let named = candidates(refusal);
    assert!(!named.is_empty(), "no candidates in: {refusal}");
    named
        .into_iter()
        .filter(|b| {
            let out = replay(d, bin, &["--region-base", b]);
            // A wrong base faults (2) or differs (1): never a PASS.
            assert!(matches!(out.status.code(), Some(0..=2)), "{:?}", text(&out));
            out.status.success()
        })
        .collect()
}

#[test]
fn a_kernel_launched_several_times_is_refused_or_named_never_failed() {
    if need(
        compiler(),
        "a_kernel_launched_several_times_is_refused_or_named_never_failed",
    )
    .is_none()
    {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    // 4000-byte buffers: the last launch's pointers are no page + 0x10, and
    // several bases remain: refused, naming them.
    let (dir, bin, mut ds) = recorded_in(root.path(), "repeat");
    let d = ds.remove(0);
    let out = replay(&d, &bin, &["--max-base-tries", "0"]);
    assert_error(&out, &["nothing to tell them apart", "--region-base ADDR"]);
    let refusal = text(&out).1;
    let out = reprise(&["inspect", "--image", s(&bin), s(&d)]);
    assert_exit(&out, 1);
    assert!(
        text(&out).0.contains("--region-base ADDR"),
        "{}",
        text(&out).0
    );
    let out = reprise(&["list", "--image", s(&bin), s(&dir)]);
    assert_exit(&out, 1);
    assert!(
        text(&out).0.contains("nothing to tell them apart"),
        "{}",
        text(&out).0
    );
    assert_eq!(verifying(&d, &bin, &refusal).len(), 1, "{refusal}");

    // Whole-page buffers: the last launch's pointer is a page + 0x10, taken
    // for the base; the replay differs, and says the base may be wrong
    // (exit 2, not 1), naming the others, one of which verifies.
    let (_, bin, mut ds) = recorded_in(root.path(), "repeat_pages");
    let d = ds.remove(0);
    let out = replay(&d, &bin, &["--max-base-tries", "0"]);
    assert_error(
        &out,
        &["the output differs", "may be wrong", "--region-base ADDR"],
    );
    let hint = text(&out).1;
    assert_eq!(verifying(&d, &bin, &hint).len(), 1, "{hint}");
}

#[test]
fn a_kernel_fault_is_the_reason_given_never_a_corrupt_image() {
    if need(
        compiler(),
        "a_kernel_fault_is_the_reason_given_never_a_corrupt_image",
    )
    .is_none()
    {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let (_, bin, mut ds) = recorded_in(root.path(), "teams");
    let d = ds.remove(0);
    // A base given wrong: the kernel's pointers lie outside the region.
    for threads in ["1", "2"] {
        let out = output_within(
            std::process::Command::new(reprise_bin())
                .args([
                    "replay",
                    "--verify",
                    "--allow-missing-globals",
                    "--image",
                    s(&bin),
                    "--region-base",
                    "0x18010",
                    s(&d),
                ])
                .env("OMP_NUM_THREADS", threads),
            std::time::Duration::from_secs(120),
        );
        // One thread: the guard catches the fault and says where it was.
        // Two: another thread of OpenMP's team may fault first, outside
        // the guard, and that is the reason given.
        let want: &[&str] = if threads == "1" {
            &["faulted", "outside the region"]
        } else {
            &["faulted"]
        };
        assert_error(&out, want);
        let stderr = text(&out).1;
        assert!(!stderr.contains("corrupt"), "{stderr}");
    }
    // A derived base whose kernel faults: y's buffer moved to the end of
    // the snapshot, so the kernel writes past the region.
    edit_descriptor(&d, |r| {
        let size = r.memory_size.unwrap() as i64;
        r.arg_ptrs[2] = r.arg_ptrs[1] + size - 16;
    });
    let out = replay(&d, &bin, &[]);
    assert_error(&out, &["faulted", "was derived", "--region-base ADDR"]);
    assert!(!text(&out).1.contains("corrupt"), "{}", text(&out).1);
}

/// A kernel that follows a pointer to the recording process's stack (a
/// mapped struct holds it) faults on replay at that address, under the
/// derived base and under every other base possible: the fault names no
/// other base to try, and says that none would hold the address.
#[test]
fn a_fault_at_an_address_no_base_holds_names_no_base_to_try() {
    if need(
        compiler(),
        "a_fault_at_an_address_no_base_holds_names_no_base_to_try",
    )
    .is_none()
    {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let (_, bin, ds) = recorded_in(root.path(), "stack_view");
    assert_eq!(ds.len(), 1, "{ds:?}");
    let d = &ds[0];
    // One thread (the guard catches the fault in the replaying process)
    // or OpenMP's team (a thread outside the guard may fault first).
    for threads in ["1", "4"] {
        let out = output_within(
            std::process::Command::new(reprise_bin())
                .args(["replay", "--verify", "--allow-missing-globals", "--image"])
                .arg(&bin)
                .arg(d)
                .env("OMP_NUM_THREADS", threads),
            std::time::Duration::from_secs(120),
        );
        let stderr = text(&out).1;
        assert_error(
            &out,
            &["faulted: invalid memory access at 0x7f", "was derived"],
        );
        let at = stderr
            .split_once("faulted: invalid memory access at ")
            .and_then(|(_, rest)| rest.split_once(' '))
            .map(|(a, _)| a)
            .unwrap();
        assert!(
            stderr.contains(&format!(
                "but none of the 256 other base(s) possible would put {at} inside the \
                 1052592-byte snapshot, so no other base avoids this fault"
            )),
            "{threads} thread(s): {stderr}"
        );
        assert!(!stderr.contains("--region-base ADDR"), "{stderr}");
    }
}

#[test]
fn a_bare_descriptor_name_has_the_siblings_of_a_path() {
    if need(
        runtime(),
        "a_bare_descriptor_name_has_the_siblings_of_a_path",
    )
    .is_none()
    {
        return;
    }
    let dir = fixtures().join("two");
    let d = descriptors(&dir).pop().unwrap();
    let name = d.file_name().unwrap().to_str().unwrap();
    let run = |descriptor: &str| {
        let out = std::process::Command::new(reprise_bin())
            .current_dir(&dir)
            .args([
                "replay",
                "--verify",
                "--allow-missing-globals",
                "--image",
                "two",
                descriptor,
            ])
            .output()
            .unwrap();
        assert_exit(&out, 0);
        base_used(&text(&out).0)
    };
    assert_eq!(run(name), run(&format!("./{name}")));
}

#[test]
fn extract_names_files_from_untrusted_triples_safely() {
    if need(
        compiler(),
        "extract_names_files_from_untrusted_triples_safely",
    )
    .is_none()
    {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let bin = record("section", root.path());
    let section = root.path().join("section.bin");
    let st = std::process::Command::new("objcopy")
        .arg(format!(
            "--dump-section=.llvm.offloading={}",
            section.display()
        ))
        .arg(&bin)
        .status()
        .unwrap();
    assert!(st.success());
    // An offload binary whose entry's triple climbs out of --dir, names a
    // subdirectory and holds an escape sequence and a line break.
    let evil = root.path().join("evil.bin");
    let st = std::process::Command::new("clang-offload-packager-16")
        .arg("-o")
        .arg(&evil)
        .arg(format!(
            "--image=file={},triple=x86_64/../../escaped\u{1b}[2K\nx,kind=openmp",
            section.display()
        ))
        .status()
        .unwrap();
    assert!(st.success());
    let out_dir = root.path().join("deep/out");
    std::fs::create_dir_all(out_dir.join("evil.bin.x86_64")).unwrap();
    let out = reprise(&["extract", s(&evil), "--dir", s(&out_dir)]);
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    assert!(!stdout.contains('\u{1b}'), "{stdout}");
    // Nothing outside --dir, nothing in a subdirectory of it.
    assert!(!root.path().join("escaped\u{1b}[2K\nx.bin").exists());
    assert!(!root.path().join("deep/escaped\u{1b}[2K\nx.bin").exists());
    let written: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "evil.bin.x86_64")
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    assert!(
        written[0]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)),
        "{written:?}"
    );
    assert!(
        std::fs::read_dir(out_dir.join("evil.bin.x86_64"))
            .unwrap()
            .next()
            .is_none()
    );
    // A link at the output name is replaced, not written through.
    let victim = root.path().join("victim");
    std::fs::write(&victim, b"untouched").unwrap();
    let name = out_dir.join(&written[0]);
    std::fs::remove_file(&name).unwrap();
    std::os::unix::fs::symlink(&victim, &name).unwrap();
    assert_exit(&reprise(&["extract", s(&evil), "--dir", s(&out_dir)]), 0);
    assert_eq!(std::fs::read(&victim).unwrap(), b"untouched");
    assert!(
        std::fs::symlink_metadata(&name)
            .unwrap()
            .file_type()
            .is_file()
    );
}
