//! What is at a chunk's name is not proof the chunk is stored (issue 37):
//! a directory, a link (to `/dev/zero`, to nothing, to a good copy), a
//! FIFO, an empty file, a damaged file of the right length, a file far too
//! large, planted at the names of the chunks a put is about to store. The
//! put must store every chunk whole (what is there moved aside, never
//! trusted), in either format, without hanging on the FIFO; a quick look
//! names an empty file; and a name something keeps taking fails the put,
//! naming the chunk, rather than looping.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use reprise_capture::chunks::{
    ChunkFault, ChunkHash, ChunkStore, GcOptions, LeftoverKind, Manifest, StoreOptions,
    StoreProblem, gc_with, manifest_path, store_leftovers,
};
use reprise_capture::store::write_atomically;

const CS: usize = 64 << 10;

/// Longer than any put here takes, shorter than a hung test.
const DEADLINE: Duration = Duration::from_secs(60);

fn options() -> StoreOptions {
    StoreOptions {
        fsync: false,
        chunk_size: CS as u32,
        threads: 3,
        ..StoreOptions::default()
    }
}

/// Four chunks: noise (kept plain in format 2, a raw frame in 1), zeros,
/// text (both compressed), and noise again of another seed, short.
fn capture_bytes() -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(37);
    let mut out: Vec<u8> = (0..CS).map(|_| rng.u8(..)).collect();
    out.extend(std::iter::repeat_n(0u8, CS));
    out.extend((0..CS).map(|i| b"the bytes of a chunk, "[i % 22]));
    out.extend((0..CS / 3).map(|_| rng.u8(..)));
    out
}

/// What an attacker plants at a chunk's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plant {
    EmptyDir,
    FullDir,
    LinkToDevZero,
    LinkToNothing,
    LinkToGoodCopy,
    Fifo,
    EmptyFile,
    /// The good file's length, a byte flipped in its middle.
    Damaged,
    /// Another chunk's good file.
    OtherChunk,
    /// Larger than any file of the chunk.
    TooLarge,
}

const PLANTS: [Plant; 10] = [
    Plant::EmptyDir,
    Plant::FullDir,
    Plant::LinkToDevZero,
    Plant::LinkToNothing,
    Plant::LinkToGoodCopy,
    Plant::Fifo,
    Plant::EmptyFile,
    Plant::Damaged,
    Plant::OtherChunk,
    Plant::TooLarge,
];

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path, and no pointer kept.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// Plants `what` at `at`, the name of a chunk whose good file (as the
/// store writes it) is `good`; `other` is another chunk's good file, and
/// `aside` a directory of the attacker's.
fn plant(what: Plant, at: &Path, good: &[u8], other: &[u8], aside: &Path) {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    match what {
        Plant::EmptyDir => std::fs::create_dir(at).unwrap(),
        Plant::FullDir => {
            std::fs::create_dir(at).unwrap();
            std::fs::create_dir(at.join("inner")).unwrap();
            std::fs::write(at.join("inner/file"), good).unwrap();
            std::os::unix::fs::symlink("/dev/zero", at.join("zero")).unwrap();
        }
        Plant::LinkToDevZero => std::os::unix::fs::symlink("/dev/zero", at).unwrap(),
        Plant::LinkToNothing => std::os::unix::fs::symlink(aside.join("nothing"), at).unwrap(),
        Plant::LinkToGoodCopy => {
            let copy = aside.join(format!("copy-{}", fastrand::u64(..)));
            std::fs::write(&copy, good).unwrap();
            std::os::unix::fs::symlink(&copy, at).unwrap();
        }
        Plant::Fifo => mkfifo(at),
        Plant::EmptyFile => std::fs::write(at, b"").unwrap(),
        Plant::Damaged => {
            let mut bytes = good.to_vec();
            let mid = bytes.len() / 2;
            bytes[mid] ^= 0x5a;
            std::fs::write(at, bytes).unwrap();
        }
        Plant::OtherChunk => std::fs::write(at, other).unwrap(),
        Plant::TooLarge => std::fs::write(at, vec![7u8; 3 * CS]).unwrap(),
    }
}

/// Runs `f` on a thread of its own, failing the test if it takes longer
/// than [`DEADLINE`] (a FIFO opened without `O_NONBLOCK` waits forever).
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(t) => t,
        // It panicked: its panic is the test's.
        Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => panic!("{what}: ended without a result"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: still running after {DEADLINE:?} (waiting on a FIFO?)")
        }
    }
}

/// The good file of each chunk of `bytes` in a store of `version`, by
/// its name, as a store of that version writes it.
fn good_files(version: u32, bytes: &[u8]) -> Vec<(ChunkHash, Vec<u8>)> {
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::create_in_version(dir.path(), options(), version).unwrap();
    let m = store.put(bytes).unwrap();
    m.chunks()
        .iter()
        .map(|c| (c.hash, std::fs::read(store.chunk_file(&c.hash)).unwrap()))
        .collect()
}

/// Puts `bytes` into the store of `dir` (made in `version`) with `plants`
/// planted at its chunks' names first, within the deadline; checks that
/// every chunk is then a regular file holding its bytes, and returns the
/// manifest (placed in `dir`).
fn put_over(dir: &Path, version: u32, bytes: &[u8], plants: &[Plant]) -> Manifest {
    let good = good_files(version, bytes);
    let aside = dir.join("attacker");
    std::fs::create_dir_all(&aside).unwrap();
    let store = ChunkStore::create_in_version(dir, options(), version).unwrap();
    for (i, (hash, file)) in good.iter().enumerate() {
        let other = &good[(i + 1) % good.len()].1;
        plant(
            plants[i % plants.len()],
            &store.chunk_file(hash),
            file,
            other,
            &aside,
        );
    }
    drop(store);
    let dir_owned = dir.to_path_buf();
    let bytes_owned = bytes.to_vec();
    let label = format!("{plants:?} (format {version})");
    let m = within(&label, move || {
        // The store keeps the version it was made with.
        let store = ChunkStore::create(&dir_owned, options()).unwrap();
        assert_eq!(store.version(), version);
        let pin = store.pin().unwrap();
        let m = store.put_pinned(&pin, &bytes_owned).unwrap();
        write_atomically(
            &manifest_path(&dir_owned.join("k-1-0.record_input")),
            &m.encode(),
            false,
        )
        .unwrap();
        drop(pin);
        let mut back = vec![0u8; m.len() as usize];
        store.read_into(&m, &mut back).unwrap();
        assert!(back == bytes_owned, "the bytes read back differ");
        let fresh = ChunkStore::open(&dir_owned).unwrap().unwrap();
        assert_eq!(fresh.check(&m), Vec::new());
        m
    });
    let store = ChunkStore::open(dir).unwrap().unwrap();
    for (hash, file) in &good {
        let path = store.chunk_file(hash);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(
            meta.is_file(),
            "{label}: {} is no regular file",
            path.display()
        );
        // Written by this store's writer: the good file, byte for byte.
        assert!(
            std::fs::read(&path).unwrap() == *file,
            "{label}: {}",
            path.display()
        );
    }
    // The attacker's files are as they were: nothing was followed.
    assert!(!aside.join("nothing").exists(), "{label}");
    m
}

/// Every kind of thing at every chunk's name, each kind alone and all
/// kinds at once, in both formats: the put stores every chunk whole.
/// (Before: each was taken for the chunk, and the capture read back
/// broken, or hung on the FIFO.)
#[test]
fn whatever_is_at_a_chunks_name_the_put_stores_the_chunk_whole() {
    let bytes = capture_bytes();
    for version in [2, 1] {
        for plant in PLANTS {
            let dir = tempfile::tempdir().unwrap();
            put_over(dir.path(), version, &bytes, &[plant]);
        }
        let dir = tempfile::tempdir().unwrap();
        put_over(dir.path(), version, &bytes, &PLANTS);
    }
}

/// The same bytes put again under a pin of their own find each chunk
/// whole, and leave it (nothing moved aside, nothing written).
#[test]
fn a_whole_chunk_found_again_is_left_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = capture_bytes();
    let store = ChunkStore::create(dir.path(), options()).unwrap();
    let m = store.put(&bytes).unwrap();
    let inodes = |m: &Manifest| -> Vec<u64> {
        use std::os::unix::fs::MetadataExt;
        m.chunks()
            .iter()
            .map(|c| std::fs::metadata(store.chunk_file(&c.hash)).unwrap().ino())
            .collect()
    };
    let before = inodes(&m);
    let fresh = ChunkStore::create(dir.path(), options()).unwrap();
    assert_eq!(fresh.put(&bytes).unwrap(), m);
    assert_eq!(inodes(&m), before);
    let tmp: Vec<_> = std::fs::read_dir(dir.path().join(".reprise-store/tmp"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(tmp.is_empty(), "{tmp:?}");
}

/// A directory with files in it, moved aside from a chunk's name, is
/// shown as a leftover of the store until gc removes it (whatever it
/// holds, never following its links); the capture stays whole.
#[test]
fn a_full_directory_moved_aside_is_listed_and_removed_by_gc() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = capture_bytes();
    let m = put_over(dir.path(), 2, &bytes, &[Plant::FullDir]);
    let left = store_leftovers(dir.path()).unwrap();
    assert!(
        !left.is_empty(),
        "the directories moved aside are not listed"
    );
    assert!(
        left.iter().all(|l| l.kind == LeftoverKind::Displaced),
        "{left:?}"
    );
    let report = gc_with(
        dir.path(),
        &GcOptions {
            grace: Duration::ZERO,
            ..GcOptions::default()
        },
    )
    .unwrap();
    assert!(report.temp_removed as usize >= left.len(), "{report:?}");
    assert_eq!(store_leftovers(dir.path()).unwrap(), Vec::new());
    let store = ChunkStore::open(dir.path()).unwrap().unwrap();
    assert_eq!(store.check(&m), Vec::new());
    // /dev/zero is still a device (a link inside was removed, not followed).
    assert!(!std::fs::symlink_metadata("/dev/zero").unwrap().is_file());
}

/// A quick look at a capture's chunks (what `list --no-checksums` and
/// `reprise record` ask) names a chunk file of a length no file of the
/// chunk has: an empty file, one far too large. A plain look for missing
/// chunks does not.
#[test]
fn a_quick_look_names_a_chunk_file_of_an_impossible_length() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = capture_bytes();
    let store = ChunkStore::create(dir.path(), options()).unwrap();
    let m = store.put(&bytes).unwrap();
    assert_eq!(store.glance(&m), Vec::new());
    let file = |i: usize| store.chunk_file(&m.chunks()[i].hash);
    for (i, contents) in [(0, Vec::new()), (2, vec![1u8; 3 * CS])] {
        std::fs::remove_file(file(i)).unwrap();
        std::fs::write(file(i), contents).unwrap();
    }
    std::fs::remove_file(file(1)).unwrap();
    std::fs::create_dir(file(1)).unwrap();
    let problems = store.glance(&m);
    let faults: Vec<(u32, ChunkFault)> = problems.iter().map(|p| (p.index, p.fault)).collect();
    assert!(
        matches!(
            faults[..],
            [
                (0, ChunkFault::TooShort { len: 0, .. }),
                (1, ChunkFault::NotRegular),
                (2, ChunkFault::TooLarge { .. })
            ]
        ),
        "{faults:?}"
    );
    assert_eq!(store.missing(&m).len(), 1);
    // Put again: every one replaced.
    store.put(&bytes).unwrap();
    assert_eq!(store.glance(&m), Vec::new());
    assert_eq!(store.check(&m), Vec::new());
}

/// An attacker that puts a directory back at a chunk's name as fast as it
/// can: the put either stores the chunk whole or fails naming it, and
/// ends either way (the writer moves it aside a bounded number of times).
#[test]
fn a_name_taken_again_and_again_ends_the_put_one_way_or_the_other() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    for round in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let bytes = capture_bytes();
        let target: PathBuf = {
            let store = ChunkStore::create(dir.path(), options()).unwrap();
            let path = store.chunk_file(&ChunkHash::of(&bytes[..CS]));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            path
        };
        std::fs::create_dir(&target).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let attacker = {
            let stop = Arc::clone(&stop);
            let target = target.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = std::fs::create_dir(&target);
                }
            })
        };
        let d = dir.path().to_path_buf();
        let b = bytes.clone();
        let started = Instant::now();
        let result = within("a put beside the attacker", move || {
            let store = ChunkStore::create(&d, options()).unwrap();
            store.put(&b)
        });
        stop.store(true, Ordering::Relaxed);
        attacker.join().unwrap();
        assert!(started.elapsed() < DEADLINE);
        match result {
            Ok(m) => {
                let store = ChunkStore::open(dir.path()).unwrap().unwrap();
                assert_eq!(store.check(&m), Vec::new(), "round {round}");
            }
            Err(e) => {
                assert!(
                    matches!(e.store_problem(), Some(StoreProblem::Occupied { .. })),
                    "round {round}: {e}"
                );
                assert!(
                    e.to_string().contains(&target.display().to_string()),
                    "round {round}: {e}"
                );
            }
        }
    }
}
