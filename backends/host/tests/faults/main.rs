//! A kernel that faults is an error of its launch, reported by the next
//! synchronize; the queue, the executor and the process keep working. A
//! fault outside a kernel still ends the process, as it would without the
//! host executor.
//!
//! The helpers that launch the faults image's kernels are here, those that
//! run a test of this binary as a child process in `child`, the tests by
//! subject in the other modules.

mod caught;
mod child;
mod fatal;
mod handlers;
mod stack;

use std::future::poll_fn;

use reprise_core::block_on;
use reprise_core::exec::{
    DeviceRegion, Executor, KernelArgs, Launch, LaunchConfig, Queue, Segment,
};
use reprise_host::{HostError, HostExecutor, HostQueue, KernelFault};

const FAULTS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels/faults.so"));

fn sync(q: &mut HostQueue) -> Result<(), HostError> {
    block_on(poll_fn(|cx| q.poll_synchronize(cx)))
}

/// Launches `name` from the faults image with `args` and synchronizes.
fn run(exec: &HostExecutor, q: &mut HostQueue, name: &str, args: &[u64]) -> Result<(), HostError> {
    let image = exec.load_image(FAULTS)?;
    let kernel = exec.kernel(&image, name)?;
    q.launch(&kernel, &launch(args))?;
    sync(q)
}

/// A one-thread launch with pointer-sized arguments.
fn launch(values: &[u64]) -> Launch<'_> {
    Launch {
        config: LaunchConfig {
            grid: [1, 1, 1],
            block: [1, 1, 1],
            shared_mem: 0,
        },
        args: KernelArgs {
            values,
            sizes: &[],
            data: &[],
        },
    }
}

fn fault(r: Result<(), HostError>) -> KernelFault {
    match r {
        Err(HostError::KernelFault(f)) => *f,
        other => panic!("expected a kernel fault, got {other:?}"),
    }
}

/// Reads the 8 bytes at `addr` through the queue.
fn read_u64(exec: &HostExecutor, q: &mut HostQueue, addr: u64) -> u64 {
    let buf = exec.buffer(8).unwrap();
    let seg = Segment {
        device: addr,
        host_offset: 0,
        len: 8,
    };
    q.download(buf, &[seg]).unwrap();
    sync(q).unwrap();
    let (_, buf) = q.reclaim().unwrap();
    u64::from_le_bytes(buf.as_ref().try_into().unwrap())
}

/// Stores through a good pointer, checks it landed.
fn good_launch(exec: &HostExecutor, q: &mut HostQueue, region: &impl DeviceRegion, v: u64) {
    run(exec, q, "store", &[region.base() + 64, v]).expect("a good launch succeeds");
    assert_eq!(read_u64(exec, q, region.base() + 64), v);
}
