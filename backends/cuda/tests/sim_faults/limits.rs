//! Launch limits the driver is asked: a device attribute it will not report
//! leaves that limit unchecked, and a kernel's shared memory is asked once.

use reprise_core::exec::{DeviceRegion, Dims, Executor, GeometryError, Queue, RegionRequest};
use reprise_cuda::{CudaError, CudaExecutor, LaunchLimits};

use crate::common::{fixture_kernel, sim, sync};
use crate::{INVALID_VALUE, MIB, shared_reverse, simulated};

/// The limits as one list: threads per block, block x/y/z, grid x/y/z,
/// shared memory without and with opting in.
fn limit_list(l: &LaunchLimits) -> Vec<u32> {
    let mut v = vec![l.threads_per_block];
    v.extend(l.block);
    v.extend(l.grid);
    v.extend([l.shared_default, l.shared_optin]);
    v
}

#[test]
fn a_device_attribute_the_driver_will_not_report_is_an_unchecked_limit() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    let known = limit_list(&exec.launch_limits());
    assert!(known.iter().all(|&l| l > 0), "{known:?}");
    // Each limit in turn unknown (as to a driver older than the attribute):
    // the device still opens, with only that limit 0.
    for skip in 0..known.len() as u32 {
        assert!(sim::fail("cuDeviceGetAttribute", INVALID_VALUE, skip));
        let exec = CudaExecutor::new(0).unwrap_or_else(|e| panic!("attribute #{skip}: {e}"));
        let got = limit_list(&exec.launch_limits());
        let zeroed: Vec<usize> = (0..known.len()).filter(|&i| got[i] != known[i]).collect();
        assert_eq!(zeroed.len(), 1, "attribute #{skip}: {got:?}");
        assert_eq!(got[zeroed[0]], 0, "attribute #{skip}: {got:?}");
    }
    sim::reset();
    // None known: nothing is checked, and the driver has the last word.
    assert!(sim::fail_times(
        "cuDeviceGetAttribute",
        INVALID_VALUE,
        0,
        known.len() as u32
    ));
    let blind = CudaExecutor::new(0).unwrap();
    sim::reset();
    assert_eq!(blind.launch_limits(), LaunchLimits::default());
    let region = blind.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (_image, kernel) = fixture_kernel(&blind, "shared_reverse.ptx", "shared_reverse");
    let mut q = blind.queue().unwrap();
    let values = [region.base(), 16, 16];
    // The kernel's own thread limit unknown too (asked once, at its first
    // launch).
    assert!(sim::fail("cuFuncGetAttribute", INVALID_VALUE, 0));
    let err = q
        .launch(&kernel, &shared_reverse(&values, [2048, 1, 1], 64))
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE"),
        "{err}"
    );
    // A dimension of 0 is refused all the same.
    let err = q
        .launch(&kernel, &shared_reverse(&values, [4, 0, 1], 64))
        .unwrap_err();
    assert_eq!(
        err,
        CudaError::Geometry(GeometryError::ZeroDimension {
            what: Dims::Block,
            dims: [4, 0, 1]
        })
    );
    // Dynamic shared memory past 48 KiB is still opted in to (the opt-in
    // limit unknown is no limit), and beyond the device's limit the driver
    // refuses it.
    q.launch(&kernel, &shared_reverse(&values, [4, 1, 1], 64 << 10))
        .unwrap();
    sync(&mut q).unwrap();
    let err = q
        .launch(&kernel, &shared_reverse(&values, [4, 1, 1], 300 << 10))
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cuFuncSetAttribute failed: CUDA_ERROR_INVALID_VALUE"),
        "{err}"
    );
}

#[test]
fn a_kernels_shared_memory_is_asked_of_the_driver_once() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    sim::set_static_shared(8 << 10);
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (image, kernel) = fixture_kernel(&exec, "shared_reverse.ptx", "shared_reverse");
    let mut q = exec.queue().unwrap();
    let values = [region.base(), 16, 16];
    // A launch without dynamic shared memory asks only the kernel's thread
    // limit; a driver that cannot say leaves the block to its own check
    // (the launch does nothing: no words).
    assert!(sim::fail("cuFuncGetAttribute", INVALID_VALUE, 0));
    let nothing = [region.base(), 0, 0];
    q.launch(&kernel, &shared_reverse(&nothing, [4, 1, 1], 0))
        .unwrap();
    // The first with some asks for the shared memory; when that fails, the
    // launch does, naming the call, and nothing is kept.
    assert!(sim::fail("cuFuncGetAttribute", INVALID_VALUE, 0));
    let err = q
        .launch(&kernel, &shared_reverse(&values, [4, 1, 1], 64))
        .unwrap_err();
    assert!(err.to_string().contains("cuFuncGetAttribute"), "{err}");
    q.launch(&kernel, &shared_reverse(&values, [4, 1, 1], 64))
        .unwrap();
    // Then never again, through any handle of the function: 44 KiB needs
    // opting in (8 KiB static), which is remembered too.
    assert!(sim::fail_times("cuFuncGetAttribute", INVALID_VALUE, 0, 100));
    let other = exec.kernel(&image, "shared_reverse").unwrap();
    for (k, shared) in [(&kernel, 44 << 10), (&other, 44 << 10), (&other, 64)] {
        q.launch(k, &shared_reverse(&values, [4, 1, 1], shared))
            .unwrap_or_else(|e| panic!("{shared} bytes: {e}"));
    }
    assert!(sim::fail_times("cuFuncSetAttribute", INVALID_VALUE, 0, 100));
    q.launch(&other, &shared_reverse(&values, [4, 1, 1], 40 << 10))
        .unwrap();
    sim::reset();
    sync(&mut q).unwrap();
    // A typed error beyond the opt-in limit, from what was kept.
    let err = q
        .launch(&kernel, &shared_reverse(&values, [4, 1, 1], 220 << 10))
        .unwrap_err();
    assert!(
        matches!(
            err,
            CudaError::Geometry(GeometryError::SharedMemory {
                static_bytes: 8192,
                dynamic_bytes: 225_280,
                limit: 232_448
            })
        ),
        "{err:?}"
    );
}

#[test]
fn a_launch_beyond_the_limits_is_of_the_refused_kind_whoever_checks_it() {
    use reprise_core::exec::{ErrorKind, ExecError};
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (_image, kernel) = fixture_kernel(&exec, "shared_reverse.ptx", "shared_reverse");
    let mut q = exec.queue().unwrap();
    let values = [region.base(), 16, 16];
    // Too many threads per block, as the executor checks it.
    let err = q
        .launch(&kernel, &shared_reverse(&values, [2048, 1, 1], 64))
        .unwrap_err();
    assert!(
        matches!(
            err,
            CudaError::Geometry(GeometryError::ThreadsPerBlock { .. })
                | CudaError::KernelThreadsPerBlock { .. }
        ),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::LaunchRefused, "{err}");
    assert!(!err.device_lost(), "{err}");
    // As the driver checks it (the limits unknown): refused all the same.
    assert!(sim::fail_times(
        "cuDeviceGetAttribute",
        INVALID_VALUE,
        0,
        100
    ));
    let blind = CudaExecutor::new(0).unwrap();
    sim::reset();
    let region = blind.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (_image, kernel) = fixture_kernel(&blind, "shared_reverse.ptx", "shared_reverse");
    let mut q = blind.queue().unwrap();
    let values = [region.base(), 16, 16];
    assert!(sim::fail("cuFuncGetAttribute", INVALID_VALUE, 0));
    let err = q
        .launch(&kernel, &shared_reverse(&values, [2048, 1, 1], 64))
        .unwrap_err();
    assert!(matches!(err, CudaError::Driver(_)), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::LaunchRefused, "{err}");
    // A dimension of 0 is a refused launch too.
    let err = q
        .launch(&kernel, &shared_reverse(&values, [4, 0, 1], 64))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LaunchRefused, "{err}");
}
