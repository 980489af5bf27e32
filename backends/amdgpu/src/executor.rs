//! [`AmdExecutor`]: one AMD GPU agent as a reprise executor.

use std::sync::Arc;

use reprise_core::exec::{Capabilities, ErrorType, Executor, GlobalInfo, RegionRequest};
use reprise_core::record::BackendKind;

use crate::error::AmdError;
use crate::image::{AmdImage, AmdKernel};
use crate::memory::{AmdBuffer, AmdRegion};
use crate::queue::AmdQueue;
use crate::runtime::Runtime;

/// One AMD GPU, through the HSA runtime loaded at run time.
///
/// Opening it loads the runtime (`REPRISE_HSA_LIBRARY`, else
/// `libhsa-runtime64.so.1`), initialises it (`hsa_init`, balanced by
/// `hsa_shut_down` when the executor and everything made from it are gone)
/// and takes the GPU agent of the ordinal given. Regions are device memory
/// of the GPU's coarse-grained pool, at an exact address through the
/// runtime's virtual memory management (ROCm 6 and later); staging buffers
/// are fine-grained host memory the GPU may reach; images are AMDGPU code
/// objects.
#[derive(Debug, Clone)]
pub struct AmdExecutor {
    rt: Arc<Runtime>,
}

impl AmdExecutor {
    /// Opens GPU agent `ordinal` (0 is the first).
    ///
    /// Errors: [`AmdError::RuntimeNotFound`] without the runtime library
    /// (or an entry point it must have), [`AmdError::NoGpu`] when `hsa_init`
    /// fails or finds no GPU agent, [`AmdError::NoSuchDevice`] for an
    /// ordinal beyond the agents found.
    pub fn new(ordinal: i32) -> Result<AmdExecutor, AmdError> {
        Ok(AmdExecutor {
            rt: Runtime::open(ordinal)?,
        })
    }

    /// The agent's name (`gfx90a`).
    pub fn name(&self) -> &str {
        &self.rt.name
    }

    /// The agent's ISA name (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`).
    pub fn isa(&self) -> &str {
        &self.rt.isa
    }

    /// Whether the runtime can reserve exact addresses (replay at the
    /// recorded address).
    pub fn has_virtual_memory(&self) -> bool {
        self.rt.hsa.vmem.is_some()
    }

    /// The runtime library's name or path.
    pub fn library(&self) -> &str {
        self.rt.hsa.path()
    }
}

impl ErrorType for AmdExecutor {
    type Error = AmdError;
}

impl Executor for AmdExecutor {
    const KIND: BackendKind = BackendKind::Amdgpu;
    /// A GPU's; the HSA runtime may be named by `REPRISE_HSA_LIBRARY`, and
    /// HSA loads code objects compiled already (no PTX JIT).
    const CAPABILITIES: Capabilities = Capabilities {
        library_var: Some("REPRISE_HSA_LIBRARY"),
        jit_refusal: Some(
            "the AMD executor loads code objects compiled already (HSA has no PTX JIT; \
             recompile with --from-ir instead)",
        ),
        ..Capabilities::GPU
    };
    type Region = AmdRegion;
    type Image = AmdImage;
    type Kernel = AmdKernel;
    type Buffer = AmdBuffer;
    type Queue = AmdQueue;

    fn reserve(&self, request: RegionRequest) -> Result<AmdRegion, AmdError> {
        AmdRegion::reserve(&self.rt, request)
    }

    fn load_image(&self, image: &[u8]) -> Result<AmdImage, AmdError> {
        AmdImage::load(&self.rt, image)
    }

    fn kernel(&self, image: &AmdImage, name: &str) -> Result<AmdKernel, AmdError> {
        image.kernel(name)
    }

    fn global<'n>(
        &self,
        image: &AmdImage,
        name: &'n str,
    ) -> Result<Option<GlobalInfo<'n>>, AmdError> {
        image.global(name)
    }

    fn for_each_global(
        &self,
        image: &AmdImage,
        f: &mut dyn FnMut(GlobalInfo<'_>),
    ) -> Result<(), AmdError> {
        image.for_each_global(f)
    }

    fn param_sizes(&self, kernel: &AmdKernel, out: &mut [u32]) -> Result<Option<usize>, AmdError> {
        let mut n = 0;
        for (i, a) in kernel.meta().explicit_args().enumerate() {
            if let Some(slot) = out.get_mut(i) {
                *slot = a.size;
            }
            n += 1;
        }
        Ok(Some(n))
    }

    fn buffer(&self, len: usize) -> Result<AmdBuffer, AmdError> {
        AmdBuffer::new(&self.rt, len)
    }

    fn queue(&self) -> Result<AmdQueue, AmdError> {
        AmdQueue::new(&self.rt)
    }
}
