//! On the host, a store capture's snapshot replays from its plain chunk
//! files (store format 2) mapped into the region and into the snapshot's
//! buffer, its compressed chunks decompressed around them: the outputs are
//! the recorded ones, run after run, the chunk files are never written
//! (the mappings are private), and a damaged plain chunk is named by the
//! checksum's failure.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use reprise::capture::SnapshotSource;
use reprise::replayer::Session;
use reprise::{Args, Capture, CaptureFormat, HostExecutor, RecordConfig, Recorder};
use reprise_capture::chunks::{self, ChunkStore, Manifest};

/// A store chunk: the default chunk size.
const CHUNK: usize = chunks::layout::DEFAULT_CHUNK_SIZE as usize;

/// Records `launches` launches of axpy over a small x and y beside four
/// chunks of noise (plain chunks) into the store in `dir`: the region's last chunk
/// is x, y and their neighbours, floats that compress, and short.
fn record(dir: &Path, launches: usize) -> Vec<PathBuf> {
    let config = RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20)
        .fsync(false)
        .format(CaptureFormat::Store);
    let exec = HostExecutor::new().unwrap();
    let mut rec = Recorder::new(exec, 0, config).unwrap();
    let n = 4096;
    let big = rec.alloc(4 * CHUNK as u64, 64).unwrap();
    let x = rec.alloc((n * 4) as u64, 64).unwrap();
    let y = rec.alloc((n * 4) as u64, 64).unwrap();
    let calls = rec.alloc(8, 8).unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let noise: Vec<u8> = (0..4 * CHUNK)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    rec.upload(big, &noise).unwrap();
    rec.upload(x, &floats(&vec![1.5; n])).unwrap();
    rec.upload(y, &floats(&vec![2.0; n])).unwrap();
    let image = rec.load_image(AXPY).unwrap();
    let k = rec.kernel(image, "axpy").unwrap();
    let args = Args::new().ptr(x).ptr(y).scalar(n as u64).ptr(calls);
    reprise::block_on(async {
        for _ in 0..launches {
            rec.launch(&k, geometry(4, 64), &args).await.unwrap();
        }
        rec.finish().await.unwrap()
    })
}

/// The input manifest of `descriptor`'s capture, and the indices of its
/// chunks kept as plain files.
fn input(descriptor: &Path) -> (Manifest, Vec<usize>) {
    let paths = reprise::CapturePaths::new(descriptor, reprise::core::record::Generation::Reprise);
    let m = Manifest::read(&chunks::manifest_path(&paths.input)).unwrap();
    let store = ChunkStore::open(descriptor.parent().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(store.version(), 2);
    let plain = (0..m.chunks().len())
        .filter(|&i| {
            let c = m.chunks()[i];
            std::fs::metadata(store.chunk_file(&c.hash)).unwrap().len() == u64::from(c.len)
        })
        .collect();
    (m, plain)
}

/// How many mappings of this process are of chunk files of `dir`'s store.
fn chunk_mappings(dir: &Path) -> usize {
    let chunks_dir = dir
        .canonicalize()
        .unwrap()
        .join(chunks::layout::STORE_DIR)
        .join(chunks::layout::CHUNKS_DIR);
    let needle = chunks_dir.to_string_lossy().into_owned();
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|l| l.contains(&needle))
        .count()
}

fn recorded_output(capture: &Capture) -> Vec<u8> {
    let mut out = Vec::new();
    capture
        .output
        .as_ref()
        .expect("a recorded output")
        .for_each_chunk(1 << 20, |b| out.extend_from_slice(b))
        .unwrap();
    out
}

#[test]
fn a_store_snapshot_replays_from_its_chunk_files_mapped_around_its_compressed_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let written = record(dir.path(), 2);
    let (m, plain) = input(&written[1]);
    let last = m.chunks().len() - 1;
    assert!(plain.len() >= 4 && !plain.contains(&last), "{plain:?}");
    assert!(m.chunks()[last].len % 4096 != 0, "a short last chunk");
    let exec = HostExecutor::new().unwrap();
    let capture = Capture::open(&written[1]).unwrap();
    let want = recorded_output(&capture);
    assert_eq!(chunk_mappings(dir.path()), 0);
    reprise::block_on(async {
        let mut session = Session::new(&exec, &capture, 3).await.unwrap();
        // The plain chunks mapped twice: as the region, and as the buffer
        // later runs restore from.
        assert_eq!(chunk_mappings(dir.path()), 2 * plain.len());
        for run in 0..3 {
            session.run(geometry(4, 64), true).await.unwrap();
            let out = session.output().expect("the output was copied back");
            assert!(out == want.as_slice(), "run {run}: not the recorded output");
        }
    });
    assert_eq!(chunk_mappings(dir.path()), 0);
    // The kernel wrote into the region: copies of the pages, never the
    // chunk files.
    let store = ChunkStore::open(dir.path()).unwrap().unwrap();
    assert!(store.check(&m).is_empty());
    assert_exit(&reprise(&["replay", "--verify", s(&written[1])]), 0);
    assert_exit(
        &reprise(&["replay", "--verify", "--repetitions", "3", s(&written[0])]),
        0,
    );
}

#[test]
fn a_damaged_plain_chunk_is_named_when_the_snapshot_checksum_fails() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let written = record(dir.path(), 1);
    let (m, plain) = input(&written[0]);
    let i = plain[1];
    let c = m.chunks()[i];
    let store = ChunkStore::open(dir.path()).unwrap().unwrap();
    let path = store.chunk_file(&c.hash);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[12345] ^= 0x10;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(&path, &bytes).unwrap();
    let exec = HostExecutor::new().unwrap();
    let capture = Capture::open(&written[0]).unwrap();
    let e = reprise::block_on(Session::new(&exec, &capture, 1))
        .err()
        .expect("the damaged chunk stops the replay");
    match e.capture_problem() {
        Some(reprise_std::CaptureProblem::DamagedChunk { index, hash, .. }) => {
            assert_eq!((*index as usize, *hash), (i, c.hash));
        }
        other => panic!("not a damaged chunk: {other:?} ({e})"),
    }
    let out = reprise(&["replay", "--verify", s(&written[0])]);
    assert_exit(&out, 2);
    let (_, stderr) = text(&out);
    assert!(stderr.contains(&c.hash.to_string()), "{stderr}");
    // Truncated: shorter than the manifest says, so it is never mapped
    // (no fault), and the read names it.
    std::fs::write(&path, &bytes[..1000]).unwrap();
    let out = reprise(&["replay", "--verify", s(&written[0])]);
    assert_exit(&out, 2);
    let (_, stderr) = text(&out);
    assert!(stderr.contains(&c.hash.to_string()), "{stderr}");
}
