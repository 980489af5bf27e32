//! The driver entry points the interposer exports. Each calls the driver's
//! own function first, as the program would have, and records alongside;
//! a failure of the recording turns recording off for the rest of the run
//! (one line on stderr) and never changes what the program's call returns.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

use crate::real::*;
use crate::state::{self, Launch};

/// `cuMemAlloc_v2`: served from the recording region while it has room.
///
/// # Safety
/// As the driver's: `dptr` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut DevPtr, size: usize) -> CuResult {
    if !dptr.is_null()
        && let Some(addr) = state::alloc(size as u64)
    {
        // SAFETY: the caller's out-pointer, checked non-null.
        unsafe { *dptr = addr };
        return SUCCESS;
    }
    match real() {
        // SAFETY: forwarded unchanged.
        Ok(r) => unsafe { (r.cuMemAlloc_v2)(dptr, size) },
        Err(_) => ERROR_NOT_FOUND,
    }
}

/// `cuMemFree_v2`: memory of the region is not handed out again (it is a
/// bump allocator), the rest goes to the driver.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFree_v2(dptr: DevPtr) -> CuResult {
    if state::in_region(dptr) {
        return SUCCESS;
    }
    match real() {
        // SAFETY: forwarded unchanged.
        Ok(r) => unsafe { (r.cuMemFree_v2)(dptr) },
        Err(_) => ERROR_NOT_FOUND,
    }
}

/// `cuModuleLoadData`.
///
/// # Safety
/// As the driver's: `image` points at a whole PTX, cubin or fat binary.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadData(module: *mut Handle, image: *const c_void) -> CuResult {
    let Ok(r) = real() else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: forwarded unchanged.
    let rc = unsafe { (r.cuModuleLoadData)(module, image) };
    if rc == SUCCESS {
        // SAFETY: the driver accepted it: a valid image, and `module` holds
        // the new module.
        unsafe { state::loaded(*module, image as *const u8) };
    }
    rc
}

/// `cuModuleLoadDataEx` (its JIT options do not change the image).
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    module: *mut Handle,
    image: *const c_void,
    n: c_uint,
    options: *mut c_int,
    values: *mut *mut c_void,
) -> CuResult {
    let Some(load) = optional::<ModuleLoadDataEx>("cuModuleLoadDataEx") else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: forwarded unchanged.
    let rc = unsafe { load(module, image, n, options, values) };
    if rc == SUCCESS {
        // SAFETY: as for cuModuleLoadData.
        unsafe { state::loaded(*module, image as *const u8) };
    }
    rc
}

/// `cuModuleGetFunction`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetFunction(
    f: *mut Handle,
    module: Handle,
    name: *const c_char,
) -> CuResult {
    let Ok(r) = real() else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: forwarded unchanged.
    let rc = unsafe { (r.cuModuleGetFunction)(f, module, name) };
    if rc == SUCCESS {
        // SAFETY: the driver read `name` as a C string and wrote `*f`.
        let name = unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: as above.
        state::function(unsafe { *f }, module, &name);
    }
    rc
}

/// `cuMemAllocAsync`: served from the recording region while it has room
/// (a bump allocation is usable at once, so stream order holds).
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocAsync(
    dptr: *mut DevPtr,
    size: usize,
    stream: Handle,
) -> CuResult {
    if !dptr.is_null()
        && let Some(addr) = state::alloc(size as u64)
    {
        // SAFETY: the caller's out-pointer, checked non-null.
        unsafe { *dptr = addr };
        return SUCCESS;
    }
    match optional::<MemAllocAsync>("cuMemAllocAsync") {
        // SAFETY: forwarded unchanged.
        Some(f) => unsafe { f(dptr, size, stream) },
        None => ERROR_NOT_FOUND,
    }
}

/// `cuMemFreeAsync`: region memory is not handed out again.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFreeAsync(dptr: DevPtr, stream: Handle) -> CuResult {
    if state::in_region(dptr) {
        return SUCCESS;
    }
    match optional::<MemFreeAsync>("cuMemFreeAsync") {
        // SAFETY: forwarded unchanged.
        Some(f) => unsafe { f(dptr, stream) },
        None => ERROR_NOT_FOUND,
    }
}

/// The module inside a library.
fn library_module(library: Handle) -> Option<Handle> {
    let get = optional::<LibraryGetModule>("cuLibraryGetModule")?;
    let mut module: Handle = std::ptr::null_mut();
    // SAFETY: a library the driver just handed out, and a valid out-pointer.
    (unsafe { get(&mut module, library) } == SUCCESS).then_some(module)
}

/// `cuLibraryLoadData` (CUDA 12's runtime loads its kernels so).
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuLibraryLoadData(
    library: *mut Handle,
    code: *const c_void,
    jit_options: *mut c_int,
    jit_values: *mut *mut c_void,
    n_jit: c_uint,
    lib_options: *mut c_int,
    lib_values: *mut *mut c_void,
    n_lib: c_uint,
) -> CuResult {
    let Some(load) = optional::<LibraryLoadData>("cuLibraryLoadData") else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: forwarded unchanged.
    let rc = unsafe {
        load(
            library,
            code,
            jit_options,
            jit_values,
            n_jit,
            lib_options,
            lib_values,
            n_lib,
        )
    };
    if rc == SUCCESS
        // SAFETY: the driver wrote the new library.
        && let Some(module) = library_module(unsafe { *library })
    {
        // SAFETY: the driver accepted `code` as an image.
        unsafe { state::loaded(module, code as *const u8) };
    }
    rc
}

/// `cuLibraryGetKernel`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetKernel(
    kernel: *mut Handle,
    library: Handle,
    name: *const c_char,
) -> CuResult {
    let Some(get) = optional::<LibraryGetKernel>("cuLibraryGetKernel") else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: forwarded unchanged.
    let rc = unsafe { get(kernel, library, name) };
    if rc == SUCCESS
        && let Some(module) = library_module(library)
    {
        // SAFETY: the driver read `name` as a C string and wrote `*kernel`.
        let name = unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: as above.
        state::function(unsafe { *kernel }, module, &name);
    }
    rc
}

/// `cuKernelGetFunction`: the function is the kernel's other handle.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetFunction(f: *mut Handle, kernel: Handle) -> CuResult {
    let Some(get) = optional::<KernelGetFunction>("cuKernelGetFunction") else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: forwarded unchanged.
    let rc = unsafe { get(f, kernel) };
    if rc == SUCCESS {
        // SAFETY: the driver wrote `*f`.
        state::alias(unsafe { *f }, kernel);
    }
    rc
}

/// `CU_STREAM_PER_THREAD`: the per-thread default stream, as a handle any
/// entry point takes.
const STREAM_PER_THREAD: usize = 0x2;

/// Records `launch` if selected: `Some(result)` when the recorder ran it.
///
/// # Safety
/// `params` holds one pointer per parameter of `f`.
#[allow(clippy::too_many_arguments)]
unsafe fn try_record(
    f: Handle,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared: c_uint,
    stream: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Option<CuResult> {
    if !extra.is_null() || params.is_null() {
        return None;
    }
    let launch = Launch {
        function: f,
        grid,
        block,
        shared,
        stream,
        params,
    };
    // SAFETY: the caller's guarantee.
    unsafe { state::launch(&launch) }
}

/// `cuLaunchKernel`: a launch the configuration selects is recorded (the
/// recorder runs it, with its snapshots, on the program's stream); every
/// other goes straight to the driver.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernel(
    f: Handle,
    gx: c_uint,
    gy: c_uint,
    gz: c_uint,
    bx: c_uint,
    by: c_uint,
    bz: c_uint,
    shared: c_uint,
    stream: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult {
    let Ok(r) = real() else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: the driver's own requirement on `params`.
    if let Some(rc) =
        unsafe { try_record(f, [gx, gy, gz], [bx, by, bz], shared, stream, params, extra) }
    {
        return rc;
    }
    // SAFETY: forwarded unchanged.
    unsafe { (r.cuLaunchKernel)(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra) }
}

/// `cuLaunchKernel_ptsz` (what `cuGetProcAddress` hands out for the
/// per-thread default stream): as [`cuLaunchKernel`], its stream 0 being
/// the thread's default stream.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernel_ptsz(
    f: Handle,
    gx: c_uint,
    gy: c_uint,
    gz: c_uint,
    bx: c_uint,
    by: c_uint,
    bz: c_uint,
    shared: c_uint,
    stream: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult {
    type LaunchFn = unsafe extern "C" fn(
        Handle,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        Handle,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> CuResult;
    let Some(real) = optional::<LaunchFn>("cuLaunchKernel_ptsz") else {
        return ERROR_NOT_FOUND;
    };
    let recorded_on = if stream.is_null() {
        STREAM_PER_THREAD as Handle
    } else {
        stream
    };
    // SAFETY: the driver's own requirement on `params`.
    if let Some(rc) = unsafe {
        try_record(
            f,
            [gx, gy, gz],
            [bx, by, bz],
            shared,
            recorded_on,
            params,
            extra,
        )
    } {
        return rc;
    }
    // SAFETY: forwarded unchanged.
    unsafe { real(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra) }
}

/// `CUlaunchConfig` (cuda.h): grid, block, dynamic shared memory, stream
/// and launch attributes.
#[repr(C)]
pub struct LaunchConfig {
    /// Grid in x, y, z.
    pub grid: [c_uint; 3],
    /// Block in x, y, z.
    pub block: [c_uint; 3],
    /// Dynamic shared memory.
    pub shared: c_uint,
    /// The stream.
    pub stream: Handle,
    /// Launch attributes (`CUlaunchAttribute`, 72 bytes each).
    pub attrs: *mut c_void,
    /// How many.
    pub num_attrs: c_uint,
}

type LaunchExFn = unsafe extern "C" fn(
    *const LaunchConfig,
    Handle,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CuResult;

/// [`cuLaunchKernelEx`] and its `_ptsz` variant: launches without
/// attributes are recorded as `cuLaunchKernel`'s; launches with attributes
/// (cooperative, clusters, priorities) run unrecorded.
///
/// # Safety
/// As the driver's.
unsafe fn launch_ex(
    real: &'static str,
    config: *const LaunchConfig,
    f: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    per_thread: bool,
) -> CuResult {
    let Some(launch) = optional::<LaunchExFn>(real) else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: the caller's config, valid for the call.
    if let Some(c) = unsafe { config.as_ref() }
        && c.num_attrs == 0
    {
        let stream = if per_thread && c.stream.is_null() {
            STREAM_PER_THREAD as Handle
        } else {
            c.stream
        };
        // SAFETY: the driver's own requirement on `params`.
        if let Some(rc) = unsafe { try_record(f, c.grid, c.block, c.shared, stream, params, extra) }
        {
            return rc;
        }
    }
    // SAFETY: forwarded unchanged.
    unsafe { launch(config, f, params, extra) }
}

/// `cuLaunchKernelEx` (CUDA 12).
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernelEx(
    config: *const LaunchConfig,
    f: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult {
    // SAFETY: as the driver's.
    unsafe { launch_ex("cuLaunchKernelEx", config, f, params, extra, false) }
}

/// `cuLaunchKernelEx_ptsz`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernelEx_ptsz(
    config: *const LaunchConfig,
    f: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult {
    // SAFETY: as the driver's.
    unsafe { launch_ex("cuLaunchKernelEx_ptsz", config, f, params, extra, true) }
}
