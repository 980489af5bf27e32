//! The thin layer over `cudarc::driver::sys`: finding the library and its
//! symbols without panicking, turning `CUresult`s into errors, and the device
//! context that every other object keeps alive.
//!
//! cudarc's dynamic loading panics when the library or a symbol is missing,
//! so nothing here calls a `sys` function before [`library`] has loaded the
//! library and checked the symbol is there.

use std::ffi::CStr;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys;

use crate::context::ContextState;
use crate::error::{CudaError, DriverError};

/// Functions every operation of the executor may call; checked once, when
/// the library is first loaded.
const REQUIRED: &[&str] = &[
    "cuGetErrorName",
    "cuGetErrorString",
    "cuInit",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuModuleLoadData",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuModuleGetGlobal_v2",
    "cuFuncGetAttribute",
    "cuFuncSetAttribute",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamQuery",
    "cuStreamSynchronize",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuLaunchKernel",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventElapsedTime",
];

/// The virtual memory management functions that regions need (CUDA 10.2+).
const VMM: &[&str] = &[
    "cuMemGetAllocationGranularity",
    "cuMemAddressReserve",
    "cuMemAddressFree",
    "cuMemCreate",
    "cuMemRelease",
    "cuMemMap",
    "cuMemUnmap",
    "cuMemSetAccess",
];

/// What device-side staging needs (see `CudaExecutor::with_device_staging`).
const STAGING: &[&str] = &[
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuStreamWaitEvent",
];

/// What the loaded library offers beyond [`REQUIRED`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Library {
    /// `cuFuncGetParamInfo` (CUDA 12.4+).
    pub param_info: bool,
    /// Every function in [`VMM`].
    pub vmm: bool,
    /// `cuStreamAddCallback`, whose callbacks run even after a device error
    /// (`cuLaunchHostFunc`'s do not, which would leave a synchronize waiting
    /// forever); slated for removal some day, so optional.
    pub stream_callback: bool,
    /// Every function in [`STAGING`].
    pub staging: bool,
}

/// Whether the library exports `name`.
fn has_symbol(name: &str) -> bool {
    // SAFETY: only called after `is_culib_present()` returned true, so
    // `culib()` finds the library and does not panic. Looking a symbol up
    // does not call it; the pointer type is never used.
    unsafe {
        sys::culib()
            .get::<unsafe extern "C" fn()>(name.as_bytes())
            .is_ok()
    }
}

/// Loads the driver library (once) and checks its symbols.
pub(crate) fn library() -> Result<Library, CudaError> {
    static LIB: OnceLock<Result<Library, CudaError>> = OnceLock::new();
    LIB.get_or_init(|| {
        // SAFETY: loading a shared library runs its initialisers; libcuda's are
        // meant to run in any process. `is_culib_present` only tries to load
        // and unload it and never panics.
        if !unsafe { sys::is_culib_present() } {
            return Err(CudaError::DriverNotFound);
        }
        if let Some(missing) = REQUIRED.iter().find(|s| !has_symbol(s)) {
            return Err(CudaError::MissingSymbol(missing));
        }
        let stream_callback = has_symbol("cuStreamAddCallback");
        if !stream_callback && !has_symbol("cuLaunchHostFunc") {
            return Err(CudaError::MissingSymbol("cuLaunchHostFunc"));
        }
        Ok(Library {
            param_info: has_symbol("cuFuncGetParamInfo"),
            vmm: VMM.iter().all(|s| has_symbol(s)),
            stream_callback,
            staging: STAGING.iter().all(|s| has_symbol(s)),
        })
    })
    .clone()
}

/// Whether the driver library is loaded with all [`REQUIRED`] symbols.
fn loaded() -> bool {
    library().is_ok()
}

/// Reads a static C string the driver returned.
fn driver_str(p: *const std::ffi::c_char) -> Option<&'static str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: `cuGetErrorName`/`cuGetErrorString` return pointers to
    // NUL-terminated strings in the driver's read-only data, which stays
    // mapped for the life of the process (cudarc never unloads the library).
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// The error for a failed `call` that returned `code`.
pub(crate) fn driver_error(call: &'static str, code: sys::CUresult) -> DriverError {
    let mut err = DriverError::from_code(call, code as u32);
    if loaded() {
        let mut name = std::ptr::null();
        let mut desc = std::ptr::null();
        // SAFETY: the library is loaded with both symbols (checked by
        // `library`); both functions only write a pointer through their
        // out-parameter, which points to a live local.
        let (rn, rd) = unsafe {
            (
                sys::cuGetErrorName(code, &mut name),
                sys::cuGetErrorString(code, &mut desc),
            )
        };
        if rn == sys::CUresult::CUDA_SUCCESS {
            err.name = driver_str(name).unwrap_or(err.name);
        }
        if rd == sys::CUresult::CUDA_SUCCESS {
            err.description = driver_str(desc).unwrap_or(err.description);
        }
    }
    err
}

/// `Ok` for `CUDA_SUCCESS`, else the error for `call`.
pub(crate) fn check(call: &'static str, code: sys::CUresult) -> Result<(), DriverError> {
    if code == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(driver_error(call, code))
    }
}

/// What one launch may ask of a device, queried once when the executor is
/// made (see [`crate::CudaExecutor::launch_limits`]).
///
/// A limit of 0 means the driver did not say (an attribute an old driver
/// does not know): it is not checked, and the driver has the last word.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaunchLimits {
    /// Threads per block (`CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
    pub threads_per_block: u32,
    /// Block size per dimension (`CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X/Y/Z`).
    pub block: [u32; 3],
    /// Grid size per dimension (`CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X/Y/Z`).
    pub grid: [u32; 3],
    /// Shared memory per block, static and dynamic together, that a kernel
    /// gets without opting in (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK`,
    /// 48 KiB).
    pub shared_default: u32,
    /// Shared memory per block, static and dynamic together, that a kernel
    /// may opt in to (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`:
    /// 64 KiB on sm_75, 99 KiB on sm_86 and sm_89, 163 KiB on sm_80, 227
    /// KiB on sm_90). Never less than `shared_default` when known.
    pub shared_optin: u32,
}

impl LaunchLimits {
    /// Queries the limits of `device`. An attribute the driver will not
    /// report is 0 (unknown), never a failure: a limit is only a check made
    /// ahead of the driver's own.
    fn query(device: sys::CUdevice) -> Self {
        use sys::CUdevice_attribute as A;
        let get = |attr| match attribute(device, attr) {
            Ok(v) => v.max(0) as u32,
            Err(e) => {
                log::debug!("{attr:?} unknown, not checked: {e}");
                0
            }
        };
        let shared_default = get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
        LaunchLimits {
            threads_per_block: get(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
            block: [
                get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
                get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z),
            ],
            grid: [
                get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
                get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z),
            ],
            shared_default,
            // Devices that cannot opt in report the default; unknown stays
            // unknown (the default is no limit on what opting in gives).
            shared_optin: match get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) {
                0 => 0,
                optin => optin.max(shared_default),
            },
        }
    }

    /// Checks a launch's geometry against the limits: a dimension of 0 in
    /// the block or the grid first (never valid, whatever the limits), then
    /// the threads of a block (the usual mistake), then each dimension of
    /// the block and of the grid. Shared memory is checked per kernel
    /// ([`LaunchLimits::check_shared`]), which needs the kernel's static
    /// size.
    pub(crate) fn check(&self, grid: [u32; 3], block: [u32; 3]) -> Result<(), CudaError> {
        for (what, dims) in [("block", block), ("grid", grid)] {
            if dims.contains(&0) {
                return Err(CudaError::ZeroDimension { what, dims });
            }
        }
        // Saturating: three u32 dimensions can overflow a u64.
        let threads = block
            .iter()
            .fold(1u64, |n, &d| n.saturating_mul(u64::from(d)));
        if self.threads_per_block > 0 && threads > u64::from(self.threads_per_block) {
            return Err(CudaError::ThreadsPerBlock {
                block,
                limit: self.threads_per_block,
            });
        }
        for (what, dims, limits) in [("block", block, self.block), ("grid", grid, self.grid)] {
            for axis in 0..3 {
                if limits[axis] > 0 && dims[axis] > limits[axis] {
                    return Err(CudaError::LaunchDimension {
                        what,
                        dims,
                        axis,
                        limit: limits[axis],
                    });
                }
            }
        }
        Ok(())
    }

    /// Checks a kernel's static shared memory plus a launch's dynamic shared
    /// memory against the opt-in limit, which bounds the two together.
    pub(crate) fn check_shared(
        &self,
        static_bytes: u32,
        dynamic_bytes: u32,
    ) -> Result<(), CudaError> {
        let total = u64::from(static_bytes) + u64::from(dynamic_bytes);
        if self.shared_optin > 0 && total > u64::from(self.shared_optin) {
            return Err(CudaError::SharedMemory {
                static_bytes,
                dynamic_bytes,
                limit: self.shared_optin,
            });
        }
        Ok(())
    }
}

/// Queries an integer attribute of `device`.
fn attribute(device: sys::CUdevice, attr: sys::CUdevice_attribute) -> Result<i32, DriverError> {
    let mut v = 0;
    // SAFETY: the library is loaded (callers hold a `Device` or are opening
    // one); `device` came from cuDeviceGet; `v` is a live out-parameter.
    check("cuDeviceGetAttribute", unsafe {
        sys::cuDeviceGetAttribute(&mut v, attr, device)
    })?;
    Ok(v)
}

/// One device and its retained primary context.
///
/// Everything made from an executor (regions, images, kernels, buffers,
/// queues) holds an `Arc<Device>`, so the context outlives all of it.
#[derive(Debug)]
pub(crate) struct Device {
    pub ordinal: i32,
    pub device: sys::CUdevice,
    pub ctx: sys::CUcontext,
    pub lib: Library,
    /// What a launch may ask of the device.
    pub limits: LaunchLimits,
    /// What the queues of the context share, with every other `Device` of
    /// the same context (another executor of the same device). Let go of
    /// in `Drop` before the context is released.
    pub state: ManuallyDrop<Arc<ContextState>>,
    /// Errors raised in `Drop` paths, reported by the next synchronize.
    deferred: Mutex<Option<CudaError>>,
}

// SAFETY: `CUcontext` is a handle the driver lets any thread use (made
// current with `cuCtxSetCurrent`, which `bind` does before every call); the
// driver API is thread-safe. The only mutable state (its own and the
// context's `ContextState`) is behind `Mutex`es.
unsafe impl Send for Device {}
// SAFETY: as for `Send`; `&Device` offers only thread-safe driver calls.
unsafe impl Sync for Device {}

impl Device {
    /// Initialises the driver and retains the primary context of device
    /// `ordinal`.
    pub fn open(ordinal: i32) -> Result<Device, CudaError> {
        let lib = library()?;
        // SAFETY: the library and symbol are present (`library`); cuInit takes
        // flags (must be 0) and may be called any number of times.
        let r = unsafe { sys::cuInit(0) };
        if r == sys::CUresult::CUDA_ERROR_NO_DEVICE {
            return Err(CudaError::NoDevice);
        }
        check("cuInit", r)?;
        let mut count = 0;
        // SAFETY: initialised above; `count` is a live out-parameter.
        check("cuDeviceGetCount", unsafe {
            sys::cuDeviceGetCount(&mut count)
        })?;
        if count == 0 {
            return Err(CudaError::NoDevice);
        }
        if !(0..count).contains(&ordinal) {
            return Err(CudaError::BadOrdinal { ordinal, count });
        }
        let mut device = 0;
        // SAFETY: the ordinal is in range; `device` is a live out-parameter.
        check("cuDeviceGet", unsafe {
            sys::cuDeviceGet(&mut device, ordinal)
        })?;
        let limits = LaunchLimits::query(device);
        let mut ctx = std::ptr::null_mut();
        // SAFETY: `device` came from cuDeviceGet; `ctx` is a live
        // out-parameter. The retain is released in `Drop`.
        check("cuDevicePrimaryCtxRetain", unsafe {
            sys::cuDevicePrimaryCtxRetain(&mut ctx, device)
        })?;
        let dev = Device {
            ordinal,
            device,
            ctx,
            lib,
            limits,
            state: ManuallyDrop::new(ContextState::of(ctx as usize)),
            deferred: Mutex::new(None),
        };
        dev.bind()?;
        Ok(dev)
    }

    /// Makes the context current on the calling thread.
    pub fn bind(&self) -> Result<(), DriverError> {
        let mut cur = std::ptr::null_mut();
        // SAFETY: `cur` is a live out-parameter.
        check("cuCtxGetCurrent", unsafe { sys::cuCtxGetCurrent(&mut cur) })?;
        if cur != self.ctx {
            // SAFETY: `self.ctx` is retained until `self` drops.
            check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.ctx) })?;
        }
        Ok(())
    }

    /// Queries an integer device attribute.
    pub fn attribute(&self, attr: sys::CUdevice_attribute) -> Result<i32, DriverError> {
        attribute(self.device, attr)
    }

    /// The compute capability, `(major, minor)`.
    pub fn compute_capability(&self) -> Result<(u32, u32), DriverError> {
        use sys::CUdevice_attribute as A;
        let major = self.attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = self.attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        Ok((major.max(0) as u32, minor.max(0) as u32))
    }

    /// Keeps the first error of a `Drop` path for the next synchronize.
    pub fn defer(&self, e: impl Into<CudaError>) {
        let mut slot = self.deferred.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e.into());
    }

    /// Runs a cleanup call in a `Drop` path, keeping its error; `true`
    /// when it succeeded.
    pub fn cleanup(&self, call: &'static str, f: impl FnOnce() -> sys::CUresult) -> bool {
        match self.bind().and_then(|()| check(call, f())) {
            Ok(()) => true,
            Err(e) => {
                self.defer(e);
                false
            }
        }
    }

    /// Takes the error a `Drop` path kept, if any.
    pub fn take_deferred(&self) -> Option<CudaError> {
        self.deferred
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: taken once, here, and `self.state` is not used again.
        let state = unsafe { ManuallyDrop::take(&mut self.state) };
        let device = self.device;
        // The state goes first: a context retained afresh at the same handle
        // once this one is released must not get it.
        ContextState::release(state, || {
            // SAFETY: releases the retain taken in `open`; every object that
            // used the context held an `Arc<Device>` and is gone. Nothing is
            // left to report an error to.
            let _ = unsafe { sys::cuDevicePrimaryCtxRelease_v2(device) };
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_driver_is_a_typed_error() {
        // SAFETY: only tries to load the library.
        if unsafe { sys::is_culib_present() } {
            return;
        }
        assert_eq!(library().unwrap_err(), CudaError::DriverNotFound);
        let e = driver_error("cuInit", sys::CUresult::CUDA_ERROR_NO_DEVICE);
        assert_eq!(e.name, "CUDA_ERROR_NO_DEVICE");
        assert_eq!(e.call, "cuInit");
    }

    /// An H200's launch limits.
    const H200: LaunchLimits = LaunchLimits {
        threads_per_block: 1024,
        block: [1024, 1024, 64],
        grid: [i32::MAX as u32, 65535, 65535],
        shared_default: 48 << 10,
        shared_optin: 227 << 10,
    };

    #[test]
    fn a_limit_of_zero_is_not_checked() {
        let unknown = LaunchLimits::default();
        let huge = [u32::MAX; 3];
        assert_eq!(unknown.check(huge, huge), Ok(()));
        assert_eq!(unknown.check_shared(48 << 10, u32::MAX), Ok(()));
        // Known limits are; shared memory counts static and dynamic together.
        let h200 = H200;
        assert_eq!(h200.check([1, 65535, 1], [1024, 1, 1]), Ok(()));
        assert!(h200.check([1, 1, 1], [1, 1, 65]).is_err());
        // Threads counted without overflow.
        let e = h200.check([1, 1, 1], huge).unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("{} threads", u128::from(u32::MAX).pow(3))),
            "{e}"
        );
        assert_eq!(h200.check_shared(16 << 10, 211 << 10), Ok(()));
        assert_eq!(
            h200.check_shared(16 << 10, 212 << 10),
            Err(CudaError::SharedMemory {
                static_bytes: 16 << 10,
                dynamic_bytes: 212 << 10,
                limit: 227 << 10,
            })
        );
        assert!(
            h200.check_shared(u32::MAX, u32::MAX).is_err(),
            "no overflow"
        );
        // Only the unknown dimension goes unchecked.
        let no_z = LaunchLimits {
            block: [1024, 1024, 0],
            ..h200
        };
        assert!(no_z.check([1, 1, 1], [1, 1, 1 << 20]).is_err(), "threads");
        assert_eq!(no_z.check([1, 1, 1], [1, 1, 512]), Ok(()));
    }

    #[test]
    fn a_dimension_of_zero_is_refused_whatever_the_limits() {
        let h200 = H200;
        for limits in [LaunchLimits::default(), h200] {
            for axis in 0..3 {
                let mut zero = [1; 3];
                zero[axis] = 0;
                assert_eq!(
                    limits.check(zero, [256, 1, 1]),
                    Err(CudaError::ZeroDimension {
                        what: "grid",
                        dims: zero
                    })
                );
                assert_eq!(
                    limits.check([4, 1, 1], zero),
                    Err(CudaError::ZeroDimension {
                        what: "block",
                        dims: zero
                    })
                );
            }
        }
        // Before any limit: a zero grid is named even beside a block over
        // the limit.
        assert_eq!(
            h200.check([0, 1, 1], [2048, 1, 1]).unwrap_err().to_string(),
            "grid 0x1x1: every dimension must be at least 1"
        );
    }
}
