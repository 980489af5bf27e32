//! Code objects loaded into executables: kernels (`<name>.kd` symbols with
//! their segment sizes and the metadata's argument layout) and globals
//! (variable symbols).

use std::ffi::{CString, c_void};
use std::sync::Arc;

use hsa_sys::*;
use reprise_core::exec::GlobalInfo;

use crate::code_object::{self, CodeObject, KernelMeta};
use crate::error::{AmdError, check};
use crate::runtime::Runtime;

/// A frozen executable holding one code object, with what its metadata says.
#[derive(Debug)]
pub struct AmdImage {
    inner: Arc<Loaded>,
}

/// The executable and the reader it was loaded through; destroyed when the
/// image and every kernel found in it are gone.
#[derive(Debug)]
pub(crate) struct Loaded {
    rt: Arc<Runtime>,
    executable: hsa_executable_t,
    reader: hsa_code_object_reader_t,
    /// The reader reads from here: kept for the reader's lifetime.
    _bytes: Box<[u8]>,
    pub(crate) meta: CodeObject,
}

impl Drop for Loaded {
    fn drop(&mut self) {
        let f = &self.rt.hsa.fns;
        // SAFETY: no kernel of this executable is queued any more (queues
        // hold a kernel, hence this, until their work completed).
        let rcs = unsafe {
            [
                (f.hsa_executable_destroy)(self.executable),
                (f.hsa_code_object_reader_destroy)(self.reader),
            ]
        };
        for rc in rcs {
            if rc != status::SUCCESS {
                eprintln!(
                    "warning: unloading an AMD code object: {}",
                    crate::error::status_name(rc)
                );
            }
        }
    }
}

/// A kernel of a loaded image.
#[derive(Debug, Clone)]
pub struct AmdKernel {
    pub(crate) image: Arc<Loaded>,
    pub(crate) name: Arc<str>,
    pub(crate) object: u64,
    pub(crate) kernarg_size: u32,
    pub(crate) kernarg_align: u32,
    pub(crate) group_size: u32,
    pub(crate) private_size: u32,
    /// Index into the metadata's kernels.
    pub(crate) meta: usize,
}

impl AmdKernel {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn meta(&self) -> &KernelMeta {
        &self.image.meta.kernels()[self.meta]
    }
}

/// Scratch bytes per work-item a kernel gets beyond its fixed private
/// segment when it uses a dynamic call stack (recursion, indirect calls):
/// LLVM's AMDGPU plugin gives such kernels its device stack size instead
/// of the fixed size (`usesDynamicStack() ? StackSize : getPrivateSize()`
/// in `AMDGPUQueueTy::pushKernelLaunch`), which a capture does not record.
pub const DYNAMIC_STACK: u32 = 16 << 10;

/// The private segment size a dispatch of the kernel needs.
fn private_size(hsa: &Hsa, sym: hsa_executable_symbol_t) -> Result<u32, AmdError> {
    let fixed = symbol_u32(hsa, sym, symbol_info::KERNEL_PRIVATE_SEGMENT_SIZE)?;
    let mut dynamic: u8 = 0;
    // SAFETY: the attribute is a `bool` (one byte).
    let rc = unsafe {
        (hsa.fns.hsa_executable_symbol_get_info)(
            sym,
            symbol_info::KERNEL_DYNAMIC_CALLSTACK,
            &mut dynamic as *mut u8 as *mut c_void,
        )
    };
    check("hsa_executable_symbol_get_info", rc)?;
    Ok(if dynamic != 0 {
        fixed.max(DYNAMIC_STACK)
    } else {
        fixed
    })
}

fn symbol_u32(hsa: &Hsa, s: hsa_executable_symbol_t, attr: u32) -> Result<u32, AmdError> {
    let mut v: u32 = 0;
    // SAFETY: every attribute asked through here is a u32.
    let rc = unsafe {
        (hsa.fns.hsa_executable_symbol_get_info)(s, attr, &mut v as *mut u32 as *mut c_void)
    };
    check("hsa_executable_symbol_get_info", rc)?;
    Ok(v)
}

fn symbol_u64(hsa: &Hsa, s: hsa_executable_symbol_t, attr: u32) -> Result<u64, AmdError> {
    let mut v: u64 = 0;
    // SAFETY: every attribute asked through here is a u64.
    let rc = unsafe {
        (hsa.fns.hsa_executable_symbol_get_info)(s, attr, &mut v as *mut u64 as *mut c_void)
    };
    check("hsa_executable_symbol_get_info", rc)?;
    Ok(v)
}

impl AmdImage {
    /// Reads `bytes` as a code object, checks its target against the agent,
    /// loads and freezes it.
    pub(crate) fn load(rt: &Arc<Runtime>, bytes: &[u8]) -> Result<AmdImage, AmdError> {
        let meta = code_object::parse(bytes)?;
        if !meta.target().runs_on(&rt.isa) {
            return Err(AmdError::WrongTarget {
                image: meta.target().to_string(),
                device: rt.isa.clone(),
            });
        }
        let f = &rt.hsa.fns;
        let bytes: Box<[u8]> = bytes.into();
        let mut reader = hsa_code_object_reader_t::default();
        // SAFETY: `bytes` lives in the `Loaded` that owns the reader, so it
        // outlives it.
        let rc = unsafe {
            (f.hsa_code_object_reader_create_from_memory)(
                bytes.as_ptr() as *const c_void,
                bytes.len(),
                &mut reader,
            )
        };
        check("hsa_code_object_reader_create_from_memory", rc)?;
        let mut executable = hsa_executable_t::default();
        // SAFETY: valid out-pointer; empty options string. LLVM's AMDGPU
        // plugin creates its executables the same way (full profile,
        // default rounding).
        let rc = unsafe {
            (f.hsa_executable_create_alt)(
                profile::FULL,
                rounding::DEFAULT,
                c"".as_ptr(),
                &mut executable,
            )
        };
        if let Err(e) = check("hsa_executable_create_alt", rc) {
            // SAFETY: the reader is unused.
            unsafe { (f.hsa_code_object_reader_destroy)(reader) };
            return Err(e);
        }
        // From here on `Loaded`'s `Drop` destroys both.
        let loaded = Loaded {
            rt: rt.clone(),
            executable,
            reader,
            _bytes: bytes,
            meta,
        };
        // SAFETY: handles from this runtime; no loaded-code-object handle is
        // asked for (null).
        let rc = unsafe {
            (f.hsa_executable_load_agent_code_object)(
                executable,
                rt.gpu,
                reader,
                c"".as_ptr(),
                std::ptr::null_mut(),
            )
        };
        check("hsa_executable_load_agent_code_object", rc)?;
        // SAFETY: an executable with its code object loaded.
        let rc = unsafe { (f.hsa_executable_freeze)(executable, c"".as_ptr()) };
        check("hsa_executable_freeze", rc)?;
        Ok(AmdImage {
            inner: Arc::new(loaded),
        })
    }

    fn symbol(&self, name: &str) -> Result<Option<hsa_executable_symbol_t>, AmdError> {
        let rt = &self.inner.rt;
        let Ok(c) = CString::new(name) else {
            return Ok(None);
        };
        let mut sym = hsa_executable_symbol_t::default();
        // SAFETY: a NUL-terminated name and a valid out-pointer.
        let rc = unsafe {
            (rt.hsa.fns.hsa_executable_get_symbol_by_name)(
                self.inner.executable,
                c.as_ptr(),
                &rt.gpu,
                &mut sym,
            )
        };
        match rc {
            status::SUCCESS => Ok(Some(sym)),
            status::ERROR_INVALID_SYMBOL_NAME => Ok(None),
            other => Err(AmdError::call("hsa_executable_get_symbol_by_name", other)),
        }
    }

    /// Kernel `name` (its symbol `name.kd`).
    pub(crate) fn kernel(&self, name: &str) -> Result<AmdKernel, AmdError> {
        let kernels = self.inner.meta.kernels();
        let no_kernel = || AmdError::NoKernel {
            name: name.to_string(),
            available: kernels.iter().map(|k| k.name.clone()).collect(),
        };
        let meta = kernels
            .iter()
            .position(|k| k.name == name)
            .ok_or_else(no_kernel)?;
        let symbol_name = &kernels[meta].symbol;
        let sym = self.symbol(symbol_name)?.ok_or_else(no_kernel)?;
        let hsa = self.inner.rt.hsa;
        Ok(AmdKernel {
            image: self.inner.clone(),
            name: name.into(),
            object: symbol_u64(hsa, sym, symbol_info::KERNEL_OBJECT)?,
            kernarg_size: symbol_u32(hsa, sym, symbol_info::KERNEL_KERNARG_SEGMENT_SIZE)?,
            kernarg_align: symbol_u32(hsa, sym, symbol_info::KERNEL_KERNARG_SEGMENT_ALIGNMENT)?
                .max(16),
            group_size: symbol_u32(hsa, sym, symbol_info::KERNEL_GROUP_SEGMENT_SIZE)?,
            private_size: private_size(hsa, sym)?,
            meta,
        })
    }

    /// Global `name`: its address and size.
    pub(crate) fn global<'n>(&self, name: &'n str) -> Result<Option<GlobalInfo<'n>>, AmdError> {
        let Some(sym) = self.symbol(name)? else {
            return Ok(None);
        };
        let hsa = self.inner.rt.hsa;
        if symbol_u32(hsa, sym, symbol_info::TYPE)? != symbol_kind::VARIABLE {
            return Ok(None);
        }
        Ok(Some(GlobalInfo {
            name,
            addr: symbol_u64(hsa, sym, symbol_info::VARIABLE_ADDRESS)?,
            size: u64::from(symbol_u32(hsa, sym, symbol_info::VARIABLE_SIZE)?),
        }))
    }

    /// Every variable the code object defines, as loaded.
    pub(crate) fn for_each_global(
        &self,
        f: &mut dyn FnMut(GlobalInfo<'_>),
    ) -> Result<(), AmdError> {
        let names: Vec<String> = self
            .inner
            .meta
            .variables()
            .iter()
            .map(|v| v.name.clone())
            .collect();
        for name in &names {
            if let Some(g) = self.global(name)? {
                f(g);
            }
        }
        Ok(())
    }
}
