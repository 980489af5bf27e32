//! The program `reprise bench` times the interposer with (the hidden
//! `reprise __launch-loop` runs it): the benchmark's saxpy launched in a
//! loop the way an unmodified CUDA program launches it, each launch and
//! synchronize timed.
//!
//! The driver is reached as CUDA's runtime reaches it: `dlopen` of
//! `libcuda.so.1` and `dlsym` of each entry point on its handle, so a
//! preloaded interposer (which exports `dlsym`) hands out its hooks.
//! Nothing else of reprise touches the driver in this process.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::fmt;
use std::time::Instant;

use reprise::cuda_abi;

/// Why the loop did not measure.
#[derive(Debug)]
pub enum LoopError {
    /// `libcuda.so.1` could not be loaded.
    Load(libloading::Error),
    /// The driver lacks an entry point the loop calls.
    Missing(&'static str),
    /// A driver call failed: the call, the driver's name of its result
    /// (if it has one) and the result.
    Call {
        /// The call, and what it was for.
        call: &'static str,
        /// The driver's name of `rc`.
        name: Option<String>,
        /// The `CUresult`.
        rc: cuda_abi::CuResult,
    },
    /// After `launches` launches, `y[index]` is `value`, not `want`: the
    /// kernel did not run every launch.
    Missed {
        /// Launches, warm-up included.
        launches: u32,
        /// The first element that is wrong.
        index: usize,
        /// What it is.
        value: f32,
        /// What it should be.
        want: f32,
    },
}

impl fmt::Display for LoopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoopError::Load(e) => write!(f, "loading the CUDA driver libcuda.so.1: {e}"),
            LoopError::Missing(name) => write!(f, "libcuda.so.1 lacks {name}"),
            LoopError::Call { call, name, rc } => write!(
                f,
                "{call} failed: {} ({rc})",
                name.as_deref().unwrap_or("an unknown CUresult")
            ),
            LoopError::Missed {
                launches,
                index,
                value,
                want,
            } => write!(
                f,
                "after {launches} launches of saxpy y[{index}] is {value}, not {want}: the kernel \
                 did not run every launch"
            ),
        }
    }
}

impl std::error::Error for LoopError {}

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
    fn open() -> Result<Driver, LoopError> {
        // SAFETY: loading the CUDA driver runs its initialisers, which
        // expect nothing of the caller.
        let lib = unsafe { libloading::Library::new("libcuda.so.1") }.map_err(LoopError::Load)?;
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
        .map_err(LoopError::Missing)
    }

    /// `Ok` for `CUDA_SUCCESS`, else the error of `call`.
    fn check(&self, call: &'static str, rc: cuda_abi::CuResult) -> Result<(), LoopError> {
        if rc == 0 {
            return Ok(());
        }
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: a valid out-pointer; the driver hands back a static
        // string or leaves it alone.
        let named =
            (unsafe { (self.cuGetErrorName)(rc, &mut name) } == 0 && !name.is_null()).then(|| {
                // SAFETY: the driver's error names are NUL-terminated
                // static strings.
                unsafe { CStr::from_ptr(name) }
                    .to_string_lossy()
                    .into_owned()
            });
        Err(LoopError::Call {
            call,
            name: named,
            rc,
        })
    }
}

/// What the loop measured: seconds per launch and synchronize.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timings {
    /// The fastest.
    pub min: f64,
    /// The median.
    pub median: f64,
    /// The mean.
    pub mean: f64,
    /// The slowest.
    pub max: f64,
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

/// Launches the saxpy over `elements` elements `warmup` times untimed, then
/// `launches` times timed (at least 1 each of elements and launches, and
/// at most `i32::MAX` elements), and checks it ran every time.
pub fn run(launches: u32, elements: u32, warmup: u32) -> Result<Timings, LoopError> {
    let launches = launches.max(1);
    let elements = elements.clamp(1, i32::MAX as u32);
    let d = Driver::open()?;
    let n = elements as usize;
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
    let (mut alpha, mut px, mut py, mut count) = (A, x, y, elements as i32);
    let mut params: [*mut c_void; 4] = [
        (&raw mut alpha).cast(),
        (&raw mut px).cast(),
        (&raw mut py).cast(),
        (&raw mut count).cast(),
    ];
    let block = elements.min(256);
    let grid = elements.div_ceil(block);
    let launch = |params: &mut [*mut c_void; 4]| -> Result<(), LoopError> {
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
    for _ in 0..warmup {
        launch(&mut params)?;
    }
    let mut times = Vec::with_capacity(launches as usize);
    for _ in 0..launches {
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
    let want = PER_LAUNCH * (warmup + launches) as f32;
    if let Some((i, v)) = out.iter().enumerate().find(|(_, v)| **v != want) {
        return Err(LoopError::Missed {
            launches: warmup + launches,
            index: i,
            value: *v,
            want,
        });
    }
    Ok(timings(times))
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
