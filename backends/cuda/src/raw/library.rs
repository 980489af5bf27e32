//! Loading the driver library and checking its symbols, without panicking.

use std::sync::OnceLock;

use cudarc::driver::sys;

use crate::error::CudaError;

/// Functions every operation of the executor may call; checked once, when
/// the library is first loaded.
pub(super) const REQUIRED: &[&str] = &[
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
pub(super) const VMM: &[&str] = &[
    "cuMemGetAllocationGranularity",
    "cuMemAddressReserve",
    "cuMemAddressFree",
    "cuMemCreate",
    "cuMemRelease",
    "cuMemMap",
    "cuMemUnmap",
    "cuMemSetAccess",
];

/// What placing host memory at an address for the device needs
/// ([`HostMapping`](super::HostMapping)).
pub(super) const HOST_MAP: &[&str] = &[
    "cuMemHostRegister_v2",
    "cuMemHostUnregister",
    "cuMemHostGetDevicePointer_v2",
];

/// What device-side staging needs (see `CudaExecutor::with_device_staging`).
pub(super) const STAGING: &[&str] = &[
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuStreamWaitEvent",
];

/// What the loaded library offers beyond [`REQUIRED`]. Only [`library`]
/// makes one, so holding one proves the library is loaded with every
/// required symbol: the safe functions of this layer take it for that.
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
    /// Every function in [`HOST_MAP`].
    pub host_map: bool,
    /// Made by [`library`] alone.
    _loaded: (),
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
            host_map: HOST_MAP.iter().all(|s| has_symbol(s)),
            _loaded: (),
        })
    })
    .clone()
}

/// Whether the driver library is loaded with all [`REQUIRED`] symbols.
pub(super) fn loaded() -> bool {
    library().is_ok()
}
