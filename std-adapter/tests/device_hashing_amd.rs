//! Device-side hashing (`RecordConfig::device_hashing`) on the simulated
//! HSA runtime: the same captures as without it, and device-to-host
//! traffic that follows what changed (the CUDA tests, device_hashing.rs,
//! cover the rest: the store's names, a device-memory shortage, refusals).

mod common;

use std::path::{Path, PathBuf};

use common::{CHUNK, CHUNKS, config, noise};
use reprise_amdgpu::AmdExecutor;
use reprise_core::exec::LaunchConfig;
use reprise_std::capture::{CapturePaths, read_data, read_descriptor};
use reprise_std::{Args, RecordConfig, Recorder, block_on};
use reprise_test_support::hsa_runtime as sim;

const SAXPY: &[u8] = include_bytes!("../../backends/amdgpu/fixtures/saxpy_mixed.gfx90a.hsaco");

/// `launches` saxpy launches over one chunk of a ten-chunk region of
/// noise; the descriptors and each capture's device-to-host bytes.
fn record(config: RecordConfig, launches: usize, probe: &sim::Probe) -> (Vec<PathBuf>, Vec<i64>) {
    let exec = AmdExecutor::new(0).unwrap();
    let mut rec = Recorder::new(exec, 0, config).unwrap();
    let base = rec.alloc((CHUNKS * CHUNK) as u64, CHUNK as u64).unwrap();
    rec.upload(base, &noise(CHUNKS * CHUNK, 11)).unwrap();
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
    let (mut written, mut traffic) = (Vec::new(), Vec::new());
    block_on(async {
        rec.synchronize().await.unwrap();
        for _ in 0..launches {
            let before = probe.copied()[1];
            rec.launch(&k, geometry, &args).await.unwrap();
            written.extend(rec.finish().await.unwrap());
            traffic.push(probe.copied()[1] - before);
        }
    });
    (written, traffic)
}

fn snapshot(descriptor: &Path, input: bool) -> Vec<u8> {
    let paths = CapturePaths::new(descriptor, reprise_core::record::Generation::Reprise);
    let raw = if input { paths.input } else { paths.output };
    read_data(&raw, "snapshot", 1 << 30)
        .unwrap()
        .expect("the snapshot")
}

#[test]
fn captures_are_the_same_and_traffic_follows_what_changed() {
    if let Err(why) = sim::available() {
        eprintln!("skipped: {why}");
        return;
    }
    sim::use_in_this_process().unwrap();
    let probe = sim::Probe::open().unwrap();
    let (plain_dir, hashed_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (plain, plain_traffic) = record(config(plain_dir.path(), false), 3, &probe);
    let (hashed, hashed_traffic) = record(config(hashed_dir.path(), true), 3, &probe);
    assert_eq!((plain.len(), hashed.len()), (3, 3));
    for (p, h) in plain.iter().zip(&hashed) {
        for input in [true, false] {
            assert!(snapshot(p, input) == snapshot(h, input), "{}", h.display());
        }
        let (a, b) = (read_descriptor(p).unwrap(), read_descriptor(h).unwrap());
        assert_eq!(a.checksums, b.checksums);
    }
    let (region, chunk) = ((CHUNKS * CHUNK) as i64, CHUNK as i64);
    let small = 64 * CHUNKS as i64 + 4096;
    for t in &plain_traffic {
        assert!(
            (2 * region..2 * region + 4096).contains(t),
            "{plain_traffic:?}"
        );
    }
    assert!(
        (region + chunk..region + chunk + small).contains(&hashed_traffic[0]),
        "{hashed_traffic:?}"
    );
    for t in &hashed_traffic[1..] {
        assert!((chunk..chunk + small).contains(t), "{hashed_traffic:?}");
    }
    eprintln!(
        "AMD (simulated): device-to-host bytes per capture, {} MiB region, one chunk \
         changed per launch: without device hashing {plain_traffic:?}, with it \
         {hashed_traffic:?}",
        (CHUNKS * CHUNK) >> 20
    );
}
