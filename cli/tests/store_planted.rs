//! Something at a chunk's name is not proof the chunk is stored (issue 37),
//! end to end: an attacker plants, at the names of the chunks a capture is
//! about to store, a directory, a link (to `/dev/zero`, to nothing), a
//! FIFO, an empty file, a damaged file of the right length. `reprise
//! import` must exit 0 only with every capture stored whole (`list` says
//! so, replays verify) and delete a raw file only then; `reprise record`
//! must store its captures whole. Every run of `reprise` has a deadline
//! (`common::reprise`: a FIFO opened without `O_NONBLOCK` would wait
//! forever).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::*;
use reprise::core::record::KernelRecord;
use reprise::{CaptureFormat, CapturePaths};
use reprise_capture::chunks::{ChunkHash, ChunkStore, Manifest, StoreOptions, layout};

/// What an attacker plants at a chunk's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plant {
    Dir,
    FullDir,
    LinkToDevZero,
    LinkToNothing,
    Fifo,
    EmptyFile,
    /// The length of the chunk's file as the store writes it, one byte
    /// flipped in its middle.
    Damaged,
}

const PLANTS: [Plant; 7] = [
    Plant::Dir,
    Plant::FullDir,
    Plant::LinkToDevZero,
    Plant::LinkToNothing,
    Plant::Fifo,
    Plant::EmptyFile,
    Plant::Damaged,
];

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path, and no pointer kept.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// The path of chunk `hash` in the store of the capture directory `dir`,
/// as the store lays it out.
fn chunk_path(dir: &Path, hash: &ChunkHash) -> PathBuf {
    dir.join(layout::STORE_DIR).join(layout::chunk_path(hash))
}

/// The chunk file the store writes for `bytes` (one chunk), made in a
/// scratch store.
fn good_file(bytes: &[u8]) -> Vec<u8> {
    let scratch = tempfile::tempdir().unwrap();
    let store = ChunkStore::create(
        scratch.path(),
        StoreOptions {
            fsync: false,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let m = store.put(bytes).unwrap();
    assert_eq!(m.chunks().len(), 1);
    std::fs::read(store.chunk_file(&m.chunks()[0].hash)).unwrap()
}

/// Plants `what` at the name of chunk `hash` in `dir`'s store; `good` is
/// the file the store would write for it, when known.
fn plant(dir: &Path, hash: &ChunkHash, what: Plant, good: Option<&[u8]>) {
    let at = chunk_path(dir, hash);
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    match what {
        Plant::Dir => std::fs::create_dir(&at).unwrap(),
        Plant::FullDir => {
            std::fs::create_dir(&at).unwrap();
            std::fs::write(at.join("file"), b"not a chunk").unwrap();
            std::os::unix::fs::symlink("/dev/zero", at.join("zero")).unwrap();
        }
        Plant::LinkToDevZero => std::os::unix::fs::symlink("/dev/zero", &at).unwrap(),
        Plant::LinkToNothing => std::os::unix::fs::symlink(dir.join("nothing"), &at).unwrap(),
        Plant::Fifo => mkfifo(&at),
        Plant::EmptyFile => std::fs::write(&at, b"").unwrap(),
        Plant::Damaged => {
            let mut bytes = good.expect("the chunk's file").to_vec();
            let mid = bytes.len() / 2;
            bytes[mid] ^= 0x5a;
            std::fs::write(&at, bytes).unwrap();
        }
    }
}

/// The raw data files of every capture in `dir`, by path, with their
/// bytes.
fn raw_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for d in descriptors(dir) {
        let rec = KernelRecord::from_json(&std::fs::read(&d).unwrap()).unwrap();
        let paths = CapturePaths::new(&d, rec.generation);
        for p in [paths.input, paths.output, paths.globals, paths.image] {
            if let Ok(bytes) = std::fs::read(&p) {
                out.push((p, bytes));
            }
        }
    }
    out
}

/// The distinct chunks the store cuts `files` into, with their bytes.
fn chunks_of(files: &[(PathBuf, Vec<u8>)]) -> Vec<(ChunkHash, Vec<u8>)> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (_, bytes) in files {
        for c in bytes.chunks(layout::DEFAULT_CHUNK_SIZE as usize) {
            let h = ChunkHash::of(c);
            if seen.insert(h) {
                out.push((h, c.to_vec()));
            }
        }
    }
    out
}

/// `reprise list DIR` finds every capture whole; what was found at the
/// chunks' names and moved aside with something in it (a directory with
/// files) is listed as left over, until `reprise gc` removes it. Then
/// `list` finds `captures` captures and nothing left over.
fn assert_whole_once_gc_ran(dir: &Path, captures: usize) {
    let out = reprise(&["list", s(dir)]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    for bad in ["BROKEN", "INCOMPLETE"] {
        assert!(!stdout.contains(bad), "{stdout}");
    }
    for line in stdout.lines().filter(|l| l.starts_with("ORPHAN")) {
        assert!(line.contains("/tmp/displaced."), "{stdout}");
    }
    assert_exit(&reprise(&["gc", s(dir)]), 0);
    assert_listed_whole(dir, captures);
}

/// `reprise list DIR` finds `captures` captures, every one whole, and
/// nothing left over.
fn assert_listed_whole(dir: &Path, captures: usize) {
    let out = reprise(&["list", s(dir)]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    for bad in ["BROKEN", "ORPHAN", "INCOMPLETE"] {
        assert!(!stdout.contains(bad), "{stdout}");
    }
    assert!(
        stdout.contains(&format!(
            "{captures} capture(s) (0 incomplete), 0 unreadable, 0 orphaned"
        )),
        "{stdout}{stderr}"
    );
}

/// Two launches of axpy past three chunks, recorded raw into `dir`.
fn record_raw(dir: &Path) -> Vec<PathBuf> {
    record_axpy(raw_config(dir), (3 << 20) / 8 + 2, 2)
}

fn descriptors(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

/// Each kind of thing planted at the names of every chunk of a capture
/// directory's raw files (each kind alone, then all kinds at once): `import`
/// exits 0, every raw file is gone, `list` calls every capture whole, and
/// each replays and verifies. (Before: the planted things were taken for
/// the chunks, the raw files deleted, and `list` called the captures
/// BROKEN, or hung on the FIFO.)
#[test]
fn import_over_planted_chunk_names_stores_every_capture_whole() {
    let mut rounds: Vec<Vec<Plant>> = PLANTS.iter().map(|p| vec![*p]).collect();
    rounds.push(PLANTS.to_vec());
    for kinds in rounds {
        let dir = tempfile::tempdir().unwrap();
        let written = record_raw(dir.path());
        let raws = raw_files(dir.path());
        let chunks = chunks_of(&raws);
        assert!(chunks.len() >= 3, "{}", chunks.len());
        for (i, (hash, bytes)) in chunks.iter().enumerate() {
            let what = kinds[i % kinds.len()];
            let good = (what == Plant::Damaged).then(|| good_file(bytes));
            plant(dir.path(), hash, what, good.as_deref());
        }
        let out = reprise(&["import", s(dir.path())]);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{kinds:?}: {stdout}{stderr}");
        for (raw, _) in &raws {
            assert!(!raw.exists(), "{kinds:?}: {} is still raw", raw.display());
        }
        assert_whole_once_gc_ran(dir.path(), written.len());
        for w in &written {
            let out = reprise(&["replay", "--verify", s(w)]);
            let (stdout, stderr) = text(&out);
            assert_eq!(out.status.code(), Some(0), "{kinds:?}: {stdout}{stderr}");
            assert!(stdout.contains("verification: PASS"), "{stdout}");
        }
        // And every chunk is the regular file the store writes.
        for (hash, _) in &chunks {
            let meta = std::fs::symlink_metadata(chunk_path(dir.path(), hash)).unwrap();
            assert!(meta.is_file(), "{kinds:?}: {hash}");
        }
    }
}

/// An attacker that puts a directory back at the name of a capture's first
/// chunk as fast as it can while `import` runs. Whichever wins, a raw file
/// is deleted only once its capture reads back whole: `import` exits 0 with
/// every capture whole and no raw file left, or fails, naming the chunk,
/// and leaves the raw file; run again with nobody planting, it finishes.
#[test]
fn import_beside_an_attacker_deletes_only_what_reads_back() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let mut outcomes = Vec::new();
    for _ in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let written = record_raw(dir.path());
        let raws = raw_files(dir.path());
        let (hash, _) = chunks_of(&raws)[0].clone();
        let target = chunk_path(dir.path(), &hash);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
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
        let out = reprise(&["import", s(dir.path())]);
        stop.store(true, Ordering::Relaxed);
        attacker.join().unwrap();
        let (stdout, stderr) = text(&out);
        // The raw files whose first chunk is the attacker's target.
        let holding: Vec<&PathBuf> = raws
            .iter()
            .filter(|(_, b)| ChunkHash::of(&b[..b.len().min(2 << 20)]) == hash)
            .map(|(p, _)| p)
            .collect();
        assert!(!holding.is_empty());
        if out.status.code() == Some(0) {
            outcomes.push("stored");
            for (raw, _) in &raws {
                assert!(!raw.exists(), "{}: {stdout}{stderr}", raw.display());
            }
            assert_listed_whole(dir.path(), written.len());
        } else {
            outcomes.push("refused");
            assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
            assert!(stderr.contains(&hash.to_string()), "{stderr}");
            // The raw file whose chunk did not store is there, whole.
            let (raw, bytes) = raws.iter().find(|(p, _)| holding.contains(&p)).unwrap();
            assert!(
                std::fs::read(raw).is_ok_and(|b| b == *bytes),
                "{}: {stderr}",
                raw.display()
            );
            // Nobody planting: import finishes it.
            let out = reprise(&["import", s(dir.path())]);
            assert_exit(&out, 0);
            for (raw, _) in &raws {
                assert!(!raw.exists(), "{}", raw.display());
            }
            assert_listed_whole(dir.path(), written.len());
        }
    }
    eprintln!("beside the attacker: {outcomes:?}");
}

/// A directory planted at a chunk's name in a store the importer cannot
/// write into (its chunk directory read-only): the chunk cannot be stored,
/// so `import` fails naming it and deletes no raw file. (Before: the
/// directory was taken for the chunk, and the raw file deleted.) Root may
/// write anywhere: the test skips there, and the unit test
/// `a_file_that_does_not_read_back_whole_is_kept` (reprise-std) shows the
/// same with a chunk damaged before the file is read back.
#[test]
fn import_that_cannot_store_a_chunk_keeps_every_raw_file() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: no arguments, no memory.
    if unsafe { libc::geteuid() } == 0 {
        skip("root writes into read-only directories", None);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    record_raw(dir.path());
    let raws = raw_files(dir.path());
    let (hash, _) = chunks_of(&raws)[0].clone();
    plant(dir.path(), &hash, Plant::Dir, None);
    let prefix = chunk_path(dir.path(), &hash)
        .parent()
        .unwrap()
        .to_path_buf();
    std::fs::set_permissions(&prefix, std::fs::Permissions::from_mode(0o555)).unwrap();
    let out = reprise(&["import", s(dir.path())]);
    std::fs::set_permissions(&prefix, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains(&hash.to_string()), "{stderr}");
    let holding: Vec<&(PathBuf, Vec<u8>)> = raws
        .iter()
        .filter(|(_, b)| ChunkHash::of(&b[..b.len().min(2 << 20)]) == hash)
        .collect();
    for (raw, bytes) in holding {
        assert!(
            std::fs::read(raw).is_ok_and(|b| b == *bytes),
            "{} went",
            raw.display()
        );
    }
}

/// Every chunk a manifest in `dir` names.
fn named_chunks(dir: &Path) -> BTreeSet<ChunkHash> {
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.to_string_lossy().ends_with(layout::MANIFEST_SUFFIX) {
            let m = Manifest::read(&p).unwrap();
            out.extend(m.chunks().iter().map(|c| c.hash));
        }
    }
    out
}

/// Captures recorded through the library into the store, with every kind
/// of thing planted at the names of the chunks they are about to store:
/// each is stored whole (`list` calls it whole, replays verify).
#[test]
fn recording_over_planted_chunk_names_stores_every_capture_whole() {
    let config = |dir: &Path| raw_config(dir).format(CaptureFormat::Store);
    let clean = tempfile::tempdir().unwrap();
    record_axpy(config(clean.path()), (3 << 20) / 8 + 2, 2);
    let names = named_chunks(clean.path());
    let dir = tempfile::tempdir().unwrap();
    for (i, hash) in names.iter().enumerate() {
        plant(dir.path(), hash, PLANTS[i % (PLANTS.len() - 1)], None);
    }
    let written = record_axpy(config(dir.path()), (3 << 20) / 8 + 2, 2);
    // The same chunks: every one was planted over.
    assert_eq!(named_chunks(dir.path()), names);
    assert_whole_once_gc_ran(dir.path(), written.len());
    for w in &written {
        assert_exit(&reprise(&["replay", "--verify", s(w)]), 0);
    }
}

/// `reprise record` of an unmodified program on the simulated driver into
/// a directory whose chunk names are planted (every kind, at every name the
/// same program's captures store): it reports its launches recorded, exits
/// as the program does, and `list` calls every capture whole. Skips without
/// a C compiler or the simulator, unless `REPRISE_REQUIRE_SIM=1`.
#[test]
fn reprise_record_over_planted_chunk_names_stores_every_capture_whole() {
    use common::programs::*;
    if !matches!(setup(), Some(Target::Simulated)) || interposer().is_none() {
        return;
    }
    let program = build_program("launches");
    let env = [("LAUNCHES", "3"), ("ELEMENTS", "300000")];
    let clean = tempfile::tempdir().unwrap();
    let out = record_env(&program, clean.path(), &[], &[], &env);
    assert_exit(&out, 0);
    let names = named_chunks(clean.path());
    assert!(!names.is_empty());
    let dir = tempfile::tempdir().unwrap();
    // The damaged kind needs the chunk's bytes: every other kind.
    for (i, hash) in names.iter().enumerate() {
        plant(dir.path(), hash, PLANTS[i % (PLANTS.len() - 1)], None);
    }
    let out = record_env(&program, dir.path(), &[], &[], &env);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("reprise record: 3 launches recorded in"),
        "{stderr}"
    );
    assert!(!stderr.contains("not stored whole"), "{stderr}");
    assert_eq!(named_chunks(dir.path()), names);
    assert_whole_once_gc_ran(dir.path(), 3);
}

/// The safety net: a capture whose stored files do not assess whole when
/// the program is done (here every chunk file emptied behind the recorder's
/// back, after it stored them) is not reported recorded. `reprise record`
/// names it, counts it out of the launches recorded, and exits 1 though
/// the program exited 0; `list` calls it BROKEN. (Before: "3 launches
/// recorded", exit 0.)
#[test]
fn reprise_record_counts_a_capture_not_stored_whole_as_failed() {
    use common::programs::*;
    if !matches!(setup(), Some(Target::Simulated)) || interposer().is_none() {
        return;
    }
    let program = build_program("launches");
    let dir = tempfile::tempdir().unwrap();
    let script = r#""$1" "$2" || exit 9
for f in "$3"/.reprise-store/chunks/*/*; do rm -f "$f" && : > "$f" || exit 8; done"#;
    let ptx = saxpy_ptx();
    let lib = interposer().unwrap();
    let (k, v) = sim_env();
    let out = reprise_env(
        &[
            "record",
            "--dir",
            s(dir.path()),
            "--",
            "/bin/sh",
            "-c",
            script,
            "sh",
            s(&program),
            s(&ptx),
            s(dir.path()),
        ],
        &[
            (k, v.to_str().unwrap()),
            ("REPRISE_INTERPOSER", s(&lib)),
            ("LAUNCHES", "3"),
        ],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("reprise record: 0 launches recorded in"),
        "{stderr}"
    );
    assert!(
        stderr.contains("3 captures not stored whole, so not recorded"),
        "{stderr}"
    );
    assert!(stderr.contains("shorter than any file of it"), "{stderr}");
    let out = reprise(&["list", s(dir.path())]);
    let (stdout, _) = text(&out);
    assert_eq!(stdout.matches("BROKEN").count(), 3, "{stdout}");
}
