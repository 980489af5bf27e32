//! Choosing an executor by kind: the one place that maps a [`BackendKind`]
//! to an executor, for replaying a capture, the command line's demo and
//! benchmarks, and whatever else runs "the executor this capture needs".
//!
//! Executors are different types, so the work to do on one is a
//! [`ExecutorJob`], whose [`ExecutorJob::run`] is generic over the
//! executor; [`with_executor`] calls it with an [`Executors`], which opens
//! as many executors of the chosen kind as the job needs.
//!
//! ```no_run
//! use reprise_core::BackendKind;
//! use reprise_std::executors::{AnyExecutor, ExecutorJob, ExecutorSpec, Executors, with_executor};
//!
//! /// Reserves a region of 1 MiB and says where it went.
//! struct WhereWouldItGo;
//!
//! impl ExecutorJob for WhereWouldItGo {
//!     type Output = u64;
//!     fn run<E: AnyExecutor>(self, executors: Executors<E>) -> reprise_std::Result<u64> {
//!         use reprise_core::exec::{DeviceRegion, Executor, RegionRequest};
//!         let exec = executors.open()?;
//!         let region = exec
//!             .reserve(RegionRequest::new(None, 1 << 20))
//!             .map_err(|e| reprise_std::Error::executor("reserving 1 MiB", e))?;
//!         Ok(region.base())
//!     }
//! }
//!
//! let base = with_executor(ExecutorSpec::new(BackendKind::Host), WhereWouldItGo)?;
//! println!("a fresh host region goes to {base:#x}");
//! # Ok::<(), reprise_std::Error>(())
//! ```

#[cfg(feature = "amdgpu")]
use reprise_amdgpu::AmdExecutor;
use reprise_core::exec::Executor;
use reprise_core::record::BackendKind;
#[cfg(feature = "cuda")]
use reprise_cuda::CudaExecutor;
#[cfg(feature = "host")]
use reprise_host::HostExecutor;

pub use reprise_capture::images::{NoExecutor, capabilities, choose, image_info, in_build};

use crate::error::{Error, Result};
use crate::exec::ErrorContext;

/// What the std adapter's drivers need of an executor beyond the core's
/// contract: that it and its parts can move between threads (a replay is
/// a `Send` future, a recording's files are written on another thread).
pub trait AnyExecutor:
    Executor<Buffer: Send + 'static, Queue: Send, Region: Send, Image: Send, Kernel: Send + Sync>
    + Send
    + Sync
    + 'static
{
}

impl<E> AnyExecutor for E where
    E: Executor<
            Buffer: Send + 'static,
            Queue: Send,
            Region: Send,
            Image: Send,
            Kernel: Send + Sync,
        > + Send
        + Sync
        + 'static
{
}

/// Which executor to open, and how.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutorSpec {
    /// The kind of executor.
    pub kind: BackendKind,
    /// The device ordinal, for GPU executors (the host executor has one
    /// device and ignores it).
    pub device: i32,
    /// The CUDA executor's options (device-side staging, JIT options);
    /// other executors refuse any but the defaults.
    pub cuda: CudaOptions,
}

/// The CUDA executor's options ([`reprise_cuda::CudaOptions`]).
#[cfg(feature = "cuda")]
pub use reprise_cuda::CudaOptions;

/// Without the CUDA executor in the build, what of its options can still
/// be asked for, for the other executors to refuse.
#[cfg(not(feature = "cuda"))]
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CudaOptions {
    /// Stage downloads of at least this many bytes on the device.
    pub device_staging: Option<u64>,
}

impl ExecutorSpec {
    /// The executor of `kind`, device 0, with the default options.
    pub fn new(kind: BackendKind) -> Self {
        ExecutorSpec {
            kind,
            device: 0,
            cuda: CudaOptions::default(),
        }
    }

    /// The same on device `ordinal`.
    pub fn device(mut self, ordinal: i32) -> Self {
        self.device = ordinal;
        self
    }

    /// The same with device-side staging of downloads of at least
    /// `min_bytes` (`None`: off), a CUDA executor option.
    pub fn device_staging(mut self, min_bytes: Option<u64>) -> Self {
        self.cuda.device_staging = min_bytes;
        self
    }

    /// The same with the CUDA executor's `options`.
    pub fn cuda(mut self, options: CudaOptions) -> Self {
        self.cuda = options;
        self
    }
}

/// Opens executors of the kind a [`with_executor`] call chose: the spec,
/// and the function that opens an executor of that kind.
#[derive(Debug, Clone)]
pub struct Executors<E>(ExecutorSpec, fn(&ExecutorSpec) -> Result<E>);

impl<E> Executors<E> {
    /// What [`Executors::open`] opens.
    pub fn spec(&self) -> ExecutorSpec {
        self.0.clone()
    }

    /// A new executor as the spec says.
    pub fn open(&self) -> Result<E> {
        (self.1)(&self.0)
    }

    /// A new executor of the same kind on another device or with other
    /// options (`spec.kind` is ignored: the kind was chosen already).
    pub fn open_with(&self, spec: ExecutorSpec) -> Result<E> {
        (self.1)(&ExecutorSpec {
            kind: self.0.kind,
            ..spec
        })
    }
}

/// Work to do on an executor, whatever its type.
pub trait ExecutorJob {
    /// What the work gives.
    type Output;

    /// Does the work with executors from `executors`.
    fn run<E: AnyExecutor>(self, executors: Executors<E>) -> Result<Self::Output>;
}

/// What LLVM IR is compiled for to run on the executor `spec` names
/// ([`crate::compile`]): the host, or the device's architecture (a CUDA
/// device's `sm_XX`, an AMD agent's `gfx` name), asked of the device.
pub fn compile_target(spec: ExecutorSpec) -> Result<crate::compile::Target> {
    use crate::compile::Target;
    match spec.kind {
        BackendKind::Host => Ok(Target::Host),
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => {
            let exec = open_cuda(&spec)?;
            let (major, minor) = exec.compute_capability().context(format!(
                "asking CUDA device {} its architecture",
                spec.device
            ))?;
            Ok(Target::Nvptx {
                sm: major * 10 + minor,
            })
        }
        #[cfg(feature = "amdgpu")]
        BackendKind::Amdgpu => Ok(Target::Amdgcn {
            gfx: open_amdgpu(&spec)?.name().to_string(),
        }),
        #[allow(unreachable_patterns)]
        other => Err(Error::NotInBuild {
            path: None,
            backend: other,
        }),
    }
}

/// reprise's chunk-hashing kernel for the executors of one kind (see
/// [`chunk_hash_kernel`]).
#[derive(Debug, Clone, Copy)]
pub struct ChunkHashKernel {
    /// The image (CUDA: PTX for sm_80 and later).
    pub image: &'static [u8],
    /// The kernel's name in it: `reprise_chunk_hashes(src, len, out,
    /// chunk_size)`, one block per chunk.
    pub name: &'static str,
    /// Threads per block.
    pub threads: u32,
    /// Bytes of `out` for `len` bytes in chunks of `chunk_size`: the
    /// 32-byte hashes first, then the kernel's scratch.
    pub out_bytes: fn(u64, u32) -> u64,
}

/// The chunk-hashing kernel the executors of `kind` run for device-side
/// hashing; `None` where reprise has none (the host's memory is the host's
/// already). AMD's is a gfx90a code object, which agents of other
/// processors refuse to load.
pub fn chunk_hash_kernel(kind: BackendKind) -> Option<ChunkHashKernel> {
    match kind {
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => Some(ChunkHashKernel {
            image: reprise_cuda::chunk_hash::PTX,
            name: reprise_cuda::chunk_hash::KERNEL,
            threads: reprise_cuda::chunk_hash::THREADS,
            out_bytes: reprise_cuda::chunk_hash::out_bytes,
        }),
        #[cfg(feature = "amdgpu")]
        BackendKind::Amdgpu => Some(ChunkHashKernel {
            image: reprise_amdgpu::chunk_hash::CODE_OBJECT,
            name: reprise_amdgpu::chunk_hash::KERNEL,
            threads: reprise_amdgpu::chunk_hash::THREADS,
            out_bytes: reprise_amdgpu::chunk_hash::out_bytes,
        }),
        _ => None,
    }
}

/// How many devices an executor of `kind` sees, at least 1: the CUDA
/// driver's count (which honours `CUDA_VISIBLE_DEVICES`), the
/// visible-device variables for AMD, 1 for the host and for a kind this
/// build lacks.
pub fn device_count(kind: BackendKind) -> usize {
    match kind {
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => match CudaExecutor::new(i32::MAX) {
            Err(reprise_cuda::CudaError::BadOrdinal { count, .. }) => count.max(1) as usize,
            _ => 1,
        },
        BackendKind::Amdgpu => ["ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"]
            .iter()
            .filter_map(|v| std::env::var(v).ok())
            .map(|l| l.split(',').filter(|d| !d.trim().is_empty()).count())
            .max()
            .unwrap_or(1)
            .max(1),
        _ => 1,
    }
}

/// Runs `job` on executors of the kind `spec` names.
///
/// A kind this build lacks is [`Error::NotInBuild`] (with no path: callers
/// name their capture with [`Error::in_file`]), before `job` runs.
/// Opening an executor (inside the job) fails with [`Error::Executor`]
/// naming the executor ("starting the host executor", "opening CUDA device
/// 1"), or [`Error::Unsupported`] for staging an executor cannot do.
pub fn with_executor<J: ExecutorJob>(spec: ExecutorSpec, job: J) -> Result<J::Output> {
    match spec.kind {
        #[cfg(feature = "host")]
        BackendKind::Host => job.run(Executors(spec, open_host)),
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => job.run(Executors(spec, open_cuda)),
        #[cfg(feature = "amdgpu")]
        BackendKind::Amdgpu => job.run(Executors(spec, open_amdgpu)),
        other => {
            drop(job);
            Err(Error::NotInBuild {
                path: None,
                backend: other,
            })
        }
    }
}

#[cfg(feature = "host")]
fn open_host(spec: &ExecutorSpec) -> Result<HostExecutor> {
    refuse_cuda_options(spec, BackendKind::Host)?;
    HostExecutor::new().context("starting the host executor")
}

/// Refuses the CUDA executor's options for the executor of `backend`.
#[cfg(any(feature = "host", feature = "amdgpu"))]
fn refuse_cuda_options(spec: &ExecutorSpec, backend: BackendKind) -> Result<()> {
    if spec.cuda.device_staging.is_some() {
        return Err(Error::Unsupported {
            backend,
            feature: "device-side staging (it is a CUDA executor option)",
        });
    }
    #[cfg(feature = "cuda")]
    if !spec.cuda.jit.is_empty() {
        return Err(Error::Unsupported {
            backend,
            feature: "PTX JIT options (they are CUDA executor options)",
        });
    }
    Ok(())
}

#[cfg(feature = "cuda")]
fn open_cuda(spec: &ExecutorSpec) -> Result<CudaExecutor> {
    let exec =
        CudaExecutor::new(spec.device).context(format!("opening CUDA device {}", spec.device))?;
    let exec = exec.with_options(spec.cuda.clone());
    if spec.cuda.device_staging.is_some() && exec.device_staging().is_none() {
        return Err(Error::Unsupported {
            backend: BackendKind::Cuda,
            feature: "device-side staging (the driver lacks a function it needs)",
        });
    }
    Ok(exec)
}

#[cfg(feature = "amdgpu")]
fn open_amdgpu(spec: &ExecutorSpec) -> Result<AmdExecutor> {
    refuse_cuda_options(spec, BackendKind::Amdgpu)?;
    AmdExecutor::new(spec.device).context(format!("opening AMD GPU {}", spec.device))
}
