//! Helpers of the GPU tests: the opt-in gate, a parking `block_on` with a
//! deadline, fixtures and buffers.

#![allow(dead_code)]

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

pub use reprise_test_support::cuda_driver as sim;

use reprise_core::exec::{Executor, KernelArgs, Launch, LaunchConfig, Queue, Segment};
use reprise_cuda::{CudaBuffer, CudaError, CudaExecutor, CudaImage, CudaKernel, CudaQueue};

/// The GPU tests share one device and reserve the same addresses: one at a
/// time.
static DEVICE: Mutex<()> = Mutex::new(());

/// The executor for device 0: on the real driver with
/// `REPRISE_GPU_TESTS=1`, else on the simulated one (see [`sim`]); `None`
/// (after saying why) when the tests skip.
pub fn gpu() -> Option<(MutexGuard<'static, ()>, CudaExecutor)> {
    match sim::driver() {
        Ok(sim::Driver::Real) => {}
        Ok(sim::Driver::Simulated) => println!("on the simulated CUDA driver"),
        Err(why) => {
            println!("skipped: {why}");
            return None;
        }
    }
    let guard = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    // A test that failed may have left delays or an injected fault behind.
    sim::reset();
    let exec = CudaExecutor::new(0).unwrap_or_else(|e| panic!("CUDA device 0: {e}"));
    Some((guard, exec))
}

struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs `fut` on this thread, parking between wakes; `Err` after `limit`.
///
/// It polls again only when woken (a spurious unpark aside), as a real
/// executor would: a completion that never wakes shows up as a timeout.
pub fn block_on_for<F: Future>(fut: F, limit: Duration) -> Result<F::Output, &'static str> {
    let deadline = Instant::now() + limit;
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return Ok(v);
        }
        let now = Instant::now();
        if now >= deadline {
            return Err("timed out waiting for the device");
        }
        std::thread::park_timeout(deadline - now);
        if Instant::now() >= deadline {
            return Err("timed out waiting for the device");
        }
    }
}

/// [`block_on_for`] with a 30-second limit, panicking on timeout.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    block_on_for(fut, Duration::from_secs(30)).expect("device work did not complete in 30 s")
}

/// A fixture's bytes.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The fixture image `file` loaded on `exec`, and its kernel `name`.
pub fn fixture_kernel(exec: &CudaExecutor, file: &str, name: &str) -> (CudaImage, CudaKernel) {
    let image = exec.load_image(&fixture(file)).expect("fixture image");
    let kernel = exec.kernel(&image, name).expect("fixture kernel");
    (image, kernel)
}

/// A pinned buffer holding `bytes`.
pub fn buffer_with(exec: &CudaExecutor, bytes: &[u8]) -> CudaBuffer {
    let mut b = exec.buffer(bytes.len()).expect("pinned buffer");
    b.as_mut().copy_from_slice(bytes);
    b
}

/// Little-endian bytes of `f32`s.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// `f32`s from little-endian bytes.
pub fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// `u32`s from little-endian bytes.
pub fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Waits for everything `q` has queued.
pub fn sync(q: &mut CudaQueue) -> Result<(), CudaError> {
    block_on(std::future::poll_fn(|cx| q.poll_synchronize(cx)))
}

/// A copy segment.
pub fn seg(device: u64, host_offset: usize, len: usize) -> Segment {
    Segment {
        device,
        host_offset,
        len,
    }
}

/// A launch of the grid2d fixture (`out`, `w`, `h` in `values`) over `grid`
/// blocks of 8x8 threads.
pub fn grid2d_launch(values: &[u64; 3], grid: [u32; 3]) -> Launch<'_> {
    Launch {
        config: LaunchConfig {
            grid,
            block: [8, 8, 1],
            shared_mem: 0,
        },
        args: KernelArgs {
            values,
            sizes: &[8, 4, 4],
            data: &[],
        },
    }
}
