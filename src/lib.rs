//! **reprise** records one GPU or CPU kernel launch — the device memory it can
//! reach, the device globals, the launch parameters and the device image —
//! and replays it later as a standalone run: verify its output, time it, or
//! re-launch it with another geometry to tune it.
//!
//! Replaying is one `await`, under any async executor (tokio, smol,
//! `futures::executor`, or [`block_on`]):
//!
//! ```no_run
//! # async fn run() -> reprise::Result<()> {
//! let capture = reprise::Capture::open("captures/saxpy-4242-0.json")?;
//! let outcome = reprise::replay(&capture).verify(true).repetitions(5).await?;
//! assert!(outcome.verification.unwrap().is_match());
//! # Ok(()) }
//! ```
//!
//! The executor is picked from the capture's image (ELF x86-64 runs on the
//! host CPU, PTX/cubin/fatbin on CUDA, AMD GPU code objects on the AMD
//! executor) or forced with [`ReplayBuilder::backend`].
//!
//! Recording from a Rust application goes through a [`Recorder`] on an
//! executor, configured with a [`RecordConfig`] (in code, or from the
//! `REPRISE_RECORD*` variables): allocate in the recording region, copy in,
//! load an image, launch. Every launch the configuration selects becomes a
//! capture; a background thread writes its files.
//!
//! ```no_run
//! use reprise::{Args, HostExecutor, LaunchConfig, RecordConfig, Recorder};
//! # fn run() -> reprise::Result<()> {
//! let exec = HostExecutor::new().map_err(|e| reprise::Error::executor("host executor", e))?;
//! let config = RecordConfig::from_env()?.enabled(true).dir("captures");
//! let mut rec = Recorder::new(exec, 0, config)?;
//! // `demo_stencil(const float *in, float *out, long n)` of the sample image.
//! let n = 1024;
//! let input = rec.alloc(4 * n, 64)?;
//! let output = rec.alloc(4 * n, 64)?;
//! rec.upload(input, &vec![0u8; 4 * n as usize])?;
//! let image = rec.load_image(reprise::DEMO_IMAGE)?;
//! let kernel = rec.kernel(image, "demo_stencil")?;
//! let geometry = LaunchConfig { grid: [1, 1, 1], block: [1, 1, 1], shared_mem: 0 };
//! let args = Args::new().ptr(input).ptr(output).scalar(n);
//! let captures = reprise::block_on(async {
//!     rec.launch(&kernel, geometry, &args).await?;
//!     rec.finish().await // waits for the files; returns their descriptors
//! })?;
//! println!("recorded {}", captures[0].display());
//! # Ok(()) }
//! ```
//!
//! The recorder loads images ([`ImageId`]), finds [`Kernel`]s in them and
//! reports each launch ([`LaunchReport`]). The recorder runs on any of
//! the three executors: [`HostExecutor`] (the host CPU), [`CudaExecutor`]
//! (an NVIDIA GPU) and [`AmdExecutor`] (an AMD GPU, through the HSA
//! runtime). A kernel that faults is an [`Error::Executor`] whose source
//! downcasts to the executor's error: [`HostError::KernelFault`] on the
//! host, a [`CudaError`] or an [`AmdError`] naming the driver's fault code
//! on a GPU. Errors name the library's settings
//! ([`Setting`], `ReplayOptions::num_teams`); a front end names its own
//! with [`Error::named`].
//!
//! This crate is the facade; beneath it, `reprise-std` holds recording,
//! replaying and choosing an executor by kind ([`executors`]),
//! `reprise-capture` every byte on disk ([`capture`], [`store`], [`list`],
//! [`transfer`]), `reprise-host`, `reprise-cuda` and `reprise-amdgpu` the
//! executors, and
//! `reprise-core` ([`core`]) the `no_std` core. The `reprise` command line
//! is the `reprise-cli` package, so depending on this crate compiles none
//! of the command line's dependencies.
//!
//! The executors are features, all on by default: `host`, `cuda` (through
//! `cudarc`, the driver loaded at run time) and `amdgpu` (the HSA runtime
//! loaded at run time). `default-features = false, features = ["host"]`
//! compiles neither the CUDA nor the HSA code, and a capture for an
//! executor not in the build is refused as such ([`Error::NotInBuild`]).

use std::future::{Future, IntoFuture};
use std::pin::Pin;

/// The README's examples, compiled (not run) as doctests of this crate.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(feature = "amdgpu")]
pub use reprise_amdgpu::{AmdError, AmdExecutor};
pub use reprise_capture::{capture, list, offload, store, transfer};
pub use reprise_core as core;
pub use reprise_core::{BackendKind, ErrorKind, LaunchConfig, Mode};
#[cfg(feature = "cuda")]
pub use reprise_cuda::{CudaError, CudaExecutor, CudaOptions, abi as cuda_abi, jit as cuda_jit};
#[cfg(feature = "host")]
pub use reprise_host::{
    FaultKind, FaultPlace, HostError, HostExecutor, KernelFault, report_faults_to,
};
pub use reprise_std::replayer::{self, CompareSpec, OutputRange, compare_files};
pub use reprise_std::{
    Args, Capture, CaptureFormat, CapturePaths, CaptureProblem, Error, ImageId, Kernel,
    LaunchReport, Names, OpenOptions, Outcome, RecordConfig, Recorder, ReplayOptions, Result,
    Setting, Verification, WriterKind, block_on,
};
pub use reprise_std::{compile, config, executors, summary};

/// Comparing outputs: byte for byte, or element by element within a
/// tolerance (`f16` to `f64`, integers; relative, absolute and ULP
/// tolerances; NaN, infinities and signed zeros as documented), usable on
/// any two byte strings. [`compare_files`] compares two output files;
/// [`ReplayBuilder::compare`] makes a replay's verification use it.
///
/// ```
/// use reprise::compare::{Comparer, DType, Tolerance};
/// let recorded = 1.0f32.to_le_bytes();
/// let replayed = f32::from_bits(1.0f32.to_bits() + 1).to_le_bytes();
/// let mut c = Comparer::new(Tolerance::elements(DType::F32).ulps(1));
/// c.feed(&recorded, &replayed);
/// assert!(c.finish().is_match());
/// ```
pub mod compare {
    pub use reprise_core::compare::*;
}

use reprise_std::executors::{
    AnyExecutor, CudaOptions as CudaSpec, ExecutorJob, ExecutorSpec, Executors, NoExecutor,
};

pub use reprise_samples as samples;
pub use reprise_samples::DEMO_IMAGE;

/// Starts building a replay of `capture`; `.await` it to run.
pub fn replay(capture: &Capture) -> ReplayBuilder<'_> {
    ReplayBuilder {
        on: OnCapture::new(capture),
        options: ReplayOptions::default(),
        progress: Box::new(|_| {}),
    }
}

/// A replay being configured. Awaiting it runs the replay.
///
/// The future is `Send` (it may run on another thread, e.g. with
/// `tokio::spawn`). Cancel safety: dropping it before it completes never
/// leaves the device writing into memory that is gone: the buffers of
/// queued copies belong to the executor's queue until a synchronize
/// covers them, and dropping the queue waits for the device first (see
/// [`core::schedule`]). A dropped replay saves no output and returns no
/// outcome; the capture's files are only ever read.
pub struct ReplayBuilder<'a> {
    on: OnCapture<'a>,
    options: ReplayOptions,
    progress: Box<dyn FnMut(u32) + Send + 'a>,
}

/// A capture and the executor asked for to work on it, what replaying and
/// tuning have in common.
struct OnCapture<'a> {
    capture: &'a Capture,
    backend: Option<BackendKind>,
    device_id: Option<i32>,
    cuda: CudaSpec,
}

impl<'a> OnCapture<'a> {
    fn new(capture: &'a Capture) -> Self {
        OnCapture {
            capture,
            backend: None,
            device_id: None,
            cuda: CudaSpec::default(),
        }
    }
}

/// Opens the executor `work` needs and does it on it, with errors that name
/// the capture (a boxed future rather than an `async fn`, whose `Send` the
/// compiler cannot prove for every `'a`).
fn on_capture<'a, W: Work<'a>>(work: W) -> Working<'a, W::Output> {
    let on = work.on_capture();
    let descriptor = on.capture.paths.descriptor.clone();
    let spec = resolve_backend(on.capture, on.backend).map(|backend| {
        ExecutorSpec::new(backend)
            .device(on.device_id.unwrap_or(on.capture.record.device_id))
            .cuda(on.cuda.clone())
    });
    let job = OnExecutor(work, std::marker::PhantomData);
    match spec.and_then(|spec| executors::with_executor(spec, job)) {
        Ok(work) => Box::pin(async move { work.await.map_err(|e| e.in_file(&descriptor)) }),
        Err(e) => Box::pin(std::future::ready(Err(e.in_file(&descriptor)))),
    }
}

/// The builder methods that choose the executor, the same for a replay and
/// a sweep.
macro_rules! executor_choice {
    ($builder:ident) => {
        impl<'a> $builder<'a> {
            /// Runs on this executor instead of the one the image calls for.
            pub fn backend(mut self, backend: BackendKind) -> Self {
                self.on.backend = Some(backend);
                self
            }
            /// Device ordinal (GPU executors); default: the recorded `DeviceId`.
            pub fn device_id(mut self, id: i32) -> Self {
                self.on.device_id = Some(id);
                self
            }
            /// The CUDA executor's options (device-side staging, PTX JIT options);
            /// other executors refuse any but the defaults.
            #[cfg(feature = "cuda")]
            pub fn cuda(mut self, options: CudaOptions) -> Self {
                self.on.cuda = options;
                self
            }
            /// The executor this will run on: an error when the image calls for
            /// none, or for one this build does not include.
            pub fn resolved_backend(&self) -> Result<BackendKind> {
                resolve_backend(self.on.capture, self.on.backend)
            }
        }
    };
}

executor_choice!(ReplayBuilder);
executor_choice!(TuneBuilder);

impl<'a> ReplayBuilder<'a> {
    /// Teams (grid x) instead of the recorded number.
    pub fn num_teams(mut self, n: u32) -> Self {
        self.options.num_teams = Some(n);
        self
    }
    /// Threads per team (block x) instead of the recorded number.
    pub fn num_threads(mut self, n: u32) -> Self {
        self.options.num_threads = Some(n);
        self
    }
    /// Compares the output with the recorded one.
    pub fn verify(mut self, on: bool) -> Self {
        self.options.verify = on;
        self
    }
    /// How to compare (byte for byte over the whole region by default).
    pub fn compare(mut self, spec: CompareSpec) -> Self {
        self.options.compare = spec;
        self
    }
    /// Writes the output next to the capture.
    pub fn save_output(mut self, on: bool) -> Self {
        self.options.save_output = on;
        self
    }
    /// Replays `n` times (each restores memory and globals first).
    pub fn repetitions(mut self, n: u32) -> Self {
        self.options.repetitions = n.max(1);
        self
    }
    /// Calls `f` with the index of each finished repetition.
    pub fn on_repetition(mut self, f: impl FnMut(u32) + Send + 'a) -> Self {
        self.progress = Box::new(f);
        self
    }
    /// All options at once.
    pub fn options(mut self, options: ReplayOptions) -> Self {
        self.options = options;
        self
    }
}

/// Work on whatever executor a capture runs on: replaying or tuning.
trait Work<'a>: Sized + Send + 'a {
    /// What the work gives.
    type Output: Send + 'a;
    /// The capture and the executor asked for.
    fn on_capture(&self) -> &OnCapture<'a>;
    /// The work, on `exec`.
    fn on<E: AnyExecutor>(self, exec: E) -> Working<'a, Self::Output>;
}

/// A boxed future of work on an executor.
type Working<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// A [`Work`] on whatever executor [`executors::with_executor`] opens.
struct OnExecutor<'a, W>(W, std::marker::PhantomData<&'a ()>);

impl<'a, W: Work<'a>> ExecutorJob for OnExecutor<'a, W> {
    type Output = Working<'a, W::Output>;

    fn run<E: AnyExecutor>(self, executors: Executors<E>) -> Result<Self::Output> {
        Ok(self.0.on(executors.open()?))
    }
}

/// The executor `backend` names, or the one `capture`'s image calls for: an
/// error when it calls for none, or for one this build does not include.
fn resolve_backend(capture: &Capture, backend: Option<BackendKind>) -> Result<BackendKind> {
    // Refused before an executor (a GPU driver, say) is opened for it.
    executors::choose(capture.image_kind, backend).map_err(|no| match no {
        NoExecutor::Wrong { runs_on, asked } => Error::WrongBackend {
            image: capture.image_path().to_path_buf(),
            kind: capture.image_kind.to_string(),
            runs_on,
            asked,
        },
        NoExecutor::Unrunnable(e) => {
            Error::capture(&capture.paths.image, CaptureProblem::NoExecutor(e))
        }
        NoExecutor::NotInBuild(backend) => Error::NotInBuild {
            path: Some(capture.paths.descriptor.clone()),
            backend,
        },
    })
}

impl<'a> Work<'a> for ReplayBuilder<'a> {
    type Output = Outcome;

    fn on_capture(&self) -> &OnCapture<'a> {
        &self.on
    }

    fn on<E: AnyExecutor>(self, exec: E) -> Working<'a, Outcome> {
        let ReplayBuilder {
            on,
            options,
            mut progress,
        } = self;
        Box::pin(async move {
            reprise_std::replay_on(&exec, on.capture, &options, &mut *progress).await
        })
    }
}

impl<'a> IntoFuture for ReplayBuilder<'a> {
    type Output = Result<Outcome>;
    type IntoFuture = Working<'a, Outcome>;

    fn into_future(self) -> Self::IntoFuture {
        on_capture(self)
    }
}

/// Starts building a sweep of launch geometries over `capture` (see
/// [`tune::TuneOptions`]); `.await` it to run. GPU executors only: the
/// host executor's kernels take no geometry ([`Error::NoGeometry`]).
///
/// ```no_run
/// # async fn run() -> reprise::Result<()> {
/// use reprise::LaunchConfig;
/// let capture = reprise::Capture::open("captures/saxpy-4242-0.json")?;
/// let configs = [64, 128, 256, 512].map(|threads| LaunchConfig {
///     grid: [4096 / threads, 1, 1],
///     block: [threads, 1, 1],
///     shared_mem: 0,
/// });
/// let report = reprise::tune(&capture).configs(configs).await?;
/// if let Some(best) = report.best() {
///     println!("fastest: {:?}, {:?}", best.config, best.median());
/// }
/// # Ok(()) }
/// ```
pub fn tune(capture: &Capture) -> TuneBuilder<'_> {
    TuneBuilder {
        on: OnCapture::new(capture),
        options: tune::TuneOptions::default(),
        progress: Box::new(|_, _, _| true),
    }
}

pub use reprise_std::tune;

/// The progress callback of a sweep: configuration index, count, what was
/// measured; `false` stops the sweep.
type TuneProgress<'a> = Box<dyn FnMut(usize, usize, &tune::Measured) -> bool + Send + 'a>;

/// A sweep being configured. Awaiting it runs the sweep.
pub struct TuneBuilder<'a> {
    on: OnCapture<'a>,
    options: tune::TuneOptions,
    progress: TuneProgress<'a>,
}

impl<'a> TuneBuilder<'a> {
    /// The configurations to measure (the recorded one is measured too).
    pub fn configs(mut self, configs: impl IntoIterator<Item = LaunchConfig>) -> Self {
        self.options.configs = configs.into_iter().collect();
        self
    }
    /// All options at once.
    pub fn options(mut self, options: tune::TuneOptions) -> Self {
        self.options = options;
        self
    }
    /// Calls `f` after each configuration with its index, the number of
    /// configurations and what it measured; `false` stops the sweep.
    pub fn on_config(
        mut self,
        f: impl FnMut(usize, usize, &tune::Measured) -> bool + Send + 'a,
    ) -> Self {
        self.progress = Box::new(f);
        self
    }
}

impl<'a> Work<'a> for TuneBuilder<'a> {
    type Output = tune::TuneReport;

    fn on_capture(&self) -> &OnCapture<'a> {
        &self.on
    }

    fn on<E: AnyExecutor>(self, exec: E) -> Working<'a, tune::TuneReport> {
        let TuneBuilder {
            on,
            options,
            mut progress,
        } = self;
        Box::pin(async move { tune::tune_on(&exec, on.capture, &options, &mut *progress).await })
    }
}

impl<'a> IntoFuture for TuneBuilder<'a> {
    type Output = Result<tune::TuneReport>;
    type IntoFuture = Working<'a, tune::TuneReport>;

    fn into_future(self) -> Self::IntoFuture {
        on_capture(self)
    }
}
