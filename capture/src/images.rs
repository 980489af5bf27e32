//! Which executor runs an image: the executors of this build, what each
//! reads from its images without a device ([`ImageInfo`]) and what each
//! can do ([`Capabilities`]), for judging a capture before anything runs
//! and for choosing the executor that replays it.

#[cfg(feature = "amdgpu")]
use reprise_amdgpu::AmdExecutor;
use reprise_core::exec::{Capabilities, Executor};
use reprise_core::image::{ImageError, ImageInfo, ImageKind};
use reprise_core::record::BackendKind;
#[cfg(feature = "cuda")]
use reprise_cuda::CudaExecutor;
#[cfg(feature = "host")]
use reprise_host::HostExecutor;

/// Whether this build of reprise includes the executor of `kind` (the
/// `host`, `cuda` and `amdgpu` features, all on by default).
pub fn in_build(kind: BackendKind) -> bool {
    image_info(kind).is_some()
}

/// Whether any build of reprise runs captures of `kind` on a host: all
/// but a microcontroller's, which replay on the device that recorded them.
pub fn some_build_runs(kind: BackendKind) -> bool {
    !matches!(kind, BackendKind::Mcu)
}

/// What the executor of `kind` reads from its images without a device
/// (kernels, globals, GPU targets, what its loader and launch refuse);
/// `None` when this build lacks that executor.
pub fn image_info(kind: BackendKind) -> Option<&'static dyn ImageInfo> {
    match kind {
        #[cfg(feature = "host")]
        BackendKind::Host => Some(&reprise_host::HostImages),
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => Some(&reprise_cuda::CudaImages),
        #[cfg(feature = "amdgpu")]
        BackendKind::Amdgpu => Some(&reprise_amdgpu::AmdImages),
        _ => None,
    }
}

/// Why no executor of this build runs an image ([`choose`]).
#[derive(Debug, Clone, PartialEq)]
pub enum NoExecutor {
    /// Forced onto `asked`, an image that runs on `runs_on`.
    Wrong {
        /// The executor its kind runs on.
        runs_on: BackendKind,
        /// The executor asked for.
        asked: BackendKind,
    },
    /// No executor runs this kind of image (and none forced judges it).
    Unrunnable(ImageError),
    /// It runs on (or was forced onto) an executor this build lacks.
    NotInBuild(BackendKind),
}

/// Which executor runs an image of `kind`, or the one `forced` names: the
/// one decision, for replay, `inspect`, `list` and every assessment. A
/// forced executor must be in the build and be the one the image's kind
/// runs on; an image of no kind reprise knows goes only to a forced
/// executor whose loader judges such images
/// ([`Capabilities::judges_unknown_images`]).
pub fn choose(
    kind: ImageKind,
    forced: Option<BackendKind>,
) -> std::result::Result<BackendKind, NoExecutor> {
    if let Some(asked) = forced
        && !in_build(asked)
    {
        return Err(NoExecutor::NotInBuild(asked));
    }
    let backend = match (forced, kind.backend()) {
        (Some(asked), Ok(runs_on)) if asked != runs_on => {
            return Err(NoExecutor::Wrong { runs_on, asked });
        }
        (_, Ok(b)) => b,
        (Some(b), Err(_)) if capabilities(b).judges_unknown_images => b,
        (_, Err(e)) => return Err(NoExecutor::Unrunnable(e)),
    };
    if !in_build(backend) {
        return Err(NoExecutor::NotInBuild(backend));
    }
    Ok(backend)
}

/// What the executor of `kind` can do, as its backend says
/// ([`Executor::CAPABILITIES`]), for choices made before one is opened; a
/// kind this build lacks is taken for a GPU's ([`Capabilities::GPU`]):
/// whatever is chosen for it, its replay is then refused as not in the
/// build.
pub const fn capabilities(kind: BackendKind) -> Capabilities {
    match kind {
        #[cfg(feature = "host")]
        BackendKind::Host => HostExecutor::CAPABILITIES,
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => CudaExecutor::CAPABILITIES,
        #[cfg(feature = "amdgpu")]
        BackendKind::Amdgpu => AmdExecutor::CAPABILITIES,
        _ => Capabilities::GPU,
    }
}
