//! Store captures on GPUs (issue 25): recorded into the directory's chunk
//! store on the simulated CUDA driver and on the simulated HSA runtime,
//! then replayed from the store, which streams each snapshot through a
//! ring of two page-locked staging buffers (decompressing a batch of
//! chunks while the previous batch is copied), and verified: in this
//! process through a `Session` (which says how it streamed), and with
//! `reprise replay --verify` in another process, with uploads from pinned
//! memory delayed at random so that a staging buffer rewritten before its
//! copy ran would upload the wrong bytes and fail the verification.
//!
//! The captures are 5 MiB and some bytes, in a store of 256 KiB chunks
//! made before recording (a store keeps the chunk size it was made with):
//! 21 chunks, several batches whatever the number of read threads, so the
//! ring wraps. Skipped without the simulators (no C compiler) unless
//! `REPRISE_REQUIRE_SIM=1`; the CUDA half runs on a real GPU with
//! `REPRISE_GPU_TESTS=1`, and both skip with `REPRISE_GPU_TESTS=0`.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use common::*;
use reprise::capture::SnapshotSource;
use reprise::replayer::Session;
use reprise::{Capture, LaunchConfig, RecordConfig};
use reprise_capture::chunks::{self, ChunkStore, Manifest, StoreOptions};
use reprise_test_support::hsa_runtime as hsa;

const SAXPY_PTX: &[u8] = include_bytes!("../../backends/cuda/fixtures/saxpy.ptx");
const SAXPY_GFX90A: &[u8] =
    include_bytes!("../../backends/amdgpu/fixtures/saxpy_mixed.gfx90a.hsaco");

/// Floats of x and of y: 5 MiB of both and 12 bytes more, so the last
/// chunk is short.
const N: usize = (5 << 20) / 8 + 3;

/// Held by the tests that use the CUDA driver in this process: the
/// simulator's delays and injected failures are the whole process's.
static CUDA: Mutex<()> = Mutex::new(());

/// The chunk size of the test's stores.
const CHUNK: u32 = 256 << 10;

fn config(dir: &Path) -> RecordConfig {
    RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20)
        .fsync(false)
}

/// A store of [`CHUNK`]-byte chunks in `dir`, before anything records
/// into it.
fn small_chunk_store(dir: &Path) {
    ChunkStore::create(
        dir,
        StoreOptions {
            fsync: false,
            chunk_size: CHUNK,
            ..StoreOptions::default()
        },
    )
    .unwrap();
}

fn saxpy_geometry() -> LaunchConfig {
    geometry((N as u32).div_ceil(256), 256)
}

/// The input manifest of `descriptor`'s capture: it is in the store, and
/// past several chunks.
fn input_manifest(descriptor: &Path) -> Manifest {
    let paths = reprise::CapturePaths::new(descriptor, reprise::core::record::Generation::Reprise);
    assert!(!paths.input.exists(), "the input is written raw");
    let m = Manifest::read(&chunks::manifest_path(&paths.input)).unwrap();
    assert_eq!(m.chunk_size(), CHUNK, "the store's chunk size");
    assert!(
        m.len() > 5 << 20 && !m.len().is_multiple_of(u64::from(CHUNK)),
        "{}",
        m.len()
    );
    m
}

/// The recorded output's bytes.
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

/// Replays `descriptor` in this process on `exec` through a `Session`
/// expecting `runs` runs, runs it `runs + 1` times (the last past what it
/// expected), and checks each output against the recorded one; returns how
/// it streamed.
fn session_replays<E: reprise::core::exec::Executor>(
    exec: &E,
    descriptor: &Path,
    runs: u32,
) -> reprise::replayer::Streamed {
    let capture = Capture::open(descriptor).unwrap();
    let want = recorded_output(&capture);
    let chunks = input_manifest(descriptor).chunks().len();
    reprise::block_on(async {
        let mut session = Session::new(exec, &capture, runs).await.unwrap();
        let streamed = session
            .streamed()
            .expect("a store capture on a GPU is streamed");
        assert_eq!(streamed.chunks, chunks);
        assert_eq!(streamed.buffers, 2, "{streamed:?}");
        assert!(
            streamed.buffer_len < capture.input.len as usize / 2,
            "staging buffers smaller than the snapshot: {streamed:?}"
        );
        assert!(
            streamed.wrapped(),
            "the staging ring came round: {streamed:?}"
        );
        for run in 0..=runs {
            session.run(saxpy_geometry(), true).await.unwrap();
            let out = session.output().expect("the output was copied back");
            assert!(
                out == want.as_slice(),
                "run {run}: the output differs from the recorded one"
            );
        }
        streamed
    })
}

/// `reprise replay --verify` of `descriptor` in another process, with
/// `env`, and `--repetitions` when given; it must pass.
fn replay_verifies(descriptor: &Path, repetitions: Option<&str>, env: &[(&str, &str)]) -> String {
    let mut args = vec!["replay", "--verify"];
    if let Some(r) = repetitions {
        args.extend(["--repetitions", r]);
    }
    args.push(s(descriptor));
    let out = reprise_env(&args, env);
    let (stdout, stderr) = text(&out);
    assert_exit(&out, 0);
    assert!(stdout.contains("verification: PASS"), "{stdout}{stderr}");
    format!("{stdout}{stderr}")
}

/// Deletes the chunk file of the last chunk of `descriptor`'s input (the
/// short one, which no other place names), returning its index.
fn remove_last_input_chunk(dir: &Path, descriptor: &Path) -> usize {
    let m = input_manifest(descriptor);
    let last = m.chunks().len() - 1;
    let hash = m.chunks()[last].hash;
    assert!(
        m.chunks()[..last].iter().all(|c| c.hash != hash),
        "the last chunk is named once"
    );
    let store = ChunkStore::open(dir)
        .unwrap()
        .expect("the directory's store");
    std::fs::remove_file(store.chunk_file(&hash)).unwrap();
    last
}

fn record_cuda(dir: &Path) -> Option<PathBuf> {
    let exec = gpu()?;
    small_chunk_store(dir);
    let written = record_gpu_saxpy(exec, config(dir), SAXPY_PTX, N, 1);
    Some(written.into_iter().next().expect("one capture"))
}

#[test]
fn cuda_store_captures_stream_through_the_staging_ring_and_verify() {
    let _cuda = CUDA.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some(descriptor) = record_cuda(dir.path()) else {
        return;
    };
    let exec = gpu().unwrap();
    // Uploads from pinned memory wait up to 2 ms on their stream before
    // they read the staging buffer (a no-op on a real GPU).
    sim::set_upload_delay_us(2000);
    // One run expected: streamed into the region; the run past it streams
    // again.
    session_replays(&exec, &descriptor, 1);
    // Repetitions: streamed into the pristine copy on the device, which
    // every run restores from.
    session_replays(&exec, &descriptor, 3);
    sim::set_upload_delay_us(0);
    drop(exec);
    let delayed = [
        ("REPRISE_SIM_CUDA_UPLOAD_DELAY_US", "2000"),
        ("RUST_LOG", "info"),
    ];
    let log = replay_verifies(&descriptor, None, &delayed);
    let chunks = input_manifest(&descriptor).chunks().len();
    assert!(log.contains(&format!("streamed {chunks} chunks")), "{log}");
    let log = replay_verifies(&descriptor, Some("3"), &delayed);
    assert!(
        log.contains("restored the region from a copy kept on the device"),
        "{log}"
    );
}

#[test]
fn cuda_a_missing_chunk_is_named_by_its_place_in_the_snapshot() {
    let _cuda = CUDA.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some(descriptor) = record_cuda(dir.path()) else {
        return;
    };
    let last = remove_last_input_chunk(dir.path(), &descriptor);
    let out = reprise(&["replay", "--verify", s(&descriptor)]);
    let stderr = text(&out).1;
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("names chunk {last} (")),
        "{stderr}"
    );
    assert!(stderr.contains("missing"), "{stderr}");
}

#[test]
fn cuda_a_streamed_session_recovers_from_a_failed_run_and_reads_whole_without_room_for_a_copy() {
    let _cuda = CUDA.lock().unwrap_or_else(|e| e.into_inner());
    // Failures are injected: the simulator only.
    match sim::driver() {
        Ok(sim::Driver::Simulated) => {}
        Ok(sim::Driver::Real) => {
            return crate::common::skip("needs the simulated CUDA driver", None);
        }
        Err(why) => return crate::common::skip(&why.to_string(), None),
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(descriptor) = record_cuda(dir.path()) else {
        return;
    };
    let exec = gpu().unwrap();
    let capture = Capture::open(&descriptor).unwrap();
    let want = recorded_output(&capture);
    const INVALID_VALUE: u32 = 1;
    const OUT_OF_MEMORY: u32 = 2;
    reprise::block_on(async {
        // Streamed into the region for one run; that run's launch fails.
        let mut session = Session::new(&exec, &capture, 1).await.unwrap();
        assert!(session.streamed().is_some());
        assert!(sim::fail("cuLaunchKernel", INVALID_VALUE, 0));
        let e = session.run(saxpy_geometry(), true).await.unwrap_err();
        assert!(e.to_string().contains("cuLaunchKernel"), "{e}");
        // The next run finds the buffers gone and the region no longer
        // fresh: it streams the snapshot again, and verifies.
        session.run(saxpy_geometry(), true).await.unwrap();
        assert!(
            session.output() == Some(want.as_slice()),
            "the output after recovering"
        );
        drop(session);
        // No room for the pristine copy (the region's reservation is the
        // first, every later one fails): the snapshot is read whole into
        // one host buffer and each run uploads it.
        assert!(sim::fail_times(
            "cuMemAddressReserve",
            OUT_OF_MEMORY,
            1,
            100
        ));
        let session = Session::new(&exec, &capture, 3).await;
        sim::fail("", 0, 0);
        let mut session = session.unwrap();
        assert_eq!(session.streamed(), None);
        assert_eq!(session.restore_way(), reprise::replayer::RestoreWay::Upload);
        for _ in 0..3 {
            session.run(saxpy_geometry(), true).await.unwrap();
            assert!(
                session.output() == Some(want.as_slice()),
                "uploaded from the host"
            );
        }
    });
}

/// The simulated HSA runtime in this process, or `None` after saying why.
fn hsa_sim() -> Option<String> {
    match hsa::available().and_then(|()| hsa::library().map(|p| p.display().to_string())) {
        Ok(p) => {
            hsa::use_in_this_process().unwrap();
            Some(p)
        }
        Err(why) => {
            crate::common::skip(&why.to_string(), None);
            None
        }
    }
}

#[test]
fn hsa_store_captures_stream_through_the_staging_ring_and_verify() {
    let Some(lib) = hsa_sim() else { return };
    let dir = tempfile::tempdir().unwrap();
    small_chunk_store(dir.path());
    let exec = reprise::AmdExecutor::new(0).unwrap();
    let written = record_gpu_saxpy(exec, config(dir.path()), SAXPY_GFX90A, N, 1);
    let descriptor = written.into_iter().next().expect("one capture");
    let exec = reprise::AmdExecutor::new(0).unwrap();
    session_replays(&exec, &descriptor, 1);
    session_replays(&exec, &descriptor, 3);
    drop(exec);
    // In another process, every copy (uploads included) delayed at random.
    let env = [
        ("REPRISE_HSA_LIBRARY", lib.as_str()),
        ("REPRISE_SIM_HSA_COPY_DELAY_US", "2000"),
        ("RUST_LOG", "info"),
    ];
    let log = replay_verifies(&descriptor, None, &env);
    let chunks = input_manifest(&descriptor).chunks().len();
    assert!(log.contains(&format!("streamed {chunks} chunks")), "{log}");
    let log = replay_verifies(&descriptor, Some("3"), &env);
    assert!(
        log.contains("restored the region from a copy kept on the device"),
        "{log}"
    );
    // A chunk gone is named, by its place in the whole snapshot.
    let last = remove_last_input_chunk(dir.path(), &descriptor);
    let out = reprise_env(
        &["replay", "--verify", s(&descriptor)],
        &[("REPRISE_HSA_LIBRARY", lib.as_str())],
    );
    let stderr = text(&out).1;
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("names chunk {last} (")),
        "{stderr}"
    );
}
