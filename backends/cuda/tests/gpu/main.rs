//! The CUDA executor on a GPU: the real driver with `REPRISE_GPU_TESTS=1`,
//! else the simulated driver (`test-support/src/cuda_driver`), which the tests build with the C
//! compiler; `REPRISE_GPU_TESTS=0`, or no C compiler, skips them with a
//! message saying why.
//!
//! The helpers the tests share are here, the tests by subject in the
//! modules.

#[path = "../common/mod.rs"]
mod common;

mod chunk_hash;
mod images;
mod queue;
mod regions;
mod saxpy;
mod shared_memory;
mod staging;

use common::{seg, sync};
use reprise_core::exec::{Executor, Queue, RegionRequest};
use reprise_cuda::{CudaError, CudaExecutor, CudaImage, CudaQueue, CudaRegion};

const MIB: u64 = 1 << 20;

/// Whether the tests run on the simulated driver, whose address policy is
/// known (free hints are honoured), so the tests can ask more of it.
fn simulated() -> bool {
    common::sim::driver() == Ok(common::sim::Driver::Simulated)
}

/// Copies `len` bytes at `addr` back to the host (buffers of earlier copies
/// that the synchronize also completes are dropped).
fn read_device(exec: &CudaExecutor, q: &mut CudaQueue, addr: u64, len: usize) -> Vec<u8> {
    let t = q
        .download(exec.buffer(len).unwrap(), &[seg(addr, 0, len)])
        .unwrap();
    sync(q).unwrap();
    loop {
        let (got, buf) = q.reclaim().expect("download buffer back");
        if got == t {
            return buf.as_ref().to_vec();
        }
    }
}

/// Globals of `image` as `(name, addr, size)`, in the image's order.
fn globals_of(exec: &CudaExecutor, image: &CudaImage) -> Vec<(String, u64, u64)> {
    let mut out = Vec::new();
    exec.for_each_global(image, &mut |g| {
        out.push((g.name.to_owned(), g.addr, g.size))
    })
    .unwrap();
    out
}

/// Reserves `MIB` bytes at `base` (`None`: anywhere).
fn reserve(exec: &CudaExecutor, base: Option<u64>) -> Result<CudaRegion, CudaError> {
    exec.reserve(RegionRequest::new(base, MIB))
}
