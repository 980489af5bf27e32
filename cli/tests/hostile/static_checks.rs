//! A capture is code: `replay` makes every check that needs no run before
//! it loads the image (whose constructors run then), and `inspect` makes
//! the same ones, so that a capture `inspect` calls complete either
//! replays or fails at run time for a run-time reason (a kernel fault, a
//! missing device), never for something its files already showed.
//!
//! The captures here are reprise's own axpy capture with its image
//! replaced by one whose constructor creates the file `image-ran` in the
//! working directory: a case that finds the file ran the image.

use std::path::{Path, PathBuf};

use reprise::core::globals::{self, Layout};
use reprise::core::offload::{self, ImageFormat};
use reprise::core::record::KernelRecord;

use crate::common::llvm16::shared_object;
use crate::common::*;
use crate::{Original, originals, run};

/// What the image's constructor creates, in the replay's working directory.
const MARKER: &str = "image-ran";

/// The axpy kernel of `cli/tests/kernels/axpy.c`, with a constructor that
/// leaves [`MARKER`] behind.
const MARKING_AXPY: &str = r#"
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>
float alpha = 1.0f;
long axpy_calls = 0;
const int axpy_version = 3;
__attribute__((constructor)) static void mark(void) {
    int fd = open("image-ran", O_CREAT | O_WRONLY, 0600);
    if (fd >= 0) close(fd);
}
void axpy(const float *x, float *y, intptr_t n, long *calls_out) {
    for (intptr_t i = 0; i < n; i++)
        y[i] = alpha * x[i] + y[i];
    axpy_calls++;
    *calls_out = axpy_calls * 100 + axpy_version;
}
"#;

/// A capture written for one case.
struct Case {
    dir: PathBuf,
    descriptor: PathBuf,
    image: PathBuf,
    globals: PathBuf,
    input: PathBuf,
}

impl Case {
    fn record(&self) -> KernelRecord {
        KernelRecord::from_json(&std::fs::read(&self.descriptor).unwrap()).unwrap()
    }

    /// Rewrites the descriptor's checksums of the image and the globals to
    /// what the files hold now, so that a damaged image or globals file
    /// passes the integrity check and the check under test is the one that
    /// speaks.
    fn rehash(&self) {
        edit_descriptor(&self.descriptor, |r| {
            r.checksums.image = Some(reprise_std::capture::checksum(
                &std::fs::read(&self.image).unwrap(),
            ));
            r.checksums.globals = Some(reprise_std::capture::checksum(
                &std::fs::read(&self.globals).unwrap(),
            ));
        });
    }

    fn marked(&self) -> bool {
        self.dir.join(MARKER).exists()
    }
}

/// The reprise capture of `o` with the marking image, written for case `n`.
fn marking_capture(o: &Original, root: &Path, marking: &[u8], n: usize) -> Case {
    let dir = o.write(root, n);
    let case = Case {
        descriptor: dir.join(o.descriptor()),
        image: dir.join(o.file("image")),
        globals: dir.join(o.file("globals")),
        input: dir.join(o.file("record_input")),
        dir,
    };
    std::fs::write(&case.image, marking).unwrap();
    case.rehash();
    case
}

fn compile_marking(root: &Path) -> Vec<u8> {
    let so = root.join("marking_axpy.so");
    shared_object(MARKING_AXPY, &so, &[]);
    std::fs::read(&so).unwrap()
}

fn patch_image(c: &Case, f: impl FnOnce(&mut Vec<u8>)) {
    let mut b = std::fs::read(&c.image).unwrap();
    f(&mut b);
    std::fs::write(&c.image, b).unwrap();
}

fn write_globals(c: &Case, g: &[(&str, &[u8])]) {
    let mut blob = vec![0u8; globals::encoded_len(Layout::Current, g.iter().copied()).unwrap()];
    globals::encode_into(Layout::Current, g.iter().copied(), &mut blob).unwrap();
    std::fs::write(&c.globals, blob).unwrap();
}

type Mutation = fn(&Case);

#[test]
fn checks_that_need_no_run_come_before_the_image_runs_and_inspect_makes_them_too() {
    let root = tempfile::tempdir().unwrap();
    let o = originals(root.path()).pop().unwrap();
    assert!(o.checksummed);
    let marking = compile_marking(root.path());

    // The control: the marking capture is whole, and replaying it runs the
    // image (so a case without the marker did not run it).
    let c = marking_capture(&o, root.path(), &marking, 0);
    assert_exit(&run(&c.dir, &["inspect", s(&c.descriptor)]), 0);
    assert!(!c.marked(), "inspect ran the image");
    assert_exit(&run(&c.dir, &["replay", "--verify", s(&c.descriptor)]), 0);
    assert!(
        c.marked(),
        "the control replay did not run the marking image"
    );

    let cases: &[(&str, Mutation, &[&str])] = &[
        (
            "a snapshot byte flipped (its checksum now wrong)",
            |c| {
                let mut b = std::fs::read(&c.input).unwrap();
                b[3] ^= 0x10;
                std::fs::write(&c.input, b).unwrap();
            },
            &["record_input", "checksum mismatch"],
        ),
        (
            "the kernel absent from the image",
            |c| {
                edit_descriptor(&c.descriptor, |r| {
                    r.name = "no_such_kernel".try_into().unwrap()
                })
            },
            &[
                ".image",
                "kernel `no_such_kernel` is not a function in the image",
            ],
        ),
        (
            "a recorded global whose size differs from the image's",
            |c| {
                write_globals(c, &[("alpha", &[0u8; 8]), ("axpy_calls", &[0u8; 8])]);
                c.rehash();
            },
            &[
                ".globals",
                "recorded global `alpha` has 8 bytes, the image's has 4",
            ],
        ),
        (
            "a recorded global the image lacks",
            |c| {
                write_globals(c, &[("alpha", &[0u8; 4]), ("beta", &[0u8; 4])]);
                c.rehash();
            },
            &[
                ".globals",
                "recorded global `beta` is absent from the image",
            ],
        ),
        (
            "an image that is no known format",
            |c| {
                std::fs::write(&c.image, b"just some bytes, not code").unwrap();
                c.rehash();
            },
            &[".image", "not ELF, PTX, a fat binary or LLVM bitcode"],
        ),
        (
            "an empty image",
            |c| {
                std::fs::write(&c.image, b"").unwrap();
                c.rehash();
            },
            &[".image", "the image is empty"],
        ),
        (
            "an ELF image for aarch64",
            |c| {
                patch_image(c, |b| b[18..20].copy_from_slice(&183u16.to_le_bytes()));
                c.rehash();
            },
            &[".image", "machine 183"],
        ),
        (
            "a truncated ELF image",
            |c| {
                patch_image(c, |b| b.truncate(b.len() / 2));
                c.rehash();
            },
            &[".image", "truncated"],
        ),
        (
            "an ELF image cut inside its loadable segments, section headers kept",
            |c| {
                // The section headers moved to where the cut leaves them
                // inside the file: only the segments are short.
                patch_image(c, |b| {
                    let shoff = u64::from_le_bytes(b[40..48].try_into().unwrap()) as usize;
                    let shsize = usize::from(u16::from_le_bytes([b[58], b[59]]))
                        * usize::from(u16::from_le_bytes([b[60], b[61]]));
                    let headers = b[shoff..shoff + shsize].to_vec();
                    let cut = 0x1100.min(shoff);
                    b.truncate(cut);
                    b.extend_from_slice(&headers);
                    b[40..48].copy_from_slice(&(cut as u64).to_le_bytes());
                });
                c.rehash();
            },
            &[".image", "truncated"],
        ),
        (
            "an offload container as the capture's own image",
            |c| {
                let so = std::fs::read(&c.image).unwrap();
                let bin = offload::write_one(ImageFormat::Object, "x86_64-pc-linux-gnu", "", &so);
                std::fs::write(&c.image, bin).unwrap();
                c.rehash();
            },
            &[".image", "offload binary container"],
        ),
        (
            "a 32-bit ELF image",
            |c| {
                patch_image(c, |b| b[4] = 1);
                c.rehash();
            },
            &[".image", "32-bit or big-endian"],
        ),
        (
            "an ELF executable (ET_EXEC) as the image",
            |c| {
                patch_image(c, |b| b[16..18].copy_from_slice(&2u16.to_le_bytes()));
                c.rehash();
            },
            &[".image", "not a shared object", "ET_EXEC"],
        ),
        (
            "an ELF object file (ET_REL) as the image",
            |c| {
                patch_image(c, |b| b[16..18].copy_from_slice(&1u16.to_le_bytes()));
                c.rehash();
            },
            &[".image", "not a shared object", "ET_REL"],
        ),
        (
            "an argument recorded as 4 bytes for the host",
            |c| {
                edit_descriptor(&c.descriptor, |r| {
                    r.arg_sizes.clear();
                    for size in [8, 8, 4, 8] {
                        r.arg_sizes.push(size).unwrap();
                    }
                })
            },
            &[".json", "argument 2 is 4 bytes"],
        ),
    ];
    // Every case is tried; the failures are reported together.
    let mut failures = Vec::new();
    for (n, (what, mutate, needles)) in cases.iter().enumerate() {
        let c = marking_capture(&o, root.path(), &marking, n + 1);
        mutate(&c);
        if what.contains("argument") {
            assert_eq!(c.record().arg_size(2), 4, "{what}: the mutation took");
        }
        let out = run(&c.dir, &["inspect", s(&c.descriptor)]);
        let (stdout, stderr) = text(&out);
        assert!(!stderr.contains("panicked"), "{what}: inspect panicked");
        if out.status.code() != Some(1) {
            failures.push(format!(
                "{what}: inspect exits {:?}, not 1:\n{stdout}{stderr}",
                out.status.code()
            ));
        }
        if let Some(needle) = needles.iter().find(|n| !stdout.contains(*n)) {
            failures.push(format!("{what}: inspect does not say {needle:?}"));
        }
        assert!(!c.marked(), "{what}: inspect ran the image");
        let out = run(&c.dir, &["replay", "--verify", s(&c.descriptor)]);
        let stderr = text(&out).1;
        assert!(!stderr.contains("panicked"), "{what}: replay panicked");
        if out.status.code() != Some(2) {
            failures.push(format!(
                "{what}: replay exits {:?}, not 2:\n{stderr}",
                out.status.code()
            ));
        }
        if let Some(needle) = needles.iter().find(|n| !stderr.contains(*n)) {
            failures.push(format!("{what}: replay does not say {needle:?}:\n{stderr}"));
        }
        if c.marked() {
            failures.push(format!(
                "{what}: replay ran the image before refusing it:\n{stderr}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The gfx90a code object of `backends/amdgpu/fixtures`, its metadata's
/// kernarg segments cut from 288 bytes to 16: the explicit arguments of
/// `saxpy` (at offsets 0 to 24) lie beyond it.
fn short_kernarg_segments() -> Vec<u8> {
    let mut b =
        include_bytes!("../../../backends/amdgpu/fixtures/saxpy_mixed.gfx90a.hsaco").to_vec();
    let key = b".kernarg_segment_size";
    let mut patched = 0;
    let mut at = 0;
    while let Some(i) = b[at..].windows(key.len()).position(|w| w == key) {
        let v = at + i + key.len();
        // msgpack uint16 288.
        assert_eq!(&b[v..v + 3], &[0xcd, 0x01, 0x20]);
        b[v + 1..v + 3].copy_from_slice(&16u16.to_be_bytes());
        patched += 1;
        at = v;
    }
    assert_eq!(patched, 2, "both kernels' kernarg segments patched");
    b
}

#[test]
fn amd_metadata_that_puts_arguments_beyond_the_kernarg_segment_is_refused_without_a_gpu() {
    let root = tempfile::tempdir().unwrap();
    let (d, _) = llvm_saxpy_capture(
        root.path(),
        reprise::core::record::Generation::LlvmCurrent,
        &short_kernarg_segments(),
        0x1534_f7e0_0000,
        1000,
        256,
    );
    let needles = ["beyond its 16-byte kernarg segment", "saxpy"];
    let out = run(root.path(), &["inspect", s(&d)]);
    let stdout = text(&out).0;
    assert_exit(&out, 1);
    for n in needles {
        assert!(stdout.contains(n), "inspect lacks {n:?}:\n{stdout}");
    }
    // Refused before a runtime is looked for: the same answer on every
    // machine.
    let out = run(root.path(), &["replay", s(&d)]);
    assert_error(&out, &needles);
}

#[test]
fn an_image_taken_from_the_captures_own_container_is_checked_against_that_file() {
    let root = tempfile::tempdir().unwrap();
    let o = originals(root.path()).pop().unwrap();
    let c = marking_capture(&o, root.path(), AXPY, 1);
    let bin = offload::write_one(ImageFormat::Object, "x86_64-pc-linux-gnu", "", AXPY);
    std::fs::write(&c.image, &bin).unwrap();
    // The descriptor vouches for the container file: the capture's own
    // image is the container, which no executor runs...
    c.rehash();
    let out = run(&c.dir, &["inspect", s(&c.descriptor)]);
    assert_exit(&out, 1);
    assert!(text(&out).0.contains("offload binary container"));
    // ... but the entry taken from it with --image is the image the file
    // holds, whose checksum is the file's.
    for cmd in ["inspect", "replay"] {
        let out = run(&c.dir, &[cmd, "--image", s(&c.image), s(&c.descriptor)]);
        assert_exit(&out, 0);
        assert!(
            !text(&out).1.contains("checksum mismatch"),
            "{cmd}: {:?}",
            text(&out)
        );
    }
    // The recorded image itself inside a container (an application
    // binary holding it): the entry's checksum is the descriptor's.
    edit_descriptor(&c.descriptor, |r| {
        r.checksums.image = Some(reprise_std::capture::checksum(AXPY));
    });
    assert_exit(
        &run(
            &c.dir,
            &["replay", "--image", s(&c.image), s(&c.descriptor)],
        ),
        0,
    );
    // Neither: the message says what was hashed.
    edit_descriptor(&c.descriptor, |r| {
        r.checksums.image = Some(0x0123_4567_89ab_cdef)
    });
    let out = run(
        &c.dir,
        &["replay", "--image", s(&c.image), s(&c.descriptor)],
    );
    let entry = reprise_std::capture::checksum(AXPY);
    let file = reprise_std::capture::checksum(&bin);
    assert_error(
        &out,
        &[
            s(&c.image),
            "descriptor says 0123456789abcdef",
            &format!("entry #0 of its offload binary, has {entry:016x}"),
            &format!("the whole file has {file:016x}"),
        ],
    );
}
