//! The executor: one CUDA device.

use std::sync::Arc;

use reprise_core::exec::{ErrorType, Executor, GlobalInfo, RegionRequest};

use crate::driver::Device;
use crate::error::CudaError;
use crate::memory::{CudaBuffer, CudaRegion};
use crate::module::{CudaImage, CudaKernel};
use crate::queue::CudaQueue;

/// One CUDA device, driven through its primary context.
///
/// The context is made current on whichever thread calls in; the executor,
/// its images, kernels, regions and buffers may move between threads, and so
/// may its queues. Everything made from it keeps the context alive.
#[derive(Debug, Clone)]
pub struct CudaExecutor {
    dev: Arc<Device>,
}

impl CudaExecutor {
    /// Opens device `ordinal`: loads the driver library, initialises it and
    /// retains the device's primary context.
    ///
    /// Fails with [`CudaError::DriverNotFound`] when `libcuda.so` cannot be
    /// loaded, [`CudaError::NoDevice`] when the driver sees no device and
    /// [`CudaError::BadOrdinal`] when `ordinal` is out of range. Never panics.
    pub fn new(ordinal: i32) -> Result<Self, CudaError> {
        Ok(CudaExecutor {
            dev: Arc::new(Device::open(ordinal)?),
        })
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> i32 {
        self.dev.ordinal
    }

    /// Whether the driver reports kernel parameter sizes
    /// (`cuFuncGetParamInfo`, CUDA 12.4+).
    pub fn has_param_info(&self) -> bool {
        self.dev.lib.param_info
    }
}

impl ErrorType for CudaExecutor {
    type Error = CudaError;
}

impl Executor for CudaExecutor {
    type Region = CudaRegion;
    type Image = CudaImage;
    type Kernel = CudaKernel;
    type Buffer = CudaBuffer;
    type Queue = CudaQueue;

    fn reserve(&self, request: RegionRequest) -> Result<CudaRegion, CudaError> {
        CudaRegion::reserve(&self.dev, request.base, request.capacity)
    }

    fn load_image(&self, image: &[u8]) -> Result<CudaImage, CudaError> {
        CudaImage::load(&self.dev, image)
    }

    fn kernel(&self, image: &CudaImage, name: &str) -> Result<CudaKernel, CudaError> {
        image.kernel(name)
    }

    fn global<'n>(
        &self,
        image: &CudaImage,
        name: &'n str,
    ) -> Result<Option<GlobalInfo<'n>>, CudaError> {
        image.global(name)
    }

    fn for_each_global(
        &self,
        image: &CudaImage,
        f: &mut dyn FnMut(GlobalInfo<'_>),
    ) -> Result<(), CudaError> {
        image.for_each_global(f)
    }

    fn param_sizes(
        &self,
        kernel: &CudaKernel,
        out: &mut [u32],
    ) -> Result<Option<usize>, CudaError> {
        Ok(kernel.param_sizes().map(|sizes| {
            for (o, s) in out.iter_mut().zip(sizes) {
                *o = *s;
            }
            sizes.len()
        }))
    }

    fn buffer(&self, len: usize) -> Result<CudaBuffer, CudaError> {
        CudaBuffer::new(&self.dev, len)
    }

    fn queue(&self) -> Result<CudaQueue, CudaError> {
        CudaQueue::new(&self.dev)
    }
}

/// Snapshots are read into page-locked buffers (the default): a DMA engine
/// needs pinned memory, which a file mapping is not.
impl reprise_std::FileBuffers for CudaExecutor {}
