//! **reprise** records one GPU or CPU kernel launch — the device memory it can
//! reach, the device globals, the launch parameters and the device image —
//! and replays it later as a standalone run: verify its output, time it, or
//! re-launch it with another geometry to tune it.
//!
//! Replaying is one `await`:
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
//! executor) or forced with [`ReplayBuilder::backend`]. Recording from a Rust
//! application goes through [`Recorder`], configured with [`RecordConfig`]
//! (its [`WriterKind`] and schedule [`Mode`]): it loads images ([`ImageId`]),
//! finds [`Kernel`]s in them and reports each launch ([`LaunchReport`]). A
//! host kernel that faults is an [`Error::Executor`] whose source downcasts
//! to [`HostError::KernelFault`]. Files, configuration and the generic
//! drivers live in `reprise-std`, the `no_std` core in `reprise-core`.

pub mod bench;

use std::future::{Future, IntoFuture};
use std::pin::Pin;

pub use reprise_core as core;
pub use reprise_core::{BackendKind, LaunchConfig, Mode};
pub use reprise_cuda::{CudaError, CudaExecutor};
pub use reprise_host::{FaultKind, FaultPlace, HostError, HostExecutor, KernelFault};
pub use reprise_std::{
    Args, Capture, Error, ImageId, Kernel, LaunchReport, OpenOptions, Outcome, RecordConfig,
    Recorder, ReplayOptions, Result, Verification, WriterKind, block_on,
};

/// The kernel image `reprise demo` records (an ELF x86-64 shared object with
/// `demo_stencil` and the globals `demo_scale` and `demo_launches`).
pub const DEMO_IMAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels/demo.so"));

/// Starts building a replay of `capture`; `.await` it to run.
pub fn replay(capture: &Capture) -> ReplayBuilder<'_> {
    ReplayBuilder {
        capture,
        backend: None,
        device_id: None,
        options: ReplayOptions::default(),
        progress: None,
    }
}

/// A replay being configured. Awaiting it runs the replay.
pub struct ReplayBuilder<'a> {
    capture: &'a Capture,
    backend: Option<BackendKind>,
    device_id: Option<i32>,
    options: ReplayOptions,
    progress: Option<Box<dyn FnMut(u32) + Send + 'a>>,
}

impl<'a> ReplayBuilder<'a> {
    /// Runs on this executor instead of the one the image calls for.
    pub fn backend(mut self, backend: BackendKind) -> Self {
        self.backend = Some(backend);
        self
    }
    /// Device ordinal (GPU executors); default: the recorded `DeviceId`.
    pub fn device_id(mut self, id: i32) -> Self {
        self.device_id = Some(id);
        self
    }
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
        self.progress = Some(Box::new(f));
        self
    }
    /// All options at once.
    pub fn options(mut self, options: ReplayOptions) -> Self {
        self.options = options;
        self
    }

    /// The executor this replay will use: an error when the image calls for
    /// none, or for one this build does not include.
    pub fn resolved_backend(&self) -> Result<BackendKind> {
        let backend = match self.backend {
            Some(b) => b,
            None => self
                .capture
                .image_kind
                .backend()
                .map_err(|e| Error::capture(&self.capture.paths.image, e.to_string()))?,
        };
        match backend {
            BackendKind::Host | BackendKind::Cuda => Ok(backend),
            other => Err(not_in_build(other, &self.capture.paths.descriptor)),
        }
    }

    async fn run(self) -> Result<Outcome> {
        let descriptor = self.capture.paths.descriptor.clone();
        self.run_on_executor()
            .await
            .map_err(|e| e.in_file(&descriptor))
    }

    async fn run_on_executor(mut self) -> Result<Outcome> {
        let backend = self.resolved_backend()?;
        let mut nothing = |_| {};
        let progress: &mut (dyn FnMut(u32) + Send) = match &mut self.progress {
            Some(p) => p.as_mut(),
            None => &mut nothing,
        };
        match backend {
            BackendKind::Host => {
                let exec = HostExecutor::new()
                    .map_err(|e| Error::executor("starting the host executor", e))?;
                reprise_std::replay_on(&exec, self.capture, &self.options, progress).await
            }
            BackendKind::Cuda => {
                let device = self.device_id.unwrap_or(self.capture.record.device_id);
                let exec = reprise_cuda::CudaExecutor::new(device)
                    .map_err(|e| Error::executor(format!("opening CUDA device {device}"), e))?;
                reprise_std::replay_on(&exec, self.capture, &self.options, progress).await
            }
            other => Err(not_in_build(other, &self.capture.paths.descriptor)),
        }
    }
}

fn not_in_build(backend: BackendKind, descriptor: &std::path::Path) -> Error {
    Error::capture(
        descriptor,
        format!(
            "the {backend} executor is not part of this build of reprise; \
             replay this capture with a build that includes it"
        ),
    )
}

impl<'a> IntoFuture for ReplayBuilder<'a> {
    type Output = Result<Outcome>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<Outcome>> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}
