//! Device-side hashing (`RecordConfig::device_hashing`) on the simulated
//! CUDA driver: the same captures as without it, device-to-host traffic
//! that follows what changed, the device's hashes equal to the store's
//! names, the ordinary path when device memory is short, and refusals
//! where it cannot be had.
//!
//! The simulator is process-wide (its copy counters, its injected
//! failures): the tests take turns.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use common::{CHUNK, CHUNKS, config, noise};
use reprise_capture::chunks::{ChunkStore, StoreOptions};
use reprise_core::exec::{
    DeviceRegion, Executor, KernelArgs, Launch, LaunchConfig, Queue, RegionRequest, Segment,
};
use reprise_cuda::CudaExecutor;
use reprise_std::capture::{CapturePaths, read_data};
use reprise_std::{Args, CaptureFormat, Error, RecordConfig, Recorder, block_on};
use reprise_test_support::cuda_driver as sim;

const SAXPY: &[u8] = include_bytes!("../../backends/cuda/fixtures/saxpy.ptx");

static TURN: Mutex<()> = Mutex::new(());

/// The warnings logged so far (this binary's logger).
static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Warnings;

impl log::Log for Warnings {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Warn
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            let mut w = WARNINGS.lock().unwrap_or_else(|e| e.into_inner());
            w.push(r.args().to_string());
        }
    }
    fn flush(&self) {}
}

/// The warnings logged from now on are kept in [`WARNINGS`].
fn keep_warnings() {
    static LOGGER: Warnings = Warnings;
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(log::LevelFilter::Warn);
}

/// The simulated driver's executor, or `None` (skipped, said why) where it
/// cannot be had or a real GPU is asked for (the tests count the
/// simulator's copies).
fn simulated() -> Option<CudaExecutor> {
    match sim::driver() {
        Ok(sim::Driver::Simulated) => {}
        Ok(sim::Driver::Real) => {
            eprintln!("skipped: needs the simulated CUDA driver (REPRISE_GPU_TESTS=1)");
            return None;
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            return None;
        }
    }
    sim::reset();
    Some(CudaExecutor::new(0).expect("the simulated device"))
}

/// Device-to-host bytes the simulator copied so far.
fn d2h() -> u64 {
    sim::copied_bytes().expect("the simulator is loaded")[1]
}

/// A recording of `launches` saxpy launches over one chunk (`y`, the
/// region's fourth) of a ten-chunk region of noise: each launch changes
/// that chunk alone. Returns the descriptors, the device-to-host bytes
/// each launch's capture took (launch and writer both) and the writer's
/// traffic.
fn record(
    exec: CudaExecutor,
    config: RecordConfig,
    launches: usize,
) -> (
    Vec<PathBuf>,
    Vec<u64>,
    Option<reprise_std::recorder::Traffic>,
) {
    let mut rec = Recorder::new(exec, 0, config).unwrap();
    let base = rec.alloc((CHUNKS * CHUNK) as u64, CHUNK as u64).unwrap();
    rec.upload(base, &noise(CHUNKS * CHUNK, 7)).unwrap();
    // Small floats in x and y, so that the results stay finite.
    let n = CHUNK / 4;
    let floats: Vec<u8> = (0..n)
        .flat_map(|i| (i as f32 / n as f32).to_le_bytes())
        .collect();
    let (x, y) = (base + 2 * CHUNK as u64, base + 3 * CHUNK as u64);
    rec.upload(x, &floats).unwrap();
    rec.upload(y, &floats).unwrap();
    let image = rec.load_image(SAXPY).unwrap();
    let k = rec.kernel(image, "saxpy").unwrap();
    let args = Args::new().f32(0.5).ptr(x).ptr(y).i32(n as i32);
    let geometry = LaunchConfig {
        grid: [(n as u32).div_ceil(256), 1, 1],
        block: [256, 1, 1],
        shared_mem: 0,
    };
    let mut written = Vec::new();
    let mut traffic = Vec::new();
    block_on(async {
        // The uploads first, so that each launch's count is its capture's.
        rec.synchronize().await.unwrap();
        for _ in 0..launches {
            let before = d2h();
            rec.launch(&k, geometry, &args).await.unwrap();
            written.extend(rec.finish().await.unwrap());
            traffic.push(d2h() - before);
        }
    });
    let filled = rec.device_hashing();
    (written, traffic, filled)
}

/// A capture's snapshot `which` ("input", "output"), read back.
fn snapshot(descriptor: &Path, which: &str) -> Vec<u8> {
    let paths = CapturePaths::new(descriptor, reprise_core::record::Generation::Reprise);
    let raw = if which == "input" {
        paths.input
    } else {
        paths.output
    };
    read_data(&raw, which, 1 << 30)
        .unwrap()
        .expect("the snapshot")
}

#[test]
fn captures_are_the_same_and_traffic_follows_what_changed() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(exec) = simulated() else { return };
    let (plain_dir, hashed_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (plain, plain_traffic, none) = record(exec, config(plain_dir.path(), false), 3);
    assert!(none.is_none());
    let exec = CudaExecutor::new(0).unwrap();
    let (hashed, hashed_traffic, filled) = record(exec, config(hashed_dir.path(), true), 3);
    assert_eq!((plain.len(), hashed.len()), (3, 3));
    for (p, h) in plain.iter().zip(&hashed) {
        for which in ["input", "output"] {
            let (a, b) = (snapshot(p, which), snapshot(h, which));
            assert_eq!(a.len(), CHUNKS * CHUNK);
            assert!(
                a == b,
                "{which} of {} differs with device hashing",
                h.display()
            );
        }
        let (a, b) = (
            reprise_std::capture::read_descriptor(p).unwrap(),
            reprise_std::capture::read_descriptor(h).unwrap(),
        );
        assert_eq!(a.checksums, b.checksums);
        assert_eq!((a.memory_size, a.grid), (b.memory_size, b.grid));
    }
    // Without device hashing each launch copies the region twice (before
    // and after the kernel), and the globals.
    let region = (CHUNKS * CHUNK) as u64;
    for t in &plain_traffic {
        assert!(
            (2 * region..2 * region + 4096).contains(t),
            "{plain_traffic:?}"
        );
    }
    // With it, the first launch copies the input whole (the store is
    // empty) and, of the output, the one chunk the kernel changed; later
    // launches find their input in the last capture's output and copy
    // that chunk only, with the hashes (32 bytes a chunk, two snapshots)
    // and the globals.
    let chunk = CHUNK as u64;
    let small = 64 * CHUNKS as u64 + 4096;
    assert!(
        (region + chunk..region + chunk + small).contains(&hashed_traffic[0]),
        "{hashed_traffic:?}"
    );
    for t in &hashed_traffic[1..] {
        assert!((chunk..chunk + small).contains(t), "{hashed_traffic:?}");
    }
    let filled = filled.expect("device hashing was on");
    assert_eq!(filled.device, region + 3 * chunk);
    assert_eq!(filled.store, 0);
    assert_eq!(filled.device + filled.host, 6 * region);
    eprintln!(
        "device-to-host bytes per capture, {} MiB region, one chunk changed per launch: \
         without device hashing {plain_traffic:?}, with it {hashed_traffic:?}",
        (CHUNKS * CHUNK) >> 20
    );
}

#[test]
fn the_sync_schedule_records_the_same_captures() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(exec) = simulated() else { return };
    let (plain_dir, hashed_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let sync = |dir: &Path, hashing| config(dir, hashing).mode(reprise_core::schedule::Mode::Sync);
    let (plain, _, _) = record(exec, sync(plain_dir.path(), false), 2);
    let exec = CudaExecutor::new(0).unwrap();
    let (hashed, traffic, filled) = record(exec, sync(hashed_dir.path(), true), 2);
    for (p, h) in plain.iter().zip(&hashed) {
        for which in ["input", "output"] {
            assert!(snapshot(p, which) == snapshot(h, which), "{which}");
        }
    }
    assert!(traffic[1] < 2 * CHUNK as u64, "{traffic:?}");
    assert_eq!(filled.unwrap().device, (CHUNKS * CHUNK + 2 * CHUNK) as u64);
}

#[test]
fn the_store_supplies_what_it_has_by_the_devices_hashes() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(exec) = simulated() else { return };
    let dir = tempfile::tempdir().unwrap();
    // A recording without device hashing fills the store ...
    let (plain, _, _) = record(exec, config(dir.path(), false), 1);
    // ... and a new recorder with it, into the same store, finds every
    // chunk of its capture there (named as the device hashed them) and
    // copies none from the device.
    let exec = CudaExecutor::new(0).unwrap();
    let (hashed, traffic, filled) = record(exec, config(dir.path(), true), 1);
    let filled = filled.unwrap();
    let region = (CHUNKS * CHUNK) as u64;
    // Its input whole, and the output's changed chunk (the first
    // recording's output had it too).
    assert_eq!(filled.store, region + CHUNK as u64, "{filled:?}");
    assert_eq!(filled.device, 0, "{filled:?}");
    assert!(traffic[0] < 4096 + 64 * CHUNKS as u64, "{traffic:?}");
    assert_eq!(
        snapshot(&plain[0], "output"),
        snapshot(&hashed[0], "output")
    );
}

#[test]
fn the_kernels_hashes_are_the_stores_names() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(exec) = simulated() else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = ChunkStore::create(
        dir.path(),
        StoreOptions {
            fsync: false,
            chunk_size: 64 << 10,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let cs = store.chunk_size();
    // Five and a half chunks, the last one short.
    let data = noise(5 * (cs as usize) + 333, 3);
    let manifest = store.put(&data).unwrap();
    let image = exec.load_image(reprise_cuda::chunk_hash::PTX).unwrap();
    let kernel = exec
        .kernel(&image, reprise_cuda::chunk_hash::KERNEL)
        .unwrap();
    let out_len = reprise_cuda::chunk_hash::out_bytes(data.len() as u64, cs);
    let src = exec.reserve(RegionRequest::new(None, 8 << 20)).unwrap();
    let out = exec.reserve(RegionRequest::new(None, out_len)).unwrap();
    let mut q = exec.queue().unwrap();
    let mut up = exec.buffer(data.len()).unwrap();
    up.as_mut().copy_from_slice(&data);
    let seg = |device, len| Segment {
        device,
        host_offset: 0,
        len,
    };
    q.upload(up, &[seg(src.base(), data.len())]).unwrap();
    let n = manifest.chunks().len();
    let values = [src.base(), data.len() as u64, out.base(), u64::from(cs)];
    let launch = Launch {
        config: LaunchConfig {
            grid: [n as u32, 1, 1],
            block: [reprise_cuda::chunk_hash::THREADS, 1, 1],
            shared_mem: 0,
        },
        args: KernelArgs {
            values: &values,
            sizes: &[8, 8, 8, 4],
            data: &[],
        },
    };
    q.launch(&kernel, &launch).unwrap();
    let ticket = q
        .download(exec.buffer(32 * n).unwrap(), &[seg(out.base(), 32 * n)])
        .unwrap();
    block_on(std::future::poll_fn(|cx| q.poll_synchronize(cx))).unwrap();
    let mut hashes = None;
    while let Some((t, b)) = q.reclaim() {
        if t == ticket {
            hashes = Some(b);
        }
    }
    let hashes = hashes.expect("the hashes' buffer");
    for (i, (c, h)) in manifest
        .chunks()
        .iter()
        .zip(hashes.as_ref().chunks(32))
        .enumerate()
    {
        assert_eq!(h, c.hash.0, "chunk {i}");
    }
}

#[test]
fn no_device_memory_for_the_copy_means_the_ordinary_path() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(exec) = simulated() else { return };
    let (plain_dir, short_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (plain, _, _) = record(exec, config(plain_dir.path(), false), 1);
    let exec = CudaExecutor::new(0).unwrap();
    let mut rec = Recorder::new(exec, 0, config(short_dir.path(), true)).unwrap();
    let base = rec.alloc((CHUNKS * CHUNK) as u64, CHUNK as u64).unwrap();
    rec.upload(base, &noise(CHUNKS * CHUNK, 7)).unwrap();
    let n = CHUNK / 4;
    let floats: Vec<u8> = (0..n)
        .flat_map(|i| (i as f32 / n as f32).to_le_bytes())
        .collect();
    let (x, y) = (base + 2 * CHUNK as u64, base + 3 * CHUNK as u64);
    rec.upload(x, &floats).unwrap();
    rec.upload(y, &floats).unwrap();
    let image = rec.load_image(SAXPY).unwrap();
    let k = rec.kernel(image, "saxpy").unwrap();
    let args = Args::new().f32(0.5).ptr(x).ptr(y).i32(n as i32);
    let geometry = LaunchConfig {
        grid: [(n as u32).div_ceil(256), 1, 1],
        block: [256, 1, 1],
        shared_mem: 0,
    };
    // The device copy's physical memory is refused (2:
    // CUDA_ERROR_OUT_OF_MEMORY), once.
    keep_warnings();
    assert!(sim::fail("cuMemCreate", 2, 0));
    let written = block_on(async {
        rec.launch(&k, geometry, &args).await.unwrap();
        rec.finish().await.unwrap()
    });
    sim::fail("", 0, 0);
    assert_eq!(written.len(), 1);
    // The writer filled nothing: the snapshots came the ordinary way, and
    // a warning said why.
    assert_eq!(rec.device_hashing().unwrap().device, 0);
    let warnings = WARNINGS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("device hashing: no device memory") && w.contains("whole")),
        "{warnings:?}"
    );
    for which in ["input", "output"] {
        assert!(
            snapshot(&plain[0], which) == snapshot(&written[0], which),
            "{which}"
        );
    }
}

#[test]
fn it_is_refused_where_it_cannot_be_had() {
    let dir = tempfile::tempdir().unwrap();
    // The host executor has no hashing kernel.
    let host = reprise_host::HostExecutor::new().unwrap();
    let e = Recorder::new(host, 0, config(dir.path(), true))
        .err()
        .unwrap();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");
    assert!(e.to_string().contains("device-side hashing"), "{e}");
    // The raw format keeps no store to look chunks up in.
    let host = reprise_host::HostExecutor::new().unwrap();
    let raw = config(dir.path(), true).format(CaptureFormat::Raw);
    let e = Recorder::new(host, 0, raw).err().unwrap();
    assert!(e.to_string().contains("raw format"), "{e}");
    // Off, nothing is asked of the executor.
    let host = reprise_host::HostExecutor::new().unwrap();
    assert!(Recorder::new(host, 0, config(dir.path(), false)).is_ok());
}
