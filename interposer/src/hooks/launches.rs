//! Kernel launches: a launch the configuration selects is recorded (the
//! recorder runs it, with its snapshots, on the program's stream); every
//! other goes straight to the driver. Launches that cannot be recorded are
//! counted for the summary: during stream capture (the launch only becomes
//! a graph node, and the recorder's synchronize would break the capture),
//! graph launches, cooperative and cluster launches (a replay would launch
//! them as plain ones), launches with other attributes, and launches whose
//! parameters the program packed itself (`extra`).

use std::ffi::{c_int, c_uint, c_void};

use crate::real::*;
use crate::state::{self, Launch};
use crate::summary::Skipped;

/// Records the launch if selected: `Some(result)` when the recorder ran it.
///
/// # Safety
/// `params` holds one pointer per parameter of `f`.
#[allow(clippy::too_many_arguments)]
unsafe fn try_record(
    f: Handle,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared: c_uint,
    stream: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Option<CuResult> {
    if !extra.is_null() || params.is_null() {
        state::not_recordable(Skipped::Extra);
        return None;
    }
    let launch = Launch {
        function: f,
        grid,
        block,
        shared,
        stream,
        params,
    };
    // SAFETY: the caller's guarantee.
    unsafe { state::launch(&launch) }
}

/// `cuLaunchKernel`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernel(
    f: Handle,
    gx: c_uint,
    gy: c_uint,
    gz: c_uint,
    bx: c_uint,
    by: c_uint,
    bz: c_uint,
    shared: c_uint,
    stream: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult {
    let Ok(r) = real() else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: the driver's own requirement on `params`.
    if let Some(rc) =
        unsafe { try_record(f, [gx, gy, gz], [bx, by, bz], shared, stream, params, extra) }
    {
        return rc;
    }
    // SAFETY: forwarded unchanged.
    unsafe { (r.cuLaunchKernel)(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra) }
}

/// `cuLaunchKernel_ptsz` (what `cuGetProcAddress` hands out for the
/// per-thread default stream).
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernel_ptsz(
    f: Handle,
    gx: c_uint,
    gy: c_uint,
    gz: c_uint,
    bx: c_uint,
    by: c_uint,
    bz: c_uint,
    shared: c_uint,
    stream: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult {
    let Some(real) = crate::driver_fn!(LaunchKernel, "cuLaunchKernel_ptsz") else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: the driver's own requirement on `params`.
    if let Some(rc) = unsafe {
        try_record(
            f,
            [gx, gy, gz],
            [bx, by, bz],
            shared,
            stream_meant(stream, true),
            params,
            extra,
        )
    } {
        return rc;
    }
    // SAFETY: forwarded unchanged.
    unsafe { real(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra) }
}

/// `CUlaunchAttribute` (cuda.h): an id padded to 8 bytes and a 64-byte
/// value.
#[repr(C)]
pub struct LaunchAttribute {
    /// `CUlaunchAttributeID`.
    pub id: c_int,
    pad: [u8; 4],
    /// The value's first word (`cooperative`, `priority`, a cluster's x).
    pub value: [u32; 16],
}

/// `CUlaunchConfig` (cuda.h): grid, block, dynamic shared memory, stream
/// and launch attributes.
#[repr(C)]
pub struct LaunchConfig {
    /// Grid in x, y, z.
    pub grid: [c_uint; 3],
    /// Block in x, y, z.
    pub block: [c_uint; 3],
    /// Dynamic shared memory.
    pub shared: c_uint,
    /// The stream.
    pub stream: Handle,
    /// Launch attributes.
    pub attrs: *const LaunchAttribute,
    /// How many.
    pub num_attrs: c_uint,
}

/// `CU_LAUNCH_ATTRIBUTE_IGNORE`, `_COOPERATIVE`, `_CLUSTER_DIMENSION`.
const ATTR_IGNORE: c_int = 0;
const ATTR_COOPERATIVE: c_int = 2;
const ATTR_CLUSTER_DIMENSION: c_int = 4;

/// Why a launch with these attributes cannot be recorded, if it cannot.
///
/// # Safety
/// `c.attrs` holds `c.num_attrs` attributes.
unsafe fn unrecordable(c: &LaunchConfig) -> Option<Skipped> {
    if c.num_attrs == 0 {
        return None;
    }
    if c.attrs.is_null() {
        return Some(Skipped::Attributes);
    }
    // SAFETY: the caller's guarantee.
    let attrs = unsafe { std::slice::from_raw_parts(c.attrs, c.num_attrs as usize) };
    let mut why = None;
    for a in attrs {
        match a.id {
            ATTR_IGNORE => {}
            ATTR_COOPERATIVE if a.value[0] == 0 => {}
            ATTR_COOPERATIVE => return Some(Skipped::Cooperative),
            ATTR_CLUSTER_DIMENSION => why = Some(Skipped::Cluster),
            _ => why = why.or(Some(Skipped::Attributes)),
        }
    }
    why
}

type LaunchExFn = unsafe extern "C" fn(
    *const LaunchConfig,
    Handle,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CuResult;

/// [`cuLaunchKernelEx`] and its `_ptsz` variant: recorded as
/// `cuLaunchKernel`'s unless an attribute changes how the grid runs.
///
/// # Safety
/// As the driver's.
unsafe fn launch_ex(
    launch: Option<LaunchExFn>,
    config: *const LaunchConfig,
    f: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    per_thread_stream: bool,
) -> CuResult {
    let Some(launch) = launch else {
        return ERROR_NOT_FOUND;
    };
    // SAFETY: the caller's config, valid for the call.
    if let Some(c) = unsafe { config.as_ref() } {
        // SAFETY: the driver's own requirement on the attributes.
        match unsafe { unrecordable(c) } {
            Some(why) => state::not_recordable(why),
            None => {
                let stream = if per_thread_stream {
                    stream_meant(c.stream, true)
                } else {
                    c.stream
                };
                // SAFETY: the driver's own requirement on `params`.
                if let Some(rc) =
                    unsafe { try_record(f, c.grid, c.block, c.shared, stream, params, extra) }
                {
                    return rc;
                }
            }
        }
    }
    // SAFETY: forwarded unchanged.
    unsafe { launch(config, f, params, extra) }
}

/// `cuLaunchKernelEx` (CUDA 12).
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernelEx(
    config: *const LaunchConfig,
    f: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult {
    let real = crate::driver_fn!(LaunchExFn, "cuLaunchKernelEx");
    // SAFETY: as the driver's.
    unsafe { launch_ex(real, config, f, params, extra, false) }
}

/// `cuLaunchKernelEx_ptsz`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernelEx_ptsz(
    config: *const LaunchConfig,
    f: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult {
    let real = crate::driver_fn!(LaunchExFn, "cuLaunchKernelEx_ptsz");
    // SAFETY: as the driver's.
    unsafe { launch_ex(real, config, f, params, extra, true) }
}

/// Entry points whose launches are never recorded: each counts its call
/// for the summary (as `why`) and forwards it unchanged.
macro_rules! counted {
    ($($name:ident: $ty:ty, $why:expr, ($($arg:ident: $argty:ty),*);)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: not recorded (counted).")]
        ///
        /// # Safety
        /// As the driver's.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $argty),*) -> CuResult {
            state::not_recordable($why);
            super::forward!($ty, stringify!($name) $(, $arg)*)
        }
    )*};
}

counted! {
    cuLaunchCooperativeKernel: LaunchCooperative, Skipped::Cooperative, (
        f: Handle, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint,
        shared: c_uint, stream: Handle, params: *mut *mut c_void
    );
    cuLaunchCooperativeKernel_ptsz: LaunchCooperative, Skipped::Cooperative, (
        f: Handle, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint,
        shared: c_uint, stream: Handle, params: *mut *mut c_void
    );
    cuGraphLaunch: GraphLaunch, Skipped::Graph, (graph: Handle, stream: Handle);
    cuGraphLaunch_ptsz: GraphLaunch, Skipped::Graph, (graph: Handle, stream: Handle);
}

/// Entry points that queue a host function on a stream (`per_thread`: a
/// `_ptsz` form, whose null stream is the thread's own): forwarded, and
/// the stream noted, so that a launch behind the function waits for it to
/// run before it is recorded ([`state::behind_host_function`]).
macro_rules! host_functions {
    ($($name:ident: $ty:ty, $per_thread:expr, ($($arg:ident: $argty:ty),*);)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: its stream noted.")]
        ///
        /// # Safety
        /// As the driver's.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(stream: Handle $(, $arg: $argty)*) -> CuResult {
            let rc = super::forward!($ty, stringify!($name), stream $(, $arg)*);
            if rc == SUCCESS {
                state::host_function_queued(stream, $per_thread);
            }
            rc
        }
    )*};
}

host_functions! {
    cuLaunchHostFunc: LaunchHostFunc, false, (f: *mut c_void, data: *mut c_void);
    cuLaunchHostFunc_ptsz: LaunchHostFunc, true, (f: *mut c_void, data: *mut c_void);
    cuStreamAddCallback: StreamAddCallback, false,
        (f: *mut c_void, data: *mut c_void, flags: c_uint);
    cuStreamAddCallback_ptsz: StreamAddCallback, true,
        (f: *mut c_void, data: *mut c_void, flags: c_uint);
}

/// `cuStreamBeginCapture_v2`: no launch is recorded while a capture is
/// under way.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamBeginCapture_v2(stream: Handle, mode: c_int) -> CuResult {
    let rc = super::forward!(StreamBeginCapture, "cuStreamBeginCapture_v2", stream, mode);
    if rc == SUCCESS {
        state::capture(stream, true);
    }
    rc
}

/// `cuStreamBeginCapture_v2_ptsz`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamBeginCapture_v2_ptsz(stream: Handle, mode: c_int) -> CuResult {
    let rc = super::forward!(
        StreamBeginCapture,
        "cuStreamBeginCapture_v2_ptsz",
        stream,
        mode
    );
    if rc == SUCCESS {
        state::capture(stream_meant(stream, true), true);
    }
    rc
}

/// `cuStreamEndCapture`: the capture is over, whatever the driver says
/// of it.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamEndCapture(stream: Handle, graph: *mut Handle) -> CuResult {
    let rc = super::forward!(StreamEndCapture, "cuStreamEndCapture", stream, graph);
    state::capture(stream, false);
    rc
}

/// `cuStreamEndCapture_ptsz`.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamEndCapture_ptsz(stream: Handle, graph: *mut Handle) -> CuResult {
    let rc = super::forward!(StreamEndCapture, "cuStreamEndCapture_ptsz", stream, graph);
    state::capture(stream_meant(stream, true), false);
    rc
}
