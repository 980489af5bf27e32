use std::sync::atomic::{AtomicUsize, Ordering};

use super::super::layout::{TMP_DIR, tmp};
use super::super::tests::noise;
use super::super::write::tests::FAIL_LINK;
use super::super::{ChunkStore, StoreOptions};
use crate::error::ChunkHash;

const CS: usize = 64 << 10;

fn store(dir: &std::path::Path, threads: usize, fsync: bool) -> ChunkStore {
    let options = StoreOptions {
        chunk_size: CS as u32,
        threads,
        fsync,
        ..StoreOptions::default()
    };
    ChunkStore::create(dir, options).unwrap()
}

#[test]
fn a_capture_put_at_once_gives_each_part_its_manifest() {
    for (threads, fsync) in [(1, true), (2, true), (4, false)] {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), threads, fsync);
        let input = noise(5 * CS + 100, 3);
        let mut output = input.clone();
        output[10] ^= 1;
        let tiny = [7u8; 10];
        let parts: [&[u8]; 4] = [&output, &input, &[], &tiny];
        let pin = store.pin().unwrap();
        let prepared = AtomicUsize::new(0);
        let prepare = |k: usize, m: &super::Manifest| {
            prepared.fetch_add(1, Ordering::Relaxed);
            assert_eq!(m.len(), parts[k].len() as u64);
            Ok(k)
        };
        let (puts, named) = store
            .put_all(&pin, &parts, prepare, || store.names.len())
            .unwrap();
        assert_eq!(prepared.into_inner(), 4, "threads {threads}");
        // Every chunk was named before `meanwhile` ran: the input's
        // six, the output's first, the tiny one.
        assert_eq!(named, 8, "threads {threads}");
        for (k, (m, index)) in puts.iter().enumerate() {
            assert_eq!(*index, k);
            let mut back = vec![0u8; parts[k].len()];
            store.read_into(m, &mut back).unwrap();
            assert_eq!(back, parts[k], "part {k}, threads {threads}");
            assert!(store.check(m).is_empty());
        }
        assert_eq!(puts[0].0.chunks()[1..], puts[1].0.chunks()[1..]);
        assert_ne!(puts[0].0.chunks()[0], puts[1].0.chunks()[0]);
    }
}

#[test]
fn a_chunk_whose_link_fails_fails_the_put_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), 2, true);
    let data = noise(8 * CS, 21);
    let bad = ChunkHash::of(&data[3 * CS..4 * CS]);
    *FAIL_LINK.lock().unwrap() = Some(bad);
    let pin = store.pin().unwrap();
    let failed = store.put_pinned(&pin, &data);
    *FAIL_LINK.lock().unwrap() = None;
    let e = failed.unwrap_err().to_string();
    let path = store.chunk_file(&bad);
    assert!(e.contains(&path.display().to_string()), "{e}");
    drop(pin);
    assert!(!path.exists());
    let left: Vec<_> = std::fs::read_dir(store.root().join(TMP_DIR))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(tmp::CHUNK))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // The same bytes put again are stored whole.
    let m = store.put(&data).unwrap();
    assert!(store.check(&m).is_empty());
    assert!(path.exists());
}
