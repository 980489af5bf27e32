use super::super::layout;
use super::super::tests::noise;
use super::super::{ChunkStore, StoreOptions};
use crate::error::ChunkHash;

/// A chunk whose link fails, for the tests of a put's flushers.
pub(in super::super) static FAIL_LINK: std::sync::Mutex<Option<ChunkHash>> =
    std::sync::Mutex::new(None);

/// Plants something at the chunk path it is given (a test's).
pub(super) type Planter = fn(&std::path::Path);

/// What to plant at a chunk's name before each try to link it, by chunk,
/// for the tests of a name found taken at link time.
pub(super) static PLANT_BEFORE_LINK: std::sync::Mutex<Vec<(ChunkHash, Planter)>> =
    std::sync::Mutex::new(Vec::new());

/// Plants what [`PLANT_BEFORE_LINK`] holds for the chunk `hash` at `path`,
/// its file, before a try to link it.
pub(super) fn plant_before_link(hash: &ChunkHash, path: &std::path::Path) {
    let plant = crate::threads::lock(&PLANT_BEFORE_LINK)
        .iter()
        .find(|(h, _)| h == hash)
        .map(|(_, plant)| *plant);
    if let Some(plant) = plant {
        plant(path);
    }
}

/// A chunk found missing whose name something takes before the link (a
/// directory, here) is linked all the same, once what took it is moved
/// aside; a name taken again before every link fails the put, naming the
/// chunk, after a bounded number of tries, and leaves no chunk file in
/// `tmp/`. A name taken by the chunk itself (another writer's) is as good.
#[test]
fn a_name_taken_at_link_time_is_looked_at_and_taken_back() {
    use super::super::write::TRIES;
    fn mkdir(path: &std::path::Path) {
        let _ = std::fs::create_dir(path);
    }
    fn empty(path: &std::path::Path) {
        let _ = std::fs::write(path, b"");
    }
    for fsync in [false, true] {
        for plant in [mkdir as fn(&std::path::Path), empty] {
            let dir = tempfile::tempdir().unwrap();
            let store = ChunkStore::create(
                dir.path(),
                StoreOptions {
                    chunk_size: 64 << 10,
                    fsync,
                    threads: 2,
                    ..StoreOptions::default()
                },
            )
            .unwrap();
            let data = noise(4 << 16, 41 + u64::from(fsync));
            let victim = ChunkHash::of(&data[2 << 16..3 << 16]);
            // Once: taken back.
            static PLANTED: std::sync::atomic::AtomicBool =
                std::sync::atomic::AtomicBool::new(false);
            fn once(path: &std::path::Path) {
                if !PLANTED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::fs::create_dir(path);
                }
            }
            PLANTED.store(false, std::sync::atomic::Ordering::Relaxed);
            PLANT_BEFORE_LINK.lock().unwrap().push((victim, once));
            let m = store.put(&data);
            PLANT_BEFORE_LINK
                .lock()
                .unwrap()
                .retain(|(h, _)| *h != victim);
            let m = m.unwrap();
            assert!(PLANTED.load(std::sync::atomic::Ordering::Relaxed));
            assert_eq!(store.check(&m), Vec::new());
            assert!(store.chunk_file(&victim).is_file());

            // Every time: the put fails, naming the chunk.
            let dir = tempfile::tempdir().unwrap();
            let store = ChunkStore::create(
                dir.path(),
                StoreOptions {
                    chunk_size: 64 << 10,
                    fsync,
                    ..StoreOptions::default()
                },
            )
            .unwrap();
            PLANT_BEFORE_LINK.lock().unwrap().push((victim, plant));
            let e = store.put(&data).unwrap_err();
            PLANT_BEFORE_LINK
                .lock()
                .unwrap()
                .retain(|(h, _)| *h != victim);
            assert!(
                matches!(
                    e.store_problem(),
                    Some(crate::error::StoreProblem::Occupied { tries }) if *tries == TRIES
                ),
                "{e}"
            );
            let path = store.chunk_file(&victim).display().to_string();
            assert!(e.to_string().contains(&path), "{e}");
            let left: Vec<_> = std::fs::read_dir(store.root().join(layout::TMP_DIR))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(layout::tmp::CHUNK))
                .collect();
            assert!(left.is_empty(), "{left:?}");
            // The same bytes put again, with nobody planting, are stored.
            let m = store.put(&data).unwrap();
            assert_eq!(store.check(&m), Vec::new());
        }
    }
}

/// A name taken at link time by another writer's file of the chunk is
/// that chunk stored: nothing is moved aside.
#[test]
fn a_name_taken_at_link_time_by_the_chunk_itself_is_as_good() {
    static GOOD: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());
    fn good(path: &std::path::Path) {
        let _ = std::fs::write(path, &*GOOD.lock().unwrap());
    }
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::create(
        dir.path(),
        StoreOptions {
            chunk_size: 64 << 10,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let data = noise(3 << 16, 43);
    let victim_bytes = &data[1 << 16..2 << 16];
    let victim = ChunkHash::of(victim_bytes);
    // Another writer's file: the chunk at another zstd level.
    *GOOD.lock().unwrap() = zstd::bulk::compress(victim_bytes, 19).unwrap();
    PLANT_BEFORE_LINK.lock().unwrap().push((victim, good));
    let m = store.put(&data);
    PLANT_BEFORE_LINK
        .lock()
        .unwrap()
        .retain(|(h, _)| *h != victim);
    let m = m.unwrap();
    assert_eq!(store.check(&m), Vec::new());
    assert_eq!(
        std::fs::read(store.chunk_file(&victim)).unwrap(),
        *GOOD.lock().unwrap()
    );
}
