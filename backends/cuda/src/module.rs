//! Loaded images (CUDA modules), their kernels and globals.

use std::ffi::CString;
use std::sync::{Arc, Mutex};

use cudarc::driver::sys;
use reprise_core::exec::GlobalInfo;
use reprise_core::image::{EM_CUDA, ImageKind, sniff};

use crate::context;
use crate::device::{Device, LaunchLimits};
use crate::error::{CudaError, DriverError};
use crate::jit::{Compiled, CompiledKernels, JitLog, JitOptions};
use crate::options::CudaOptions;
use crate::raw::{FunctionId, FunctionRef, Library, ModuleHandle};

/// A loaded `CUmodule`; unloaded when the last image or kernel using it goes.
#[derive(Debug)]
pub(crate) struct Module {
    dev: Arc<Device>,
    /// `None` once dropped.
    handle: Option<ModuleHandle>,
    /// The limits of each function launched so far, asked of the driver
    /// once: kept per module, so two kernel handles of one function share
    /// them and never lower what the other set.
    limits: Mutex<Vec<FunctionLimits>>,
}

/// One function's launch limits, as the driver reported them and as the
/// executor has set them since.
#[derive(Debug, Clone, Copy)]
struct FunctionLimits {
    /// The function (`CUfunction` as an address).
    func: usize,
    /// The most threads a block of it may have
    /// (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`): below the device's
    /// limit where the code says so (`.maxntid`, `__launch_bounds__`; an
    /// OpenMP kernel's default thread limit) or its registers require it; 0
    /// where the driver did not say.
    max_threads: u32,
    /// Its shared memory, once a launch with dynamic shared memory asked.
    shared: Option<FunctionShared>,
}

/// One function's shared memory, as the driver reported it and as the
/// executor has set it since.
#[derive(Debug, Clone, Copy)]
struct FunctionShared {
    /// Its static shared memory (`CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`).
    static_bytes: u32,
    /// The dynamic shared memory launches may use now
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`): 48 KiB less the
    /// static size until raised.
    max_dynamic: u32,
}

impl Module {
    /// The loaded module, live while `self` is.
    fn raw(&self) -> &ModuleHandle {
        self.handle
            .as_ref()
            .expect("a module is loaded until dropped")
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // Nothing in flight uses the module's code or globals: a queue holds
        // an `Arc` of the module until a synchronize covered each launch of
        // one of its kernels, each copy that reads or writes one of its
        // globals and each launch given the address of one as an argument
        // (found by address among the globals handed out, which are
        // forgotten here, before the unload frees the addresses).
        self.dev.state.remove_globals(context::module_key(&*self));
        if let Some(h) = self.handle.take() {
            self.dev.cleanup(|| h.unload());
        }
    }
}

/// A device image loaded into the executor's context: PTX (compiled by the
/// driver), a cubin or a fat binary.
///
/// Kernels found in it keep it loaded, so it may be dropped while their
/// launches are in flight. So do queued copies of its globals, and queued
/// launches (of any image's kernels) given the address of one of its
/// globals as an argument (an 8-byte word of an argument inside the global,
/// a pointer the kernel may read or write through): the addresses
/// [`Executor::global`](reprise_core::exec::Executor::global) or
/// [`Executor::for_each_global`](reprise_core::exec::Executor::for_each_global)
/// gave, or inside the globals there (a queue keeps the image's module
/// until a synchronize covered the copy or launch). Unloading (when the
/// image and its last kernel are gone and no queue keeps it) waits for
/// nothing else in the context: a copy into one of its globals at an
/// address found otherwise, or a kernel that reaches a global through a
/// pointer held in device memory, must be synchronized before the image
/// goes.
#[derive(Debug)]
pub struct CudaImage {
    module: Arc<Module>,
    kind: ImageKind,
    globals: Vec<String>,
    /// Why the image's globals cannot be listed, when they cannot (a fat
    /// binary of compressed entries only): warned about when they are.
    unlisted: Option<String>,
    /// The JIT options and logs of a load with options.
    jit: Option<(JitOptions, JitLog)>,
    /// Where what the JIT made of each kernel fetched is reported.
    report: Option<CompiledKernels>,
}

/// The size of each JIT log buffer.
const LOG_BYTES: usize = 64 * 1024;

/// Loads PTX `image` (NUL-terminated) with `jit`, asking for verbose
/// info and error logs. A failure keeps the logs
/// ([`CudaError::JitFailed`]).
fn load_jit(
    lib: &Library,
    image: &[u8],
    jit: &JitOptions,
) -> Result<(ModuleHandle, Option<(JitOptions, JitLog)>), CudaError> {
    let options: Vec<_> = jit.entries().iter().map(|&(o, v)| (o.code(), v)).collect();
    let (loaded, logs) = ModuleHandle::load_bytes_jit(lib, image, &options, LOG_BYTES);
    let text = |b: &[u8]| {
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..end]).into_owned()
    };
    let log = JitLog {
        info: text(&logs.info),
        error: text(&logs.error),
    };
    match loaded {
        Ok(handle) => Ok((handle, Some((jit.clone(), log)))),
        Err(f) => Err(CudaError::JitFailed {
            options: jit.to_string(),
            log: format!("{}{}", log.error, log.info),
            source: f.into(),
        }),
    }
}

impl CudaImage {
    pub(crate) fn load(
        dev: &Arc<Device>,
        image: &[u8],
        options: &CudaOptions,
    ) -> Result<Self, CudaError> {
        let kind = sniff(image);
        let jit = Some(&options.jit).filter(|j| !j.is_empty());
        if jit.is_some() && kind != ImageKind::Ptx {
            return Err(CudaError::JitOptionsNeedPtx(kind));
        }
        let bytes = match kind {
            ImageKind::Ptx => {
                // The driver reads PTX up to a NUL byte.
                let text = crate::info::ptx_text(image);
                let mut z = Vec::with_capacity(text.len() + 1);
                z.extend_from_slice(text);
                z.push(0);
                std::borrow::Cow::Owned(z)
            }
            ImageKind::Elf {
                machine: EM_CUDA, ..
            }
            | ImageKind::Fatbin => image.into(),
            other => return Err(CudaError::UnsupportedImage(other)),
        };
        let globals = crate::info::global_names(kind, image);
        let unlisted = (kind == ImageKind::Fatbin
            && crate::cubin::fatbin_globals_unreadable(image))
        .then(|| unlisted_globals(image));
        dev.bind()?;
        let (handle, log) = match jit {
            Some(jit) => {
                load_jit(&dev.lib, &bytes, jit).map_err(|e| explain_load_error(dev, image, e))?
            }
            None => match ModuleHandle::load_bytes(&dev.lib, &bytes) {
                Ok(handle) => (handle, None),
                Err(f) => return Err(explain_load_error(dev, image, DriverError::from(f).into())),
            },
        };
        Ok(CudaImage {
            module: Arc::new(Module {
                dev: dev.clone(),
                handle: Some(handle),
                limits: Mutex::new(Vec::new()),
            }),
            kind,
            globals,
            unlisted,
            jit: log,
            report: options.compiled.clone(),
        })
    }

    /// The JIT options this image was loaded with and the JIT's logs, when
    /// it was loaded with options.
    pub fn jit(&self) -> Option<&(JitOptions, JitLog)> {
        self.jit.as_ref()
    }

    /// What kind of image this is.
    pub fn kind(&self) -> ImageKind {
        self.kind
    }

    /// Names of the globals found in the image (sizes come from the driver).
    pub fn global_names(&self) -> &[String] {
        &self.globals
    }

    pub(crate) fn kernel(&self, name: &str) -> Result<CudaKernel, CudaError> {
        let dev = &self.module.dev;
        let cname = CString::new(name).map_err(|_| CudaError::BadName(name.into()))?;
        dev.bind()?;
        let func = match self.module.raw().function(&cname) {
            Err(f) if f.code() == sys::CUresult::CUDA_ERROR_NOT_FOUND => {
                return Err(CudaError::KernelNotFound(name.into()));
            }
            r => r?,
        };
        let params = if dev.lib.param_info {
            param_sizes(&dev.lib, func)
        } else {
            None
        };
        // Asked only of a load with JIT options (what a sweep reports).
        let compiled = self.jit.as_ref().map(|(options, log)| Compiled {
            options: options.clone(),
            registers: func
                .attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)
                .ok()
                .map(|r| r.max(0) as u32),
            spills: log.spills(name),
            log: log.clone(),
        });
        if let (Some(c), Some(report)) = (&compiled, &self.report) {
            report.note(name, c);
        }
        Ok(CudaKernel {
            module: self.module.clone(),
            func: func.id(),
            name: Arc::from(name),
            params,
            compiled,
        })
    }

    /// Address and size of global `name`, or `None` when the image has none.
    pub(crate) fn global<'n>(&self, name: &'n str) -> Result<Option<GlobalInfo<'n>>, CudaError> {
        let Ok(cname) = CString::new(name) else {
            return Ok(None);
        };
        self.module.dev.bind()?;
        let (addr, size) = match self.module.raw().global(&cname) {
            Err(f) if f.code() == sys::CUresult::CUDA_ERROR_NOT_FOUND => return Ok(None),
            r => r?,
        };
        // A copy of it keeps the module loaded until it completes.
        let size = size as u64;
        self.module.dev.state.add_global(addr, size, &self.module);
        Ok(Some(GlobalInfo { name, addr, size }))
    }

    pub(crate) fn for_each_global(
        &self,
        f: &mut dyn FnMut(GlobalInfo<'_>),
    ) -> Result<(), CudaError> {
        if let Some(why) = &self.unlisted {
            log::warn!("{why}");
        }
        for name in &self.globals {
            if let Some(g) = self.global(name)? {
                f(g);
            }
        }
        Ok(())
    }
}

/// The warning for a fat binary whose globals cannot be listed, naming the
/// image by what it holds.
fn unlisted_globals(image: &[u8]) -> String {
    let held = crate::targets::targets(image)
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "the CUDA fat binary of {} bytes ({held}) holds only compressed entries: \
         its device globals cannot be listed and will not be recorded \
         (build it with uncompressed cubins or PTX to record them)",
        image.len()
    )
}

/// A failed load, explained when the image holds no code for the device
/// (the driver only says "no binary" or "invalid PTX").
fn explain_load_error(dev: &Device, image: &[u8], e: CudaError) -> CudaError {
    let Some(&driver) = e.driver() else {
        return e;
    };
    let Ok((major, minor)) = dev.compute_capability() else {
        return e;
    };
    let targets = crate::targets::targets(image);
    if targets.is_empty() || targets.iter().any(|t| t.runs_on(major, minor)) {
        return e;
    }
    let image = targets
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    CudaError::NoCodeForDevice {
        device_sm: major * 10 + minor,
        image,
        source: driver,
    }
}

/// Sizes of `func`'s parameters from `cuFuncGetParamInfo`, or `None` when
/// the driver cannot tell (the information is optional, so a failure means
/// "unknown").
fn param_sizes(lib: &Library, func: FunctionRef<'_>) -> Option<Vec<u32>> {
    // CUDA kernels take at most 32764 bytes of parameters.
    const MAX_PARAMS: usize = 32 * 1024;
    let mut sizes = Vec::new();
    for index in 0..MAX_PARAMS {
        match func.param_info(lib, index) {
            Ok((_offset, size)) => sizes.push(size as u32),
            // One past the last parameter.
            Err(f) if f.code() == sys::CUresult::CUDA_ERROR_INVALID_VALUE => return Some(sizes),
            Err(_) => return None,
        }
    }
    None
}

/// A kernel of a loaded image; it keeps the image loaded.
#[derive(Debug, Clone)]
pub struct CudaKernel {
    module: Arc<Module>,
    func: FunctionId,
    /// Shared with the queues that launched it, which name it when it
    /// faults.
    name: Arc<str>,
    params: Option<Vec<u32>>,
    /// What the JIT made of it, when its image was loaded with options.
    compiled: Option<Compiled>,
}

impl CudaKernel {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the JIT made of the kernel (registers, spills, logs), when its
    /// image was PTX loaded with JIT options.
    pub fn compiled(&self) -> Option<&Compiled> {
        self.compiled.as_ref()
    }

    /// Parameter sizes in bytes, where the driver tells them (CUDA 12.4+).
    pub fn param_sizes(&self) -> Option<&[u32]> {
        self.params.as_deref()
    }

    pub(crate) fn module(&self) -> &Arc<Module> {
        &self.module
    }

    /// The kernel's name, for a queue to keep.
    pub(crate) fn shared_name(&self) -> &Arc<str> {
        &self.name
    }

    /// Gets the function ready for a launch with `block` threads and
    /// `dynamic` bytes of dynamic shared memory, as LLVM's CUDA plugin does.
    /// Its thread limit is asked of the driver at the first launch, its
    /// static shared memory and current maximum of dynamic shared memory at
    /// the first launch with dynamic shared memory, each once. A block over the
    /// function's thread limit is a [`CudaError::KernelThreadsPerBlock`]
    /// (the driver would only say "invalid value"). A launch asking for more
    /// dynamic shared memory than that maximum (by default 48 KiB less the
    /// static size) raises it (`cuFuncSetAttribute`), after checking static
    /// plus dynamic against the device's opt-in limit: over it is a
    /// [`CudaError::Geometry`]
    /// ([`GeometryError::SharedMemory`](reprise_core::exec::GeometryError::SharedMemory))
    /// naming both. The context is bound by the caller.
    pub(crate) fn prepare(
        &self,
        block: [u32; 3],
        dynamic: u32,
        limits: &LaunchLimits,
    ) -> Result<(), CudaError> {
        use sys::CUfunction_attribute as A;
        // Held across the driver calls, so two launches never race to lower
        // the attribute.
        let mut known = self.module.limits.lock().unwrap_or_else(|p| p.into_inner());
        let func = self.func.get() as usize;
        let at = match known.iter().position(|f| f.func == func) {
            Some(at) => at,
            None => {
                // A driver that cannot say leaves the check to the launch.
                let max_threads = self
                    .attribute(A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
                    .unwrap_or(0);
                known.push(FunctionLimits {
                    func,
                    max_threads,
                    shared: None,
                });
                known.len() - 1
            }
        };
        let max_threads = known[at].max_threads;
        let threads = block
            .iter()
            .fold(1u64, |n, &d| n.saturating_mul(u64::from(d)));
        if max_threads > 0 && threads > u64::from(max_threads) {
            return Err(CudaError::KernelThreadsPerBlock {
                kernel: self.name.to_string(),
                block,
                limit: max_threads,
            });
        }
        if dynamic == 0 {
            return Ok(());
        }
        // Asked at the first launch with dynamic shared memory; a failure
        // fails the launch and is asked again next time.
        let shared = match known[at].shared {
            Some(shared) => shared,
            None => {
                let shared = FunctionShared {
                    static_bytes: self.attribute(A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
                    max_dynamic: self
                        .attribute(A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?,
                };
                known[at].shared = Some(shared);
                shared
            }
        };
        limits.check_shared(shared.static_bytes, dynamic)?;
        if dynamic <= shared.max_dynamic {
            return Ok(());
        }
        // Over the opt-in limit only where the device did not say what that
        // is; then the driver says no.
        let value = i32::try_from(dynamic).unwrap_or(i32::MAX);
        self.function().set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            value,
        )?;
        known[at].shared = Some(FunctionShared {
            max_dynamic: dynamic,
            ..shared
        });
        Ok(())
    }

    /// An integer attribute of the function (negative values read as 0).
    fn attribute(&self, attr: sys::CUfunction_attribute) -> Result<u32, DriverError> {
        let v = self.function().attribute(attr)?;
        Ok(v.max(0) as u32)
    }

    /// The function, while `self` keeps its module loaded.
    pub(crate) fn function(&self) -> FunctionRef<'_> {
        FunctionRef::of(self.module.raw(), self.func)
            .expect("a kernel's function is one of its module's (`kernel`)")
    }
}
