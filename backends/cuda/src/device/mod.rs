//! The device and its retained primary context, which every other object
//! keeps alive, and what a launch may ask of it ([`LaunchLimits`]).

mod limits;

pub use limits::LaunchLimits;

use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex};

use cudarc::driver::sys;

use crate::context::ContextState;
use crate::error::{CudaError, DriverError};
use crate::raw::{self, Failure, Library, PrimaryContext};

/// One device and its retained primary context.
///
/// Everything made from an executor (regions, images, kernels, buffers,
/// queues, streams, events) holds an `Arc<Device>`, so the context outlives
/// all of it. Holding one also proves the driver library is loaded with
/// every symbol in `raw::REQUIRED` (the contract of most `raw` functions).
#[derive(Debug)]
pub(crate) struct Device {
    pub ordinal: i32,
    pub device: sys::CUdevice,
    ctx: PrimaryContext,
    pub lib: Library,
    /// What a launch may ask of the device.
    pub limits: LaunchLimits,
    /// What the queues of the context share, with every other `Device` of
    /// the same context (another executor of the same device). Let go of
    /// in `Drop` before the context is released.
    pub state: ManuallyDrop<Arc<ContextState>>,
    /// Errors raised in `Drop` paths, reported by the next synchronize.
    deferred: Mutex<Option<CudaError>>,
}

impl Device {
    /// Initialises the driver and retains the primary context of device
    /// `ordinal`.
    pub fn open(ordinal: i32) -> Result<Device, CudaError> {
        let lib = raw::library()?;
        match raw::init(&lib) {
            Err(f) if f.code() == sys::CUresult::CUDA_ERROR_NO_DEVICE => {
                return Err(CudaError::NoDevice);
            }
            r => r?,
        }
        let count = raw::device_get_count(&lib)?;
        if count == 0 {
            return Err(CudaError::NoDevice);
        }
        if !(0..count).contains(&ordinal) {
            return Err(CudaError::BadOrdinal { ordinal, count });
        }
        let device = raw::device_get(&lib, ordinal)?;
        let limits = limits::query(&lib, device);
        // Released in `Drop`.
        let ctx = PrimaryContext::retain(&lib, device)?;
        let state = ContextState::of(ctx.get() as usize);
        let dev = Device {
            ordinal,
            device,
            ctx,
            lib,
            limits,
            state: ManuallyDrop::new(state),
            deferred: Mutex::new(None),
        };
        dev.bind()?;
        Ok(dev)
    }

    /// Makes the context current on the calling thread.
    pub fn bind(&self) -> Result<(), DriverError> {
        Ok(self.ctx.bind()?)
    }

    /// Queries an integer device attribute.
    pub fn attribute(&self, attr: sys::CUdevice_attribute) -> Result<i32, DriverError> {
        Ok(raw::device_get_attribute(&self.lib, self.device, attr)?)
    }

    /// The compute capability, `(major, minor)`.
    pub fn compute_capability(&self) -> Result<(u32, u32), DriverError> {
        use sys::CUdevice_attribute as A;
        let major = self.attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = self.attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        Ok((major.max(0) as u32, minor.max(0) as u32))
    }

    /// Keeps the first error of a `Drop` path for the next synchronize.
    pub fn defer(&self, e: impl Into<CudaError>) {
        let mut slot = self.deferred.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e.into());
    }

    /// Runs a cleanup call (a `raw` function, which names the call in its
    /// error) in a `Drop` path with the context bound, keeping its error;
    /// `true` when it succeeded.
    pub fn cleanup(&self, f: impl FnOnce() -> Result<(), Failure>) -> bool {
        match self.bind().and_then(|()| Ok(f()?)) {
            Ok(()) => true,
            Err(e) => {
                self.defer(e);
                false
            }
        }
    }

    /// Takes the error a `Drop` path kept, if any.
    pub fn take_deferred(&self) -> Option<CudaError> {
        self.deferred
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: taken once, here, and `self.state` is not used again.
        let state = unsafe { ManuallyDrop::take(&mut self.state) };
        let ctx = &self.ctx;
        // The state goes first: a context retained afresh at the same handle
        // once this one is released must not get it.
        ContextState::release(state, || {
            // SAFETY: releases the retain taken in `open`; every object that
            // used the context held an `Arc<Device>` and is gone, which only
            // this owner knows (the driver's objects do not borrow the
            // retain). Nothing is left to report an error to.
            let _ = unsafe { ctx.release() };
        });
    }
}
