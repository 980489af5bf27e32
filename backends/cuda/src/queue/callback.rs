//! The callback ABI: what a synchronize enqueues on the queue's stream to
//! learn that the work before it is done. It only signals a
//! [`Completion`] (and keeps a failed status); it never calls the driver.

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use cudarc::driver::sys;
use reprise_core::completion::Completion;

use crate::device::Device;
use crate::error::DriverError;
use crate::raw;
use crate::stream::Stream;

/// What the host function gets: the queue's completion, the mark to raise
/// and where to leave a failed status.
pub(super) struct Signal {
    pub(super) completion: Arc<Completion>,
    pub(super) mark: u64,
    pub(super) status: Arc<CallbackStatus>,
}

/// The first failed status stream callbacks were given since a synchronize
/// last took it.
pub(super) type CallbackStatus = Mutex<Option<sys::CUresult>>;

/// Takes back the `Signal` a synchronize leaked, keeps a failed `status`
/// for the synchronize, and raises its mark. Only stores, raises the mark
/// and wakes the waiting task; never calls the driver.
///
/// # Safety
///
/// `data` must be a `Box<Signal>` leaked by [`enqueue`], and this must be
/// its only use.
unsafe fn raise(data: *mut c_void, status: sys::CUresult) {
    // SAFETY: the caller passes the leaked box, once.
    let s = unsafe { Box::from_raw(data.cast::<Signal>()) };
    // A panicking waker must not unwind into the driver.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if status != sys::CUresult::CUDA_SUCCESS {
            let mut kept = s.status.lock().unwrap_or_else(|p| p.into_inner());
            kept.get_or_insert(status);
        }
        s.completion.signal(s.mark)
    }));
}

/// The stream callback a synchronize enqueues (`cuStreamAddCallback`). It
/// runs even after a device error, with the stream's status, which the
/// woken synchronize reports (the stream is asked too).
///
/// # Safety
///
/// As for [`raise`]: the driver calls it once per enqueueing, with the
/// `data` [`enqueue`] gave it.
unsafe extern "C" fn stream_callback(_: sys::CUstream, status: sys::CUresult, data: *mut c_void) {
    // SAFETY: `data` is the leaked `Box<Signal>`; the driver calls each
    // callback exactly once.
    unsafe { raise(data, status) }
}

/// The host function a synchronize enqueues where the driver has no
/// `cuStreamAddCallback` (`cuLaunchHostFunc`).
///
/// # Safety
///
/// As for [`stream_callback`].
unsafe extern "C" fn host_function(data: *mut c_void) {
    // SAFETY: as in `stream_callback`.
    unsafe { raise(data, sys::CUresult::CUDA_SUCCESS) }
}

/// The "call" a failed status handed to a synchronize's stream callback is
/// reported as: the failure came from work queued before the callback, not
/// from `cuStreamAddCallback`, which succeeded.
const CALLBACK_STATUS: &str =
    "work queued on the stream (status handed to the synchronize's callback)";

/// Enqueues on `stream` the callback that raises `signal`'s mark: a stream
/// callback (`cuStreamAddCallback`) where `dev`'s driver has them, else a
/// host function (`cuLaunchHostFunc`). On a failure the signal is dropped
/// again. The context is bound by the caller.
pub(super) fn enqueue(dev: &Device, stream: &Stream, signal: Signal) -> Result<(), DriverError> {
    let data = Box::into_raw(Box::new(signal));
    let r = if dev.lib.stream_callback {
        // SAFETY: the library has the symbol (`lib.stream_callback`); the
        // stream is live; `stream_callback` matches `CUstreamCallback` and
        // only takes back `data`, a leaked `Box<Signal>`.
        unsafe { raw::stream_add_callback(stream.handle(), stream_callback, data.cast()) }
    } else {
        // SAFETY: the library has the symbol (checked when it loaded, as
        // it lacks `cuStreamAddCallback`); the stream is live;
        // `host_function` matches `CUhostFn` and only takes back `data`, a
        // leaked `Box<Signal>`.
        unsafe { raw::launch_host_func(stream.handle(), host_function, data.cast()) }
    };
    if let Err(f) = r {
        let e = DriverError::from(f);
        // SAFETY: the driver did not take `data`; nothing else has it.
        drop(unsafe { Box::from_raw(data) });
        return Err(e);
    }
    Ok(())
}

/// Takes the failed status a stream callback was given, if any. The
/// callback was enqueued fine: the status is that of the stream's earlier
/// work (a launch or copy), so the error names the stream.
pub(super) fn take_error(status: &CallbackStatus) -> Result<(), DriverError> {
    let status = status.lock().unwrap_or_else(|p| p.into_inner()).take();
    status.map_or(Ok(()), |r| raw::check(CALLBACK_STATUS, r))
}
