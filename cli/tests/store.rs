//! Captures in the store format (`RecordConfig::format`, issue 25): written
//! by the recorder into the directory's chunk store, replayed, listed and
//! inspected as raw ones are; a missing or damaged chunk is named, never a
//! panic; and repeated launches over memory that hardly changes cost a
//! fraction of the raw files.

mod common;

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use common::*;
use reprise::{Args, CaptureFormat, HostExecutor, RecordConfig, Recorder};
use reprise_capture::chunks::{self, ChunkHash, ChunkRef, Manifest};

fn config(dir: &Path, format: CaptureFormat) -> RecordConfig {
    RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20)
        .fsync(false)
        .format(format)
}

/// A store chunk: the default chunk size.
const CHUNK: usize = chunks::layout::DEFAULT_CHUNK_SIZE as usize;

/// Floats past three chunks of the store (three chunks and 16 bytes of x
/// and y together).
const N: usize = 3 * CHUNK / 8 + 2;

/// The chunk files of the store in `dir`.
fn chunk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let root = dir
        .join(chunks::layout::STORE_DIR)
        .join(chunks::layout::CHUNKS_DIR);
    for prefix in std::fs::read_dir(&root).unwrap() {
        for f in std::fs::read_dir(prefix.unwrap().path()).unwrap() {
            out.push(f.unwrap().path());
        }
    }
    out.sort();
    out
}

/// The chunks of the manifest of `descriptor`'s input.
fn input_chunks(descriptor: &Path) -> Vec<ChunkHash> {
    let paths = reprise::CapturePaths::new(descriptor, reprise::core::record::Generation::Reprise);
    let m = Manifest::read(&chunks::manifest_path(&paths.input)).unwrap();
    m.chunks().iter().map(|c| c.hash).collect()
}

#[test]
fn a_store_capture_has_manifests_for_files_and_replays_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let written = record_axpy(config(dir.path(), CaptureFormat::Store), N, 1);
    let paths = reprise::CapturePaths::new(&written[0], reprise::core::record::Generation::Reprise);
    for raw in [&paths.input, &paths.output, &paths.globals, &paths.image] {
        assert!(!raw.exists(), "{} is written raw", raw.display());
        assert!(chunks::manifest_path(raw).is_file(), "{}", raw.display());
    }
    let m = Manifest::read(&chunks::manifest_path(&paths.input)).unwrap();
    assert!(
        m.len() > 3 * CHUNK as u64 && m.chunks().len() >= 4,
        "{}",
        m.len()
    );
    let out = reprise(&["replay", "--verify", s(&written[0])]);
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("verification: PASS"), "{stdout}");
    // Opened through the library as well, its checksums hold.
    let c = reprise::Capture::open(&written[0]).unwrap();
    assert!(c.input.is_chunked());
    assert!(c.verify_checksums().unwrap());
}

#[test]
fn raw_and_store_captures_of_one_launch_replay_to_the_same_output() {
    let (raw, store) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = record_axpy(config(raw.path(), CaptureFormat::Raw), N, 2);
    let b = record_axpy(config(store.path(), CaptureFormat::Store), N, 2);
    for w in a.iter().chain(&b) {
        assert_exit(&reprise(&["replay", "--verify", "--save-output", s(w)]), 0);
    }
    for (a, b) in a.iter().zip(&b) {
        let out = |d: &Path| std::fs::read(d.with_extension("replay_output")).unwrap();
        assert!(
            out(a) == out(b),
            "{} and {} replay differently",
            a.display(),
            b.display()
        );
    }
}

#[test]
fn diff_compares_a_store_captures_recorded_output() {
    let dir = tempfile::tempdir().unwrap();
    let written = record_axpy(config(dir.path(), CaptureFormat::Store), N, 1);
    let c = &written[0];
    assert_exit(&reprise(&["replay", "--verify", "--save-output", s(c)]), 0);
    let replayed = c.with_extension("replay_output");
    // The recorded output is a manifest; the replay's is a plain file.
    assert_exit(&reprise(&["diff", s(c), s(&replayed)]), 0);
    let mut other = std::fs::read(&replayed).unwrap();
    other[12345] ^= 0x40;
    let changed = dir.path().join("changed.replay_output");
    std::fs::write(&changed, &other).unwrap();
    let out = reprise(&["diff", s(c), s(&changed)]);
    assert_exit(&out, 1);
}

#[test]
fn list_and_inspect_show_a_store_capture_whole() {
    let dir = tempfile::tempdir().unwrap();
    let written = record_axpy(config(dir.path(), CaptureFormat::Store), N, 1);
    let out = reprise(&["list", s(dir.path())]);
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains("1 capture(s) (0 incomplete), 0 unreadable, 0 orphaned"),
        "{stdout}"
    );
    let out = reprise(&["inspect", s(&written[0])]);
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("storage   store v2:"), "{stdout}");
    assert!(stdout.contains("status    complete"), "{stdout}");
    assert!(stdout.contains("record_input.chunks"), "{stdout}");
    let out = reprise(&["inspect", "--json", s(&written[0])]);
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["storage"]["kind"], "store");
    assert!(v["storage"]["chunks"].as_u64().unwrap() >= 4, "{v}");
}

/// `inspect` and `list` name the chunk `hash` of the capture `descriptor`
/// in `dir` (BROKEN in the listing), and `replay` exits 2 naming it.
fn assert_chunk_named(dir: &Path, descriptor: &Path, hash: &str, what: &str) {
    let out = reprise(&["inspect", s(descriptor)]);
    assert_exit(&out, 1);
    let (stdout, _) = text(&out);
    assert!(stdout.contains(hash) && stdout.contains(what), "{stdout}");
    let out = reprise(&["list", s(dir)]);
    assert_exit(&out, 1);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains("BROKEN") && stdout.contains(hash),
        "{stdout}"
    );
    assert!(stdout.contains("1 unreadable"), "{stdout}");
    let out = reprise(&["replay", "--verify", s(descriptor)]);
    assert_exit(&out, 2);
    let (_, stderr) = text(&out);
    assert!(stderr.contains(hash), "{stderr}");
}

#[test]
fn a_deleted_chunk_is_named_and_breaks_the_capture() {
    let dir = tempfile::tempdir().unwrap();
    let written = record_axpy(config(dir.path(), CaptureFormat::Store), N, 1);
    let hash = input_chunks(&written[0])[1].to_string();
    let file = chunk_files(dir.path())
        .into_iter()
        .find(|f| f.ends_with(&hash))
        .unwrap();
    std::fs::remove_file(file).unwrap();
    assert_chunk_named(dir.path(), &written[0], &hash, "missing");
}

#[test]
fn a_corrupted_chunk_is_named_and_breaks_the_capture() {
    let dir = tempfile::tempdir().unwrap();
    let written = record_axpy(config(dir.path(), CaptureFormat::Store), N, 1);
    let hash = input_chunks(&written[0])[2].to_string();
    let file = chunk_files(dir.path())
        .into_iter()
        .find(|f| f.ends_with(&hash))
        .unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(&file, bytes).unwrap();
    assert_chunk_named(dir.path(), &written[0], &hash, "damaged");
}

/// The bytes the files under `dir` take, each file once (hard links are one
/// file).
fn disk_bytes(dir: &Path) -> u64 {
    fn walk(dir: &Path, seen: &mut HashSet<(u64, u64)>, total: &mut u64) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let md = std::fs::symlink_metadata(e.path()).unwrap();
            if md.is_dir() {
                walk(&e.path(), seen, total);
            } else if seen.insert((md.dev(), md.ino())) {
                *total += md.len();
            }
        }
    }
    let (mut seen, mut total) = (HashSet::new(), 0);
    walk(dir, &mut seen, &mut total);
    total
}

/// Records 10 launches of axpy over a small x and y beside a 4 MiB buffer
/// no kernel touches (data that does not compress away), in `format`.
fn record_mostly_unchanged(dir: &Path, format: CaptureFormat) -> Vec<PathBuf> {
    let exec = HostExecutor::new().unwrap();
    let mut rec = Recorder::new(exec, 0, config(dir, format)).unwrap();
    let n = 4096;
    let big = rec.alloc(4 << 20, 64).unwrap();
    let x = rec.alloc((n * 4) as u64, 64).unwrap();
    let y = rec.alloc((n * 4) as u64, 64).unwrap();
    let calls = rec.alloc(8, 8).unwrap();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<u8> = (0..4 << 20)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    rec.upload(big, &noise).unwrap();
    rec.upload(x, &floats(&vec![1.0; n])).unwrap();
    rec.upload(y, &floats(&vec![2.0; n])).unwrap();
    let image = rec.load_image(AXPY).unwrap();
    let k = rec.kernel(image, "axpy").unwrap();
    let args = Args::new().ptr(x).ptr(y).scalar(n as u64).ptr(calls);
    reprise::block_on(async {
        for _ in 0..10 {
            rec.launch(&k, geometry(4, 64), &args).await.unwrap();
        }
        rec.finish().await.unwrap()
    })
}

#[test]
fn ten_launches_over_a_mostly_unchanged_region_store_under_a_fifth_of_raw() {
    let (raw, store) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = record_mostly_unchanged(raw.path(), CaptureFormat::Raw);
    let b = record_mostly_unchanged(store.path(), CaptureFormat::Store);
    assert_eq!((a.len(), b.len()), (10, 10));
    let (raw_bytes, store_bytes) = (disk_bytes(raw.path()), disk_bytes(store.path()));
    let usage = chunks::usage(store.path()).unwrap();
    println!(
        "10 launches over a 4 MiB region: raw {raw_bytes} bytes, store {store_bytes} bytes on \
         disk ({:.1}x smaller; the store's own count: {} raw bytes in {} chunk files of {} \
         bytes, {:.1}x)",
        raw_bytes as f64 / store_bytes as f64,
        usage.raw_bytes,
        usage.chunk_files,
        usage.stored_bytes,
        usage.ratio()
    );
    assert!(
        store_bytes * 5 <= raw_bytes,
        "store {store_bytes} bytes against raw {raw_bytes}"
    );
    assert_exit(&reprise(&["replay", "--verify", s(&b[9])]), 0);
}

#[test]
fn a_manifest_whose_length_passes_the_limit_is_refused_before_anything_is_allocated() {
    let dir = tempfile::tempdir().unwrap();
    let written = record_axpy(config(dir.path(), CaptureFormat::Store), 100, 1);
    let paths = reprise::CapturePaths::new(&written[0], reprise::core::record::Generation::Reprise);
    // Globals of 1 TiB, in 64 MiB chunks that are nowhere.
    let size = chunks::layout::MAX_CHUNK_SIZE;
    let total = 1u64 << 40;
    let refs = (0..total / u64::from(size))
        .map(|i| ChunkRef {
            hash: ChunkHash::of(&i.to_le_bytes()),
            len: size,
        })
        .collect();
    let m = Manifest::new(total, size, refs).unwrap();
    std::fs::write(chunks::manifest_path(&paths.globals), m.encode()).unwrap();
    for args in [&["inspect"][..], &["replay"][..]] {
        let mut args = args.to_vec();
        args.push(s(&written[0]));
        let out = reprise(&args);
        let (stdout, stderr) = text(&out);
        let all = format!("{stdout}{stderr}");
        assert!(
            all.contains("globals") && all.contains(&total.to_string()),
            "{args:?}: {all}"
        );
        assert!(!all.contains("allocat"), "{args:?}: {all}");
        assert_exit(&out, if args[0] == "inspect" { 1 } else { 2 });
    }
}

#[test]
fn du_reports_the_store_and_gc_removes_only_what_no_capture_uses() {
    let dir = tempfile::tempdir().unwrap();
    let written = record_mostly_unchanged(dir.path(), CaptureFormat::Store);
    let du = |dir: &Path| -> serde_json::Value {
        let out = reprise(&["du", "--json", s(dir)]);
        assert_exit(&out, 0);
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let before = du(dir.path());
    let usage = chunks::usage(dir.path()).unwrap();
    assert_eq!(before["raw_bytes"], usage.raw_bytes);
    assert!(before["ratio"].as_f64().unwrap() > 5.0, "{before}");
    assert_eq!(before["unreferenced_bytes"], 0);
    let (text, _) = text(&reprise(&["du", s(dir.path())]));
    assert!(text.contains("dedup") && text.contains("on disk"), "{text}");

    // Every chunk is in use: gc removes nothing, and the captures replay.
    let out = reprise(&["gc", "--grace", "0", "--json", s(dir.path())]);
    assert_exit(&out, 0);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["removed"], 0, "{r}");
    assert_exit(&reprise(&["replay", "--verify", s(&written[9])]), 0);

    // The first nine captures go (descriptors and manifests): the chunks
    // only they used are removed, the tenth still replays.
    for w in &written[..9] {
        let stem = w.with_extension("");
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let own = format!("{}.", stem.file_name().unwrap().to_string_lossy());
            if name.starts_with(&own) {
                std::fs::remove_file(&p).unwrap();
            }
        }
    }
    let out = reprise(&["gc", "--grace", "0", "--json", s(dir.path())]);
    assert_exit(&out, 0);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r["removed"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(du(dir.path())["unreferenced_bytes"], 0);
    assert_exit(&reprise(&["replay", "--verify", s(&written[9])]), 0);

    // With the default grace, young chunks of a removed capture stay.
    let young = tempfile::tempdir().unwrap();
    let w = record_mostly_unchanged(young.path(), CaptureFormat::Store);
    for p in std::fs::read_dir(young.path()).unwrap() {
        let p = p.unwrap().path();
        if p.is_file() {
            std::fs::remove_file(&p).unwrap();
        }
    }
    assert_eq!(w.len(), 10);
    let out = reprise(&["gc", "--json", s(young.path())]);
    assert_exit(&out, 0);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["removed"], 0, "{r}");
}

#[test]
fn du_of_a_directory_without_a_store_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = reprise(&["du", s(dir.path())]);
    assert_exit(&out, 0);
    assert!(text(&out).0.contains("no stored captures"));
}
