//! The callback ABI: what a synchronize enqueues on the queue's stream to
//! learn that the work before it is done. It only signals a
//! [`Completion`] (and keeps a failed status); it never calls the driver.

use std::sync::{Arc, Mutex};

use cudarc::driver::sys;
use reprise_core::completion::Completion;

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

/// Keeps a failed `status` for the synchronize and raises `s`'s mark.
/// Only stores, raises the mark and wakes the waiting task; never calls the
/// driver.
fn raise(s: Signal, status: sys::CUresult) {
    if status != sys::CUresult::CUDA_SUCCESS {
        let mut kept = s.status.lock().unwrap_or_else(|p| p.into_inner());
        kept.get_or_insert(status);
    }
    s.completion.signal(s.mark)
}

/// The "call" a failed status handed to a synchronize's stream callback is
/// reported as: the failure came from work queued before the callback, not
/// from `cuStreamAddCallback`, which succeeded.
const CALLBACK_STATUS: &str =
    "work queued on the stream (status handed to the synchronize's callback)";

/// Enqueues on `stream` the callback that raises `signal`'s mark (see
/// [`crate::raw::StreamHandle::on_done`]: a stream callback where the
/// driver has them, which runs even after a device error, with the
/// stream's status, which the woken synchronize reports; else a host
/// function). On a failure the signal is dropped again. The context is
/// bound by the caller.
pub(super) fn enqueue(stream: &Stream, signal: Signal) -> Result<(), DriverError> {
    Ok(stream.raw().on_done(move |status| raise(signal, status))?)
}

/// Takes the failed status a stream callback was given, if any. The
/// callback was enqueued fine: the status is that of the stream's earlier
/// work (a launch or copy), so the error names the stream.
pub(super) fn take_error(status: &CallbackStatus) -> Result<(), DriverError> {
    let status = status.lock().unwrap_or_else(|p| p.into_inner()).take();
    status.map_or(Ok(()), |r| raw::check(CALLBACK_STATUS, r))
}
