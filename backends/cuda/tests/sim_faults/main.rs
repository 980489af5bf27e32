//! Error paths only the simulated driver can provoke: one driver call made to
//! fail at a chosen point, then a check that the executor reports it, names
//! the call, and leaves nothing behind (the simulator counts what is live).
//! Skipped (with the reason) on a real driver.
//!
//! The driver's codes, the simulated executor and the launch the tests
//! share are here, the tests by subject in the modules.

#[path = "../common/mod.rs"]
mod common;

mod faults;
mod limits;
mod mappings;
mod queues;
mod regions;

use common::{gpu, sim};
use reprise_core::exec::{KernelArgs, Launch, LaunchConfig};
use reprise_cuda::CudaExecutor;

const MIB: u64 = 1 << 20;
/// `CUDA_ERROR_INVALID_VALUE`.
const INVALID_VALUE: u32 = 1;
/// `CUDA_ERROR_OUT_OF_MEMORY`.
const OUT_OF_MEMORY: u32 = 2;
/// `CUDA_ERROR_LAUNCH_FAILED`.
const LAUNCH_FAILED: u32 = 719;
/// `CUDA_ERROR_ILLEGAL_ADDRESS`.
const ILLEGAL_ADDRESS: u32 = 700;
/// What a kernel fault adds to the message of a driver error.
const CONTEXT_LOST: &str =
    " (the context was lost to an earlier kernel fault; restart the process)";

/// The executor on the simulated driver (holding the device lock), or
/// `None` after saying why.
fn simulated() -> Option<(std::sync::MutexGuard<'static, ()>, CudaExecutor)> {
    if sim::driver() != Ok(sim::Driver::Simulated) {
        println!("skipped: needs the simulated CUDA driver");
        return None;
    }
    gpu()
}

/// A launch of the shared_reverse fixture (`values`: data, words per block,
/// words) over one block with `shared` bytes of dynamic shared memory.
fn shared_reverse(values: &[u64; 3], block: [u32; 3], shared: u32) -> Launch<'_> {
    Launch {
        config: LaunchConfig {
            grid: [1, 1, 1],
            block,
            shared_mem: shared,
        },
        args: KernelArgs {
            values,
            sizes: &[8, 4, 4],
            data: &[],
        },
    }
}

/// The simulator is built from every C file and header in its folder: one
/// left out of `sim/mod.rs`'s list would still build in the GPU-check
/// rehearsal (which compiles `*.c`) but not here.
#[test]
fn the_simulator_is_built_from_every_source_in_its_folder() {
    let dir = sim::source_dir();
    let (left_out, stale) = sim::sources_left_out(&dir);
    assert!(
        left_out.is_empty(),
        "not in cuda_driver/mod.rs's SOURCES: {left_out:?}"
    );
    assert!(
        stale.is_empty(),
        "in SOURCES but not in {}: {stale:?}",
        dir.display()
    );
}
