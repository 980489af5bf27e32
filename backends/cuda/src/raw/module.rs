//! Driver calls on modules and their functions.
//!
//! Every function requires the library loaded (a `Device` held, see the
//! [parent module](super)) and the context bound on the calling thread
//! (`Device::bind`) where the driver needs it.

use std::ffi::{CStr, c_void};

use cudarc::driver::sys;

use super::failure::{Failure, refused, result};
use super::library::Library;

/// `cuModuleLoadData`: loads `image` into the current context.
///
/// # Safety
///
/// The library is loaded and the context is bound; `image` points to a
/// whole cubin or fat binary, or to NUL-terminated PTX, live until this
/// returns (the driver copies what it needs). The module is to be unloaded
/// once with [`module_unload`].
unsafe fn module_load_data(image: *const c_void) -> Result<sys::CUmodule, Failure> {
    let mut handle = std::ptr::null_mut();
    // SAFETY: `image` is a whole image (the caller's contract); `handle` is
    // a live out-parameter.
    result("cuModuleLoadData", unsafe {
        sys::cuModuleLoadData(&mut handle, image)
    })?;
    Ok(handle)
}

/// `cuModuleUnload`: unloads a module.
///
/// # Safety
///
/// The library is loaded; `module` came from [`module_load_data`], nothing
/// queued or running uses its code or globals, and neither it nor its
/// functions are used after this.
unsafe fn module_unload(module: sys::CUmodule) -> Result<(), Failure> {
    // SAFETY: an idle module of the caller's, not used again (its
    // contract).
    result("cuModuleUnload", unsafe { sys::cuModuleUnload(module) })
}

/// `cuModuleGetFunction`: the function `name` of `module`; the [`Failure`]
/// is `CUDA_ERROR_NOT_FOUND` when it has none.
///
/// # Safety
///
/// The library is loaded, the context is bound and `module` is loaded.
unsafe fn module_get_function(
    module: sys::CUmodule,
    name: &CStr,
) -> Result<sys::CUfunction, Failure> {
    let mut func = std::ptr::null_mut();
    // SAFETY: the module is loaded (the caller's contract); `name` is
    // NUL-terminated; `func` is a live out-parameter.
    result("cuModuleGetFunction", unsafe {
        sys::cuModuleGetFunction(&mut func, module, name.as_ptr())
    })?;
    Ok(func)
}

/// `cuModuleGetGlobal_v2`: the address and size of the global `name` of
/// `module`; the [`Failure`] is `CUDA_ERROR_NOT_FOUND` when it has none.
///
/// # Safety
///
/// The library is loaded, the context is bound and `module` is loaded.
unsafe fn module_get_global(module: sys::CUmodule, name: &CStr) -> Result<(u64, usize), Failure> {
    let (mut addr, mut size) = (0, 0);
    // SAFETY: the module is loaded (the caller's contract); `name` is
    // NUL-terminated; both out-parameters are live.
    result("cuModuleGetGlobal", unsafe {
        sys::cuModuleGetGlobal_v2(&mut addr, &mut size, module, name.as_ptr())
    })?;
    Ok((addr, size))
}

/// `cuFuncGetAttribute`: an integer attribute of `func`.
///
/// # Safety
///
/// The library is loaded, the context is bound, and `func` is a function
/// of a loaded module.
unsafe fn func_get_attribute(
    func: sys::CUfunction,
    attr: sys::CUfunction_attribute,
) -> Result<i32, Failure> {
    let mut v = 0;
    // SAFETY: `func` is live (the caller's contract); `v` is a live
    // out-parameter.
    result("cuFuncGetAttribute", unsafe {
        sys::cuFuncGetAttribute(&mut v, attr, func)
    })?;
    Ok(v)
}

/// `cuFuncSetAttribute`: sets an integer attribute of `func`.
///
/// # Safety
///
/// The library is loaded, the context is bound, and `func` is a function
/// of a loaded module.
unsafe fn func_set_attribute(
    func: sys::CUfunction,
    attr: sys::CUfunction_attribute,
    value: i32,
) -> Result<(), Failure> {
    // SAFETY: `func` is live (the caller's contract); the attributes it
    // sets take an int.
    result("cuFuncSetAttribute", unsafe {
        sys::cuFuncSetAttribute(func, attr, value)
    })
}

/// `cuFuncGetParamInfo` (CUDA 12.4+): the offset and size of `func`'s
/// parameter `index`; the [`Failure`] is `CUDA_ERROR_INVALID_VALUE` one
/// past the last parameter.
///
/// # Safety
///
/// The library has `cuFuncGetParamInfo` (`Library::param_info`), and
/// `func` is a function of a loaded module.
unsafe fn func_get_param_info(
    func: sys::CUfunction,
    index: usize,
) -> Result<(usize, usize), Failure> {
    let (mut offset, mut size) = (0usize, 0usize);
    // SAFETY: the symbol is present and `func` live (the caller's
    // contract); both out-parameters are live.
    result("cuFuncGetParamInfo", unsafe {
        sys::cuFuncGetParamInfo(func, index, &mut offset, &mut size)
    })?;
    Ok((offset, size))
}

/// `cuModuleLoadDataEx`: loads `image` with JIT `options` and their
/// `values` (one `void *` slot each, in and out, as the driver API
/// documents).
///
/// # Safety
///
/// As for [`module_load_data`]; `options` and `values` have the same
/// length, and every value slot that is a buffer pointer
/// (`CU_JIT_INFO_LOG_BUFFER`, `CU_JIT_ERROR_LOG_BUFFER`) points to a live
/// buffer of the size its size option gives.
unsafe fn module_load_data_ex(
    image: *const c_void,
    options: &mut [sys::CUjit_option],
    values: &mut [*mut c_void],
) -> Result<sys::CUmodule, Failure> {
    let mut handle = std::ptr::null_mut();
    let n = options.len().min(values.len()) as u32;
    // SAFETY: the caller's contract; `handle` is a live out-parameter and
    // both arrays hold `n` entries.
    result("cuModuleLoadDataEx", unsafe {
        sys::cuModuleLoadDataEx(
            &mut handle,
            image,
            n,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    })?;
    Ok(handle)
}

/// A module loaded into a context, loaded until [`ModuleHandle::unload`]
/// consumes it (dropped without that, it stays loaded until the process
/// exits). Launching one of its functions, or copying to or from one of its
/// globals, is the caller's `unsafe` promise to keep it loaded until that
/// work is done.
#[derive(Debug)]
pub(crate) struct ModuleHandle(sys::CUmodule);

// SAFETY: a `CUmodule` is a driver handle usable from any thread (with the
// context bound, which every use does first); the driver API is
// thread-safe.
unsafe impl Send for ModuleHandle {}
// SAFETY: as for `Send`; `&ModuleHandle` offers only thread-safe driver
// calls.
unsafe impl Sync for ModuleHandle {}

impl ModuleHandle {
    /// `cuModuleLoadData`.
    ///
    /// # Safety
    ///
    /// As for [`module_load_data`].
    pub(crate) unsafe fn load(image: *const c_void) -> Result<Self, Failure> {
        // SAFETY: the caller's contract.
        Ok(ModuleHandle(unsafe { module_load_data(image) }?))
    }

    /// `cuModuleLoadDataEx`.
    ///
    /// # Safety
    ///
    /// As for [`module_load_data_ex`].
    pub(crate) unsafe fn load_ex(
        image: *const c_void,
        options: &mut [sys::CUjit_option],
        values: &mut [*mut c_void],
    ) -> Result<Self, Failure> {
        // SAFETY: the caller's contract.
        Ok(ModuleHandle(unsafe {
            module_load_data_ex(image, options, values)
        }?))
    }

    /// The function `name` (`cuModuleGetFunction`); the [`Failure`] is
    /// `CUDA_ERROR_NOT_FOUND` when the module has none. The context is to
    /// be bound.
    pub(crate) fn function(&self, name: &CStr) -> Result<FunctionRef<'_>, Failure> {
        // SAFETY: the library is loaded (a module was) and the module is
        // loaded (`self`).
        let func = unsafe { module_get_function(self.0, name) }?;
        Ok(FunctionRef {
            func,
            module: std::marker::PhantomData,
        })
    }

    /// The address and size of the global `name` (`cuModuleGetGlobal`);
    /// the [`Failure`] is `CUDA_ERROR_NOT_FOUND` when the module has none.
    /// The context is to be bound.
    pub(crate) fn global(&self, name: &CStr) -> Result<(u64, usize), Failure> {
        // SAFETY: as in `function`.
        unsafe { module_get_global(self.0, name) }
    }

    /// Unloads the module (`cuModuleUnload`).
    pub(crate) fn unload(self) -> Result<(), Failure> {
        // SAFETY: loaded by `load` or `load_ex` and consumed here, so never
        // used again; work that used it was promised to be done.
        unsafe { module_unload(self.0) }
    }
}

/// A function's handle, for keeping beside what keeps its module loaded
/// (use it again through [`FunctionRef::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FunctionId(sys::CUfunction);

// SAFETY: a `CUfunction` is a driver handle usable from any thread; the
// driver API is thread-safe, and the id alone calls nothing.
unsafe impl Send for FunctionId {}
// SAFETY: as for `Send`.
unsafe impl Sync for FunctionId {}

impl FunctionId {
    /// The handle, for launches and for telling functions apart.
    pub(crate) fn get(self) -> sys::CUfunction {
        self.0
    }
}

/// A function of a module, for as long as the module is borrowed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FunctionRef<'m> {
    func: sys::CUfunction,
    module: std::marker::PhantomData<&'m ModuleHandle>,
}

impl<'m> FunctionRef<'m> {
    /// `func`, a function of `module`, again.
    ///
    /// # Safety
    ///
    /// `func` came from `module`'s [`ModuleHandle::function`].
    pub(crate) unsafe fn of(_module: &'m ModuleHandle, func: FunctionId) -> Self {
        FunctionRef {
            func: func.0,
            module: std::marker::PhantomData,
        }
    }

    /// Its handle, to keep.
    pub(crate) fn id(self) -> FunctionId {
        FunctionId(self.func)
    }

    /// An integer attribute of the function (`cuFuncGetAttribute`). The
    /// context is to be bound.
    pub(crate) fn attribute(self, attr: sys::CUfunction_attribute) -> Result<i32, Failure> {
        // SAFETY: the library is loaded (a module was); the function's
        // module is loaded while borrowed.
        unsafe { func_get_attribute(self.func, attr) }
    }

    /// Sets an integer attribute of the function (`cuFuncSetAttribute`).
    /// The context is to be bound.
    pub(crate) fn set_attribute(
        self,
        attr: sys::CUfunction_attribute,
        value: i32,
    ) -> Result<(), Failure> {
        // SAFETY: as in `attribute`; the attributes it sets take an int.
        unsafe { func_set_attribute(self.func, attr, value) }
    }

    /// The offset and size of parameter `index` (`cuFuncGetParamInfo`,
    /// CUDA 12.4+; a failure where `lib` lacks it); the [`Failure`] is
    /// `CUDA_ERROR_INVALID_VALUE` one past the last parameter.
    pub(crate) fn param_info(self, lib: &Library, index: usize) -> Result<(usize, usize), Failure> {
        if !lib.param_info {
            return Err(refused(
                "cuFuncGetParamInfo",
                sys::CUresult::CUDA_ERROR_NOT_SUPPORTED,
            ));
        }
        // SAFETY: the symbol is present (checked above); the function's
        // module is loaded while borrowed.
        unsafe { func_get_param_info(self.func, index) }
    }
}
