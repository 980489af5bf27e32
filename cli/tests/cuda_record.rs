//! What `reprise record` does with the parts of the driver API beyond plain
//! launches, on the simulated driver: `features.c` (pitched, managed and
//! stream-ordered memory, `cuMemGetAddressRange`, a stream capture launched
//! as a graph, cooperative and cluster launches), the `--mode sync`
//! schedule, a region larger than the device (mapped only as it is used),
//! and programs killed at random points of their run.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::programs::*;
use common::text;

/// The simulator and the interposer are there (else the test skips, after
/// saying why).
fn ready() -> bool {
    matches!(setup(), Some(Target::Simulated)) && interposer().is_some()
}

fn replay(capture: &Path) -> std::process::Output {
    let (k, v) = sim_env();
    common::reprise_env(
        &["replay", "--verify", common::s(capture)],
        &[(k, v.to_str().unwrap())],
    )
}

/// Every capture replays and verifies, each in a process of its own.
fn all_replay(captures: &[std::path::PathBuf]) {
    for c in captures {
        let out = replay(c);
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {stdout}{stderr}",
            c.display()
        );
        assert!(
            stdout.contains("verification: PASS"),
            "{}: {stdout}",
            c.display()
        );
    }
}

fn inspect_json(capture: &Path) -> serde_json::Value {
    let out = common::reprise(&["inspect", "--json", common::s(capture)]);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{}: {e}: {}", capture.display(), text(&out).1))
}

/// The program computes what it computes without reprise (its own checks
/// of every buffer, `cuMemGetAddressRange` on region memory included, pass
/// under the interposer); its five plain launches are recorded and the
/// rest counted by kind; the launch on managed memory is marked, and every
/// unmarked capture replays.
#[test]
fn the_features_program_records_what_can_be_recorded_and_counts_the_rest() {
    if !ready() {
        return;
    }
    let program = build_program("features");
    let plain = run(&Target::Simulated, &program, &["3"]);
    let dir = tempfile::tempdir().unwrap();
    let out = record(&program, dir.path(), &[], &["3"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert_eq!(stdout, text(&plain).0, "{stderr}");
    assert!(
        stderr.contains(
            "reprise record: not recorded: 1 during stream capture, 2 graph launches, \
             1 cooperative, 1 with clusters"
        ),
        "{stderr}"
    );
    // The launch on managed memory holds that memory: not marked.
    assert!(!stderr.contains("recorded with a mark"), "{stderr}");
    assert!(
        !stderr.contains("reprise: recorded"),
        "one summary: {stderr}"
    );
    let captures = descriptors(dir.path());
    assert_eq!(captures.len(), 5, "{stderr}");
    let (mut marked, mut managed) = (0, 0);
    for c in &captures {
        let info = inspect_json(c);
        let notes = info["notes"].as_array().unwrap();
        let outside = notes
            .iter()
            .filter(|n| n.as_str().unwrap().contains("outside the recording region"))
            .count();
        let json = std::fs::read_to_string(c).unwrap();
        assert_eq!(outside > 0, json.contains("\"ArgsOutside\""), "{json}");
        let beyond = json.contains("\"Class\":\"managed\"");
        managed += usize::from(beyond);
        let out = replay(c);
        let (stdout, stderr) = text(&out);
        if outside > 0 {
            marked += 1;
            assert!(
                stderr.contains("warning: ") && stderr.contains("outside the recording region"),
                "{stderr}"
            );
        } else {
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}: {stdout}{stderr}",
                c.display()
            );
            assert!(stdout.contains("verification: PASS"), "{stdout}");
            // Managed memory the simulated driver will not place at its
            // address is host memory the kernel reads over the bus: said.
            let warnings = stderr.lines().filter(|l| l.contains("warning")).count();
            let route = stderr
                .lines()
                .filter(|l| l.contains("warning") && l.contains("host"))
                .count();
            assert_eq!(warnings, if beyond { route } else { 0 }, "{stderr}");
        }
    }
    assert_eq!(marked, 0, "nothing is marked, managed memory included");
    // The launch on it holds it, and launches after it too (a pointer
    // kept in memory may reach it).
    assert!(managed >= 1, "the launch on managed memory holds it");
}

#[test]
fn the_sync_schedule_records_captures_that_replay() {
    if !ready() {
        return;
    }
    let program = build_program("linked");
    let dir = tempfile::tempdir().unwrap();
    let out = record(&program, dir.path(), &["--mode", "sync"], &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(stdout.lines().collect::<Vec<_>>(), [expected_result()]);
    let captures = descriptors(dir.path());
    assert_eq!(captures.len(), 3, "{stderr}");
    all_replay(&captures);
}

#[test]
fn recording_options_and_variables_say_what_is_wrong() {
    if !ready() {
        return;
    }
    let program = build_program("linked");
    let dir = tempfile::tempdir().unwrap();
    // The command's own option, checked before the program runs.
    let out = record(&program, dir.path(), &["--region-size", "bogus"], &[]);
    assert_eq!(out.status.code(), Some(2), "{:?}", text(&out));
    assert!(text(&out).1.contains("--region-size"), "{:?}", text(&out));
    assert!(descriptors(dir.path()).is_empty());
    // A misspelled variable is named on stderr by the interposer (the
    // library's log has no logger there), and an empty value is the
    // default, for every variable: the output is still saved.
    let out = record_env(
        &program,
        dir.path(),
        &["--format", "raw"],
        &[],
        &[
            ("REPRISE_RECORD_OUTPT", "0"),
            ("REPRISE_RECORD_OUTPUT", ""),
            ("REPRISE_RECORD_MODE", ""),
        ],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("reprise: ignoring REPRISE_RECORD_OUTPT"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("ignoring REPRISE_RECORD_SUMMARY"),
        "{stderr}"
    );
    let captures = descriptors(dir.path());
    assert_eq!(captures.len(), 3, "{stderr}");
    for c in &captures {
        let rec = reprise::core::KernelRecord::from_json(&std::fs::read(c).unwrap()).unwrap();
        assert!(
            reprise_std::CapturePaths::new(c, rec.generation)
                .output
                .exists(),
            "{}",
            c.display()
        );
    }
}

/// The simulated device has 80 GiB: a 100 GiB region is address space
/// only, with memory mapped as the program's allocations reach it. (Mapped
/// whole, the driver would refuse it and recording would stop.)
#[test]
fn a_region_larger_than_the_device_is_mapped_as_it_is_used() {
    if !ready() {
        return;
    }
    let program = build_program("linked");
    let dir = tempfile::tempdir().unwrap();
    let out = record(&program, dir.path(), &["--region-size", "100G"], &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(!stderr.contains("recording stopped"), "{stderr}");
    let captures = descriptors(dir.path());
    assert_eq!(captures.len(), 3, "{stderr}");
    let info = inspect_json(&captures[0]);
    assert_eq!(info["region"]["reserved"], 100u64 << 30);
    let snapshot = info["region"]["snapshot_bytes"].as_u64().unwrap();
    assert!(snapshot < 1 << 20, "{snapshot}");
}

/// A program killed (SIGKILL) anywhere in its run, recording included,
/// leaves only whole captures and orphaned temporary files in the
/// directory: `reprise list` finds nothing broken or incomplete.
#[test]
fn a_program_killed_mid_run_leaves_only_whole_captures() {
    if !ready() {
        return;
    }
    let program = build_program("linked");
    let lib = interposer().unwrap();
    let (k, v) = sim_env();
    // How long a whole run takes here, to spread the kills over it.
    let started = std::time::Instant::now();
    let scratch = tempfile::tempdir().unwrap();
    let whole = Command::new(&program)
        .arg(saxpy_ptx())
        .env(k, &v)
        .env("LD_PRELOAD", &lib)
        .env("REPRISE_RECORD", "1")
        .env("REPRISE_RECORD_DIR", scratch.path())
        .output()
        .unwrap();
    assert!(whole.status.success(), "{:?}", text(&whole));
    let span = started.elapsed();
    let mut killed = 0;
    for i in 0..12u32 {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(&program)
            .arg(saxpy_ptx())
            .env(k, &v)
            .env("LD_PRELOAD", &lib)
            .env("REPRISE_RECORD", "1")
            .env("REPRISE_RECORD_DIR", dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(span.mul_f64(f64::from(i) / 12.0) + Duration::from_millis(1));
        let _ = child.kill();
        let status = child.wait().unwrap();
        if !status.success() {
            killed += 1;
        }
        let out = common::reprise(&["list", common::s(dir.path())]);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "kill {i}: {stdout}{stderr}");
        assert!(!stdout.contains("BROKEN"), "kill {i}: {stdout}");
        all_replay(&descriptors(dir.path()));
    }
    assert!(killed > 0, "no run was killed before it ended");
}

/// A driver before CUDA 12.4 cannot tell parameter sizes
/// (`cuFuncGetParamInfo`): a PTX image's `.entry` declaration does.
#[test]
fn without_param_info_from_the_driver_the_ptx_sizes_the_arguments() {
    if !ready() {
        return;
    }
    let program = build_program("linked");
    let dir = tempfile::tempdir().unwrap();
    let out = record_env(
        &program,
        dir.path(),
        &[],
        &[],
        &[("REPRISE_SIM_CUDA_PARAM_INFO", "0")],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(!stderr.contains("not recorded"), "{stderr}");
    let captures = descriptors(dir.path());
    assert_eq!(captures.len(), 3, "{stderr}");
    let json = std::fs::read_to_string(&captures[0]).unwrap();
    assert!(json.contains("\"ArgSizes\":[4,8,8,4]"), "{json}");
    all_replay(&captures);
}

/// Kernels the program never names (`cuLibraryEnumerateKernels`) are
/// known by asking the driver their name and module at their first
/// launch, as a `CUfunction` or as the `CUkernel` itself; a library loaded
/// before any context is current (CUDA 12's context-independent loading)
/// is known once a context has its module.
#[test]
fn kernels_the_program_never_names_are_recorded() {
    if !ready() {
        return;
    }
    let program = build_program("library");
    for env in [
        [("LIBRARY_ENUMERATE", "1"), ("LIBRARY_BEFORE_CONTEXT", "0")],
        [("LIBRARY_ENUMERATE", "0"), ("LIBRARY_BEFORE_CONTEXT", "1")],
        [("LIBRARY_ENUMERATE", "1"), ("LIBRARY_BEFORE_CONTEXT", "1")],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = record_env(&program, dir.path(), &[], &[], &env);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{env:?}: {stdout}{stderr}");
        assert_eq!(stdout.lines().collect::<Vec<_>>(), [expected_result()]);
        assert!(!stderr.contains("not recorded"), "{env:?}: {stderr}");
        let captures = descriptors(dir.path());
        assert_eq!(captures.len(), 3, "{env:?}: {stderr}");
        all_replay(&captures);
    }
}

/// Threads that launch at the same time, each on its own stream: every
/// launch is recorded whole (on its own stream), the program's results are
/// its own, and every capture replays.
#[test]
fn launches_from_many_threads_at_once_are_each_recorded() {
    if !ready() {
        return;
    }
    let program = build_program("threads");
    let plain = run(&Target::Simulated, &program, &[]);
    assert_eq!(plain.status.code(), Some(0), "{:?}", text(&plain));
    let dir = tempfile::tempdir().unwrap();
    let out = record(&program, dir.path(), &[], &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(stdout, text(&plain).0, "{stderr}");
    let captures = descriptors(dir.path());
    assert_eq!(captures.len(), 12, "{stderr}");
    all_replay(&captures);
}

/// A preloaded library that wraps a function with `dlsym(RTLD_NEXT, ...)`
/// gets the next definition past itself, as without reprise (the
/// interposer's `dlsym` must not make the search start past itself).
#[test]
fn rtld_next_lookups_of_other_libraries_find_what_they_would_without_reprise() {
    if !ready() {
        return;
    }
    let wrap = build_program("wrap.so");
    let (status, stdout, stderr) = preloaded(&build_program("hello"), &[], &[&wrap]);
    assert_eq!(status, Some(0), "{stdout}{stderr}");
    assert_eq!(stdout, "wrapped: hello\n", "{stderr}");
}

/// `program ARGS` on the simulator with the interposer preloaded first,
/// then `more` (recording off): its status, stdout and stderr.
fn preloaded(program: &Path, args: &[&Path], more: &[&Path]) -> (Option<i32>, String, String) {
    let mut preload = interposer().unwrap().into_os_string();
    for lib in more {
        preload.push(":");
        preload.push(lib);
    }
    let (k, v) = sim_env();
    let out = Command::new(program)
        .args(args)
        .env(k, &v)
        .env("LD_PRELOAD", &preload)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    (out.status.code(), stdout, stderr)
}

/// A plugin opened with `RTLD_LOCAL` finds its own symbols through
/// `dlsym(RTLD_DEFAULT, ...)`, as without reprise (the C library searches
/// the caller's scope too, so the interposer's `dlsym` passes the caller's
/// return address on).
#[test]
fn rtld_default_lookups_search_the_callers_scope() {
    if !ready() {
        return;
    }
    let plugin = build_program("plugin.so");
    let (status, stdout, stderr) = preloaded(&build_program("plugins"), &[&plugin], &[]);
    assert_eq!(status, Some(0), "{stdout}{stderr}");
    assert_eq!(stdout, "found\n", "{stderr}");
}

/// Another interposer of the driver preloaded after reprise's reaches the
/// driver's functions through `dlsym` on the driver's handle, not
/// reprise's hooks (which would call it back for ever), and both work.
#[test]
fn another_driver_interposer_after_reprise_reaches_the_driver() {
    if !ready() {
        return;
    }
    let program = build_program("linked");
    let shim = build_program("shim.so");
    let dir = tempfile::tempdir().unwrap();
    let out = record_env(
        &program,
        dir.path(),
        &[],
        &[],
        &[("LD_PRELOAD", common::s(&shim))],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(stdout.lines().collect::<Vec<_>>(), [expected_result()]);
    // The program's call, and the recorder's own lookup of the kernel
    // (which goes through the shim too).
    let calls: Vec<u32> = stderr
        .lines()
        .filter_map(|l| {
            l.strip_prefix("shim: ")?
                .strip_suffix(" calls")?
                .parse()
                .ok()
        })
        .collect();
    assert!(calls.iter().any(|&n| n >= 1), "{stderr}");
    assert!(!stderr.contains("a loop"), "{stderr}");
    assert_eq!(descriptors(dir.path()).len(), 3, "{stderr}");
}

/// A child the program forks and that exits through `exit` runs the exit
/// handlers it inherited without the recorder's threads: it passes
/// through, neither hangs nor writes the parent's summary, and the parent
/// records on.
#[test]
fn a_forked_child_exits_without_recording() {
    if !ready() {
        return;
    }
    let program = build_program("forks");
    let dir = tempfile::tempdir().unwrap();
    // Preloaded by hand, each process that records says so at exit.
    let (k, v) = sim_env();
    let out = common::output_within(
        std::process::Command::new(&program)
            .arg(saxpy_ptx())
            .env(k, v)
            .env("LD_PRELOAD", interposer().unwrap())
            .env("REPRISE_RECORD", "1")
            .env("REPRISE_RECORD_DIR", dir.path()),
        common::RUN_LIMIT,
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(stdout.lines().collect::<Vec<_>>(), [expected_result()]);
    assert_eq!(
        stderr.matches("reprise: recorded").count(),
        1,
        "one summary, the parent's: {stderr}"
    );
    assert_eq!(descriptors(dir.path()).len(), 3, "{stderr}");
}

/// A driver copy the recording makes fails, at each point of the first
/// recorded launch in turn (its snapshots before the kernel: the region and
/// each global; then its snapshot after). Before the kernel is queued, that
/// launch goes to the driver and the later ones are recorded; after it,
/// recording stops and the kernel is not launched a second time (the
/// program's saxpy accumulates, so a second run, or a lost one, would change
/// its result). Copies already queued keep their buffers.
#[test]
fn a_recording_that_fails_never_runs_the_programs_kernel_twice() {
    if !ready() {
        return;
    }
    let program = build_program("linked");
    let (mut before, mut after) = (0, 0);
    for skip in 0..6 {
        let dir = tempfile::tempdir().unwrap();
        let fail = format!("cuMemcpyDtoHAsync_v2:999:{skip}");
        let out = record_env(
            &program,
            dir.path(),
            &[],
            &[],
            // Copies finish late: buffers freed under queued copies show.
            &[
                ("REPRISE_SIM_CUDA_FAIL", &fail),
                ("REPRISE_SIM_CUDA_COPY_DELAY_US", "1000"),
            ],
        );
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{fail}: {stdout}{stderr}");
        assert_eq!(
            stdout.lines().collect::<Vec<_>>(),
            [expected_result()],
            "{fail}: {stderr}"
        );
        let captures = descriptors(dir.path()).len();
        if stderr.contains("recording stopped") {
            after += 1;
            assert_eq!(captures, 0, "{fail}: {stderr}");
        } else {
            before += 1;
            assert!(
                stderr.contains("1 whose recording failed"),
                "{fail}: {stderr}"
            );
            assert_eq!(captures, 2, "{fail}: {stderr}");
        }
    }
    assert!(before > 0 && after > 0, "before {before}, after {after}");
}

/// The recorded launch's stream waits (a host function) for another thread
/// to allocate: the other thread's allocation does not wait for the
/// recording for ever, the program finishes with its own result, and the
/// launch is recorded.
#[test]
fn a_stream_that_waits_for_another_thread_does_not_deadlock_the_recording() {
    if !ready() {
        return;
    }
    let program = build_program("waits");
    let plain = run(&Target::Simulated, &program, &[]);
    assert_eq!(plain.status.code(), Some(0), "{:?}", text(&plain));
    let dir = tempfile::tempdir().unwrap();
    let out = record(&program, dir.path(), &[], &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(stdout, text(&plain).0, "{stderr}");
    let captures = descriptors(dir.path());
    assert_eq!(captures.len(), 1, "{stderr}");
    all_replay(&captures);
}

/// `program ARGS` (after saxpy.ptx) on the simulator without reprise, with
/// `env` added.
fn plain(program: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(program);
    cmd.arg(saxpy_ptx()).args(args);
    let (k, v) = sim_env();
    cmd.env(k, v).envs(env.iter().copied());
    common::output_within(&mut cmd, common::RUN_LIMIT)
}

/// Records `program` with `env` (and `options`): its stdout and status
/// must be what they are without reprise, nothing may go unrecorded or
/// stop the recording, `captures` captures are written, each replays and
/// verifies, and each snapshot holds at least `snapshot_at_least` bytes.
fn records_as_without_reprise(
    program: &Path,
    options: &[&str],
    env: &[(&str, &str)],
    captures: usize,
    snapshot_at_least: u64,
) -> String {
    let alone = plain(program, &["3"], env);
    let (alone_out, alone_err) = text(&alone);
    assert_eq!(
        alone.status.code(),
        Some(3),
        "{env:?}: {alone_out}{alone_err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = record_env(program, dir.path(), options, &["3"], env);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{env:?}: {stdout}{stderr}");
    assert_eq!(stdout, alone_out, "{env:?}: {stderr}");
    for bad in ["not recorded", "recording stopped", "marked"] {
        assert!(!stderr.contains(bad), "{env:?}: {stderr}");
    }
    let found = descriptors(dir.path());
    assert_eq!(found.len(), captures, "{env:?}: {stderr}");
    for c in &found {
        let snapshot = inspect_json(c)["region"]["snapshot_bytes"]
            .as_u64()
            .unwrap();
        assert!(
            snapshot >= snapshot_at_least,
            "{env:?}: {snapshot} < {snapshot_at_least}"
        );
    }
    all_replay(&found);
    stderr
}

/// Allocations that outgrow what the region mapped first: the interposer
/// maps physical memory behind the region in chunks that grow
/// geometrically (the first as large as the first allocation, at least
/// 2 MiB; then at least double what is mapped), so each snapshot spans
/// two chunks (8 + 4 + 4 MiB: 8, then 8 more), three (3 x 6 MiB: 6, 6,
/// 12) or seven (allocations growing by half from 1 MiB: 2, 2, 4, 8, 16,
/// 32, 64 MiB), each mapped and made accessible on its own. A snapshot
/// copies them as one range, as the driver allows (the simulator refused
/// it once, and nothing was recorded). The program checks its buffers and
/// the patterns it wrote in every allocation with cuMemsetD32.
#[test]
fn allocations_spanning_many_chunks_are_recorded_and_replay() {
    if !ready() {
        return;
    }
    let program = build_program("chunks");
    for (chunks, mib) in [
        ("8192,4096,4096", 16),
        ("6144,6144,6144", 18),
        ("1024,1536,2304,3456,5184,7776,11664,17496,26244", 74),
    ] {
        let env = [("CHUNKS", chunks)];
        records_as_without_reprise(&program, &[], &env, 3, mib << 20);
    }
}

/// Three very large allocations (three chunks, the last twice the
/// second). The simulator backs device memory with host memory, and a
/// snapshot is copied whole into host memory and written out (twice, with
/// the output), so the test uses 3 x 96 MiB and records one launch;
/// `REPRISE_TEST_LARGE_MIB=448` runs the 3 x 448 MiB (about 4 GiB
/// of memory and a minute here), in a region of 2 GiB.
#[test]
fn three_very_large_allocations_are_recorded_and_replay() {
    if !ready() {
        return;
    }
    let mib: u64 = std::env::var("REPRISE_TEST_LARGE_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(96);
    let program = build_program("chunks");
    let kib = (mib << 10).to_string();
    let chunks = [kib.as_str(); 3].join(",");
    records_as_without_reprise(
        &program,
        &["--max", "1", "--region-size", "2G"],
        &[("CHUNKS", &chunks)],
        1,
        (3 * mib) << 20,
    );
}

/// Every module loader is recorded: `cuModuleLoad` of a file the program
/// wrote and removed before launching, `cuLibraryLoadFromFile`,
/// `cuModuleLoadDataEx` with JIT options, and an image linked with
/// `cuLinkComplete` (loaded with `cuModuleLoadData`, the link state
/// destroyed before the launches), each in a context the program created
/// and destroys at the end. None counts as a kernel of unknown image.
#[test]
fn every_module_loader_is_recorded() {
    if !ready() {
        return;
    }
    let program = build_program("loaders");
    for loader in ["file", "library-file", "jit", "link"] {
        let stderr = records_as_without_reprise(&program, &[], &[("LOADER", loader)], 3, 80_000);
        assert!(
            stderr.contains("reprise record: 3 launches recorded in"),
            "{loader}: {stderr}"
        );
    }
}

/// A launch the driver refuses (a block of 2048 threads, found before
/// anything is queued; 1 MiB of dynamic shared memory, found when the
/// launch itself is refused) is the program's own error: it gets the
/// driver's answer unchanged, nothing is said of it but a count in the
/// summary, and the good launches after it are recorded.
#[test]
fn a_launch_the_driver_refuses_is_the_programs_own_error() {
    if !ready() {
        return;
    }
    let program = build_program("refused");
    let alone = plain(&program, &[], &[]);
    let (alone_out, _) = text(&alone);
    assert!(
        alone_out.contains("refused 2048 threads: 1\nrefused 1 MiB shared: 1\n"),
        "{alone_out}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = record(&program, dir.path(), &[], &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(stdout, alone_out, "{stderr}");
    assert!(
        stderr.contains("reprise record: not recorded: 2 refused by the driver\n"),
        "{stderr}"
    );
    for said in ["a launch was not recorded", "failed", "recording stopped"] {
        assert!(!stderr.contains(said), "{stderr}");
    }
    let captures = descriptors(dir.path());
    assert_eq!(captures.len(), 3, "{stderr}");
    all_replay(&captures);
}
