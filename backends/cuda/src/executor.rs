//! The executor: one CUDA device.

use std::sync::Arc;

use reprise_core::exec::{Capabilities, ErrorType, Executor, GlobalInfo, RegionRequest};
use reprise_core::record::BackendKind;

use crate::device::{Device, LaunchLimits};
use crate::error::CudaError;
use crate::jit::JitOptions;
use crate::memory::{CudaBuffer, CudaRegion};
use crate::module::{CudaImage, CudaKernel};
use crate::options::CudaOptions;
use crate::queue::CudaQueue;

/// One CUDA device, driven through its primary context.
///
/// The context is made current on whichever thread calls in; the executor,
/// its images, kernels, regions and buffers may move between threads, and so
/// may its queues. Everything made from it keeps the context alive.
#[derive(Debug, Clone)]
pub struct CudaExecutor {
    dev: Arc<Device>,
    /// Staging, JIT options and where to report what the JIT compiled.
    options: CudaOptions,
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
            options: CudaOptions::default(),
        })
    }

    /// The same executor with `options` for the images and queues made
    /// from now on.
    pub fn with_options(mut self, options: CudaOptions) -> Self {
        self.options = options;
        self
    }

    /// The options it was given.
    pub fn options(&self) -> &CudaOptions {
        &self.options
    }

    /// Loads the PTX images loaded from now on with `options`
    /// (`cuModuleLoadDataEx`, with verbose info and error logs kept); empty
    /// options load with `cuModuleLoadData`. While options are set, an
    /// image that is not PTX is refused ([`CudaError::JitOptionsNeedPtx`]).
    pub fn with_jit_options(mut self, options: JitOptions) -> Self {
        self.options.jit = options;
        self
    }

    /// Device-side staging for the queues made from now on (off by default).
    ///
    /// In each stretch of work between two synchronizes, the first download
    /// of at least `min_bytes` enqueued before any launch (with the async
    /// recording schedule: the snapshot of memory before the kernel) becomes
    /// a device-to-device copy into a shadow allocation; once the kernel is
    /// queued, the shadow is copied to the host on a second stream, so the
    /// kernel need not wait for the copy over the bus. The synchronize still
    /// covers both. With the sync schedule there is nothing to overlap
    /// (every step synchronizes), so staging only adds a copy there.
    ///
    /// `None` turns it off. Where the driver lacks a function staging needs,
    /// it stays off ([`CudaExecutor::device_staging`] says so); where the
    /// shadow cannot be allocated (out of device memory), that download goes
    /// straight to the host as usual. A queue fails to be made if its copy
    /// stream or events cannot be.
    ///
    /// ```
    /// use reprise_cuda::CudaExecutor;
    /// if let Ok(gpu) = CudaExecutor::new(0) {
    ///     let gpu = gpu.with_device_staging(Some(1 << 20));
    ///     // On where the driver has what staging needs.
    ///     assert!(matches!(gpu.device_staging(), None | Some(0x10_0000)));
    ///     assert_eq!(gpu.with_device_staging(None).device_staging(), None);
    /// }
    /// ```
    pub fn with_device_staging(mut self, min_bytes: Option<u64>) -> Self {
        self.options.device_staging = min_bytes;
        self
    }

    /// The smallest download staged on the device, when device-side staging
    /// is on and the driver supports it.
    pub fn device_staging(&self) -> Option<u64> {
        self.options.device_staging.filter(|_| self.dev.lib.staging)
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> i32 {
        self.dev.ordinal
    }

    /// The device's compute capability, `(major, minor)`: `(9, 0)` for an
    /// H100 or H200.
    pub fn compute_capability(&self) -> Result<(u32, u32), CudaError> {
        Ok(self.dev.compute_capability()?)
    }

    /// What one launch may ask of the device (threads per block, block and
    /// grid dimensions, shared memory per block with and without opting
    /// in), as queried when the executor was made; 0 where the driver did
    /// not say. Launches are checked against these before they reach the
    /// driver.
    ///
    /// ```
    /// use reprise_cuda::CudaExecutor;
    /// if let Ok(gpu) = CudaExecutor::new(0) {
    ///     let limits = gpu.launch_limits();
    ///     // Shared memory a kernel may opt in to, static and dynamic
    ///     // together: 64 KiB (sm_75) to 227 KiB (sm_90); 0 if unknown.
    ///     println!("{} bytes of shared memory per block", limits.shared_optin);
    /// }
    /// ```
    pub fn launch_limits(&self) -> LaunchLimits {
        self.dev.limits
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
    const KIND: BackendKind = BackendKind::Cuda;
    /// A GPU's; applications are recorded through the interposer,
    /// `libcuda.so.1` is found by the dynamic loader (`LD_LIBRARY_PATH`),
    /// and an image of no kind reprise knows is refused rather than handed
    /// to the driver.
    const CAPABILITIES: Capabilities = Capabilities {
        interposed: true,
        judges_unknown_images: false,
        ..Capabilities::GPU
    };
    type Region = CudaRegion;
    type Image = CudaImage;
    type Kernel = CudaKernel;
    type Buffer = CudaBuffer;
    type Queue = CudaQueue;

    fn reserve(&self, request: RegionRequest) -> Result<CudaRegion, CudaError> {
        CudaRegion::reserve(&self.dev, request.base, request.capacity, request.backed)
    }

    fn memory_size(&self) -> Option<u64> {
        crate::memory::total_memory(&self.dev)
    }

    fn grow_region(&self, region: &CudaRegion, backed: u64) -> Result<(), CudaError> {
        region.grow(backed)
    }

    fn load_image(&self, image: &[u8]) -> Result<CudaImage, CudaError> {
        CudaImage::load(&self.dev, image, &self.options)
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

    // `reserve_mapped` and `buffer_mapped` keep their defaults: snapshots
    // are read into page-locked buffers, as a DMA engine needs pinned
    // memory, which a file mapping is not.

    fn queue(&self) -> Result<CudaQueue, CudaError> {
        CudaQueue::new(&self.dev, self.device_staging())
    }

    /// Where the driver has `cuMemcpyDtoDAsync` (every driver of the last
    /// decade; the staging symbols are checked together).
    fn copies_on_device(&self) -> bool {
        self.dev.lib.staging
    }
}
