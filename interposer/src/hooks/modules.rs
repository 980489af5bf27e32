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

/// The options both library loaders take after their source, forwarded
/// unchanged: JIT options, values, count; library options, values, count.
type LibraryOptions = (
    *mut c_int,
    *mut *mut c_void,
    c_uint,
    *mut c_int,
    *mut *mut c_void,
    c_uint,
);

/// A library loader of the driver whose source is `S` (an image or a path).
type LibraryLoad<S> = unsafe extern "C" fn(
    *mut Handle,
    S,
    *mut c_int,
    *mut *mut c_void,
    c_uint,
    *mut c_int,
    *mut *mut c_void,
    c_uint,
) -> CuResult;

/// What `cuLibraryLoadData` and `cuLibraryLoadFromFile` share: the driver's
/// `load`, if it has one (`name`), called with the program's arguments
/// unchanged, then `loaded` with the new library and `source` once it
/// succeeded.
///
/// # Safety
/// As the driver's loader.
unsafe fn load_library<S: Copy>(
    load: Option<LibraryLoad<S>>,
    library: *mut Handle,
    source: S,
    options: LibraryOptions,
    loaded: impl FnOnce(Handle, S),
) -> CuResult {
    let Some(load) = load else {
        return ERROR_NOT_FOUND;
    };
    let (jit_options, jit_values, n_jit, lib_options, lib_values, n_lib) = options;
    // SAFETY: forwarded unchanged.
    let rc = unsafe {
        load(
            library,
            source,
            jit_options,
            jit_values,
            n_jit,
            lib_options,
            lib_values,
            n_lib,
        )
    };
    if rc == SUCCESS && !library.is_null() {
        // SAFETY: the driver wrote the new library.
        loaded(unsafe { *library }, source);
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
    jit_opts: *mut c_int,
    jit_vals: *mut *mut c_void,
    n_jit: c_uint,
    lib_opts: *mut c_int,
    lib_vals: *mut *mut c_void,
    n_lib: c_uint,
) -> CuResult {
    let load = crate::driver_fn!(LibraryLoadData, "cuLibraryLoadData");
    let options = (jit_opts, jit_vals, n_jit, lib_opts, lib_vals, n_lib);
    let loaded = |library, code: *const c_void| {
        // SAFETY: the driver wrote the new library and accepted `code` as an
        // image.
        unsafe { state::library_loaded(library, code as *const u8) }
    };
    // SAFETY: the program's arguments, as the driver takes them.
    unsafe { load_library(load, library, code, options, loaded) }
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
    jit_opts: *mut c_int,
    jit_vals: *mut *mut c_void,
    n_jit: c_uint,
    lib_opts: *mut c_int,
    lib_vals: *mut *mut c_void,
    n_lib: c_uint,
) -> CuResult {
    let load = crate::driver_fn!(LibraryLoadFromFile, "cuLibraryLoadFromFile");
    let options = (jit_opts, jit_vals, n_jit, lib_opts, lib_vals, n_lib);
    let loaded = |library, path: *const c_char| {
        if !path.is_null() {
            // SAFETY: the driver read `path` as a C string.
            state::library_loaded_from_file(library, unsafe { CStr::from_ptr(path) });
        }
    };
    // SAFETY: the program's arguments, as the driver takes them.
    unsafe { load_library(load, library, path, options, loaded) }
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
