//! Memory a kernel reaches beyond the recording region, in programs
//! written as real ones are: saxpy's y in managed memory, in page-locked
//! host memory mapped for the device, in a malloc'd buffer registered for
//! the device, and allocated from a memory pool, the host changing it
//! between the launches. Every capture holds those bytes (the pool's
//! allocation is the region's), `inspect` shows them by class, and each
//! capture replays and verifies against what its kernel saw; a capture
//! whose range no route can place is refused naming its class.

mod common;

use std::path::{Path, PathBuf};

use common::programs::*;
use common::*;

/// The simulator and the interposer are there (else the test skips, after
/// saying why).
fn ready() -> bool {
    matches!(setup(), Some(Target::Simulated)) && interposer().is_some()
}

/// `reprise record` of `beyond` in `mode` (with the simulator's `env`):
/// its three captures, recorded with no mark.
fn record_mode(dir: &Path, mode: &str, env: &[(&str, &str)]) -> Vec<PathBuf> {
    let program = build_program("beyond");
    let out = record_env(&program, dir, &[], &[mode], env);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{mode}: {stdout}{stderr}");
    assert!(stdout.starts_with("result "), "{stdout}");
    assert!(!stderr.contains("with a mark"), "{mode}: {stderr}");
    let captures = descriptors(dir);
    assert_eq!(captures.len(), 3, "{mode}: {stderr}");
    // Nothing left over: the extra files belong to their captures.
    let list = reprise(&["list", s(dir)]);
    assert_exit(&list, 0);
    let listed = text(&list).0;
    assert!(
        listed.contains("3 capture(s) (0 incomplete), 0 unreadable, 0 orphaned"),
        "{listed}"
    );
    captures
}

fn inspect(capture: &Path) -> serde_json::Value {
    let out = reprise(&["inspect", "--json", s(capture)]);
    assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `replay --verify` of `capture` on the simulator (with `env`).
fn replay(capture: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let (k, v) = sim_env();
    let mut all = vec![(k, v.to_str().unwrap())];
    all.extend_from_slice(env);
    reprise_env(&["replay", "--verify", s(capture)], &all)
}

/// Each capture of `mode` holds y as one extra range of `class` that its
/// argument 2 points into, and replays and verifies.
fn holds_and_verifies(mode: &str, class: &str) {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for c in record_mode(dir.path(), mode, &[]) {
        let v = inspect(&c);
        let ranges = v["extra_ranges"].as_array().unwrap();
        let y = v["arguments"][2]["value"].as_u64().unwrap();
        assert!(
            ranges.iter().any(|r| r["class"] == class
                && r["address"].as_u64().unwrap() <= y
                && y < r["address"].as_u64().unwrap() + r["bytes"].as_u64().unwrap()),
            "{mode}: {v}"
        );
        let text_out = text(&reprise(&["inspect", s(&c)])).0;
        assert!(text_out.contains(&format!("-> {class} ")), "{text_out}");
        for role in ["extra input", "extra output"] {
            assert!(
                text_out
                    .lines()
                    .any(|l| l.trim_start().starts_with(role) && l.contains("checksum ok")),
                "{text_out}"
            );
        }
        let out = replay(&c, &[]);
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {stdout}{stderr}",
            c.display()
        );
        assert!(stdout.contains("verification: PASS"), "{stdout}");
    }
}

#[test]
fn managed_memory_the_host_changes_between_launches_replays() {
    holds_and_verifies("managed", "managed");
}

#[test]
fn page_locked_host_memory_mapped_for_the_device_replays() {
    holds_and_verifies("hostalloc", "host");
}

#[test]
fn registered_host_memory_replays() {
    holds_and_verifies("register", "registered");
}

/// `cuMemAllocFromPoolAsync` is served from the region as
/// `cuMemAllocAsync` is: y is in the region and the captures hold no
/// extra range.
#[test]
fn a_pool_allocation_is_the_regions() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for c in record_mode(dir.path(), "pool", &[]) {
        let v = inspect(&c);
        assert_eq!(v["extra_ranges"].as_array().unwrap().len(), 0, "{v}");
        assert_eq!(v["arguments"][2]["in_region"], true, "{v}");
        let out = replay(&c, &[]);
        assert_exit(&out, 0);
        assert!(text(&out).0.contains("verification: PASS"));
    }
}

/// On a driver that keeps reservations in its own pool (as driver 580
/// does), host memory's addresses cannot be reserved as device memory:
/// the replay puts page-locked host memory there, says so, and verifies.
#[test]
fn host_memory_the_driver_will_not_reserve_is_mapped_from_the_host() {
    if !ready() {
        return;
    }
    let pool = [("REPRISE_SIM_CUDA_HINTS", "pool")];
    let dir = tempfile::tempdir().unwrap();
    let captures = record_mode(dir.path(), "hostalloc", &pool);
    let out = replay(&captures[0], &pool);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("verification: PASS"), "{stdout}");
    assert!(
        stderr.contains("page-locked host memory mapped for the device"),
        "{stderr}"
    );
    // The replay's own output says which route ran.
    assert!(
        stdout.contains("placed at their address as page-locked host memory"),
        "{stdout}"
    );
}

/// A range whose address is taken on the replaying machine (here: moved
/// into the replay's own region) is refused before anything runs, naming
/// its class and address, with exit 2.
#[test]
fn a_range_no_route_places_is_refused_by_class() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let c = record_mode(dir.path(), "managed", &[]).remove(0);
    let json = std::fs::read_to_string(&c).unwrap();
    let d: serde_json::Value = serde_json::from_str(&json).unwrap();
    let base = d["VAllocAddr"].as_u64().unwrap();
    let addr = d["ExtraRanges"][0]["Addr"].as_u64().unwrap();
    let moved = json.replace(&format!("\"Addr\":{addr},"), &format!("\"Addr\":{base},"));
    assert_ne!(moved, json);
    std::fs::write(&c, moved).unwrap();
    let out = replay(&c, &[]);
    let want = format!("managed memory at {base:#x}: no route places it at its address");
    assert_error(&out, &[&want]);
    assert!(!text(&out).1.contains("fault"), "{}", text(&out).1);
}

/// Verification covers memory beyond the region: one team of 256 threads
/// leaves most of y, which is managed memory, as it was, and the replay
/// fails there, naming its addresses, while the region itself matches.
#[test]
fn a_difference_in_managed_memory_fails_verification() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let c = record_mode(dir.path(), "managed", &[]).remove(0);
    let y = inspect(&c)["extra_ranges"][0]["address"].as_u64().unwrap();
    let (k, v) = sim_env();
    let out = reprise_env(
        &["replay", "--verify", "--num-teams", "1", s(&c)],
        &[(k, v.to_str().unwrap())],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("verification: FAIL"), "{stdout}");
    // y[256] is the first value one team leaves alone.
    let first = stdout
        .split("first difference at ")
        .nth(1)
        .and_then(|t| t.split("(address 0x").nth(1))
        .and_then(|t| u64::from_str_radix(t.split(')').next()?, 16).ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!((y + 256 * 4..y + 257 * 4).contains(&first), "{stdout}");
    assert!(
        stderr.contains(&format!("managed memory at {y:#x}:")),
        "{stderr}"
    );
}

/// Where the driver reserves the recorded address (here a 2 MiB-aligned
/// one the capture is moved to, with the argument that points there),
/// the range is device memory at that address: the first route, said at
/// `info`, and the capture verifies.
#[test]
fn a_range_the_driver_reserves_is_device_memory() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let c = record_mode(dir.path(), "managed", &[]).remove(0);
    let mut d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&c).unwrap()).unwrap();
    let old = d["ExtraRanges"][0]["Addr"].as_u64().unwrap();
    assert_eq!(d["ArgPtrs"][2].as_u64(), Some(old), "{d}");
    let moved: u64 = 0x2000_0000_0000;
    d["ExtraRanges"][0]["Addr"] = moved.into();
    d["ArgPtrs"][2] = moved.into();
    std::fs::write(&c, serde_json::to_vec(&d).unwrap()).unwrap();
    let out = replay(&c, &[("RUST_LOG", "reprise_cuda=info")]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("verification: PASS"), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "{moved:#x}: 2097152 bytes of device memory at the address"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("page-locked host memory"), "{stderr}");
    assert!(
        stdout.lines().any(|l| l.starts_with(&format!(
            "beyond the region: managed memory at {moved:#x}: "
        )) && l.ends_with("placed at their address as device memory")),
        "{stdout}"
    );
}

/// `export` keeps a capture's memory beyond the region in reprise's own
/// format (the export replays and verifies) and refuses LLVM's, which
/// have no place for it, naming the class.
#[test]
fn export_keeps_memory_beyond_the_region_or_refuses() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let c = record_mode(dir.path(), "hostalloc", &[]).remove(0);
    let out_dir = tempfile::tempdir().unwrap();
    let out = reprise(&["export", "--dir", s(out_dir.path()), s(&c)]);
    assert_exit(&out, 0);
    let exported = descriptors(out_dir.path()).remove(0);
    let out = replay(&exported, &[]);
    assert_exit(&out, 0);
    assert!(text(&out).0.contains("verification: PASS"));
    let llvm = tempfile::tempdir().unwrap();
    let out = reprise(&[
        "export",
        "--format",
        "llvm-current",
        "--dir",
        s(llvm.path()),
        s(&c),
    ]);
    assert_error(&out, &["page-locked host memory at", "LLVM's formats"]);
    assert!(descriptors(llvm.path()).is_empty());
}
