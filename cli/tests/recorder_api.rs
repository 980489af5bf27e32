//! The recorder's API as an application meets it: what counts toward the
//! record filters, what touches the file system, what the configuration's
//! errors say, handles of one recorder given to another, copies outside the
//! region, the facade's re-exports, and the quickstart example.

mod common;

use std::path::Path;

use common::*;
use reprise::{
    Args, HostError, HostExecutor, ImageId, Kernel, LaunchReport, Mode, RecordConfig, Recorder,
    WriterKind,
};

fn config(dir: &Path) -> RecordConfig {
    RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20)
        .fsync(false)
}

fn recorder(config: RecordConfig) -> Recorder<HostExecutor> {
    Recorder::new(HostExecutor::new().unwrap(), 0, config).unwrap()
}

fn config_from(vars: &[(&str, &str)]) -> reprise::Result<RecordConfig> {
    RecordConfig::from_vars(|k| {
        vars.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    })
}

/// Whether `err` carries a host kernel fault somewhere in its sources.
fn is_kernel_fault(err: &reprise::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(HostError::KernelFault(_)) = e.downcast_ref::<HostError>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// An axpy recorder: the kernel and the arguments of a valid launch and of
/// one that faults (its `x` points at an unmapped page).
struct Axpy {
    rec: Recorder<HostExecutor>,
    kernel: Kernel<HostExecutor>,
    good: Args,
    faulting: Args,
}

fn axpy(config: RecordConfig) -> Axpy {
    let mut rec = recorder(config);
    let n = 16u64;
    let x = rec.alloc(n * 4, 64).unwrap();
    let y = rec.alloc(n * 4, 64).unwrap();
    let calls = rec.alloc(8, 8).unwrap();
    let image = rec.load_image(AXPY).unwrap();
    let kernel = rec.kernel(image, "axpy").unwrap();
    Axpy {
        rec,
        kernel,
        good: Args::new().ptr(x).ptr(y).scalar(n).ptr(calls),
        faulting: Args::new().ptr(0x1000).ptr(y).scalar(n).ptr(calls),
    }
}

#[test]
fn a_launch_that_faults_counts_toward_neither_max_nor_skip() {
    for writer in [WriterKind::Inline, WriterKind::Background { depth: 2 }] {
        let dir = tempfile::tempdir().unwrap();
        let mut a = axpy(config(dir.path()).max(1).writer(writer));
        let written = reprise::block_on(async {
            let err = a
                .rec
                .launch(&a.kernel, geometry(1, 1), &a.faulting)
                .await
                .expect_err("the kernel faults");
            assert!(is_kernel_fault(&err), "{err}");
            let report = a
                .rec
                .launch(&a.kernel, geometry(1, 1), &a.good)
                .await
                .unwrap();
            assert!(
                report.recorded,
                "the fault did not use up REPRISE_RECORD_MAX=1"
            );
            assert!(report.seq.is_some());
            let third = a
                .rec
                .launch(&a.kernel, geometry(1, 1), &a.good)
                .await
                .unwrap();
            assert!(!third.recorded, "at most one");
            a.rec.finish().await.unwrap()
        });
        assert_eq!(written.len(), 1, "{writer:?}");
    }

    // Skip the first launch, record the next: the one after a fault.
    let dir = tempfile::tempdir().unwrap();
    let mut a = axpy(config(dir.path()).skip(1).max(1));
    let reports = reprise::block_on(async {
        let skipped = a.rec.launch(&a.kernel, geometry(1, 1), &a.good).await;
        a.rec.synchronize().await.unwrap();
        let faulted = a.rec.launch(&a.kernel, geometry(1, 1), &a.faulting).await;
        let recorded = a.rec.launch(&a.kernel, geometry(1, 1), &a.good).await;
        (skipped.unwrap(), faulted.is_err(), recorded.unwrap())
    });
    assert!(!reports.0.recorded);
    assert!(reports.1, "the second launch faults");
    assert!(reports.2.recorded, "the third launch is the first recorded");
    let written = reprise::block_on(a.rec.finish()).unwrap();
    assert_eq!(written.len(), 1);
    // The capture is the good launch, and replays.
    assert_exit(&reprise(&["replay", "--verify", s(&written[0])]), 0);
}

#[test]
fn with_recording_off_the_file_system_is_not_touched() {
    // A directory that cannot be one, with recording off: no error.
    let off = config_from(&[
        ("REPRISE_RECORD", "0"),
        ("REPRISE_RECORD_DIR", "/etc/passwd"),
    ])
    .unwrap();
    let mut rec = recorder(off);
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("not-yet");
    // Recording unset: the directory is not created, and launches run.
    let unset = config_from(&[("REPRISE_RECORD_DIR", s(&missing))]).unwrap();
    let mut a = axpy(unset);
    let report = reprise::block_on(a.rec.launch(&a.kernel, geometry(1, 1), &a.good)).unwrap();
    assert_eq!(
        report,
        LaunchReport {
            recorded: false,
            seq: None
        }
    );
    assert!(reprise::block_on(a.rec.finish()).unwrap().is_empty());
    assert!(reprise::block_on(rec.finish()).unwrap().is_empty());
    assert!(!missing.exists(), "{} was created", missing.display());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn with_recording_on_an_unusable_directory_is_an_error_up_front() {
    let err = Recorder::new(
        HostExecutor::new().unwrap(),
        0,
        config(Path::new("/etc/passwd")),
    )
    .err()
    .expect("a file is no capture directory");
    assert!(err.to_string().contains("/etc/passwd"), "{err}");

    // A directory that exists but takes no files (even for root).
    let err = Recorder::new(HostExecutor::new().unwrap(), 0, config(Path::new("/proc")))
        .err()
        .expect("no captures can be written to /proc");
    let text = err.to_string();
    assert!(text.starts_with("/proc: "), "{text}");
    assert!(text.contains("capture directory"), "{text}");

    // A writable one is created, and the check leaves nothing behind.
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("a/b");
    let _rec = recorder(config(&fresh));
    assert!(fresh.is_dir());
    assert_eq!(std::fs::read_dir(&fresh).unwrap().count(), 0);
}

#[test]
fn a_probe_file_left_by_a_crash_does_not_stop_the_next_recorder() {
    // A crash between the directory check's create and remove leaves its
    // probe; PIDs repeat (in containers, always), so the next run meets it.
    let dir = tempfile::tempdir().unwrap();
    let pid = std::process::id();
    for id in 0..1000 {
        let leftover = dir.path().join(format!(".reprise-tmp.probe.{pid}.{id}.0"));
        std::fs::write(leftover, b"").unwrap();
    }
    let _rec = recorder(config(dir.path()));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1000);
}

#[test]
fn region_size_errors_say_where_the_size_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let d = s(dir.path());
    // 200 TiB does not fit in a 128 TiB address space.
    let huge = config_from(&[
        ("REPRISE_RECORD", "1"),
        ("REPRISE_RECORD_DIR", d),
        ("REPRISE_RECORD_MEMSIZE", "200T"),
    ])
    .unwrap();
    let err = Recorder::new(HostExecutor::new().unwrap(), 0, huge)
        .err()
        .expect("200 TiB cannot be reserved");
    let text = err.to_string();
    assert!(text.contains("REPRISE_RECORD_MEMSIZE=200T"), "{text}");
    assert!(text.contains("200 TiB"), "{text}");

    let coded = config(dir.path()).region_size(200 << 40);
    let err = Recorder::new(HostExecutor::new().unwrap(), 0, coded)
        .err()
        .expect("200 TiB cannot be reserved");
    let text = err.to_string();
    assert!(text.contains("RecordConfig::region_size"), "{text}");
    assert!(!text.contains("REPRISE_RECORD_MEMSIZE="), "{text}");

    // An empty region is refused, as the variable refuses 0.
    let err = Recorder::new(
        HostExecutor::new().unwrap(),
        0,
        config(dir.path()).region_size(0),
    )
    .err()
    .expect("an empty region");
    assert!(
        matches!(&err, reprise::Error::Config { var, .. } if var.contains("region_size")),
        "{err}"
    );

    // Running out names both ways of raising the size.
    let rec = recorder(config(dir.path()).region_size(1 << 20));
    let text = rec.alloc(2 << 20, 16).unwrap_err().to_string();
    assert!(
        text.contains("raise the region size (RecordConfig::region_size or REPRISE_RECORD_MEMSIZE"),
        "{text}"
    );
    let env = config_from(&[
        ("REPRISE_RECORD", "1"),
        ("REPRISE_RECORD_DIR", d),
        ("REPRISE_RECORD_MEMSIZE", "1M"),
    ])
    .unwrap();
    let text = recorder(env).alloc(2 << 20, 16).unwrap_err().to_string();
    assert!(text.contains("REPRISE_RECORD_MEMSIZE=1M"), "{text}");
}

#[test]
fn handles_of_another_recorder_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = axpy(config(dir.path()));
    let mut other = recorder(config(dir.path()));
    let err = reprise::block_on(other.launch(&a.kernel, geometry(1, 1), &a.good))
        .expect_err("another recorder's kernel");
    assert!(
        matches!(&err, reprise::Error::ForeignHandle { handle: reprise_std::Handle::Kernel(k) } if k == "axpy"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("this kernel was loaded by another Recorder"),
        "{err}"
    );

    // With an image of its own at the same index: still refused, not
    // launched or recorded with the wrong image.
    let own: ImageId = other.load_image(MANY_ARGS).unwrap();
    let err = reprise::block_on(other.launch(&a.kernel, geometry(1, 1), &a.good))
        .expect_err("another recorder's kernel");
    assert!(err.to_string().contains("another Recorder"), "{err}");
    let theirs = a.rec.load_image(AXPY).unwrap();
    assert_ne!(own, theirs);
    for err in [
        other.kernel(theirs, "axpy").err().unwrap(),
        other.global(theirs, "alpha").err().unwrap(),
    ] {
        assert!(err.to_string().contains("another Recorder"), "{err}");
    }
    assert!(other.kernel(own, "many_args").is_ok());
    assert!(reprise::block_on(other.finish()).unwrap().is_empty());
    assert!(reprise::block_on(a.rec.finish()).unwrap().is_empty());
}

#[test]
fn copies_outside_the_region_are_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let mut rec = recorder(config(dir.path()));
    let base = rec.region().base();
    let end = base + rec.region().capacity();
    let x = rec.alloc(16, 16).unwrap();

    let err = rec.upload(0, &[1, 2, 3, 4]).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(
            err,
            reprise::Error::CopyOutOfRange {
                copy: reprise_std::CopyKind::Upload,
                addr: 0,
                len: 4,
                ..
            }
        ),
        "{text}"
    );
    assert!(text.contains("upload of 4 bytes at 0x0..0x4"), "{text}");
    assert!(text.contains(&format!("{base:#x}..{end:#x}")), "{text}");
    // Straddling the end, and wrapping around the address space.
    assert!(rec.upload(end - 2, &[0; 4]).is_err());
    assert!(rec.upload(u64::MAX - 1, &[0; 4]).is_err());

    // A refused upload leaves nothing queued: the next one arrives.
    rec.upload(x, &[7; 16]).unwrap();
    let back = reprise::block_on(rec.download(x, 16)).unwrap();
    assert_eq!(back, [7; 16]);

    // Globals of loaded images are fine to copy to and from.
    let image = rec.load_image(AXPY).unwrap();
    let (alpha, size) = rec.global(image, "alpha").unwrap().unwrap();
    rec.upload(alpha, &2.5f32.to_le_bytes()).unwrap();
    let back = reprise::block_on(rec.download(alpha, size as usize)).unwrap();
    assert_eq!(back, 2.5f32.to_le_bytes());

    // A download that cannot fit is an error, not an overflow.
    for (addr, len) in [
        (base, usize::MAX),
        (base, (end - base + 1) as usize),
        (0, 8),
    ] {
        let err = reprise::block_on(rec.download(addr, len)).unwrap_err();
        assert!(err.to_string().starts_with("download of "), "{err}");
    }
    assert!(reprise::block_on(rec.finish()).unwrap().is_empty());
}

/// Compiles only if the facade re-exports what a recording application and
/// a fault handler name.
#[test]
fn the_facade_reexports_what_recording_needs() {
    fn launch_one(
        rec: &mut reprise::Recorder<reprise::HostExecutor>,
        kernel: &reprise::Kernel<reprise::HostExecutor>,
        args: &reprise::Args,
    ) -> reprise::Result<reprise::LaunchReport> {
        reprise::block_on(rec.launch(kernel, geometry(1, 1), args))
    }
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path())
        .writer(reprise::WriterKind::Inline)
        .mode(reprise::Mode::Sync);
    assert_eq!(config.mode, Mode::Sync);
    let mut a = axpy(config);
    let image: reprise::ImageId = a.rec.load_image(AXPY).unwrap();
    let kernel = a.rec.kernel(image, "axpy").unwrap();
    let report = launch_one(&mut a.rec, &kernel, &a.good).unwrap();
    assert!(report.recorded);
    let err = launch_one(&mut a.rec, &kernel, &a.faulting).unwrap_err();
    let fault = std::error::Error::source(&err)
        .and_then(|s| s.downcast_ref::<reprise::HostError>())
        .and_then(|e| match e {
            reprise::HostError::KernelFault(f) => Some(f.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no HostError::KernelFault in {err}"));
    let fault: reprise::KernelFault = *fault;
    assert_eq!(fault.kind, reprise::FaultKind::InvalidAccess);
    assert_eq!(fault.addr, 0x1000);
    assert_eq!(reprise::block_on(a.rec.finish()).unwrap().len(), 1);
}

/// The quickstart example, built by `cargo test` (or `cargo build
/// --examples`); skipped with a message where it has not been built.
fn quickstart(env: &[(&str, &str)]) -> Option<std::process::Output> {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent()?.parent()?.join("examples/quickstart");
    if !path.exists() {
        eprintln!(
            "skipped: {} is not built (cargo build --example quickstart)",
            path.display()
        );
        return None;
    }
    let mut cmd = std::process::Command::new(path);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("REPRISE_RECORD") {
            cmd.env_remove(k);
        }
    }
    Some(output_within(cmd.envs(env.iter().copied()), RUN_LIMIT))
}

#[test]
fn quickstart_reports_a_launch_its_filters_exclude_and_keeps_what_it_names() {
    for env in [
        [("REPRISE_RECORD_FILTER", "nomatch")],
        [("REPRISE_RECORD_MAX", "0")],
    ] {
        let Some(out) = quickstart(&env) else { return };
        let (stdout, stderr) = text(&out);
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_exit(&out, 0);
        assert!(stdout.contains("nothing was recorded"), "{stdout}");
    }

    // With REPRISE_RECORD_DIR, the capture it names is kept there.
    let dir = tempfile::tempdir().unwrap();
    let out = quickstart(&[("REPRISE_RECORD_DIR", s(dir.path()))]).unwrap();
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    let named = stdout
        .lines()
        .find_map(|l| l.strip_prefix("recorded: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(Path::new(named).exists(), "{named} is gone:\n{stdout}");
    assert!(stdout.contains("bytes equal"), "{stdout}");

    // Without it, the temporary capture is said to be removed.
    let out = quickstart(&[]).unwrap();
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("temporary capture, removed"), "{stdout}");
}
