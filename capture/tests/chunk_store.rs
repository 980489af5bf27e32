//! The chunk store (`reprise_capture::chunks`) on real files: round trips,
//! deduplication, writers in several threads and processes at once, damaged
//! and missing chunks, hostile manifests, and gc, alone and beside a writer.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use reprise_capture::Error;
use reprise_capture::chunks::{
    ChunkFault, ChunkHash, ChunkStore, GcOptions, Manifest, ManifestError, StoreOptions,
    StoreProblem, gc_with, manifest_path, usage,
};
use reprise_capture::store::write_atomically;

const CS: u32 = 64 << 10;

fn options() -> StoreOptions {
    StoreOptions {
        fsync: false,
        chunk_size: CS,
        threads: 3,
        ..StoreOptions::default()
    }
}

/// `len` bytes unlike any other call's with another `seed`, compressible
/// in part (as a snapshot is).
fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..len)
        .map(|i| {
            if i % 4 == 0 {
                rng.u8(..)
            } else {
                (i / 4) as u8
            }
        })
        .collect()
}

/// Writes `m` as the manifest of the raw file `name` in `dir`.
fn place(dir: &Path, name: &str, m: &Manifest) -> PathBuf {
    let path = manifest_path(&dir.join(name));
    write_atomically(&path, &m.encode(), false).unwrap();
    path
}

/// The chunk files in the store of `dir`.
fn chunk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let chunks = dir.join(".reprise-store/chunks");
    for prefix in std::fs::read_dir(chunks).unwrap() {
        for f in std::fs::read_dir(prefix.unwrap().path()).unwrap() {
            out.push(f.unwrap().path());
        }
    }
    out.sort();
    out
}

/// What is left in the store's `tmp/`.
fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir.join(".reprise-store/tmp"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn read_back(store: &ChunkStore, m: &Manifest) -> Result<Vec<u8>, Error> {
    let mut out = vec![0u8; m.len() as usize];
    store.read_into(m, &mut out).map(|()| out)
}

#[test]
fn bytes_read_back_as_they_were_put_at_every_edge_of_a_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::create(dir.path(), options()).unwrap();
    assert_eq!(store.chunk_size(), CS);
    let cs = CS as usize;
    for (seed, len) in [0, 1, cs - 1, cs, cs + 1, 5 * cs, (6 << 20) + 3]
        .into_iter()
        .enumerate()
    {
        let bytes = data(len, seed as u64);
        let m = store.put(&bytes).unwrap();
        assert_eq!(m.len(), len as u64);
        assert_eq!(m.chunks().len(), len.div_ceil(cs));
        let path = place(dir.path(), &format!("k{seed}.record_input"), &m);
        let m = Manifest::read(&path).unwrap();
        assert_eq!(read_back(&store, &m).unwrap(), bytes, "{len} bytes");
        let mut streamed = Vec::new();
        store
            .for_each_chunk(&m, |c| streamed.extend_from_slice(c))
            .unwrap();
        assert_eq!(streamed, bytes);
        assert_eq!(store.check(&m), []);
        assert_eq!(store.missing(&m), []);
    }
    // Read by a reader of its own, on one thread and on several.
    let m = store.put(&data(3 << 20, 99)).unwrap();
    for threads in [1, 4] {
        let reader = ChunkStore::open_with(
            dir.path(),
            StoreOptions {
                threads,
                ..options()
            },
        )
        .unwrap()
        .unwrap();
        assert_eq!(read_back(&reader, &m).unwrap(), data(3 << 20, 99));
    }
    // Nothing left in progress.
    assert_eq!(temp_files(dir.path()), Vec::<String>::new());
    // A buffer of another length is refused.
    let mut short = vec![0u8; 10];
    let e = store.read_into(&m, &mut short).unwrap_err();
    assert!(matches!(
        e.store_problem(),
        Some(StoreProblem::BufferLength { buffer: 10, .. })
    ));
}

#[test]
fn a_chunk_is_stored_once_and_an_output_adds_only_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::create(dir.path(), options()).unwrap();
    let input = data(16 * CS as usize, 1);
    let a = store.put(&input).unwrap();
    let files = chunk_files(dir.path());
    assert_eq!(files.len(), 16);
    // The same bytes again: nothing new.
    let b = store.put(&input).unwrap();
    assert_eq!(a, b);
    assert_eq!(chunk_files(dir.path()), files);
    // An output that differs in one chunk: one chunk more.
    let mut output = input.clone();
    output[5 * CS as usize + 17] ^= 0xff;
    let c = store.put(&output).unwrap();
    assert_eq!(chunk_files(dir.path()).len(), 17);
    let differ: Vec<usize> = (0..16)
        .filter(|&i| a.chunks()[i] != c.chunks()[i])
        .collect();
    assert_eq!(differ, [5]);
    // A snapshot of zeros is one chunk, however long.
    let z = store.put(&vec![0u8; 40 * CS as usize]).unwrap();
    assert_eq!(chunk_files(dir.path()).len(), 18);
    assert!(z.chunks().iter().all(|c| c.hash == z.chunks()[0].hash));

    place(dir.path(), "k.record_input", &a);
    place(dir.path(), "k.record_output", &c);
    place(dir.path(), "z.record_input", &z);
    let u = usage(dir.path()).unwrap();
    assert_eq!(u.manifests, 3);
    assert_eq!(u.raw_bytes, 72 * u64::from(CS));
    assert_eq!(u.distinct_chunks, 18);
    assert_eq!(u.distinct_bytes, 18 * u64::from(CS));
    assert_eq!(u.chunk_files, 18);
    assert_eq!(u.missing_chunks, 0);
    assert_eq!(u.referenced_stored_bytes, u.stored_bytes);
    assert!((u.dedup_ratio() - 4.0).abs() < 1e-9, "{u:?}");
    assert!(u.compression_ratio() > 1.0, "{u:?}");
}

#[test]
fn a_store_keeps_its_chunk_size_and_refuses_a_version_it_does_not_know() {
    let dir = tempfile::tempdir().unwrap();
    assert!(ChunkStore::open(dir.path()).unwrap().is_none());
    ChunkStore::create(dir.path(), options()).unwrap();
    let again = ChunkStore::create(dir.path(), StoreOptions::default()).unwrap();
    assert_eq!(
        again.chunk_size(),
        CS,
        "a store keeps the chunk size it has"
    );
    // A reader writes nothing.
    let reader = ChunkStore::open(dir.path()).unwrap().unwrap();
    let e = reader.put(b"x").unwrap_err();
    assert!(matches!(e.store_problem(), Some(StoreProblem::ReadOnly)));
    // A store of a later format is refused, naming its VERSION.
    let version = dir.path().join(".reprise-store/VERSION");
    std::fs::remove_file(&version).unwrap();
    std::fs::write(&version, "reprise-chunk-store 2\n").unwrap();
    for e in [
        ChunkStore::open(dir.path()).unwrap_err(),
        ChunkStore::create(dir.path(), options()).unwrap_err(),
    ] {
        assert!(
            matches!(e.store_problem(), Some(StoreProblem::Version(_))),
            "{e}"
        );
        assert!(e.to_string().contains(version.to_str().unwrap()), "{e}");
    }
}

#[test]
fn writers_in_two_threads_leave_one_consistent_store() {
    let dir = tempfile::tempdir().unwrap();
    let shared = ChunkStore::create(dir.path(), options()).unwrap();
    let bytes = data(4 << 20, 5);
    let manifests: Vec<Manifest> = std::thread::scope(|s| {
        let a = s.spawn(|| shared.put(&bytes).unwrap());
        // A store of its own: nothing in memory shared.
        let b = s.spawn(|| {
            ChunkStore::create(dir.path(), options())
                .unwrap()
                .put(&bytes)
                .unwrap()
        });
        let c = s.spawn(|| shared.put(&bytes).unwrap());
        [a, b, c].into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(manifests.iter().all(|m| *m == manifests[0]));
    assert_eq!(chunk_files(dir.path()).len(), 64);
    assert_eq!(read_back(&shared, &manifests[0]).unwrap(), bytes);
    assert_eq!(shared.check(&manifests[0]), []);
    assert_eq!(temp_files(dir.path()), Vec::<String>::new());
}

/// Set in a child process this file's test binary runs: the capture
/// directory it writes into.
const CHILD_DIR: &str = "REPRISE_CHUNK_STORE_CHILD_DIR";

/// A child's part of [`writers_in_two_processes_leave_one_consistent_store`]
/// (does nothing in a plain test run): creates the store of the directory
/// it is given and puts the same bytes as the other child, several times.
#[test]
fn child_process_writer() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let store = ChunkStore::create(&dir, options()).unwrap();
    for round in 0..4 {
        let m = store.put(&data(4 << 20, round)).unwrap();
        let name = format!("k-{}-{round}.record_input", std::process::id());
        place(&dir, &name, &m);
    }
}

#[test]
fn writers_in_two_processes_leave_one_consistent_store() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(&exe)
                .args(["--exact", "child_process_writer", "--test-threads=1"])
                .env(CHILD_DIR, dir.path())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let store = ChunkStore::open(dir.path()).unwrap().unwrap();
    let mut manifests = 0;
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "chunks") {
            let m = Manifest::read(&path).unwrap();
            assert_eq!(store.check(&m), [], "{}", path.display());
            manifests += 1;
        }
    }
    assert_eq!(manifests, 8);
    // Each round's 64 chunks once, whoever wrote them.
    let u = usage(dir.path()).unwrap();
    assert_eq!((u.distinct_chunks, u.chunk_files), (256, 256));
    assert_eq!(temp_files(dir.path()), Vec::<String>::new());
}

#[test]
fn damaged_and_missing_chunks_are_named_and_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::create(dir.path(), options()).unwrap();
    let bytes = data(6 * CS as usize, 3);
    let m = store.put(&bytes).unwrap();
    let file = |i: usize| store.chunk_file(&m.chunks()[i].hash);
    let rewrite = |i: usize, contents: &[u8]| {
        let f = file(i);
        std::fs::remove_file(&f).unwrap();
        std::fs::write(&f, contents).unwrap();
    };
    let cs = CS as usize;
    // 1: missing; 2: bytes flipped; 3: another chunk's bytes; 4: a chunk
    // of another length; 5: no zstd at all, and too large.
    std::fs::remove_file(file(1)).unwrap();
    let mut flipped = std::fs::read(file(2)).unwrap();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x55;
    rewrite(2, &flipped);
    let other = data(cs, 77);
    rewrite(3, &zstd::bulk::compress(&other, 1).unwrap());
    rewrite(4, &zstd::bulk::compress(&other[..100], 1).unwrap());
    rewrite(5, &vec![7u8; 2 * cs]);

    let problems = store.check(&m);
    let named: Vec<(u32, ChunkHash)> = problems.iter().map(|p| (p.index, p.hash)).collect();
    assert_eq!(
        named,
        (1..6)
            .map(|i| (i as u32, m.chunks()[i].hash))
            .collect::<Vec<_>>()
    );
    assert_eq!(problems[0].fault, ChunkFault::Missing);
    assert!(
        matches!(
            problems[1].fault,
            ChunkFault::Undecompressible
                | ChunkFault::HashMismatch { .. }
                | ChunkFault::WrongLength { .. }
        ),
        "{:?}",
        problems[1]
    );
    assert_eq!(
        problems[2].fault,
        ChunkFault::HashMismatch {
            found: ChunkHash::of(&other)
        }
    );
    assert_eq!(
        problems[3].fault,
        ChunkFault::WrongLength {
            found: 100,
            expected: CS
        }
    );
    assert!(matches!(problems[4].fault, ChunkFault::TooLarge { .. }));
    // The message names the chunk.
    let hash = m.chunks()[1].hash.to_string();
    assert!(problems[0].to_string().contains(&hash));
    // Only the missing one is missing to a quick look.
    assert_eq!(store.missing(&m).len(), 1);

    let e = read_back(&store, &m).unwrap_err();
    let Some(StoreProblem::Chunk(p)) = e.store_problem() else {
        panic!("{e}");
    };
    assert!((1..6).contains(&p.index), "{e}");
    assert!(e.to_string().contains(&p.hash.to_string()), "{e}");
    let e = store.for_each_chunk(&m, |_| {}).unwrap_err();
    assert!(e.to_string().contains(&hash), "{e}");
    // Something at a chunk's name is not proof the chunk is stored:
    // putting the bytes again replaces the damaged ones (and stores the
    // missing one).
    store.put(&bytes).unwrap();
    assert_eq!(store.check(&m), Vec::new());
}

#[test]
fn hostile_manifest_files_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::create(dir.path(), options()).unwrap();
    let good = store.put(&data(3 * CS as usize, 8)).unwrap().encode();
    let path = dir.path().join("k.record_input.chunks");
    let refused = |bytes: &[u8]| {
        std::fs::write(&path, bytes).unwrap();
        let e = Manifest::read(&path).unwrap_err();
        assert!(e.to_string().contains(path.to_str().unwrap()), "{e}");
        match e.store_problem() {
            Some(StoreProblem::Manifest(m)) => *m,
            _ => panic!("{e}"),
        }
    };
    assert!(matches!(
        refused(&good[..good.len() / 2]),
        ManifestError::CountMismatch { .. }
    ));
    // A count of u32::MAX chunks in a file of three.
    let mut lying = good.clone();
    lying[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        refused(&lying),
        ManifestError::CountMismatch {
            count: u32::MAX,
            ..
        }
    ));
    // A total of 2^64 - 1 bytes, its checksum made right.
    let mut huge = good[..good.len() - 32].to_vec();
    huge[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
    let sum = ChunkHash::of(&huge);
    huge.extend_from_slice(&sum.0);
    assert!(matches!(
        refused(&huge),
        ManifestError::CountForLength {
            total: u64::MAX,
            ..
        }
    ));
    // A file larger than any manifest is not read at all (sparse here).
    std::fs::File::create(&path)
        .unwrap()
        .set_len(reprise_capture::chunks::MAX_ENCODED_LEN + 1)
        .unwrap();
    let e = Manifest::read(&path).unwrap_err();
    assert!(matches!(
        e.store_problem(),
        Some(StoreProblem::Manifest(ManifestError::TooLarge { .. }))
    ));
    // A link is not followed.
    std::fs::remove_file(&path).unwrap();
    std::fs::write(dir.path().join("elsewhere"), &good).unwrap();
    std::os::unix::fs::symlink("elsewhere", &path).unwrap();
    assert!(matches!(Manifest::read(&path), Err(Error::Io { .. })));
}

/// Waits until what was written last is older than what is written next
/// by the file system's clock (file times are coarse: a few milliseconds).
fn settle() {
    std::thread::sleep(Duration::from_millis(30));
}

fn no_grace() -> GcOptions {
    GcOptions {
        grace: Duration::ZERO,
        ..GcOptions::default()
    }
}

#[test]
fn gc_keeps_what_manifests_name_and_removes_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::create(dir.path(), options()).unwrap();
    let kept_bytes = data(8 * CS as usize, 1);
    let kept = store.put(&kept_bytes).unwrap();
    let mut changed = kept_bytes.clone();
    changed[..CS as usize].fill(9);
    let gone = store.put(&changed).unwrap();
    let only_gone = store.put(&data(4 * CS as usize, 2)).unwrap();
    place(dir.path(), "k.record_input", &kept);
    assert_eq!(chunk_files(dir.path()).len(), 13);

    // Within the grace period nothing goes.
    let r = reprise_capture::chunks::gc(dir.path()).unwrap();
    assert_eq!((r.removed, r.kept, r.manifests), (0, 13, 1));

    // Leftovers: a dead writer's pin, an old half-written chunk, a chunk a
    // dead gc was removing.
    let tmp = dir.path().join(".reprise-store/tmp");
    std::fs::write(tmp.join("pin.00000000000000aa"), [0u8; 32]).unwrap();
    let old = tmp.join("chunk.00000000000000bb");
    std::fs::write(&old, b"half").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(2 * 3600))
        .unwrap();
    let young = tmp.join("chunk.00000000000000cc");
    std::fs::write(&young, b"being written").unwrap();
    let victim = store.chunk_file(&kept.chunks()[3].hash);
    let doomed = tmp.join(format!("gc.{}.0000000000000001", kept.chunks()[3].hash));
    std::fs::rename(&victim, &doomed).unwrap();

    settle();
    let r = gc_with(dir.path(), &no_grace()).unwrap();
    assert_eq!(r.removed, 5, "{r:?}");
    assert_eq!(r.restored, 1, "{r:?}");
    assert_eq!(r.temp_removed, 2, "{r:?}");
    assert_eq!(r.kept, 8, "{r:?}");
    assert!(r.removed_bytes > 0);
    assert_eq!(temp_files(dir.path()), ["chunk.00000000000000cc"]);
    assert_eq!(chunk_files(dir.path()).len(), 8);
    assert_eq!(store.check(&kept), []);
    assert_eq!(read_back(&store, &kept).unwrap(), kept_bytes);
    assert_eq!(store.missing(&gone).len(), 1);
    assert_eq!(store.missing(&only_gone).len(), 4);
    // Removed chunks are stored again by the next put that has them.
    store.put(&changed).unwrap();
    assert_eq!(store.check(&gone), []);
}

#[test]
fn gc_refuses_to_guess_past_a_manifest_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::create(dir.path(), options()).unwrap();
    store.put(&data(CS as usize, 1)).unwrap();
    let bad = dir.path().join("k.record_input.chunks");
    std::fs::write(&bad, b"RPCHUNKS but not really a manifest, no").unwrap();
    let e = gc_with(dir.path(), &no_grace()).unwrap_err();
    assert!(e.to_string().contains(bad.to_str().unwrap()), "{e}");
    assert_eq!(chunk_files(dir.path()).len(), 1, "nothing removed");
}

#[test]
fn gc_beside_a_writer_loses_nothing_the_writers_manifests_name() {
    // The writer stores captures made of chunks from a small pool and
    // removes each capture two later, so that gc keeps finding chunks no
    // manifest names just as the writer stores them again.
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::create(
        dir.path(),
        StoreOptions {
            threads: 2,
            ..options()
        },
    )
    .unwrap();
    let pool: Vec<Vec<u8>> = (0..12).map(|i| data(CS as usize, 100 + i)).collect();
    let capture = |k: u64| -> Vec<u8> {
        let mut rng = fastrand::Rng::with_seed(k);
        (0..6)
            .flat_map(|_| pool[rng.usize(..pool.len())].clone())
            .collect()
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    let rounds = 150;
    let gcs = std::thread::scope(|s| {
        let gc = s.spawn(|| {
            let mut runs = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                gc_with(dir.path(), &no_grace()).unwrap();
                runs += 1;
            }
            runs
        });
        // Stops the gc thread however the writer's loop ends: a panic in
        // it must fail the test, not leave the scope waiting on a gc that
        // never stops.
        struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let _stop = Stop(&stop);
        for k in 0..rounds {
            let pin = store.pin().unwrap();
            let a = store.put_pinned(&pin, &capture(2 * k)).unwrap();
            let b = store.put_pinned(&pin, &capture(2 * k + 1)).unwrap();
            place(dir.path(), &format!("k{k}.record_input"), &a);
            place(dir.path(), &format!("k{k}.record_output"), &b);
            drop(pin);
            if k >= 2 {
                for ext in ["record_input", "record_output"] {
                    let old = manifest_path(&dir.path().join(format!("k{}.{ext}", k - 2)));
                    std::fs::remove_file(old).unwrap();
                }
            }
        }
        drop(_stop);
        gc.join().unwrap()
    });
    assert!(gcs > 1, "gc ran {gcs} times");
    settle();
    gc_with(dir.path(), &no_grace()).unwrap();
    let reader = ChunkStore::open(dir.path()).unwrap().unwrap();
    for k in rounds - 2..rounds {
        for (ext, seed) in [("record_input", 2 * k), ("record_output", 2 * k + 1)] {
            let path = manifest_path(&dir.path().join(format!("k{k}.{ext}")));
            let m = Manifest::read(&path).unwrap();
            assert_eq!(reader.check(&m), [], "{}", path.display());
            assert_eq!(read_back(&reader, &m).unwrap(), capture(seed));
        }
    }
    let u = usage(dir.path()).unwrap();
    assert_eq!(u.missing_chunks, 0);
    assert_eq!(u.chunk_files, u.distinct_chunks, "gc left garbage: {u:?}");
}
