//! Eight threads recording at once, through one shared `Recorder` and
//! through recorders of their own: every launch becomes a capture of its
//! own, none is lost or overwritten, and each replays and verifies in a new
//! process.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use common::*;
use reprise::{Args, HostExecutor, RecordConfig, Recorder};

const THREADS: usize = 8;
const LAUNCHES: usize = 4;
const N: usize = 64;

fn config(dir: &std::path::Path) -> RecordConfig {
    RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .fsync(false)
        .region_size(64 << 20)
}

/// Checks that `written` holds `THREADS * LAUNCHES` distinct captures, each
/// with a launch number of its own, and that each replays and verifies.
fn all_there_and_verifying(written: &[PathBuf]) {
    assert_eq!(written.len(), THREADS * LAUNCHES);
    let distinct: BTreeSet<_> = written.iter().collect();
    assert_eq!(distinct.len(), written.len(), "a capture was overwritten");
    let mut seqs = BTreeSet::new();
    for d in written {
        let c = reprise::Capture::open(d).unwrap();
        assert!(
            seqs.insert(c.record.launch_seq.unwrap()),
            "launch number twice"
        );
        assert_exit(&reprise(&["replay", "--verify", s(d)]), 0);
    }
}

/// One thread's launches on a shared recorder: buffers allocated under a
/// read lock (the allocator is shared and lock-free), copies and launches
/// under the write lock.
fn launches_on_shared(
    rec: &RwLock<Recorder<HostExecutor>>,
    kernel: &reprise::Kernel<HostExecutor>,
    t: usize,
) {
    for l in 0..LAUNCHES {
        let (x, y, calls) = {
            let r = rec.read().unwrap();
            (
                r.alloc((N * 4) as u64, 64).unwrap(),
                r.alloc((N * 4) as u64, 64).unwrap(),
                r.alloc(8, 8).unwrap(),
            )
        };
        let xs: Vec<f32> = (0..N).map(|i| (t * 100 + l * 10 + i) as f32).collect();
        let mut r = rec.write().unwrap();
        r.upload(x, &floats(&xs)).unwrap();
        r.upload(y, &floats(&vec![1.0; N])).unwrap();
        let args = Args::new().ptr(x).ptr(y).scalar(N as u64).ptr(calls);
        let report = reprise::block_on(r.launch(kernel, geometry(1, 1), &args)).unwrap();
        assert!(report.recorded);
    }
}

#[test]
fn eight_threads_through_one_recorder() {
    let dir = tempfile::tempdir().unwrap();
    let exec = HostExecutor::new().unwrap();
    let mut rec = Recorder::new(exec, 0, config(dir.path())).unwrap();
    let image = rec.load_image(AXPY).unwrap();
    let kernel = Arc::new(rec.kernel(image, "axpy").unwrap());
    let rec = Arc::new(RwLock::new(rec));
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (rec, kernel) = (rec.clone(), kernel.clone());
            s.spawn(move || launches_on_shared(&rec, &kernel, t));
        }
    });
    let written = reprise::block_on(rec.write().unwrap().finish()).unwrap();
    all_there_and_verifying(&written);
}

#[test]
fn eight_threads_with_recorders_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let written: Vec<PathBuf> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let dir = dir.path();
                s.spawn(move || {
                    let exec = HostExecutor::new().unwrap();
                    let mut rec = Recorder::new(exec, 0, config(dir)).unwrap();
                    let image = rec.load_image(AXPY).unwrap();
                    let kernel = rec.kernel(image, "axpy").unwrap();
                    let rec = RwLock::new(rec);
                    launches_on_shared(&rec, &kernel, t);
                    let mut rec = rec.into_inner().unwrap();
                    reprise::block_on(rec.finish()).unwrap()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    all_there_and_verifying(&written);
}
