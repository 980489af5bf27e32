//! Driver calls on modules and their functions.
//!
//! Every function requires the library loaded (a `Device` held, see the
//! [parent module](super)) and the context bound on the calling thread
//! (`Device::bind`) where the driver needs it.

use std::ffi::{CStr, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

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
pub(crate) struct ModuleHandle {
    handle: sys::CUmodule,
    /// This load's number, unique in the process: a [`FunctionId`] carries
    /// it, so [`FunctionRef::of`] knows a function of this module from one
    /// of a module unloaded before whose handle the driver reused.
    serial: u64,
}

/// The number of the next module loaded.
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(0);

/// The JIT options a load passes on: each takes an unsigned int in its
/// value slot (CUDA Driver API, `CUjit_option`), so none makes the driver
/// read or write through a pointer.
const SCALAR_OPTIONS: [sys::CUjit_option; 6] = [
    sys::CUjit_option::CU_JIT_MAX_REGISTERS,
    sys::CUjit_option::CU_JIT_THREADS_PER_BLOCK,
    sys::CUjit_option::CU_JIT_OPTIMIZATION_LEVEL,
    sys::CUjit_option::CU_JIT_GENERATE_DEBUG_INFO,
    sys::CUjit_option::CU_JIT_GENERATE_LINE_INFO,
    sys::CUjit_option::CU_JIT_CACHE_MODE,
];

/// The JIT's logs of a load with options, each as the driver left its
/// buffer (text up to the first NUL byte).
#[derive(Debug)]
pub(crate) struct JitLogBuffers {
    /// `CU_JIT_INFO_LOG_BUFFER`.
    pub info: Vec<u8>,
    /// `CU_JIT_ERROR_LOG_BUFFER`.
    pub error: Vec<u8>,
}

/// `Ok` when the driver reads `image` inside the slice: an ELF file
/// ([`elf_whole`]), a fat binary whose first container lies inside it, or
/// else text (PTX) with a NUL byte that ends it. The [`Failure`] is
/// `call`'s `CUDA_ERROR_INVALID_IMAGE` otherwise, as the driver's own for
/// an image it cannot read.
fn check_whole(call: &'static str, image: &[u8]) -> Result<(), Failure> {
    let whole = match image.get(..4) {
        Some(b"\x7fELF") => elf_whole(image),
        Some(&[0x50, 0xED, 0x55, 0xBA]) => fatbin_whole(image),
        _ => image.contains(&0),
    };
    if whole {
        Ok(())
    } else {
        Err(refused(call, sys::CUresult::CUDA_ERROR_INVALID_IMAGE))
    }
}

/// Little-endian `N` bytes of `b` at `at`.
fn le<const N: usize>(b: &[u8], at: u64) -> Option<[u8; N]> {
    let at = usize::try_from(at).ok()?;
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}

fn u16_at(b: &[u8], at: u64) -> Option<u64> {
    le::<2>(b, at).map(|v| u64::from(u16::from_le_bytes(v)))
}

fn u32_at(b: &[u8], at: u64) -> Option<u64> {
    le::<4>(b, at).map(|v| u64::from(u32::from_le_bytes(v)))
}

fn u64_at(b: &[u8], at: u64) -> Option<u64> {
    le::<8>(b, at).map(u64::from_le_bytes)
}

/// `count` entries of `size` bytes from `offset` lie inside `len` bytes.
fn table_inside(offset: u64, size: u64, count: u64, len: usize) -> bool {
    size.checked_mul(count)
        .and_then(|n| n.checked_add(offset))
        .is_some_and(|end| end <= len as u64)
}

/// A 64-bit little-endian ELF file (what cubins are) whose program and
/// section header tables, and every segment's and section's bytes in the
/// file, lie inside `image`.
fn elf_whole(image: &[u8]) -> bool {
    // ELFCLASS64, ELFDATA2LSB.
    if image.get(4..6) != Some(&[2, 1]) {
        return false;
    }
    let header = || {
        let (phoff, shoff) = (u64_at(image, 0x20)?, u64_at(image, 0x28)?);
        let (phentsize, phnum) = (u16_at(image, 0x36)?, u16_at(image, 0x38)?);
        let (shentsize, mut shnum) = (u16_at(image, 0x3A)?, u16_at(image, 0x3C)?);
        if shnum == 0 && shoff != 0 {
            // More sections than the field holds: section 0's `sh_size`
            // says how many.
            shnum = u64_at(image, shoff.checked_add(0x20)?)?;
        }
        Some((phoff, phentsize, phnum, shoff, shentsize, shnum))
    };
    let Some((phoff, phentsize, phnum, shoff, shentsize, shnum)) = header() else {
        return false;
    };
    let len = image.len();
    if (phnum > 0 && (phentsize < 0x38 || !table_inside(phoff, phentsize, phnum, len)))
        || (shnum > 0 && (shentsize < 0x40 || !table_inside(shoff, shentsize, shnum, len)))
    {
        return false;
    }
    // Each segment's `p_offset` and `p_filesz`.
    let segments = (0..phnum).all(|i| {
        let at = phoff + i * phentsize;
        match (u64_at(image, at + 0x08), u64_at(image, at + 0x20)) {
            (Some(offset), Some(size)) => table_inside(offset, size, 1, len),
            _ => false,
        }
    });
    // Each section's `sh_type`, `sh_offset` and `sh_size`; a `SHT_NOBITS`
    // section takes no bytes of the file.
    let sections = (0..shnum).all(|i| {
        let at = shoff + i * shentsize;
        match (
            u32_at(image, at + 4),
            u64_at(image, at + 0x18),
            u64_at(image, at + 0x20),
        ) {
            (Some(8), Some(_), Some(_)) => true,
            (Some(_), Some(offset), Some(size)) => table_inside(offset, size, 1, len),
            _ => false,
        }
    });
    segments && sections
}

/// A fat binary whose first container (a 16-byte or longer header, then
/// the size its header gives) lies inside `image`.
fn fatbin_whole(image: &[u8]) -> bool {
    match (u16_at(image, 6), u64_at(image, 8)) {
        (Some(header), Some(size)) => table_inside(header.max(16), size, 1, image.len()),
        _ => false,
    }
}

// SAFETY: a `CUmodule` is a driver handle usable from any thread (with the
// context bound, which every use does first); the driver API is
// thread-safe.
unsafe impl Send for ModuleHandle {}
// SAFETY: as for `Send`; `&ModuleHandle` offers only thread-safe driver
// calls.
unsafe impl Sync for ModuleHandle {}

impl ModuleHandle {
    fn new(handle: sys::CUmodule) -> Self {
        ModuleHandle {
            handle,
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Loads `image` (`cuModuleLoadData`): a cubin, a fat binary, or PTX
    /// ended by a NUL byte. The [`Failure`] is `CUDA_ERROR_INVALID_IMAGE`
    /// when its headers say the driver would read past the slice, as for
    /// PTX without a NUL. The context is to be bound.
    pub(crate) fn load_bytes(_: &Library, image: &[u8]) -> Result<Self, Failure> {
        check_whole("cuModuleLoadData", image)?;
        // SAFETY: the library is loaded (`Library`); the driver reads the
        // image inside the slice (checked above), which outlives the call.
        Ok(ModuleHandle::new(unsafe {
            module_load_data(image.as_ptr().cast())
        }?))
    }

    /// Loads PTX `image` (as [`ModuleHandle::load_bytes`] checks it) with
    /// JIT `options`, each an option and its unsigned int value
    /// (`cuModuleLoadDataEx`), asking for verbose info and error logs of
    /// `log_bytes` each: the module or the failure, and the logs either
    /// way. An option that takes a pointer is refused
    /// (`CUDA_ERROR_INVALID_VALUE`). The context is to be bound.
    pub(crate) fn load_bytes_jit(
        _: &Library,
        image: &[u8],
        options: &[(sys::CUjit_option, u32)],
        log_bytes: usize,
    ) -> (Result<Self, Failure>, JitLogBuffers) {
        use sys::CUjit_option as O;
        let mut logs = JitLogBuffers {
            info: vec![0; log_bytes],
            error: vec![0; log_bytes],
        };
        if let Err(f) = check_whole("cuModuleLoadDataEx", image) {
            return (Err(f), logs);
        }
        if options.iter().any(|(o, _)| !SCALAR_OPTIONS.contains(o)) {
            let f = refused(
                "cuModuleLoadDataEx",
                sys::CUresult::CUDA_ERROR_INVALID_VALUE,
            );
            return (Err(f), logs);
        }
        let (mut keys, mut values): (Vec<_>, Vec<_>) = options
            .iter()
            // An unsigned int travels in the value slot itself.
            .map(|&(o, v)| (o, std::ptr::without_provenance_mut::<c_void>(v as usize)))
            .unzip();
        keys.extend([
            O::CU_JIT_INFO_LOG_BUFFER,
            O::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            O::CU_JIT_ERROR_LOG_BUFFER,
            O::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            O::CU_JIT_LOG_VERBOSE,
        ]);
        values.extend([
            logs.info.as_mut_ptr().cast::<c_void>(),
            std::ptr::without_provenance_mut::<c_void>(log_bytes),
            logs.error.as_mut_ptr().cast::<c_void>(),
            std::ptr::without_provenance_mut::<c_void>(log_bytes),
            // The flag's value 1 in its slot (not a pointer).
            std::ptr::without_provenance_mut::<c_void>(1),
        ]);
        // SAFETY: the library is loaded (`Library`); the driver reads the
        // image inside the slice (checked above); every option given takes
        // an unsigned int in its slot (checked above), and the two log
        // buffers are live and `log_bytes` long, as their size options say,
        // until the call returns.
        let loaded = unsafe { module_load_data_ex(image.as_ptr().cast(), &mut keys, &mut values) };
        (loaded.map(ModuleHandle::new), logs)
    }

    /// The function `name` (`cuModuleGetFunction`); the [`Failure`] is
    /// `CUDA_ERROR_NOT_FOUND` when the module has none. The context is to
    /// be bound.
    pub(crate) fn function(&self, name: &CStr) -> Result<FunctionRef<'_>, Failure> {
        // SAFETY: the library is loaded (a module was) and the module is
        // loaded (`self`).
        let func = unsafe { module_get_function(self.handle, name) }?;
        Ok(FunctionRef {
            func,
            serial: self.serial,
            module: std::marker::PhantomData,
        })
    }

    /// The address and size of the global `name` (`cuModuleGetGlobal`);
    /// the [`Failure`] is `CUDA_ERROR_NOT_FOUND` when the module has none.
    /// The context is to be bound.
    pub(crate) fn global(&self, name: &CStr) -> Result<(u64, usize), Failure> {
        // SAFETY: as in `function`.
        unsafe { module_get_global(self.handle, name) }
    }

    /// Unloads the module (`cuModuleUnload`).
    pub(crate) fn unload(self) -> Result<(), Failure> {
        // SAFETY: loaded by `load_bytes` or `load_bytes_jit` and consumed
        // here, so never used again; work that used it was promised to be
        // done.
        unsafe { module_unload(self.handle) }
    }
}

/// A function's handle and its module's load number, for keeping beside
/// what keeps its module loaded (use it again through [`FunctionRef::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FunctionId(sys::CUfunction, u64);

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
    /// Its module's [`ModuleHandle::serial`].
    serial: u64,
    module: std::marker::PhantomData<&'m ModuleHandle>,
}

impl<'m> FunctionRef<'m> {
    /// `func` again, while `module` is borrowed: `None` unless it came
    /// from `module`'s [`ModuleHandle::function`].
    pub(crate) fn of(module: &'m ModuleHandle, func: FunctionId) -> Option<Self> {
        (func.1 == module.serial).then_some(FunctionRef {
            func: func.0,
            serial: func.1,
            module: std::marker::PhantomData,
        })
    }

    /// Its handle, to keep.
    pub(crate) fn id(self) -> FunctionId {
        FunctionId(self.func, self.serial)
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

#[cfg(test)]
mod tests;
