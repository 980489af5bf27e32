//! Kernels that fault: during a replay (an error, not a hang), and while
//! recording (named, and every later call in the context failing with it).

use reprise::{Args, CudaExecutor, LaunchConfig, Recorder};

use crate::common::*;
use crate::{GRID2D, SAXPY, config, record_saxpy, replay_with, simulated};

/// Rewrites argument `index` of the capture's `ArgPtrs` to `value`.
fn set_arg(descriptor: &std::path::Path, index: usize, value: u64) {
    let json = std::fs::read_to_string(descriptor).unwrap();
    let start = json.find("\"ArgPtrs\":[").expect("ArgPtrs") + "\"ArgPtrs\":[".len();
    let end = start + json[start..].find(']').unwrap();
    let mut values: Vec<String> = json[start..end].split(',').map(str::to_owned).collect();
    values[index] = value.to_string();
    let json = format!("{}{}{}", &json[..start], values.join(","), &json[end..]);
    std::fs::write(descriptor, json).unwrap();
}

#[test]
fn a_kernel_that_faults_during_replay_is_an_error_not_a_hang() {
    let Some(gpu) = simulated() else { return };
    let dir = tempfile::tempdir().unwrap();
    let capture = record_saxpy(gpu, dir.path());
    // `y` points at an address no allocation covers.
    set_arg(&capture, 2, 0x10);
    let no_callback = sim::variant_dir(&["-DSIM_NO_STREAM_CALLBACK"]).unwrap();
    for lib in [None, Some(&no_callback)] {
        // The kernel waits before it runs, so the fault comes while the
        // synchronize waits (without stream callbacks, on a host function
        // that will never run).
        let mut env = vec![("REPRISE_SIM_CUDA_KERNEL_DELAY_US", "50000")];
        env.extend(lib.iter().map(|d| ("LD_LIBRARY_PATH", d.to_str().unwrap())));
        let out = replay_with(&capture, &env);
        eprintln!("{}", text(&out).1);
        // The kernel is named; the call that found the fault is the cause.
        assert_error(
            &out,
            &[
                "the kernel `saxpy` faulted: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory \
                 access was encountered); the device context is unusable until the process \
                 restarts",
                "caused by: cuStreamQuery failed: CUDA_ERROR_ILLEGAL_ADDRESS",
                s(&capture),
            ],
        );
    }
}

/// Set in the environment of the child process that
/// [`a_kernel_that_faults_while_recording_is_named_and_spoils_later_calls`]
/// runs itself in: a fault spoils the context of the whole process, which
/// the other tests of this one share.
const FAULT_CHILD: &str = "REPRISE_TEST_CUDA_FAULT_CHILD";

#[test]
fn a_kernel_that_faults_while_recording_is_named_and_spoils_later_calls() {
    const NAME: &str =
        "faults::a_kernel_that_faults_while_recording_is_named_and_spoils_later_calls";
    if std::env::var_os(FAULT_CHILD).is_some() {
        record_a_fault();
        println!("{FAULT_CHILD}: done");
        return;
    }
    let Some(_gpu) = simulated() else { return };
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child
        .args([NAME, "--exact", "--nocapture", "--test-threads=1"])
        .env(FAULT_CHILD, "1")
        .env("RUST_BACKTRACE", "0");
    let out = output_within(&mut child, RUN_LIMIT);
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success() && stdout.contains(&format!("{FAULT_CHILD}: done")),
        "the child failed:\n{stdout}{stderr}"
    );
}

/// Records a saxpy launch whose `y` points nowhere, then asks for more, of
/// that recorder and of another one on the same device that recorded a
/// good grid2d launch before: what
/// [`a_kernel_that_faults_while_recording_is_named_and_spoils_later_calls`]
/// runs in its child process.
fn record_a_fault() {
    let gpu = simulated().expect("the parent checked");
    // The kernel waits before it runs, so its launch returns and the
    // synchronize that waits for it finds the fault.
    sim::set_kernel_delay_us(50_000);
    let dir = tempfile::tempdir().unwrap();
    let n = 4096usize;
    // Another recorder, with its own executor of the device (so the same
    // context), records a good launch first.
    let other_dir = tempfile::tempdir().unwrap();
    let other = CudaExecutor::new(0).unwrap();
    let mut good = Recorder::new(other, 0, config(other_dir.path())).unwrap();
    let out = good.alloc(64 * 64 * 4, 256).unwrap();
    let grid2d_image = good.load_image(GRID2D).unwrap();
    let grid2d = good.kernel(grid2d_image, "grid2d").unwrap();
    let grid2d_args = Args::new().ptr(out).i32(64).i32(64);
    let grid2d_geometry = LaunchConfig {
        grid: [8, 8, 1],
        block: [8, 8, 1],
        shared_mem: 0,
    };
    reprise::block_on(good.launch(&grid2d, grid2d_geometry, &grid2d_args)).unwrap();
    // Its capture written, its staging buffers are back in its pool: its
    // next launch starts with a queue operation (which names the fault),
    // not with a fresh page-locked allocation, which would meet the lost
    // context first and say only that (under load the writer was still
    // holding them).
    assert_eq!(reprise::block_on(good.finish()).unwrap().len(), 1);
    let mut rec = Recorder::new(gpu, 0, config(dir.path())).unwrap();
    let x = rec.alloc((n * 4) as u64, 256).unwrap();
    rec.upload(x, &floats(&vec![1.0; n])).unwrap();
    let image = rec.load_image(SAXPY).unwrap();
    let k = rec.kernel(image, "saxpy").unwrap();
    let args = Args::new().f32(3.0).ptr(x).ptr(0x10).i32(n as i32);
    let geometry = LaunchConfig {
        grid: [(n as u32).div_ceil(256), 1, 1],
        block: [256, 1, 1],
        shared_mem: 0,
    };
    let err = reprise::block_on(rec.launch(&k, geometry, &args)).expect_err("the kernel faults");
    println!("launch: {err}");
    let fault = "the kernel `saxpy` faulted: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory \
                 access was encountered); the device context is unusable until the process \
                 restarts";
    assert!(err.to_string().contains(fault), "{err}");
    // A typed error, the driver's underneath.
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    let mut found = None;
    while let Some(e) = source {
        if let Some(reprise::CudaError::KernelFault { kernels, source }) = e.downcast_ref() {
            found = Some((kernels.clone(), source.code));
        }
        source = e.source();
    }
    assert_eq!(found, Some((vec!["saxpy".to_owned()], 700)), "{err:?}");
    // Every later call fails with the same code: its error says why.
    let later = reprise::block_on(rec.download(x, 16)).expect_err("the context is lost");
    println!("later: {later}");
    assert!(
        later.to_string().ends_with(
            "CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered \
             (the context was lost to an earlier kernel fault; restart the process)"
        ),
        "{later}"
    );
    // The other recorder meets the fault too: it names the kernel that
    // faulted, not its own, which completed.
    let theirs = reprise::block_on(good.launch(&grid2d, grid2d_geometry, &grid2d_args))
        .expect_err("the context is lost");
    println!("the other recorder: {theirs}");
    assert!(theirs.to_string().contains(fault), "{theirs}");
    assert!(!theirs.to_string().contains("`grid2d`"), "{theirs}");
}
