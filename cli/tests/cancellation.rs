//! Dropping record and replay futures at every await point: the work they
//! enqueued runs on into buffers the queue owns (never freed memory), the
//! recorder stays usable, and no region is left mapped once its owner is
//! gone. `scripts/valgrind-check.sh` runs these tests under valgrind's
//! memcheck, which would see a copy into freed memory.

mod common;

use std::future::{Future, IntoFuture};
use std::pin::pin;
use std::task::{Context, Waker};

use common::*;
use reprise::core::record::Generation;
use reprise::{Args, HostExecutor, Mode, RecordConfig, Recorder};

/// Polls `fut` `polls` times (with a waker that does nothing, sleeping a
/// little between polls so the device makes progress), then drops it.
/// Returns whether it completed first.
fn poll_then_drop<F: Future>(fut: F, polls: usize) -> bool {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..polls {
        if fut.as_mut().poll(&mut cx).is_ready() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    false
}

/// Whether this process has anything mapped in `[start, end)`.
fn mapped(start: u64, end: u64) -> bool {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|r| r.split_once('-'))
        .map(|(a, b)| {
            (
                u64::from_str_radix(a, 16).unwrap(),
                u64::from_str_radix(b, 16).unwrap(),
            )
        })
        .any(|(a, b)| a < end && b > start)
}

#[test]
fn a_launch_dropped_at_any_await_point_leaves_the_recorder_usable() {
    for mode in [Mode::Async, Mode::Sync] {
        let mut completed_at = None;
        for polls in 0..64 {
            let dir = tempfile::tempdir().unwrap();
            let config = RecordConfig::default()
                .enabled(true)
                .dir(dir.path())
                .fsync(false)
                .mode(mode)
                .region_size(16 << 20);
            let exec = HostExecutor::new().unwrap();
            let mut rec = Recorder::new(exec, 0, config).unwrap();
            let (base, end) = (
                rec.region().base(),
                rec.region().base() + rec.region().capacity(),
            );
            let n = 1 << 16;
            let x = rec.alloc((n * 4) as u64, 64).unwrap();
            let y = rec.alloc((n * 4) as u64, 64).unwrap();
            let calls = rec.alloc(8, 8).unwrap();
            rec.upload(x, &floats(&vec![1.0; n])).unwrap();
            rec.upload(y, &floats(&vec![2.0; n])).unwrap();
            let image = rec.load_image(AXPY).unwrap();
            let k = rec.kernel(image, "axpy").unwrap();
            let args = Args::new().ptr(x).ptr(y).scalar(n as u64).ptr(calls);
            let done = poll_then_drop(rec.launch(&k, geometry(1, 1), &args), polls);
            // The recorder goes on: the next synchronize takes back what the
            // dropped launch left with the queue, and a launch records.
            reprise::block_on(rec.synchronize()).unwrap();
            let report = reprise::block_on(rec.launch(&k, geometry(1, 1), &args)).unwrap();
            assert!(report.recorded);
            let written = reprise::block_on(rec.finish()).unwrap();
            assert_eq!(
                written.len(),
                if done { 2 } else { 1 },
                "{mode:?}, {polls} polls"
            );
            assert_exit(
                &reprise(&["replay", "--verify", s(&written[written.len() - 1])]),
                0,
            );
            drop(rec);
            assert!(!mapped(base, end), "the region outlived its recorder");
            if done {
                completed_at = Some(polls);
                break;
            }
        }
        // Every await point was dropped at before the launch completed.
        let at = completed_at.expect("the launch never completed");
        assert!(at >= 1, "{mode:?}: completed at once: no await point tried");
    }
}

#[test]
fn a_replay_dropped_at_any_await_point_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let f = llvm_fixture(
        dir.path(),
        Generation::LlvmLegacy,
        0x1539_4000_0000,
        1 << 16,
    );
    let capture = reprise::Capture::open(&f.descriptor).unwrap();
    let (base, end) = (f.base, f.base + capture.snapshot_len());
    let mut completed = false;
    for polls in 0..200 {
        let run = reprise::replay(&capture).verify(true).repetitions(3);
        completed = poll_then_drop(run.into_future(), polls);
        // Dropped (or done): the region is unmapped and the recorded
        // address free for the next replay.
        assert!(
            !mapped(base, end),
            "{polls} polls: the region is still mapped"
        );
        if completed {
            break;
        }
    }
    assert!(completed, "the replay never completed");
    let outcome = reprise::block_on(reprise::replay(&capture).verify(true).into_future()).unwrap();
    assert!(outcome.verification.unwrap().is_match());
}
