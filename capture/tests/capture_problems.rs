//! What is wrong with a bad capture comes out as a [`CaptureProblem`]
//! variant with its data as typed fields (what `inspect`, `list` and
//! `replay` can match on), and its message is the one people have always
//! read.

use std::path::{Path, PathBuf};

use reprise_capture::capture::{checksum, read_descriptor};
use reprise_capture::list::describe;
use reprise_capture::offload::{SECTION, images_in};
use reprise_capture::{Capture, CapturePaths, CaptureProblem, Error};
use reprise_core::image::{ImageError, ImageKind};
use reprise_core::offload::OffloadError;
use reprise_core::record::{Generation, KernelRecord};

const BASE: u64 = 1 << 40;

/// A capture of the kernel `k` in a fresh directory: its descriptor
/// (`edit` changes the record first), a memory snapshot of `input` bytes
/// (none: no file) and an image holding `image`.
fn capture(
    generation: Generation,
    input: Option<&[u8]>,
    image: &[u8],
    edit: impl FnOnce(&mut KernelRecord),
) -> (tempfile::TempDir, PathBuf, CapturePaths) {
    let dir = tempfile::tempdir().unwrap();
    let descriptor = dir.path().join("k.json");
    let mut record = KernelRecord::new("k").unwrap();
    record.generation = generation;
    record.region_base = Some(BASE);
    record.memory_size = input.map(|b| b.len() as u64);
    edit(&mut record);
    std::fs::write(&descriptor, record.to_json_string(generation).unwrap()).unwrap();
    let paths = CapturePaths::new(&descriptor, generation);
    if let Some(bytes) = input {
        std::fs::write(&paths.input, bytes).unwrap();
    }
    std::fs::write(&paths.image, image).unwrap();
    (dir, descriptor, paths)
}

/// Every capture problem `describe` finds, with the file it names.
fn problems(descriptor: &Path, verify: bool) -> Vec<(PathBuf, CaptureProblem)> {
    describe(descriptor, verify)
        .unwrap()
        .findings
        .into_iter()
        .filter_map(|f| match f.error {
            Error::Capture { path, problem } => Some((path, problem)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_snapshot_shorter_than_the_descriptor_says_is_a_size_mismatch() {
    // LLVM's current key set has no DeviceMemorySize: reprise's has.
    let (_dir, descriptor, paths) = capture(Generation::Reprise, Some(&[0; 32]), b"\x7fELF", |r| {
        r.memory_size = Some(64)
    });
    let found = problems(&descriptor, false);
    let (path, problem) = found
        .iter()
        .find(|(_, p)| matches!(p, CaptureProblem::SnapshotSize { .. }))
        .unwrap_or_else(|| panic!("no size mismatch in {found:?}"));
    assert_eq!(path, &paths.input);
    assert_eq!(
        problem,
        &CaptureProblem::SnapshotSize {
            found: 32,
            expected: 64
        }
    );
    assert_eq!(
        problem.to_string(),
        "memory snapshot is 32 bytes but the descriptor says DeviceMemorySize = 64 (truncated \
         or mismatched file)"
    );
}

#[test]
fn an_empty_image_and_one_no_executor_runs_say_which() {
    let (_dir, descriptor, paths) = capture(Generation::LlvmCurrent, Some(&[0; 16]), b"", |_| {});
    let found = problems(&descriptor, false);
    assert!(
        found.contains(&(paths.image.clone(), CaptureProblem::EmptyImage)),
        "{found:?}"
    );

    let (_dir, descriptor, paths) =
        capture(Generation::LlvmCurrent, Some(&[0; 16]), b"hello", |_| {});
    let found = problems(&descriptor, false);
    let (path, problem) = found
        .iter()
        .find(|(_, p)| matches!(p, CaptureProblem::NoExecutor(_)))
        .unwrap_or_else(|| panic!("no NoExecutor in {found:?}"));
    assert_eq!(path, &paths.image);
    assert_eq!(problem, &CaptureProblem::NoExecutor(ImageError::Unknown));
    // The image's own error stays reachable, typed.
    let e = Error::capture(path, problem.clone());
    let source = std::error::Error::source(&e).unwrap();
    let inner = source.source().unwrap();
    assert_eq!(
        inner.downcast_ref::<ImageError>(),
        Some(&ImageError::Unknown)
    );
    assert_eq!(
        e.to_string(),
        format!(
            "{}: the image is not ELF, PTX, a fat binary or LLVM bitcode",
            paths.image.display()
        )
    );
}

#[test]
fn a_missing_snapshot_or_a_directory_in_its_place() {
    let (_dir, descriptor, paths) = capture(Generation::LlvmCurrent, None, b"\x7fELF", |r| {
        r.memory_size = Some(16)
    });
    assert!(
        problems(&descriptor, false)
            .contains(&(paths.input.clone(), CaptureProblem::MissingSnapshot))
    );
    // Replaying refuses it with the same problem.
    let e = Capture::open(&descriptor).unwrap_err();
    assert_eq!(e.capture_problem(), Some(&CaptureProblem::MissingSnapshot));

    std::fs::create_dir(&paths.input).unwrap();
    let found = problems(&descriptor, false);
    assert!(
        found.contains(&(
            paths.input.clone(),
            CaptureProblem::NotRegular {
                kind: "a directory"
            }
        )),
        "{found:?}"
    );
}

#[test]
fn a_region_in_the_first_page() {
    let (_dir, descriptor, paths) =
        capture(Generation::LlvmCurrent, Some(&[0; 16]), b"\x7fELF", |r| {
            r.region_base = Some(0x100)
        });
    let found = problems(&descriptor, false);
    assert!(
        found.contains(&(
            paths.descriptor.clone(),
            CaptureProblem::RegionInFirstPage { base: 0x100 }
        )),
        "{found:?}"
    );
}

#[test]
fn a_snapshot_of_another_checksum() {
    let input = [7u8; 16];
    let (_dir, descriptor, paths) = capture(Generation::Reprise, Some(&input), b"\x7fELF", |r| {
        r.checksums.input = Some(1);
    });
    let found = problems(&descriptor, true);
    let want = CaptureProblem::ChecksumMismatch {
        recorded: 1,
        actual: checksum(&input),
    };
    assert!(
        found.contains(&(paths.input.clone(), want.clone())),
        "{found:?}"
    );
    assert!(
        want.to_string()
            .starts_with("checksum mismatch: descriptor says 0000000000000001, file has "),
        "{want}"
    );
}

#[test]
fn a_data_file_given_for_the_descriptor() {
    let (_dir, descriptor, paths) =
        capture(Generation::LlvmCurrent, Some(&[0; 16]), b"\x7fELF", |_| {});
    let e = read_descriptor(&paths.input).unwrap_err();
    assert_eq!(
        e.capture_problem(),
        Some(&CaptureProblem::NotADescriptor {
            role: "memory snapshot",
            descriptor: descriptor.clone(),
            descriptor_exists: true,
        })
    );
    assert_eq!(
        e.to_string(),
        format!(
            "{}: is a capture's memory snapshot, not its descriptor: pass its descriptor, {}",
            paths.input.display(),
            descriptor.display()
        )
    );
}

#[test]
fn files_without_device_images_or_with_a_broken_offload_binary() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain");
    std::fs::write(&plain, b"no images here").unwrap();
    let e = images_in(&plain).unwrap_err();
    assert_eq!(
        e.capture_problem(),
        Some(&CaptureProblem::NoDeviceImages {
            kind: ImageKind::Unknown,
            section: SECTION,
        })
    );

    // The magic, then nothing: the reader's own error, kept as it is.
    let broken = dir.path().join("broken.offload");
    let mut bytes = reprise_core::offload::MAGIC.to_vec();
    bytes.extend_from_slice(&[0; 8]);
    std::fs::write(&broken, &bytes).unwrap();
    let e = images_in(&broken).unwrap_err();
    let Some(CaptureProblem::Offload(inner)) = e.capture_problem() else {
        panic!("not an offload problem: {e:?}");
    };
    assert!(e.to_string().ends_with(&inner.to_string()), "{e}");
    let source = std::error::Error::source(&e).unwrap();
    assert_eq!(
        source
            .source()
            .and_then(|s| s.downcast_ref::<OffloadError>()),
        Some(inner)
    );
}

/// An AMD code object that lacks the capture's kernel: the executor's
/// refusal, in its words, with the executor it is.
#[cfg(feature = "amdgpu")]
#[test]
fn an_image_without_the_kernel_is_refused_by_its_executor() {
    const GFX90A: &[u8] = include_bytes!("../../backends/amdgpu/fixtures/saxpy_mixed.gfx90a.hsaco");
    let (_dir, descriptor, paths) =
        capture(Generation::LlvmCurrent, Some(&[0; 16]), GFX90A, |_| {});
    let found = problems(&descriptor, false);
    let (path, problem) = found
        .iter()
        .find(|(_, p)| matches!(p, CaptureProblem::ExecutorRefuses { .. }))
        .unwrap_or_else(|| panic!("no refusal in {found:?}"));
    assert_eq!(path, &paths.image);
    let CaptureProblem::ExecutorRefuses { backend, message } = problem else {
        unreachable!()
    };
    assert_eq!(*backend, reprise_core::record::BackendKind::Amdgpu);
    assert!(message.contains("`k`"), "{message}");
    assert_eq!(&problem.to_string(), message);
}
