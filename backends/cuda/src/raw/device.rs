//! Driver calls on the driver itself, devices and their primary contexts.
//!
//! Every function requires the library loaded (see the
//! [parent module](super)).

use cudarc::driver::sys;

use super::failure::{Failure, result};

/// `cuInit(0)`; may be called any number of times.
///
/// # Safety
///
/// [`library`](super::library::library) returned `Ok`.
pub(crate) unsafe fn init() -> Result<(), Failure> {
    // SAFETY: the library and symbol are present (the caller's contract);
    // cuInit takes flags (must be 0).
    result("cuInit", unsafe { sys::cuInit(0) })
}

/// `cuDeviceGetCount`: how many devices the driver sees.
///
/// # Safety
///
/// [`library`](super::library::library) returned `Ok` and [`init`] succeeded.
pub(crate) unsafe fn device_get_count() -> Result<i32, Failure> {
    let mut count = 0;
    // SAFETY: initialised (the caller's contract); `count` is a live
    // out-parameter.
    result("cuDeviceGetCount", unsafe {
        sys::cuDeviceGetCount(&mut count)
    })?;
    Ok(count)
}

/// `cuDeviceGet`: the device of `ordinal`.
///
/// # Safety
///
/// [`library`](super::library::library) returned `Ok`, [`init`] succeeded, and `ordinal` is below
/// [`device_get_count`].
pub(crate) unsafe fn device_get(ordinal: i32) -> Result<sys::CUdevice, Failure> {
    let mut device = 0;
    // SAFETY: the ordinal is in range (the caller's contract); `device` is a
    // live out-parameter.
    result("cuDeviceGet", unsafe {
        sys::cuDeviceGet(&mut device, ordinal)
    })?;
    Ok(device)
}

/// `cuDeviceGetAttribute`: an integer attribute of `device`.
///
/// # Safety
///
/// The library is loaded (a `Device` is held or being opened) and `device`
/// came from [`device_get`].
pub(crate) unsafe fn device_get_attribute(
    device: sys::CUdevice,
    attr: sys::CUdevice_attribute,
) -> Result<i32, Failure> {
    let mut v = 0;
    // SAFETY: the library is loaded and `device` came from cuDeviceGet (the
    // caller's contract); `v` is a live out-parameter.
    result("cuDeviceGetAttribute", unsafe {
        sys::cuDeviceGetAttribute(&mut v, attr, device)
    })?;
    Ok(v)
}

/// `cuDevicePrimaryCtxRetain`: retains the primary context of `device`.
///
/// # Safety
///
/// The library is loaded and `device` came from [`device_get`]; the retain
/// is to be released once with [`device_primary_ctx_release`].
pub(crate) unsafe fn device_primary_ctx_retain(
    device: sys::CUdevice,
) -> Result<sys::CUcontext, Failure> {
    let mut ctx = std::ptr::null_mut();
    // SAFETY: `device` came from cuDeviceGet (the caller's contract); `ctx`
    // is a live out-parameter.
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
pub(crate) unsafe fn device_primary_ctx_release(device: sys::CUdevice) -> Result<(), Failure> {
    // SAFETY: releases a retain the caller holds, which nothing uses any
    // more (the caller's contract).
    result("cuDevicePrimaryCtxRelease", unsafe {
        sys::cuDevicePrimaryCtxRelease_v2(device)
    })
}

/// `cuCtxGetCurrent`: the context current on the calling thread (null for
/// none).
///
/// # Safety
///
/// The library is loaded (a `Device` is held or being opened).
pub(crate) unsafe fn ctx_get_current() -> Result<sys::CUcontext, Failure> {
    let mut cur = std::ptr::null_mut();
    // SAFETY: the library is loaded (the caller's contract); `cur` is a live
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
pub(crate) unsafe fn ctx_set_current(ctx: sys::CUcontext) -> Result<(), Failure> {
    // SAFETY: `ctx` is retained (the caller's contract).
    result("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ctx) })
}

/// `cuCtxSynchronize`: waits for every kernel and copy of the current
/// context.
///
/// # Safety
///
/// The library is loaded and the context is bound (`Device::bind`).
pub(crate) unsafe fn ctx_synchronize() -> Result<(), Failure> {
    // SAFETY: the library is loaded and a context is current (the caller's
    // contract); waiting is all this does.
    result("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
}
