//! Driver calls on the driver itself, devices and their primary contexts.
//!
//! Every function requires the library loaded (see the
//! [parent module](super)): the safe ones take the [`Library`] that proves
//! it.

use cudarc::driver::sys;

use super::failure::{Failure, result};
use super::library::Library;

/// `cuInit(0)`; may be called any number of times.
pub(crate) fn init(_: &Library) -> Result<(), Failure> {
    // SAFETY: the library and symbol are present (`Library`); cuInit takes
    // flags (must be 0).
    result("cuInit", unsafe { sys::cuInit(0) })
}

/// `cuDeviceGetCount`: how many devices the driver sees (a failure before
/// [`init`]).
pub(crate) fn device_get_count(_: &Library) -> Result<i32, Failure> {
    let mut count = 0;
    // SAFETY: the library is loaded (`Library`); `count` is a live
    // out-parameter.
    result("cuDeviceGetCount", unsafe {
        sys::cuDeviceGetCount(&mut count)
    })?;
    Ok(count)
}

/// `cuDeviceGet`: the device of `ordinal` (a failure for one out of range,
/// or before [`init`]).
pub(crate) fn device_get(_: &Library, ordinal: i32) -> Result<sys::CUdevice, Failure> {
    let mut device = 0;
    // SAFETY: the library is loaded (`Library`); the driver checks the
    // ordinal; `device` is a live out-parameter.
    result("cuDeviceGet", unsafe {
        sys::cuDeviceGet(&mut device, ordinal)
    })?;
    Ok(device)
}

/// `cuDeviceGetAttribute`: an integer attribute of `device` (a failure for
/// a device the driver does not know).
pub(crate) fn device_get_attribute(
    _: &Library,
    device: sys::CUdevice,
    attr: sys::CUdevice_attribute,
) -> Result<i32, Failure> {
    let mut v = 0;
    // SAFETY: the library is loaded (`Library`); a device is an ordinal the
    // driver checks, not a pointer; `v` is a live out-parameter.
    result("cuDeviceGetAttribute", unsafe {
        sys::cuDeviceGetAttribute(&mut v, attr, device)
    })?;
    Ok(v)
}

/// `cuDevicePrimaryCtxRetain`: retains the primary context of `device`;
/// the retain is to be released once with [`device_primary_ctx_release`]
/// (or it is kept until the process exits).
fn device_primary_ctx_retain(
    _: &Library,
    device: sys::CUdevice,
) -> Result<sys::CUcontext, Failure> {
    let mut ctx = std::ptr::null_mut();
    // SAFETY: the library is loaded (`Library`); the driver checks the
    // device; `ctx` is a live out-parameter.
    result("cuDevicePrimaryCtxRetain", unsafe {
        sys::cuDevicePrimaryCtxRetain(&mut ctx, device)
    })?;
    Ok(ctx)
}

/// `cuDevicePrimaryCtxRelease_v2`: releases a retain of `device`'s primary
/// context.
///
/// # Safety
///
/// The library is loaded; the caller took a retain of `device`'s primary
/// context with [`device_primary_ctx_retain`] that it has not released,
/// and nothing it made in the context is used any more.
unsafe fn device_primary_ctx_release(device: sys::CUdevice) -> Result<(), Failure> {
    // SAFETY: releases a retain the caller holds, which nothing uses any
    // more (the caller's contract).
    result("cuDevicePrimaryCtxRelease", unsafe {
        sys::cuDevicePrimaryCtxRelease_v2(device)
    })
}

/// `cuCtxGetCurrent`: the context current on the calling thread (null for
/// none).
fn ctx_get_current(_: &Library) -> Result<sys::CUcontext, Failure> {
    let mut cur = std::ptr::null_mut();
    // SAFETY: the library is loaded (`Library`); `cur` is a live
    // out-parameter.
    result("cuCtxGetCurrent", unsafe { sys::cuCtxGetCurrent(&mut cur) })?;
    Ok(cur)
}

/// `cuCtxSetCurrent`: makes `ctx` current on the calling thread.
///
/// # Safety
///
/// The library is loaded and `ctx` is retained (by the `Device` the caller
/// holds).
unsafe fn ctx_set_current(ctx: sys::CUcontext) -> Result<(), Failure> {
    // SAFETY: `ctx` is retained (the caller's contract).
    result("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ctx) })
}

/// `cuCtxSynchronize`: waits for every kernel and copy of the current
/// context (a failure when none is current).
pub(crate) fn ctx_synchronize(_: &Library) -> Result<(), Failure> {
    // SAFETY: the library is loaded (`Library`); waiting is all this does.
    result("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
}

/// A retain of a device's primary context ([`PrimaryContext::retain`]),
/// held until [`PrimaryContext::release`] (dropped without that, it is
/// kept until the process exits).
#[derive(Debug)]
pub(crate) struct PrimaryContext {
    device: sys::CUdevice,
    ctx: sys::CUcontext,
    lib: Library,
}

// SAFETY: a `CUcontext` is a handle the driver lets any thread use (made
// current with `cuCtxSetCurrent`, which `bind` does); the driver API is
// thread-safe.
unsafe impl Send for PrimaryContext {}
// SAFETY: as for `Send`; `&PrimaryContext` offers only thread-safe driver
// calls.
unsafe impl Sync for PrimaryContext {}

impl PrimaryContext {
    /// Retains the primary context of `device`.
    pub(crate) fn retain(lib: &Library, device: sys::CUdevice) -> Result<Self, Failure> {
        Ok(PrimaryContext {
            device,
            ctx: device_primary_ctx_retain(lib, device)?,
            lib: *lib,
        })
    }

    /// The context, as a handle.
    pub(crate) fn get(&self) -> sys::CUcontext {
        self.ctx
    }

    /// Makes the context current on the calling thread.
    pub(crate) fn bind(&self) -> Result<(), Failure> {
        if ctx_get_current(&self.lib)? != self.ctx {
            // SAFETY: the library is loaded (`Library`); the context is
            // retained until `self` is released.
            unsafe { ctx_set_current(self.ctx) }?;
        }
        Ok(())
    }

    /// Releases the retain (`cuDevicePrimaryCtxRelease`).
    ///
    /// # Safety
    ///
    /// Nothing made in the context through this retain is used any more,
    /// and `self` is not used after this.
    pub(crate) unsafe fn release(&self) -> Result<(), Failure> {
        // SAFETY: the library is loaded (`Library`); the retain is held
        // and nothing uses it any more (the caller's contract).
        unsafe { device_primary_ctx_release(self.device) }
    }
}
