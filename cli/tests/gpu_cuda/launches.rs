//! Launches recorded through the library and replayed in another process:
//! many saxpy launches with other geometries, native parameter sizes, a 2-D
//! grid, and the same capture from every schedule.

use std::path::PathBuf;

use reprise::{Args, BackendKind, LaunchConfig, Recorder};

use crate::common::*;
use crate::{GRID2D, MIXED, SAXPY, config, replay_ok};

#[test]
fn saxpy_records_many_launches_and_each_replays_in_another_process() {
    let Some(gpu) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let n = 100_000usize;
    let written: Vec<PathBuf> = {
        let mut rec = Recorder::new(gpu, 0, config(dir.path())).unwrap();
        let x = rec.alloc((n * 4) as u64, 256).unwrap();
        let y = rec.alloc((n * 4) as u64, 256).unwrap();
        rec.upload(x, &floats(&(0..n).map(|i| i as f32).collect::<Vec<_>>()))
            .unwrap();
        rec.upload(y, &floats(&vec![1.0; n])).unwrap();
        let image = rec.load_image(SAXPY).unwrap();
        let (bias, size) = rec
            .global(image, "bias")
            .unwrap()
            .expect("saxpy.ptx defines bias");
        assert_eq!(size, 4);
        rec.upload(bias, &2.0f32.to_le_bytes()).unwrap();
        let k = rec.kernel(image, "saxpy").unwrap();
        let args = Args::new().f32(3.0).ptr(x).ptr(y).i32(n as i32);
        let geometry = LaunchConfig {
            grid: [(n as u32).div_ceil(256), 1, 1],
            block: [256, 1, 1],
            shared_mem: 0,
        };
        reprise::block_on(async {
            for _ in 0..3 {
                rec.launch(&k, geometry, &args).await.unwrap();
            }
            let out = rec.download(y + 4 * 10, 4).await.unwrap();
            // y = 1 + 3 * (3 * 10 + 2) after three launches with bias 2.
            assert_eq!(
                f32::from_le_bytes(out[..4].try_into().unwrap()),
                1.0 + 3.0 * 32.0
            );
            rec.finish().await.unwrap()
        })
    };
    assert_eq!(written.len(), 3, "every launch kept");
    for w in &written {
        let c = reprise::Capture::open(w).unwrap();
        assert_eq!(c.record.backend, Some(BackendKind::Cuda));
        assert_eq!(c.record.arg_sizes.as_slice(), &[4, 8, 8, 4]);
        replay_ok(w, &[]);
    }
    // Tuning: other geometries that still cover n elements give the same output.
    replay_ok(&written[0], &["--num-threads=128", "--num-teams", "800"]);
    replay_ok(
        &written[1],
        &["--num-threads", "1024", "--num-teams=98", "--repetitions=3"],
    );
    let out = reprise(&["inspect", s(&written[2])]);
    assert_exit(&out, 0);
    assert!(
        text(&out).0.contains("image     PTX for sm_80 (ISA 7.0)"),
        "{}",
        text(&out).0
    );
}

#[test]
fn native_parameter_sizes_are_recorded_and_replayed() {
    let Some(gpu) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let written = {
        let mut rec = Recorder::new(gpu, 0, config(dir.path())).unwrap();
        let out = rec.alloc(4 * 512, 256).unwrap();
        let image = rec.load_image(MIXED).unwrap();
        let (table, size) = rec
            .global(image, "table")
            .unwrap()
            .expect("mixed.ptx defines table");
        assert_eq!(size, 64);
        let t: Vec<u8> = (0..16i32).flat_map(|v| (v * 7).to_le_bytes()).collect();
        rec.upload(table, &t).unwrap();
        let k = rec.kernel(image, "mixed").unwrap();
        let params: Vec<u8> = [
            1.5f32.to_le_bytes(),
            2.25f32.to_le_bytes(),
            0.125f32.to_le_bytes(),
            9i32.to_le_bytes(),
        ]
        .concat();
        let args = Args::new().i32(3).f32(0.5).bytes(&params).ptr(out);
        let geometry = LaunchConfig {
            grid: [2, 1, 1],
            block: [256, 1, 1],
            shared_mem: 0,
        };
        reprise::block_on(async {
            rec.launch(&k, geometry, &args).await.unwrap();
            let o = rec.download(out + 4 * 17, 4).await.unwrap();
            let want = (17 * 3) as f32 + 0.5 + 1.5 + 2.25 + 0.125 + 9.0 + 7.0 * (17 % 16) as f32;
            assert_eq!(f32::from_le_bytes(o[..4].try_into().unwrap()), want);
            rec.finish().await.unwrap()
        })
    };
    let c = reprise::Capture::open(&written[0]).unwrap();
    assert_eq!(c.record.arg_sizes.as_slice(), &[4, 4, 16, 8]);
    replay_ok(&written[0], &[]);
}

#[test]
fn two_dimensional_grid_replays() {
    let Some(gpu) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (64u32, 24u32);
    let written = {
        let mut rec = Recorder::new(gpu, 0, config(dir.path())).unwrap();
        let out = rec.alloc(u64::from(w * h) * 4, 256).unwrap();
        let image = rec.load_image(GRID2D).unwrap();
        let k = rec.kernel(image, "grid2d").unwrap();
        let geometry = LaunchConfig {
            grid: [4, 3, 1],
            block: [16, 8, 1],
            shared_mem: 0,
        };
        reprise::block_on(async {
            rec.launch(
                &k,
                geometry,
                &Args::new().ptr(out).i32(w as i32).i32(h as i32),
            )
            .await
            .unwrap();
            let o = rec
                .download(out + u64::from(5 * w + 7) * 4, 4)
                .await
                .unwrap();
            assert_eq!(u32::from_le_bytes(o[..4].try_into().unwrap()), 7 * 1000 + 5);
            rec.finish().await.unwrap()
        })
    };
    let c = reprise::Capture::open(&written[0]).unwrap();
    assert_eq!((c.record.grid, c.record.block), ([4, 3, 1], [16, 8, 1]));
    replay_ok(&written[0], &[]);
}

#[test]
fn sync_and_async_schedules_write_the_same_capture() {
    let Some(gpu) = gpu() else { return };
    use reprise::core::schedule::Mode;
    use reprise_std::WriterKind;
    let mut sums = Vec::new();
    for (mode, writer, staging) in [
        (Mode::Sync, WriterKind::Inline, None),
        (Mode::Async, WriterKind::Background { depth: 2 }, None),
        // Device-side staging of the snapshot before the kernel.
        (Mode::Async, WriterKind::Background { depth: 2 }, Some(0)),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut rec = Recorder::new(
            gpu.clone().with_device_staging(staging),
            0,
            config(dir.path()).mode(mode).writer(writer),
        )
        .unwrap();
        let x = rec.alloc(4096, 256).unwrap();
        rec.upload(x, &floats(&vec![2.0; 1024])).unwrap();
        let image = rec.load_image(SAXPY).unwrap();
        let k = rec.kernel(image, "saxpy").unwrap();
        let args = Args::new().f32(2.0).ptr(x).ptr(x).i32(1024);
        let geometry = LaunchConfig {
            grid: [4, 1, 1],
            block: [256, 1, 1],
            shared_mem: 0,
        };
        let written = reprise::block_on(async {
            rec.launch(&k, geometry, &args).await.unwrap();
            rec.finish().await.unwrap()
        });
        drop(rec);
        let c = reprise::Capture::open(&written[0]).unwrap();
        sums.push((c.record.checksums.input, c.record.checksums.output));
    }
    assert_eq!(sums[0], sums[1]);
    assert_eq!(sums[0], sums[2]);
}
