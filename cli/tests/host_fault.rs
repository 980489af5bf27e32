//! A host replay whose kernel faults is an error naming the capture and the
//! address, with exit status 2, as on a GPU; not the death of the process.

mod common;

use common::*;
use reprise::RecordConfig;

fn config(dir: &std::path::Path) -> RecordConfig {
    RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20)
        .fsync(false)
}

/// Records an axpy launch, then moves the descriptor's region 1 GiB up
/// (still aligned): the snapshot lands there, but the recorded pointer
/// arguments still point at the old region, where nothing is mapped.
/// Returns the descriptor and the old and new bases.
fn moved_capture(dir: &std::path::Path) -> (std::path::PathBuf, u64, u64) {
    let written = record_axpy(config(dir), 1000, 1);
    let descriptor = written[0].clone();
    let mut old = 0;
    edit_descriptor(&descriptor, |r| {
        old = r.region_base.unwrap();
        r.region_base = Some(old + (1 << 30));
    });
    (descriptor, old, old + (1 << 30))
}

#[test]
fn a_faulting_host_replay_exits_2_naming_the_capture_and_address() {
    let dir = tempfile::tempdir().unwrap();
    let (descriptor, old, new) = moved_capture(dir.path());
    let out = reprise(&["replay", "--verify", s(&descriptor)]);
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            out.status.signal(),
            None,
            "reprise died by a signal: {:?}",
            text(&out)
        );
    }
    // The first pointer argument is x, at the old base.
    assert_error(
        &out,
        &[
            s(&descriptor),
            "the kernel `axpy` faulted: invalid memory access at ",
            &format!("at {old:#x} (SIGSEGV"),
            &format!("outside the region {new:#x}.."),
        ],
    );
    let (stdout, _) = text(&out);
    assert!(!stdout.contains("verification"), "{stdout}");
}

#[test]
fn after_a_faulting_replay_the_process_replays_again() {
    let dir = tempfile::tempdir().unwrap();
    let (bad, _, _) = moved_capture(dir.path());
    let good_dir = tempfile::tempdir().unwrap();
    let good = record_axpy(config(good_dir.path()), 1000, 1).remove(0);

    let capture = reprise_std::Capture::open(&bad).unwrap();
    let err = reprise::block_on(reprise::replay(&capture).verify(true).into_future())
        .expect_err("the kernel faults");
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    let mut fault = None;
    while let Some(e) = source {
        if let Some(reprise_host::HostError::KernelFault(f)) = e.downcast_ref() {
            fault = Some(f.clone());
        }
        source = e.source();
    }
    let fault = fault.unwrap_or_else(|| panic!("no KernelFault in {err}"));
    assert_eq!(fault.kind, reprise_host::FaultKind::InvalidAccess);
    assert_eq!(fault.kernel, "axpy");

    for _ in 0..2 {
        let capture = reprise_std::Capture::open(&good).unwrap();
        let outcome =
            reprise::block_on(reprise::replay(&capture).verify(true).into_future()).unwrap();
        assert!(
            outcome.verification.as_ref().is_some_and(|v| v.is_match()),
            "{:?}",
            outcome.verification
        );
    }
}

#[test]
fn a_faulting_host_replay_says_its_kind_without_a_downcast() {
    let dir = tempfile::tempdir().unwrap();
    let (bad, _, _) = moved_capture(dir.path());
    let capture = reprise_std::Capture::open(&bad).unwrap();
    let err = reprise::block_on(reprise::replay(&capture).verify(true).into_future())
        .expect_err("the kernel faults");
    assert_eq!(
        err.executor_kind(),
        Some(reprise::ErrorKind::KernelFault),
        "{err}"
    );
    assert!(err.kernel_faulted(), "{err}");
    // The host's queue goes on working after a fault: the device is not
    // lost, and nothing says it was refused.
    assert!(!err.device_lost(), "{err}");
    assert!(!err.launch_refused(), "{err}");
}
