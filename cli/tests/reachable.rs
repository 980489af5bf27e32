//! Reachable-only recording (`RecordConfig::reachable`, `record
//! --reachable`): a capture holds the allocations its launch can
//! reach, found by following the pointers inside them; `inspect` says so;
//! it replays and verifies; a kernel that reaches past them (reading or
//! writing) is a verification difference, never a silent pass; and the
//! store takes less than without it.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use reprise::core::record::KernelRecord;
use reprise::core::record::reachable::POISON;
use reprise::{Args, CaptureFormat, HostExecutor, RecordConfig, Recorder};

const REACH: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels/reach.so"));

fn config(dir: &Path, reachable: bool) -> RecordConfig {
    RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(256 << 20)
        .fsync(false)
        .format(CaptureFormat::Store)
        .reachable(reachable)
}

fn record_of(descriptor: &Path) -> KernelRecord {
    KernelRecord::from_json(&std::fs::read(descriptor).unwrap()).unwrap()
}

/// The bytes `reprise du` says the store in `dir` takes on disk.
fn stored_bytes(dir: &Path) -> u64 {
    let out = reprise(&["du", "--json", s(dir)]);
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["stored_bytes"].as_u64().unwrap()
}

/// A smooth f32 field with full mantissas (what compresses least, as a
/// simulation's state does), `n` floats from `phase`.
fn field(n: usize, phase: f32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let x = i as f32 * 1e-4 + phase;
            x.sin() * 3.7 + (x * 0.37).cos() * 0.01
        })
        .collect()
}

/// Records `launches` launches of axpy over x and y (`n` floats each)
/// beside a buffer of `untouched` floats no kernel is given: the saxpy
/// program of the store benchmark, on the host.
fn record_saxpy_beside(
    config: RecordConfig,
    n: usize,
    untouched: usize,
    launches: usize,
) -> Vec<PathBuf> {
    let mut rec = Recorder::new(HostExecutor::new().unwrap(), 0, config).unwrap();
    let calls = rec.alloc(8, 8).unwrap();
    let x = rec.alloc((n * 4) as u64, 16).unwrap();
    let y = rec.alloc((n * 4) as u64, 16).unwrap();
    let rest = rec.alloc((untouched * 4) as u64, 16).unwrap();
    let xs: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5 + 1.0).collect();
    rec.upload(x, &floats(&xs)).unwrap();
    rec.upload(y, &floats(&field(n, 0.0))).unwrap();
    rec.upload(rest, &floats(&field(untouched, 0.4))).unwrap();
    let image = rec.load_image(AXPY).unwrap();
    let k = rec.kernel(image, "axpy").unwrap();
    let args = Args::new().ptr(x).ptr(y).scalar(n as u64).ptr(calls);
    reprise::block_on(async {
        for _ in 0..launches {
            rec.launch(&k, geometry(1, 1), &args).await.unwrap();
        }
        // The program is unaffected: poison goes into the snapshots only.
        let kept = rec.download(rest, untouched.min(4096) * 4).await.unwrap();
        assert_eq!(kept, floats(&field(untouched.min(4096), 0.4)));
        let y1 = rec.download(y + 4, 4).await.unwrap();
        let want = (0..launches).fold(field(2, 0.0)[1], |y, _| 1.0 * 1.5 + y);
        assert_eq!(f32::from_le_bytes(y1.try_into().unwrap()), want);
        rec.finish().await.unwrap()
    })
}

#[test]
fn a_reachable_capture_says_so_holds_its_arguments_memory_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let n = 4096;
    let written = record_saxpy_beside(config(dir.path(), true), n, 8192, 2);
    assert_eq!(written.len(), 2);
    for w in &written {
        let rec = record_of(w);
        let ranges = rec.reachable.expect("a Reachable key");
        // calls, x and y are held (one range: they are adjacent), the
        // untouched buffer after them is not.
        let held: u64 = ranges.iter().map(|r| r[1]).sum();
        assert!(
            held >= 8 * n as u64 && held < 8 * n as u64 + 1024,
            "{ranges:?}"
        );
        assert!(rec.memory_size.unwrap() >= held + 4 * 8192);

        let out = reprise(&["inspect", s(w)]);
        assert_exit(&out, 0);
        let (stdout, _) = text(&out);
        assert!(stdout.contains("reachable-only"), "{stdout}");
        let out = reprise(&["inspect", "--json", s(w)]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["region"]["reachable_only"]["held_bytes"], held, "{v}");

        let out = reprise(&["replay", "--verify", s(w)]);
        assert_exit(&out, 0);
        assert!(text(&out).0.contains("verification: PASS"), "{out:?}");
        // Compared as values too (the data is f32s, so f32): poison equals
        // poison, with no --nan-equal (the core's tests check every float
        // type).
        let out = reprise(&[
            "replay",
            "--verify",
            "--dtype",
            "f32",
            "--rtol",
            "1e-6",
            s(w),
        ]);
        assert_exit(&out, 0);
        assert!(text(&out).0.contains("verification: PASS"), "f32: {out:?}");
    }
    // Raw files show it: the untouched buffer is poison in both snapshots,
    // x is as uploaded.
    let raw = tempfile::tempdir().unwrap();
    let w = record_saxpy_beside(
        config(raw.path(), true).format(CaptureFormat::Raw),
        n,
        8192,
        1,
    );
    let paths = reprise::CapturePaths::new(&w[0], reprise::core::record::Generation::Reprise);
    for file in [&paths.input, &paths.output] {
        let bytes = std::fs::read(file).unwrap();
        assert!(bytes[bytes.len() - 4 * 8192..].iter().all(|&b| b == POISON));
        let x0 = bytes.len() - 4 * 8192 - 8 * n;
        assert_eq!(
            bytes[x0..x0 + 4],
            1.0f32.to_le_bytes(),
            "{}",
            file.display()
        );
    }
    // A capture recorded without the mode says nothing of it.
    let other = tempfile::tempdir().unwrap();
    let plain = record_saxpy_beside(config(other.path(), false), n, 8192, 1);
    assert_eq!(record_of(&plain[0]).reachable, None);
    let (stdout, _) = text(&reprise(&["inspect", s(&plain[0])]));
    assert!(!stdout.contains("reachable-only"), "{stdout}");
}

/// The region of [`record_past`]: x, a buffer no argument points into, y.
struct Past {
    x: u64,
    hidden: u64,
    y: u64,
}

/// Records one launch of `kernel` (`read_past` or `write_past`) whose
/// arguments reach only x and y, while it reads or writes `hidden`.
fn record_past(dir: &Path, reachable: bool, kernel: &str) -> PathBuf {
    let n = 1024usize;
    let mut rec = Recorder::new(HostExecutor::new().unwrap(), 0, config(dir, reachable)).unwrap();
    let p = Past {
        x: rec.alloc((n * 4) as u64, 16).unwrap(),
        hidden: rec.alloc((n * 4) as u64, 16).unwrap(),
        y: rec.alloc((n * 4) as u64, 16).unwrap(),
    };
    rec.upload(p.x, &floats(&field(n, 1.0))).unwrap();
    rec.upload(p.hidden, &floats(&field(n, 2.0))).unwrap();
    rec.upload(p.y, &floats(&field(n, 3.0))).unwrap();
    let image = rec.load_image(REACH).unwrap();
    let k = rec.kernel(image, kernel).unwrap();
    let args = match kernel {
        // y[i] = x[i + skip]: hidden, right after x.
        "read_past" => Args::new()
            .ptr(p.x)
            .ptr(p.y)
            .scalar(n as u64)
            .scalar((p.hidden - p.x) / 4),
        // y[i + skip] = 7: hidden, right before y.
        _ => Args::new()
            .ptr(p.y)
            .scalar(n as u64)
            .scalar(((p.hidden as i64 - p.y as i64) / 4) as u64),
    };
    reprise::block_on(async {
        rec.launch(&k, geometry(1, 1), &args).await.unwrap();
        let written = rec.finish().await.unwrap();
        let rec = record_of(&written[0]);
        if reachable {
            let ranges = rec.reachable.unwrap();
            let base = rec.region_base.unwrap();
            let hidden = p.hidden - base;
            assert!(
                ranges
                    .iter()
                    .all(|r| r[0] + r[1] <= hidden || r[0] >= hidden + 4096),
                "{ranges:?} holds the hidden buffer at {hidden:#x}"
            );
        }
        written[0].clone()
    })
}

#[test]
fn a_kernel_reading_memory_outside_the_closure_is_a_verification_difference() {
    // Recorded whole, the same launch verifies: the difference is the mode's.
    let whole = tempfile::tempdir().unwrap();
    let w = record_past(whole.path(), false, "read_past");
    assert_exit(&reprise(&["replay", "--verify", s(&w)]), 0);

    let dir = tempfile::tempdir().unwrap();
    let w = record_past(dir.path(), true, "read_past");
    let out = reprise(&["replay", "--verify", s(&w)]);
    assert_exit(&out, 1);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("verification: FAIL"), "{stdout}");
}

#[test]
fn a_kernel_writing_memory_outside_the_closure_is_a_verification_difference() {
    let whole = tempfile::tempdir().unwrap();
    let w = record_past(whole.path(), false, "write_past");
    assert_exit(&reprise(&["replay", "--verify", s(&w)]), 0);

    let dir = tempfile::tempdir().unwrap();
    let w = record_past(dir.path(), true, "write_past");
    let out = reprise(&["replay", "--verify", s(&w)]);
    assert_exit(&out, 1);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("verification: FAIL"), "{stdout}");
}

#[test]
fn pointers_inside_allocations_are_followed_and_only_they() {
    let dir = tempfile::tempdir().unwrap();
    let n = 512usize;
    let mut rec = Recorder::new(HostExecutor::new().unwrap(), 0, config(dir.path(), true)).unwrap();
    let bufs: Vec<u64> = (0..5)
        .map(|_| rec.alloc((n * 4) as u64, 256).unwrap())
        .collect();
    for (i, &b) in bufs.iter().enumerate() {
        rec.upload(b, &floats(&field(n, i as f32))).unwrap();
    }
    // The table names buffers 0, 2 and 4; 1 and 3 are reached by nothing.
    let table = rec.alloc(3 * 8, 256).unwrap();
    let names: Vec<u8> = [bufs[0], bufs[2], bufs[4]]
        .iter()
        .flat_map(|p| p.to_le_bytes())
        .collect();
    rec.upload(table, &names).unwrap();
    let out = rec.alloc((n * 4) as u64, 256).unwrap();
    let image = rec.load_image(REACH).unwrap();
    let k = rec.kernel(image, "gather").unwrap();
    let args = Args::new().ptr(table).scalar(3).ptr(out).scalar(n as u64);
    let written = reprise::block_on(async {
        rec.launch(&k, geometry(1, 1), &args).await.unwrap();
        let sum = rec.download(out, 4).await.unwrap();
        let want: f32 = [0, 2, 4].iter().map(|&i| field(1, i as f32)[0]).sum();
        assert_eq!(f32::from_le_bytes(sum.try_into().unwrap()), want);
        rec.finish().await.unwrap()
    });
    let r = record_of(&written[0]);
    let base = r.region_base.unwrap();
    let ranges = r.reachable.clone().unwrap();
    let held = |addr: u64| {
        let off = addr - base;
        ranges
            .iter()
            .any(|r| r[0] <= off && off + (n * 4) as u64 <= r[0] + r[1])
    };
    let reached: Vec<bool> = bufs.iter().map(|&b| held(b)).collect();
    assert_eq!(reached, [true, false, true, false, true], "{ranges:?}");
    assert!(held(out));
    let out = reprise(&["replay", "--verify", s(&written[0])]);
    assert_exit(&out, 0);
    assert!(text(&out).0.contains("verification: PASS"));
}

#[test]
fn the_store_is_smaller_with_reachable_by_about_the_untouched_buffer() {
    // x and y 256 KiB each, beside 2 MiB no kernel touches, 4 launches.
    let (n, untouched, launches) = (64 << 10, 512 << 10, 4);
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    record_saxpy_beside(config(a.path(), false), n, untouched, launches);
    let written = record_saxpy_beside(config(b.path(), true), n, untouched, launches);
    let (whole, reach) = (stored_bytes(a.path()), stored_bytes(b.path()));
    // The untouched field compresses little: nearly all of its 2 MiB
    // is what the mode saves.
    assert!(
        reach + (3 << 19) < whole,
        "stored {whole} bytes whole, {reach} reachable-only"
    );
    assert_exit(&reprise(&["replay", "--verify", s(&written[3])]), 0);
}

/// The measurement of docs/store.md's "Reachable mode": the 40-launch
/// saxpy (x and y 16 MiB, beside 32 MiB no kernel touches),
/// recorded into a store with and without the mode.
#[test]
#[ignore = "a measurement (5 GiB of snapshots, two minutes in a debug build): \
            cargo test -p reprise-cli --test reachable -- --ignored --nocapture"]
fn measure_the_40_launch_saxpy_with_and_without_reachable() {
    let (n, untouched, launches) = (4 << 20, 8 << 20, 40);
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    record_saxpy_beside(config(a.path(), false), n, untouched, launches);
    record_saxpy_beside(config(b.path(), true), n, untouched, launches);
    for (what, dir) in [("whole", a.path()), ("reachable", b.path())] {
        let (stdout, _) = text(&reprise(&["du", s(dir)]));
        println!("{what}:\n{stdout}");
    }
    let (whole, reach) = (stored_bytes(a.path()), stored_bytes(b.path()));
    println!("stored: whole {whole} bytes, reachable-only {reach} bytes");
    assert!(reach < whole);
}

/// `reprise record --reachable` of a driver-API program on the simulated
/// driver, through the interposer: `chunks.c` puts saxpy's x in its first
/// allocation (8 MiB) and y in its last (4 MiB); the middle one (4 MiB)
/// only holds a pattern. Each capture holds the two it reaches, says so,
/// and replays and verifies on the simulator.
#[test]
fn record_reachable_through_the_interposer_holds_what_saxpy_reaches() {
    use common::programs::*;
    if !matches!(setup(), Some(Target::Simulated)) || interposer().is_none() {
        return;
    }
    let program = build_program("chunks");
    let dir = tempfile::tempdir().unwrap();
    let env = [("CHUNKS", "8192,4096,4096")];
    let out = record_env(&program, dir.path(), &["--reachable"], &[], &env);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("patterns ok"), "{stdout}");
    let captures = descriptors(dir.path());
    assert_eq!(captures.len(), 3, "{stderr}");
    let (k, v) = sim_env();
    for c in &captures {
        let rec = record_of(c);
        let ranges = rec.reachable.clone().expect("a Reachable key");
        let held: u64 = ranges.iter().map(|r| r[1]).sum();
        assert_eq!(ranges.len(), 2, "{ranges:?}");
        assert!(held <= (12 << 20) + 4096, "{ranges:?}");
        assert!(rec.memory_size.unwrap() >= held + (4 << 20));
        let (stdout, _) = text(&reprise(&["inspect", s(c)]));
        assert!(stdout.contains("reachable-only"), "{stdout}");
        let out = reprise_env(&["replay", "--verify", s(c)], &[(k, v.to_str().unwrap())]);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
        assert!(stdout.contains("verification: PASS"), "{stdout}");
    }
}

/// A caller that frees memory (the interposer) says what is live: a stale
/// pointer into a freed block does not hold it.
#[test]
fn a_stale_pointer_into_a_freed_allocation_holds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let n = 256usize;
    let mut rec = Recorder::new(HostExecutor::new().unwrap(), 0, config(dir.path(), true)).unwrap();
    let bytes = (n * 4) as u64;
    let (live, freed) = (
        rec.alloc(bytes, 256).unwrap(),
        rec.alloc(bytes, 256).unwrap(),
    );
    let table = rec.alloc(16, 256).unwrap();
    let out = rec.alloc(bytes, 256).unwrap();
    rec.upload(live, &floats(&field(n, 0.0))).unwrap();
    let names: Vec<u8> = [live, freed].iter().flat_map(|p| p.to_le_bytes()).collect();
    rec.upload(table, &names).unwrap();
    rec.set_live_allocations([(live, bytes), (table, 16), (out, bytes)]);
    let image = rec.load_image(REACH).unwrap();
    let k = rec.kernel(image, "gather").unwrap();
    let args = Args::new().ptr(table).scalar(1).ptr(out).scalar(n as u64);
    let written = reprise::block_on(async {
        rec.launch(&k, geometry(1, 1), &args).await.unwrap();
        rec.finish().await.unwrap()
    });
    let r = record_of(&written[0]);
    let base = r.region_base.unwrap();
    let ranges = r.reachable.clone().unwrap();
    let holds = |addr: u64| {
        ranges
            .iter()
            .any(|g| g[0] <= addr - base && addr - base < g[0] + g[1])
    };
    assert!(holds(live) && holds(table) && holds(out), "{ranges:?}");
    assert!(!holds(freed), "{ranges:?}");
    assert_exit(&reprise(&["replay", "--verify", s(&written[0])]), 0);
}
