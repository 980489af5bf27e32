//! The AMD executor's errors say their kind (`ExecError::kind`), on the
//! simulated HSA runtime: what code above the executors decides by,
//! without knowing `AmdError`. One test: the simulator's state is per
//! process.

mod common;

use common::{fixture, synchronize};
use reprise_test_support::hsa_runtime as sim;

use reprise_amdgpu::{AmdError, AmdExecutor, FRESH_BASE};
use reprise_core::exec::{
    DeviceRegion, ErrorKind, ExecError, Executor, KernelArgs, Launch, LaunchConfig, Queue,
    RegionRequest, Segment,
};

/// A saxpy launch (`a`, `x`, `y`, `n`) with `block` and as many of the
/// four argument sizes as `sizes` gives.
fn saxpy<'a>(values: &'a [u64], sizes: &'a [u32], block: [u32; 3]) -> Launch<'a> {
    Launch {
        config: LaunchConfig {
            grid: [4, 1, 1],
            block,
            shared_mem: 0,
        },
        args: KernelArgs {
            values,
            sizes,
            data: &[],
        },
    }
}

#[test]
fn refused_launches_bad_requests_and_faults_are_of_their_kinds() {
    if let Err(why) = sim::available() {
        eprintln!("skipped: {why}");
        return;
    }
    sim::use_in_this_process().unwrap();
    let exec = AmdExecutor::new(0).unwrap();
    let kind = |e: &AmdError| (e.kind(), e.device_lost());

    // Requests no region can serve.
    let e = exec.reserve(RegionRequest::new(None, 0)).unwrap_err();
    assert_eq!(kind(&e), (ErrorKind::InvalidInput, false), "{e}");
    assert_eq!(e.to_string(), "a region of 0 bytes cannot be reserved");
    let e = exec
        .reserve(RegionRequest::new(Some(FRESH_BASE + 1), 1 << 20))
        .unwrap_err();
    assert_eq!(kind(&e), (ErrorKind::InvalidInput, false), "{e}");
    assert!(
        matches!(e, AmdError::UnalignedBase { base, .. } if base == FRESH_BASE + 1),
        "{e:?}"
    );
    assert!(e.to_string().contains("allocation granule"), "{e}");

    let region = exec
        .reserve(RegionRequest::new(Some(FRESH_BASE), 1 << 20))
        .unwrap();
    let image = exec
        .load_image(&fixture("saxpy_mixed.gfx90a.hsaco"))
        .unwrap();
    let e = exec.kernel(&image, "nope").unwrap_err();
    assert_eq!(kind(&e), (ErrorKind::InvalidInput, false), "{e}");
    let kernel = exec.kernel(&image, "saxpy").unwrap();
    let mut q = exec.queue().unwrap();
    let (x, y) = (region.base(), region.base() + 0x1000);
    let values = [u64::from(2.0f32.to_bits()), x, y, 1000];

    // A block beyond the agent's limit: refused before anything runs.
    let e = q
        .launch(&kernel, &saxpy(&values, &[4, 8, 8, 4], [2048, 1, 1]))
        .unwrap_err();
    assert!(matches!(e, AmdError::Geometry(_)), "{e:?}");
    assert_eq!(kind(&e), (ErrorKind::LaunchRefused, false), "{e}");
    // Arguments that do not fit the kernel's: typed, and invalid input.
    let e = q
        .launch(&kernel, &saxpy(&values[..3], &[4, 8, 8], [256, 1, 1]))
        .unwrap_err();
    assert!(
        matches!(&e, AmdError::ArgumentCount { kernel, expected: 4, got: 3 } if kernel == "saxpy"),
        "{e:?}"
    );
    assert_eq!(kind(&e), (ErrorKind::InvalidInput, false), "{e}");
    assert_eq!(
        e.to_string(),
        "the kernel `saxpy` takes 4 arguments, the launch has 3"
    );
    let e = q
        .launch(&kernel, &saxpy(&values, &[4, 8, 8, 2], [256, 1, 1]))
        .unwrap_err();
    assert!(
        matches!(
            e,
            AmdError::ArgumentSize {
                index: 3,
                expected: 4,
                got: 2,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "argument 3 of `saxpy` is 4 bytes, the launch gives 2"
    );
    // A copy outside its buffer.
    let seg = [Segment {
        device: x,
        host_offset: 0,
        len: 64,
    }];
    let e = q.upload(exec.buffer(16).unwrap(), &seg).unwrap_err();
    assert_eq!(kind(&e), (ErrorKind::InvalidInput, false), "{e}");
    synchronize(&mut q).unwrap();

    // A fault loses the queue, and says so; the queue stays lost.
    let stray = [values[0], x, 0xdead_0000, 1000];
    q.launch(&kernel, &saxpy(&stray, &[4, 8, 8, 4], [256, 1, 1]))
        .unwrap();
    let e = synchronize(&mut q).unwrap_err();
    assert_eq!(kind(&e), (ErrorKind::KernelFault, true), "{e}");
    let e = synchronize(&mut q).unwrap_err();
    assert!(matches!(e, AmdError::QueueLost(_)), "{e:?}");
    assert_eq!(kind(&e), (ErrorKind::DeviceLost, true), "{e}");
}
