//! `cuInit` and the calls that make a context current: the region is
//! reserved at the first of them that lets the driver reserve it, before
//! the program allocates (the driver places later reservations where its
//! own pools leave room, which a replay could not find again).

use std::ffi::{c_int, c_uint};

use super::forward;
use crate::real::*;
use crate::state;

/// `cuInit`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuInit(flags: c_uint) -> CuResult {
    let rc = forward!(Init, "cuInit", flags);
    if rc == SUCCESS {
        state::initialized();
    }
    rc
}

/// `cuCtxSetCurrent`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSetCurrent(ctx: Handle) -> CuResult {
    let rc = forward!(CtxSetCurrent, "cuCtxSetCurrent", ctx);
    if rc == SUCCESS && !ctx.is_null() {
        state::context_current();
    }
    rc
}

/// `cuCtxPushCurrent_v2`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPushCurrent_v2(ctx: Handle) -> CuResult {
    let rc = forward!(CtxSetCurrent, "cuCtxPushCurrent_v2", ctx);
    if rc == SUCCESS {
        state::context_current();
    }
    rc
}

/// `cuCtxCreate_v2` (the new context is current).
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxCreate_v2(ctx: *mut Handle, flags: c_uint, dev: c_int) -> CuResult {
    let rc = forward!(CtxCreate, "cuCtxCreate_v2", ctx, flags, dev);
    if rc == SUCCESS {
        state::context_current();
    }
    rc
}
