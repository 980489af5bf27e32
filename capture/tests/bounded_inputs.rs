//! The device images of an offload binary whose entries share one image
//! (issue 20, class 11): listed without a copy per entry, the image looked
//! into once, and too many entries or too many image bytes an error naming
//! the file and the limit.

use std::sync::Arc;

use reprise_capture::offload::{image_for, images_in};
use reprise_core::offload;

const GFX90A: &[u8] = include_bytes!("../../backends/amdgpu/fixtures/saxpy_mixed.gfx90a.hsaco");

/// An LLVM offload binary of `entries` entries that all share one
/// `amdgcn-amd-amdhsa` `gfx90a` image: the gfx90a fixture padded with
/// zeros to `image_len` bytes.
fn sharing(entries: usize, image_len: usize) -> Vec<u8> {
    let strings_at = 32 + entries * 40;
    let text_at = strings_at + 32;
    let text = b"triple\0amdgcn-amd-amdhsa\0arch\0gfx90a\0";
    let offsets = [0usize, 7, 25, 30].map(|o| (text_at + o) as u64);
    let image_at = (text_at + text.len()).next_multiple_of(8);
    let size = image_at + image_len;
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&offload::MAGIC);
    out.extend_from_slice(&1u32.to_le_bytes());
    for v in [size, 32, entries * 40] {
        out.extend_from_slice(&(v as u64).to_le_bytes());
    }
    for _ in 0..entries {
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        for v in [strings_at, 2, image_at, image_len] {
            out.extend_from_slice(&(v as u64).to_le_bytes());
        }
    }
    for o in offsets {
        out.extend_from_slice(&o.to_le_bytes());
    }
    out.extend_from_slice(text);
    out.resize(image_at, 0);
    out.extend_from_slice(GFX90A);
    out.resize(size, 0);
    out
}

#[test]
fn entries_sharing_an_image_share_its_bytes_and_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.offload");
    std::fs::write(&path, sharing(1000, GFX90A.len())).unwrap();
    let images = images_in(&path).unwrap();
    assert_eq!(images.len(), 1000);
    let first = &images[0];
    assert_eq!(&*first.kernels, ["saxpy", "mixed"]);
    assert_eq!(
        (first.triple.as_str(), first.arch.as_str()),
        ("amdgcn-amd-amdhsa", "gfx90a")
    );
    assert_eq!(&*first.bytes, GFX90A);
    for (i, image) in images.iter().enumerate() {
        assert_eq!(image.index, i);
        assert!(
            Arc::ptr_eq(&image.kernels, &first.kernels),
            "entry {i}: its image was looked into again"
        );
        assert_eq!(
            image.bytes.as_ptr(),
            first.bytes.as_ptr(),
            "entry {i}: its image was copied"
        );
    }
    // The capture's kernel is in every entry: which one is unclear.
    let e = image_for(&path, "saxpy", None).unwrap_err().to_string();
    assert!(e.contains(path.to_str().unwrap()), "{e}");
}

#[test]
fn too_many_entries_or_image_bytes_name_the_file_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    for (entries, image_len, limit) in [
        (
            offload::MAX_ENTRIES + 1,
            16,
            "more than 1024 entries (the limit)",
        ),
        (8_000, 600_000, "more than 67108864 bytes (the limit"),
    ] {
        let path = dir.path().join(format!("{entries}x{image_len}.offload"));
        std::fs::write(&path, sharing(entries, image_len)).unwrap();
        for e in [
            images_in(&path).unwrap_err().to_string(),
            image_for(&path, "saxpy", None).unwrap_err().to_string(),
        ] {
            assert!(e.contains(path.to_str().unwrap()), "{e}");
            assert!(e.contains(limit), "{e}");
        }
    }
    // The entry limit itself reads.
    let path = dir.path().join("limit.offload");
    std::fs::write(&path, sharing(offload::MAX_ENTRIES, 16)).unwrap();
    assert_eq!(images_in(&path).unwrap().len(), offload::MAX_ENTRIES);
}
