//! What an executor is opened with beyond its device: device-side staging,
//! PTX JIT options, and where to report what the JIT compiled. One typed
//! value, handed to [`crate::CudaExecutor::with_options`] (or carried by
//! whatever opens executors for a caller), so no option travels through
//! process-global state.

use crate::jit::{CompiledKernels, JitOptions};

/// The CUDA executor's options.
///
/// ```
/// use reprise_cuda::{CompiledKernels, CudaOptions, JitOption, JitOptions};
/// let compiled = CompiledKernels::new();
/// let options = CudaOptions::new()
///     .device_staging(Some(1 << 20))
///     .jit(JitOptions::new().set(JitOption::MaxRegisters, 32))
///     .report_compiled(compiled.clone());
/// assert!(!options.is_default());
/// // After kernels are fetched from images loaded with these options:
/// assert!(compiled.take().is_empty());
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CudaOptions {
    /// Stage downloads of at least this many bytes on the device
    /// ([`crate::CudaExecutor::with_device_staging`]); `None`: off.
    pub device_staging: Option<u64>,
    /// JIT options for the PTX images loaded (none: `cuModuleLoadData`);
    /// while any is set, an image that is not PTX is refused
    /// ([`crate::CudaError::JitOptionsNeedPtx`]).
    pub jit: JitOptions,
    /// Where what the JIT made of each kernel fetched from an image loaded
    /// with JIT options is reported.
    pub compiled: Option<CompiledKernels>,
}

impl CudaOptions {
    /// No staging, no JIT options, nothing reported.
    pub fn new() -> Self {
        CudaOptions::default()
    }

    /// The same with device-side staging of downloads of at least
    /// `min_bytes` (`None`: off).
    pub fn device_staging(self, min_bytes: Option<u64>) -> Self {
        CudaOptions {
            device_staging: min_bytes,
            ..self
        }
    }

    /// The same with these JIT options.
    pub fn jit(self, options: JitOptions) -> Self {
        CudaOptions {
            jit: options,
            ..self
        }
    }

    /// The same, reporting what the JIT compiled to `to`.
    pub fn report_compiled(self, to: CompiledKernels) -> Self {
        CudaOptions {
            compiled: Some(to),
            ..self
        }
    }

    /// Whether these are the defaults (nothing asked).
    pub fn is_default(&self) -> bool {
        *self == CudaOptions::default()
    }
}
