//! `reprise __launch-loop` (hidden): launches the CUDA benchmark's saxpy
//! in a loop the way an unmodified CUDA program does, for `reprise bench`
//! to time the same launch with and without the interposer preloaded.
//!
//! The driver is reached as CUDA's runtime reaches it: `dlopen` of
//! `libcuda.so.1` and `dlsym` of each entry point, so a preloaded
//! interposer (which exports `dlsym`) hands out its hooks. Nothing else of
//! reprise touches the driver in this process.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use reprise::cuda_abi;
use serde_json::json;

use crate::error::{CliError, Result};

/// Launch the CUDA benchmark's saxpy N times through `libcuda.so.1`,
/// timing each launch and synchronize (used by `reprise bench`).
#[derive(Args, Debug)]
pub struct LaunchLoopArgs {
    /// Timed launches.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub launches: u32,
    /// Elements of x and y.
    #[arg(long, default_value_t = 8192, value_parser = clap::value_parser!(u32).range(1..=i32::MAX as i64))]
    pub elements: u32,
    /// Untimed launches before the timed ones.
    #[arg(long, default_value_t = 5)]
    pub warmup: u32,
    /// Print one JSON object (times in seconds).
    #[arg(long)]
    pub json: bool,
}

cuda_abi::driver_table! {
    /// The driver's entry points the loop calls, as `dlsym` handed them out.
    struct Driver {
        cuInit: cuda_abi::Init,
        cuDeviceGet: cuda_abi::DeviceGet,
        cuDevicePrimaryCtxRetain: cuda_abi::DevicePrimaryCtxRetain,
        cuCtxSetCurrent: cuda_abi::CtxSetCurrent,
        cuModuleLoadData: cuda_abi::ModuleLoadData,
        cuModuleGetFunction: cuda_abi::ModuleGetFunction,
        cuMemAlloc_v2: cuda_abi::MemAlloc,
        cuMemcpyHtoD_v2: cuda_abi::MemcpyHtoD,
        cuMemcpyDtoH_v2: cuda_abi::MemcpyDtoH,
        cuStreamCreate: cuda_abi::StreamCreate,
        cuLaunchKernel: cuda_abi::LaunchKernel,
        cuStreamSynchronize: cuda_abi::StreamSynchronize,
        cuGetErrorName: cuda_abi::GetErrorName,
    }
}

impl Driver {
    /// Opens `libcuda.so.1` for the rest of the process and looks up the
    /// entry points with `dlsym` on its handle, which a preloaded
    /// interposer's `dlsym` answers with its hooks.
    fn open() -> Result<Driver> {
        // SAFETY: loading the CUDA driver runs its initialisers, which
        // expect nothing of the caller.
        let lib = unsafe { libloading::Library::new("libcuda.so.1") }
            .map_err(|e| CliError::Command(format!("loading the CUDA driver libcuda.so.1: {e}")))?;
        // Never closed: a preloaded interposer calls into the driver until
        // the process exits (it finishes its recording at exit), and the
        // function pointers below must stay valid.
        let lib: &'static libloading::Library = Box::leak(Box::new(lib));
        // SAFETY: the table's fields are typed as cuda.h declares the
        // functions of their names; only the addresses are taken here.
        unsafe {
            Driver::resolve(|name| {
                lib.get::<*mut c_void>(name.as_bytes())
                    .map_or(std::ptr::null_mut(), |s| *s)
            })
        }
        .map_err(|name| CliError::Command(format!("libcuda.so.1 lacks {name}")))
    }

    /// `Ok` for `CUDA_SUCCESS`, else an error naming `call` and the result.
    fn check(&self, call: &str, rc: cuda_abi::CuResult) -> Result<()> {
        if rc == 0 {
            return Ok(());
        }
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: a valid out-pointer; the driver hands back a static
        // string or leaves it alone.
        let named = match unsafe { (self.cuGetErrorName)(rc, &mut name) } {
            0 if !name.is_null() => {
                // SAFETY: the driver's error names are NUL-terminated
                // static strings.
                unsafe { CStr::from_ptr(name) }
                    .to_string_lossy()
                    .into_owned()
            }
            _ => "an unknown CUresult".to_string(),
        };
        Err(CliError::Command(format!("{call} failed: {named} ({rc})")))
    }
}

/// What the loop measured: seconds per launch and synchronize.
struct Timings {
    min: f64,
    median: f64,
    mean: f64,
    max: f64,
}

fn timings(mut t: Vec<f64>) -> Timings {
    t.sort_by(f64::total_cmp);
    let n = t.len();
    let median = if n % 2 == 1 {
        t[n / 2]
    } else {
        (t[n / 2 - 1] + t[n / 2]) / 2.0
    };
    Timings {
        min: t[0],
        median,
        mean: t.iter().sum::<f64>() / n as f64,
        max: t[n - 1],
    }
}

/// The saxpy's `a`; x starts at 1 and y at 0, and the image's `bias` global
/// is 0.5, so each launch adds exactly 2.5 to every y.
const A: f32 = 2.0;
const PER_LAUNCH: f32 = 2.5;

/// Runs the loop: prints the per-launch times, or fails naming the driver
/// call that failed (or a kernel that did not run every launch).
pub fn run(a: LaunchLoopArgs) -> Result<ExitCode> {
    let d = Driver::open()?;
    let n = a.elements as usize;
    let bytes = n * 4;
    let mut ptx = reprise::samples::SAXPY_PTX.to_vec();
    // PTX is passed as a NUL-terminated string.
    ptx.push(0);
    let (mut ctx, mut module, mut function, mut stream) = (
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    let (mut x, mut y, mut dev) = (0u64, 0u64, 0 as c_int);
    // SAFETY: each call gets valid out-pointers and the handles the driver
    // made earlier in the sequence; the PTX is NUL-terminated and outlives
    // the module load; the copies are of `bytes` bytes, which both the host
    // buffers and the allocations hold.
    unsafe {
        d.check("cuInit", (d.cuInit)(0))?;
        d.check("cuDeviceGet", (d.cuDeviceGet)(&mut dev, 0))?;
        d.check(
            "cuDevicePrimaryCtxRetain",
            (d.cuDevicePrimaryCtxRetain)(&mut ctx, dev),
        )?;
        d.check("cuCtxSetCurrent", (d.cuCtxSetCurrent)(ctx))?;
        d.check(
            "cuModuleLoadData",
            (d.cuModuleLoadData)(&mut module, ptx.as_ptr().cast()),
        )?;
        d.check(
            "cuModuleGetFunction",
            (d.cuModuleGetFunction)(&mut function, module, c"saxpy".as_ptr()),
        )?;
        d.check("cuMemAlloc_v2 (x)", (d.cuMemAlloc_v2)(&mut x, bytes))?;
        d.check("cuMemAlloc_v2 (y)", (d.cuMemAlloc_v2)(&mut y, bytes))?;
        let ones = vec![1.0f32; n];
        let zeros = vec![0.0f32; n];
        d.check(
            "cuMemcpyHtoD_v2 (x)",
            (d.cuMemcpyHtoD_v2)(x, ones.as_ptr().cast(), bytes),
        )?;
        d.check(
            "cuMemcpyHtoD_v2 (y)",
            (d.cuMemcpyHtoD_v2)(y, zeros.as_ptr().cast(), bytes),
        )?;
        d.check("cuStreamCreate", (d.cuStreamCreate)(&mut stream, 0))?;
    }
    let (mut alpha, mut px, mut py, mut count) = (A, x, y, a.elements as i32);
    let mut params: [*mut c_void; 4] = [
        (&raw mut alpha).cast(),
        (&raw mut px).cast(),
        (&raw mut py).cast(),
        (&raw mut count).cast(),
    ];
    let block = a.elements.min(256);
    let grid = a.elements.div_ceil(block);
    let launch = |params: &mut [*mut c_void; 4]| -> Result<()> {
        // SAFETY: `function` is saxpy(float, float *, float *, int), and
        // `params` points at one value of each of those types, alive for
        // the call; the geometry covers the `elements` elements of x and y.
        unsafe {
            d.check(
                "cuLaunchKernel",
                (d.cuLaunchKernel)(
                    function,
                    grid,
                    1,
                    1,
                    block,
                    1,
                    1,
                    0,
                    stream,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                ),
            )?;
            d.check("cuStreamSynchronize", (d.cuStreamSynchronize)(stream))
        }
    };
    for _ in 0..a.warmup {
        launch(&mut params)?;
    }
    let mut times = Vec::with_capacity(a.launches as usize);
    for _ in 0..a.launches {
        let start = Instant::now();
        launch(&mut params)?;
        times.push(start.elapsed().as_secs_f64());
    }
    // The kernel really ran every time, whoever launched it.
    let mut out = vec![0f32; n];
    // SAFETY: `out` holds `bytes` bytes, as does y.
    unsafe {
        d.check(
            "cuMemcpyDtoH_v2 (y)",
            (d.cuMemcpyDtoH_v2)(out.as_mut_ptr().cast(), y, bytes),
        )?;
    }
    let want = PER_LAUNCH * (a.warmup + a.launches) as f32;
    if let Some((i, v)) = out.iter().enumerate().find(|(_, v)| **v != want) {
        return Err(CliError::Command(format!(
            "after {} launches of saxpy y[{i}] is {v}, not {want}: the kernel did not run every launch",
            a.warmup + a.launches
        )));
    }
    let t = timings(times);
    if a.json {
        out!(
            "{}",
            json!({
                "launches": a.launches,
                "warmup": a.warmup,
                "elements": a.elements,
                "min_s": t.min,
                "median_s": t.median,
                "mean_s": t.mean,
                "max_s": t.max,
            })
        );
    } else {
        out!(
            "{} launches of saxpy over {} elements (launch + synchronize): min {:.1} us, median {:.1} us, mean {:.1} us, max {:.1} us",
            a.launches,
            a.elements,
            t.min * 1e6,
            t.median * 1e6,
            t.mean * 1e6,
            t.max * 1e6
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::timings;

    #[test]
    fn medians_of_odd_and_even_counts() {
        let t = timings(vec![3.0, 1.0, 2.0]);
        assert_eq!((t.min, t.median, t.max), (1.0, 2.0, 3.0));
        assert_eq!(timings(vec![4.0, 1.0, 2.0, 3.0]).median, 2.5);
    }
}
