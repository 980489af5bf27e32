//! clang's OpenMP kernels on the CUDA executor: `omp_saxpy.ptx` and
//! `omp_sum.ptx`, compiled from the `.c` files next to them by clang-19 and
//! linked with LLVM's OpenMP device runtime (`scripts/gen-ptx-fixtures.sh`).
//! Since LLVM 18 such a kernel's first parameter is the implicit kernel
//! launch environment (`dyn_ptr`), and clang caps its blocks at 128 threads
//! (`.maxntid 128`) unless a `thread_limit` says otherwise. On the real
//! driver with `REPRISE_GPU_TESTS=1`, else on the simulated one; the PTX
//! with an unresolved call only on the simulator.

mod common;

use common::{buffer_with, f32_bytes, f32s, fixture, fixture_kernel, gpu, seg, sync};
use reprise_core::exec::{
    DeviceRegion, Executor, KernelArgs, Launch, LaunchConfig, Queue, RegionRequest,
};
use reprise_cuda::{CudaError, CudaExecutor, CudaQueue};

const MIB: u64 = 1 << 20;
const SAXPY: &str = "__omp_offloading_fe00_1_omp_saxpy_l6";
const SUM: &str = "__omp_offloading_fe00_1_omp_sum_l8";

/// A launch of `teams` blocks of `threads` with four 8-byte arguments, as
/// LLVM's plugin passes them.
fn launch(values: &[u64; 4], teams: u32, threads: u32) -> Launch<'_> {
    Launch {
        config: LaunchConfig {
            grid: [teams, 1, 1],
            block: [threads, 1, 1],
            shared_mem: 0,
        },
        args: KernelArgs {
            values,
            sizes: &[8; 4],
            data: &[],
        },
    }
}

/// `len` bytes of device memory at `addr`, after a synchronize.
fn read(exec: &CudaExecutor, q: &mut CudaQueue, addr: u64, len: usize) -> Vec<u8> {
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

#[test]
fn an_openmp_kernel_keeps_its_thread_limit_and_ignores_an_unused_environment() {
    let Some((_lock, exec)) = gpu() else { return };
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (_image, kernel) = fixture_kernel(&exec, "omp_saxpy.ptx", SAXPY);
    let mut q = exec.queue().unwrap();
    let n = 1000usize;
    let (x, y) = (region.base(), region.base() + 4096);
    let xs: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
    let ys: Vec<f32> = (0..n).map(|i| (i % 5) as f32 - 2.0).collect();
    q.upload(buffer_with(&exec, &f32_bytes(&xs)), &[seg(x, 0, 4 * n)])
        .unwrap();
    q.upload(buffer_with(&exec, &f32_bytes(&ys)), &[seg(y, 0, 4 * n)])
        .unwrap();
    // No reductions: LLVM passes ~0 as the environment, which the kernel
    // never reads.
    let values = [u64::MAX, n as u64, x, y];
    // Within the device's limit, beyond the kernel's.
    let err = q.launch(&kernel, &launch(&values, 2, 256)).unwrap_err();
    assert_eq!(
        err,
        CudaError::KernelThreadsPerBlock {
            kernel: SAXPY.into(),
            block: [256, 1, 1],
            limit: 128
        }
    );
    // Three teams of 96 threads: every iteration exactly once (chunks of
    // 128 per team, strided by the team count).
    q.launch(&kernel, &launch(&values, 3, 96)).unwrap();
    let got = f32s(&read(&exec, &mut q, y, 4 * n));
    let want: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| 2.0 * x + y).collect();
    assert_eq!(got, want);
}

#[test]
fn an_openmp_reduction_combines_its_teams_through_the_launch_environment() {
    let Some((_lock, exec)) = gpu() else { return };
    let region = exec.reserve(RegionRequest::new(None, 4 * MIB)).unwrap();
    let (_image, kernel) = fixture_kernel(&exec, "omp_sum.ptx", SUM);
    let mut q = exec.queue().unwrap();
    // The layout LLVM 18's plugin leaves in device memory: the mapped data,
    // then the environment {ReductionCnt, ReductionIterCnt,
    // ReductionBuffer} and the buffer it points to.
    let n = 200_000usize;
    let base = region.base();
    let (x, sum, env, buffer) = (
        base,
        base + (2 << 20),
        base + (2 << 20) + 64,
        base + (3 << 20),
    );
    let xs: Vec<f64> = (0..n).map(|i| (i % 10) as f64).collect();
    let total: f64 = xs.iter().sum();
    let bytes: Vec<u8> = xs.iter().flat_map(|v| v.to_le_bytes()).collect();
    q.upload(buffer_with(&exec, &bytes), &[seg(x, 0, 8 * n)])
        .unwrap();
    q.upload(buffer_with(&exec, &0.5f64.to_le_bytes()), &[seg(sum, 0, 8)])
        .unwrap();
    let kle = [
        &0u32.to_le_bytes()[..],
        &0u32.to_le_bytes(),
        &buffer.to_le_bytes(),
    ]
    .concat();
    q.upload(buffer_with(&exec, &kle), &[seg(env, 0, 16)])
        .unwrap();
    let values = [env, n as u64, sum, x];
    // Fewer teams than buffer slots, and more (slots reused from team
    // 1024 on): each launch adds the total once and leaves the counters at 0
    // for the next.
    let mut expected = 0.5;
    for teams in [1, 37, 1500] {
        q.launch(&kernel, &launch(&values, teams, 128)).unwrap();
        expected += total;
        let got = f64::from_le_bytes(read(&exec, &mut q, sum, 8).try_into().unwrap());
        assert_eq!(got, expected, "{teams} teams");
        let counters = read(&exec, &mut q, env, 8);
        assert_eq!(counters, [0; 8], "{teams} teams");
    }
}

#[test]
fn ptx_that_calls_what_it_does_not_define_does_not_load() {
    let Some((_lock, exec)) = gpu() else { return };
    if common::sim::driver() != Ok(common::sim::Driver::Simulated) {
        println!("skipped: checks the simulator's strictness");
        return;
    }
    // OpenMP device code not linked with the device runtime, as clang
    // leaves it before its linker step: the driver's compiler links nothing.
    let ptx = String::from_utf8(fixture("omp_saxpy.ptx")).unwrap();
    let unlinked = ptx.replacen(
        ".weak .entry",
        ".extern .func  (.param .b32 func_retval0) __kmpc_target_init\n(\n\t.param .b64 a,\n\t.param .b64 b\n)\n;\n.weak .entry",
        1,
    );
    let err = exec.load_image(unlinked.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("CUDA_ERROR_INVALID_PTX"), "{err}");
    // What the driver provides itself is no reason to refuse.
    let printing = ptx.replacen(
        ".weak .entry",
        ".extern .func  (.param .b32 func_retval0) vprintf\n(\n\t.param .b64 a,\n\t.param .b64 b\n)\n;\n.weak .entry",
        1,
    );
    exec.load_image(printing.as_bytes()).unwrap();
}
