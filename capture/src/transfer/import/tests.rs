use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

/// Damages a chunk of the file being imported after its manifest is in
/// place and before it is read back, for the test that a raw file
/// whose capture does not read back stays.
pub(super) static DAMAGE_BEFORE_READ_BACK: AtomicBool = AtomicBool::new(false);

/// Flips a byte in the middle of the chunk file `path` (replaced, as
/// chunk files are read-only).
pub(super) fn damage(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::remove_file(path).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A raw file whose bytes do not read back from the store once its
/// manifest is in place (a chunk damaged behind the importer's back)
/// stays, and the import fails naming the chunk; imported again (the
/// chunk put again, whole), it goes.
#[test]
fn a_file_that_does_not_read_back_whole_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::create(
        dir.path(),
        StoreOptions {
            fsync: false,
            chunk_size: 64 << 10,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let raw = dir.path().join("k-1-0.record_input");
    let bytes: Vec<u8> = (0..200_000u32).map(|i| (i * 7 + i / 13) as u8).collect();
    std::fs::write(&raw, &bytes).unwrap();
    DAMAGE_BEFORE_READ_BACK.store(true, Ordering::Relaxed);
    let failed = import_file(&store, &raw, false);
    DAMAGE_BEFORE_READ_BACK.store(false, Ordering::Relaxed);
    let e = failed.unwrap_err();
    let first = Manifest::read(&chunks::manifest_path(&raw))
        .unwrap()
        .chunks()[0]
        .hash;
    assert!(e.to_string().contains(&first.to_string()), "{e}");
    assert_eq!(std::fs::read(&raw).unwrap(), bytes, "the raw file went");
    // Again: the damaged chunk is found, replaced, and read back.
    let (moved, _) = import_file(&store, &raw, false).unwrap().unwrap();
    assert_eq!(moved.bytes, bytes.len() as u64);
    assert!(!raw.exists());
    let m = Manifest::read(&moved.manifest).unwrap();
    let mut back = vec![0u8; bytes.len()];
    store.read_into(&m, &mut back).unwrap();
    assert!(back == bytes);
}
