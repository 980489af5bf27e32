//! Images and their functions: every image the program loads is read (a
//! wrapped fat binary unwrapped) and known to the recorder by the module
//! it became; every function the program finds in one, by name.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

use crate::real::*;
use crate::state;

/// `cuModuleLoadData`.
///
/// # Safety
/// As the driver's: `image` points at a whole PTX, cubin or fat binary.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadData(module: *mut Handle, image: *const c_void) -> CuResult {
    let Some(load) = crate::driver_fn!(ModuleLoadData, "cuModuleLoadData") else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: forwarded unchanged.
    let rc = unsafe { load(module, image) };
    if rc == SUCCESS {
        // SAFETY: the driver accepted it: a valid image, and `module` holds
        // the new module.
        unsafe { state::loaded(*module, image as *const u8) };
    }
    rc
}

/// `cuModuleLoad`: the image is the file the driver loaded, read again
/// once the driver accepted it.
///
/// # Safety
/// As the driver's: `path` is a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoad(module: *mut Handle, path: *const c_char) -> CuResult {
    let Some(load) = crate::driver_fn!(ModuleLoad, "cuModuleLoad") else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: forwarded unchanged.
    let rc = unsafe { load(module, path) };
    if rc == SUCCESS && !module.is_null() && !path.is_null() {
        // SAFETY: the driver read `path` as a C string and wrote the new
        // module.
        state::loaded_from_file(unsafe { *module }, unsafe { CStr::from_ptr(path) });
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
    let Some(load) = crate::driver_fn!(ModuleLoadDataEx, "cuModuleLoadDataEx") else {
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
    let Some(get) = crate::driver_fn!(ModuleGetFunction, "cuModuleGetFunction") else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: forwarded unchanged.
    let rc = unsafe { get(f, module, name) };
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
    let Some(load) = crate::driver_fn!(LibraryLoadData, "cuLibraryLoadData") else {
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
    if rc == SUCCESS && !library.is_null() {
        // SAFETY: the driver wrote the new library and accepted `code` as
        // an image.
        unsafe { state::library_loaded(*library, code as *const u8) };
    }
    rc
}

/// `cuLibraryLoadFromFile` (CUDA 12): as [`cuLibraryLoadData`], the image
/// read from the file once the driver accepted it.
///
/// # Safety
/// As the driver's: `path` is a C string.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuLibraryLoadFromFile(
    library: *mut Handle,
    path: *const c_char,
    jit_options: *mut c_int,
    jit_values: *mut *mut c_void,
    n_jit: c_uint,
    lib_options: *mut c_int,
    lib_values: *mut *mut c_void,
    n_lib: c_uint,
) -> CuResult {
    let Some(load) = crate::driver_fn!(LibraryLoadFromFile, "cuLibraryLoadFromFile") else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: forwarded unchanged.
    let rc = unsafe {
        load(
            library,
            path,
            jit_options,
            jit_values,
            n_jit,
            lib_options,
            lib_values,
            n_lib,
        )
    };
    if rc == SUCCESS && !library.is_null() && !path.is_null() {
        // SAFETY: the driver read `path` as a C string and wrote the new
        // library.
        state::library_loaded_from_file(unsafe { *library }, unsafe { CStr::from_ptr(path) });
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
    let Some(get) = crate::driver_fn!(LibraryGetKernel, "cuLibraryGetKernel") else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: forwarded unchanged.
    let rc = unsafe { get(kernel, library, name) };
    if rc == SUCCESS
        && let Some(module) = state::library_module(library)
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
    let Some(get) = crate::driver_fn!(KernelGetFunction, "cuKernelGetFunction") else {
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

/// `cuModuleLoadFatBinary`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadFatBinary(
    module: *mut Handle,
    image: *const c_void,
) -> CuResult {
    let Some(load) = crate::driver_fn!(ModuleLoadFatBinary, "cuModuleLoadFatBinary") else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: forwarded unchanged.
    let rc = unsafe { load(module, image) };
    if rc == SUCCESS {
        // SAFETY: as for cuModuleLoadData.
        unsafe { state::loaded(*module, image as *const u8) };
    }
    rc
}

/// `cuModuleGetGlobal_v2`: the global's range is kept, so that a launch
/// passing its address is recorded with a mark (`ArgsInGlobals`).
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetGlobal_v2(
    dptr: *mut DevPtr,
    bytes: *mut usize,
    module: Handle,
    name: *const c_char,
) -> CuResult {
    let Some(get) = crate::driver_fn!(ModuleGetGlobal, "cuModuleGetGlobal_v2") else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: forwarded unchanged.
    let rc = unsafe { get(dptr, bytes, module, name) };
    if rc == SUCCESS && !dptr.is_null() && !bytes.is_null() {
        // SAFETY: the driver wrote both.
        crate::heap::heap().global(unsafe { *dptr }, unsafe { *bytes } as u64);
    }
    rc
}
