//! Driver calls on streams and events, and the launches and host callbacks
//! enqueued on streams.
//!
//! Every function requires the library loaded (a `Device` held, see the
//! [parent module](super)) and the context bound on the calling thread
//! (`Device::bind`) where the driver needs it. The RAII owners of streams
//! and events are in [`crate::stream`].

use std::ffi::c_void;

use cudarc::driver::sys;

use super::failure::{Failure, result};

/// `cuStreamCreate`: a new stream in the current context, with `flags`.
///
/// # Safety
///
/// The library is loaded and the context is bound; the stream is to be
/// destroyed once with [`stream_destroy`].
pub(crate) unsafe fn stream_create(flags: sys::CUstream_flags) -> Result<sys::CUstream, Failure> {
    let mut stream = std::ptr::null_mut();
    // SAFETY: the context is bound (the caller's contract); `stream` is a
    // live out-parameter; the flag is a valid stream flag.
    result("cuStreamCreate", unsafe {
        sys::cuStreamCreate(&mut stream, flags as u32)
    })?;
    Ok(stream)
}

/// `cuStreamDestroy_v2`: destroys a stream (work still queued on it
/// completes first, in the background).
///
/// # Safety
///
/// The library is loaded; `stream` came from [`stream_create`] and is not
/// used after this.
pub(crate) unsafe fn stream_destroy(stream: sys::CUstream) -> Result<(), Failure> {
    // SAFETY: the caller's stream, not used again (its contract).
    result("cuStreamDestroy", unsafe {
        sys::cuStreamDestroy_v2(stream)
    })
}

/// `cuStreamQuery`: `Ok` when all the stream's work is complete; the
/// [`Failure`] is `CUDA_ERROR_NOT_READY` while work is outstanding.
///
/// # Safety
///
/// The library is loaded and `stream` is live.
pub(crate) unsafe fn stream_query(stream: sys::CUstream) -> Result<(), Failure> {
    // SAFETY: the stream is live (the caller's contract).
    result("cuStreamQuery", unsafe { sys::cuStreamQuery(stream) })
}

/// `cuStreamSynchronize`: waits for all the stream's work.
///
/// # Safety
///
/// The library is loaded and `stream` is live.
pub(crate) unsafe fn stream_synchronize(stream: sys::CUstream) -> Result<(), Failure> {
    // SAFETY: the stream is live (the caller's contract); waiting is all
    // this does.
    result("cuStreamSynchronize", unsafe {
        sys::cuStreamSynchronize(stream)
    })
}

/// `cuStreamWaitEvent`: later work on `stream` waits for the last record of
/// `event`.
///
/// # Safety
///
/// The library is loaded with the [`STAGING`](super::library::STAGING) symbols; the
/// stream and the event are live.
pub(crate) unsafe fn stream_wait_event(
    stream: sys::CUstream,
    event: sys::CUevent,
) -> Result<(), Failure> {
    // SAFETY: both handles are live (the caller's contract); flags must be
    // 0.
    result("cuStreamWaitEvent", unsafe {
        sys::cuStreamWaitEvent(stream, event, 0)
    })
}

/// `cuStreamAddCallback`: enqueues `callback(stream, status, data)` on
/// `stream`; the driver calls it once, on a thread of its own, also after a
/// device error (with the error as its status).
///
/// # Safety
///
/// The library has `cuStreamAddCallback` (`Library::stream_callback`);
/// `stream` is live; `callback` is sound to call once, from any thread,
/// with `data`, and owns `data` from a successful return on (after a
/// failure the caller still owns it).
pub(crate) unsafe fn stream_add_callback(
    stream: sys::CUstream,
    callback: unsafe extern "C" fn(sys::CUstream, sys::CUresult, *mut c_void),
    data: *mut c_void,
) -> Result<(), Failure> {
    // SAFETY: `callback` may be called with `data` (the caller's
    // contract); flags must be 0.
    result("cuStreamAddCallback", unsafe {
        sys::cuStreamAddCallback(stream, Some(callback), data, 0)
    })
}

/// `cuLaunchHostFunc`: enqueues `function(data)` on `stream`; the driver
/// calls it once, on a thread of its own, unless the context has faulted
/// (then never).
///
/// # Safety
///
/// The library has `cuLaunchHostFunc`; `stream` is live; `function` is
/// sound to call once, from any thread, with `data`, and owns `data` from a
/// successful return on (after a failure the caller still owns it).
pub(crate) unsafe fn launch_host_func(
    stream: sys::CUstream,
    function: unsafe extern "C" fn(*mut c_void),
    data: *mut c_void,
) -> Result<(), Failure> {
    // SAFETY: `function` may be called with `data` (the caller's
    // contract).
    result("cuLaunchHostFunc", unsafe {
        sys::cuLaunchHostFunc(stream, Some(function), data)
    })
}

/// `cuLaunchKernel`: enqueues `func` on `stream` with a `grid` of `block`s
/// and `shared_mem` bytes of dynamic shared memory, its arguments given by
/// `params` (the driver copies them before returning; `extra` is null).
///
/// # Safety
///
/// The library is loaded, the context is bound and `stream` is live;
/// `func` is a function of a loaded module that stays loaded until the
/// launch completes; `params` is null for a kernel without parameters, or
/// points to one pointer per parameter, each to a slot at least as large as
/// the parameter, all live until this returns. What the kernel does with
/// device memory is the caller's to answer for.
pub(crate) unsafe fn launch_kernel(
    func: sys::CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem: u32,
    stream: sys::CUstream,
    params: *mut *mut c_void,
) -> Result<(), Failure> {
    // SAFETY: the function, stream and arguments are as the driver needs
    // them (the caller's contract).
    result("cuLaunchKernel", unsafe {
        sys::cuLaunchKernel(
            func,
            grid[0],
            grid[1],
            grid[2],
            block[0],
            block[1],
            block[2],
            shared_mem,
            stream,
            params,
            std::ptr::null_mut(),
        )
    })
}

/// `cuEventCreate`: a new event in the current context, with `flags`.
///
/// # Safety
///
/// The library is loaded and the context is bound; the event is to be
/// destroyed once with [`event_destroy`].
pub(crate) unsafe fn event_create(flags: sys::CUevent_flags) -> Result<sys::CUevent, Failure> {
    let mut event = std::ptr::null_mut();
    // SAFETY: the context is bound (the caller's contract); `event` is a
    // live out-parameter.
    result("cuEventCreate", unsafe {
        sys::cuEventCreate(&mut event, flags as u32)
    })?;
    Ok(event)
}

/// `cuEventDestroy_v2`: destroys an event.
///
/// # Safety
///
/// The library is loaded; `event` came from [`event_create`] and is not
/// used after this.
pub(crate) unsafe fn event_destroy(event: sys::CUevent) -> Result<(), Failure> {
    // SAFETY: the caller's event, not used again (its contract).
    result("cuEventDestroy", unsafe { sys::cuEventDestroy_v2(event) })
}

/// `cuEventRecord`: records `event` on `stream`.
///
/// # Safety
///
/// The library is loaded; the event and the stream are live.
pub(crate) unsafe fn event_record(
    event: sys::CUevent,
    stream: sys::CUstream,
) -> Result<(), Failure> {
    // SAFETY: both handles are live (the caller's contract).
    result("cuEventRecord", unsafe {
        sys::cuEventRecord(event, stream)
    })
}

/// `cuEventElapsedTime`: the milliseconds between two recorded events
/// (made without `CU_EVENT_DISABLE_TIMING`).
///
/// # Safety
///
/// The library is loaded; both events are live.
pub(crate) unsafe fn event_elapsed_time(
    start: sys::CUevent,
    end: sys::CUevent,
) -> Result<f32, Failure> {
    let mut ms = 0f32;
    // SAFETY: both events are live (the caller's contract); `ms` is a live
    // out-parameter.
    result("cuEventElapsedTime", unsafe {
        sys::cuEventElapsedTime(&mut ms, start, end)
    })?;
    Ok(ms)
}
