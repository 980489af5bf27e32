//! Driver calls on streams and events, and the launches and host callbacks
//! enqueued on streams.
//!
//! Every function requires the library loaded (a `Device` held, see the
//! [parent module](super)) and the context bound on the calling thread
//! (`Device::bind`) where the driver needs it. [`StreamHandle`] and
//! [`EventHandle`] own a stream and an event until they are destroyed, so
//! what is done with them alone is safe; the RAII owners that keep their
//! device alive and report a destroy's error are in [`crate::stream`].

use std::ffi::c_void;

use cudarc::driver::sys;

use super::failure::{Failure, refused, result};
use super::library::Library;
use super::module::FunctionRef;

/// `cuStreamCreate`: a new stream in the current context, with `flags`, to
/// be destroyed once with [`stream_destroy`] (or kept until the process
/// exits).
fn stream_create(_: &Library, flags: sys::CUstream_flags) -> Result<sys::CUstream, Failure> {
    let mut stream = std::ptr::null_mut();
    // SAFETY: the library is loaded (`Library`); `stream` is a live
    // out-parameter; the flag is a valid stream flag.
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
unsafe fn stream_destroy(stream: sys::CUstream) -> Result<(), Failure> {
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
unsafe fn stream_query(stream: sys::CUstream) -> Result<(), Failure> {
    // SAFETY: the stream is live (the caller's contract).
    result("cuStreamQuery", unsafe { sys::cuStreamQuery(stream) })
}

/// `cuStreamSynchronize`: waits for all the stream's work.
///
/// # Safety
///
/// The library is loaded and `stream` is live.
unsafe fn stream_synchronize(stream: sys::CUstream) -> Result<(), Failure> {
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
unsafe fn stream_wait_event(stream: sys::CUstream, event: sys::CUevent) -> Result<(), Failure> {
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
unsafe fn stream_add_callback(
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
unsafe fn launch_host_func(
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
unsafe fn launch_kernel(
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

/// The bytes of `words` in memory order: packed kernel arguments
/// (`kernelParams` slots, 8-byte aligned) as the driver reads them.
pub(crate) fn word_bytes(words: &[u64]) -> &[u8] {
    // SAFETY: `words` is `size_of_val(words)` initialised bytes, which any
    // `u8` may view (alignment 1, no invalid values); the slice borrows
    // `words`.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), size_of_val(words)) }
}

/// `cuEventCreate`: a new event in the current context, with `flags`, to
/// be destroyed once with [`event_destroy`] (or kept until the process
/// exits).
fn event_create(_: &Library, flags: sys::CUevent_flags) -> Result<sys::CUevent, Failure> {
    let mut event = std::ptr::null_mut();
    // SAFETY: the library is loaded (`Library`); `event` is a live
    // out-parameter.
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
unsafe fn event_destroy(event: sys::CUevent) -> Result<(), Failure> {
    // SAFETY: the caller's event, not used again (its contract).
    result("cuEventDestroy", unsafe { sys::cuEventDestroy_v2(event) })
}

/// `cuEventRecord`: records `event` on `stream`.
///
/// # Safety
///
/// The library is loaded; the event and the stream are live.
unsafe fn event_record(event: sys::CUevent, stream: sys::CUstream) -> Result<(), Failure> {
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
unsafe fn event_elapsed_time(start: sys::CUevent, end: sys::CUevent) -> Result<f32, Failure> {
    let mut ms = 0f32;
    // SAFETY: both events are live (the caller's contract); `ms` is a live
    // out-parameter.
    result("cuEventElapsedTime", unsafe {
        sys::cuEventElapsedTime(&mut ms, start, end)
    })?;
    Ok(ms)
}

/// A stream made by [`StreamHandle::create`], live until
/// [`StreamHandle::destroy`] consumes it (dropped without that, it is kept
/// until the process exits).
#[derive(Debug)]
pub(crate) struct StreamHandle {
    handle: sys::CUstream,
    lib: Library,
}

// SAFETY: a `CUstream` is a driver handle any thread may use (the driver
// API is thread-safe); the handle only passes it to the driver.
unsafe impl Send for StreamHandle {}

impl StreamHandle {
    /// A new stream in the current context, with `flags`.
    pub(crate) fn create(lib: &Library, flags: sys::CUstream_flags) -> Result<Self, Failure> {
        Ok(StreamHandle {
            handle: stream_create(lib, flags)?,
            lib: *lib,
        })
    }

    /// The handle, for enqueuing work; live while `self` is.
    pub(crate) fn get(&self) -> sys::CUstream {
        self.handle
    }

    /// Waits for all the stream's work (`cuStreamSynchronize`).
    pub(crate) fn synchronize(&self) -> Result<(), Failure> {
        // SAFETY: the library is loaded (`Library`); the stream is live
        // (`self`).
        unsafe { stream_synchronize(self.handle) }
    }

    /// `Ok` when all the stream's work is complete (`cuStreamQuery`); the
    /// [`Failure`] is `CUDA_ERROR_NOT_READY` while some is outstanding.
    pub(crate) fn query(&self) -> Result<(), Failure> {
        // SAFETY: the library is loaded (`Library`); the stream is live
        // (`self`).
        unsafe { stream_query(self.handle) }
    }

    /// Later work on the stream waits for the last record of `event`
    /// (`cuStreamWaitEvent`; a failure without the
    /// [`STAGING`](super::library::STAGING) symbols).
    pub(crate) fn wait(&self, event: &EventHandle) -> Result<(), Failure> {
        if !self.lib.staging {
            return Err(refused(
                "cuStreamWaitEvent",
                sys::CUresult::CUDA_ERROR_NOT_SUPPORTED,
            ));
        }
        // SAFETY: the symbol is present (checked above); the stream and the
        // event are live (`self`, `event`).
        unsafe { stream_wait_event(self.handle, event.handle) }
    }

    /// Enqueues a launch of `func` with `grid`, `block`, `shared_mem` bytes
    /// of dynamic shared memory and `args` (`cuLaunchKernel`, which copies
    /// the arguments before it returns). The context is to be bound.
    ///
    /// # Safety
    ///
    /// `func`'s module stays loaded until the launch completes; `params`
    /// holds one pointer per parameter, each to bytes at least as large as
    /// that parameter (`PackedArgs::pointers`, whose `pack` checks the
    /// sizes the driver tells). What the kernel does with
    /// device memory is the caller's to answer for.
    pub(crate) unsafe fn launch(
        &self,
        func: FunctionRef<'_>,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem: u32,
        params: &mut [*mut c_void],
    ) -> Result<(), Failure> {
        let params_ptr = if params.is_empty() {
            std::ptr::null_mut()
        } else {
            params.as_mut_ptr()
        };
        // SAFETY: the library is loaded and the stream live (`self`); the
        // function's module is loaded now (`func` borrows it) and until the
        // launch completes (the caller's contract); `params` holds one
        // pointer per parameter, each to bytes at least as large as it
        // (the caller's contract), and outlives the call.
        unsafe {
            launch_kernel(
                func.id().get(),
                grid,
                block,
                shared_mem,
                self.handle,
                params_ptr,
            )
        }
    }

    /// Enqueues a copy of `len` bytes from `src` to `dst`, both device
    /// addresses (`cuMemcpyDtoDAsync`; a failure without the
    /// [`STAGING`](super::library::STAGING) symbols). The ranges may be
    /// anything (the driver fails the copy if one is not mapped). The
    /// context is to be bound.
    ///
    /// # Safety
    ///
    /// A range the caller allocated stays allocated until the copy
    /// completes.
    pub(crate) unsafe fn copy_device(&self, dst: u64, src: u64, len: usize) -> Result<(), Failure> {
        if !self.lib.staging {
            return Err(refused(
                "cuMemcpyDtoDAsync",
                sys::CUresult::CUDA_ERROR_NOT_SUPPORTED,
            ));
        }
        // SAFETY: the symbols are present (checked above) and the stream is
        // live (`self`); the caller keeps its ranges until the copy
        // completes (its contract).
        unsafe { memcpy_dtod_async(dst, src, len, self.handle) }
    }

    /// Enqueues `f`, called once, on a thread of the driver's, when the
    /// work enqueued before it is done, with the stream's status: a stream
    /// callback (`cuStreamAddCallback`) where the driver has them, which
    /// runs even after a device error (with the error); else a host
    /// function (`cuLaunchHostFunc`), which then never runs. `f` must not
    /// call the driver; a panic in it is caught there. On a failure `f` is
    /// dropped uncalled.
    pub(crate) fn on_done<F>(&self, f: F) -> Result<(), Failure>
    where
        F: FnOnce(sys::CUresult) + Send + 'static,
    {
        let data = Box::into_raw(Box::new(f)).cast::<c_void>();
        let r = if self.lib.stream_callback {
            // SAFETY: the library has the symbol (`lib.stream_callback`);
            // the stream is live; `stream_callback::<F>` matches
            // `CUstreamCallback` and takes back `data`, a leaked `Box<F>`,
            // once; `F` is `Send`.
            unsafe { stream_add_callback(self.handle, stream_callback::<F>, data) }
        } else {
            // SAFETY: the library has the symbol (checked when it loaded,
            // as it lacks `cuStreamAddCallback`); the stream is live;
            // `host_function::<F>` matches `CUhostFn` and takes back
            // `data`, a leaked `Box<F>`, once; `F` is `Send`.
            unsafe { launch_host_func(self.handle, host_function::<F>, data) }
        };
        if r.is_err() {
            // SAFETY: the driver did not take `data`; nothing else has it.
            drop(unsafe { Box::from_raw(data.cast::<F>()) });
        }
        r
    }

    /// Destroys the stream (`cuStreamDestroy`; work still queued on it
    /// completes first, in the background).
    pub(crate) fn destroy(self) -> Result<(), Failure> {
        // SAFETY: made by `create` and consumed here, so never used again.
        unsafe { stream_destroy(self.handle) }
    }
}

/// An event made by [`EventHandle::create`], live until
/// [`EventHandle::destroy`] consumes it (dropped without that, it is kept
/// until the process exits).
#[derive(Debug)]
pub(crate) struct EventHandle {
    handle: sys::CUevent,
}

// SAFETY: a `CUevent` is a driver handle any thread may use (the driver API
// is thread-safe); the handle only passes it to the driver.
unsafe impl Send for EventHandle {}

impl EventHandle {
    /// A new event in the current context, with `flags`.
    pub(crate) fn create(lib: &Library, flags: sys::CUevent_flags) -> Result<Self, Failure> {
        Ok(EventHandle {
            handle: event_create(lib, flags)?,
        })
    }

    /// Records the event on `stream` (`cuEventRecord`).
    pub(crate) fn record(&self, stream: &StreamHandle) -> Result<(), Failure> {
        // SAFETY: the library is loaded (`stream` was made with a
        // `Library`); the event and the stream are live.
        unsafe { event_record(self.handle, stream.handle) }
    }

    /// The milliseconds between `start` and `end`, both recorded and made
    /// with timing (`cuEventElapsedTime`).
    pub(crate) fn elapsed(start: &EventHandle, end: &EventHandle) -> Result<f32, Failure> {
        // SAFETY: the library is loaded (both were made with a `Library`);
        // both events are live.
        unsafe { event_elapsed_time(start.handle, end.handle) }
    }

    /// Destroys the event (`cuEventDestroy`).
    pub(crate) fn destroy(self) -> Result<(), Failure> {
        // SAFETY: made by `create` and consumed here, so never used again.
        unsafe { event_destroy(self.handle) }
    }
}

/// Takes back the `Box<F>` that [`StreamHandle::on_done`] leaked and calls
/// it with `status`; a panic does not unwind into the driver.
///
/// # Safety
///
/// `data` is a `Box<F>` leaked by [`StreamHandle::on_done`], and this is
/// its only use.
unsafe fn call_once<F: FnOnce(sys::CUresult)>(data: *mut c_void, status: sys::CUresult) {
    // SAFETY: the caller passes the leaked box, once.
    let f = unsafe { Box::from_raw(data.cast::<F>()) };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(status)));
}

/// The stream callback [`StreamHandle::on_done`] enqueues.
///
/// # Safety
///
/// As for [`call_once`]: the driver calls it once per enqueueing, with the
/// `data` it was given.
unsafe extern "C" fn stream_callback<F: FnOnce(sys::CUresult)>(
    _: sys::CUstream,
    status: sys::CUresult,
    data: *mut c_void,
) {
    // SAFETY: `data` is the leaked `Box<F>`; the driver calls each callback
    // exactly once.
    unsafe { call_once::<F>(data, status) }
}

/// The host function [`StreamHandle::on_done`] enqueues where the driver
/// has no `cuStreamAddCallback`.
///
/// # Safety
///
/// As for [`stream_callback`].
unsafe extern "C" fn host_function<F: FnOnce(sys::CUresult)>(data: *mut c_void) {
    // SAFETY: as in `stream_callback`.
    unsafe { call_once::<F>(data, sys::CUresult::CUDA_SUCCESS) }
}

/// `cuMemcpyDtoDAsync_v2`: enqueues a copy of `len` bytes from `src` to
/// `dst`, both device addresses, on `stream`.
///
/// # Safety
///
/// The library is loaded with the [`STAGING`](super::library::STAGING) symbols, the
/// context is bound and `stream` is live; the ranges may be anything (the
/// driver fails the copy if one is not mapped), but a range the caller
/// allocated stays allocated until the copy completes.
unsafe fn memcpy_dtod_async(
    dst: u64,
    src: u64,
    len: usize,
    stream: sys::CUstream,
) -> Result<(), Failure> {
    // SAFETY: device ranges only, which the driver checks (the caller's
    // contract).
    result("cuMemcpyDtoDAsync", unsafe {
        sys::cuMemcpyDtoDAsync_v2(dst, src, len, stream)
    })
}
