//! Owned streams and events, for the queues and their device-side staging:
//! made in the device's context, destroyed when dropped, the error of a
//! destroy kept for the next synchronize ([`Device::cleanup`]) as on every
//! `Drop` path.
//!
//! Each holds an `Arc<Device>`, so the context outlives it. An owner that
//! frees buffers or modules a stream's work uses waits for the stream first
//! (destroying a stream does not wait, and the driver finishes its work in
//! the background); owners declare events before the stream they are
//! recorded on, so they are destroyed first.

use std::fmt;
use std::sync::Arc;

use cudarc::driver::sys;

use crate::device::Device;
use crate::error::DriverError;
use crate::raw::{self, Failure};

/// A non-blocking stream; destroyed (`cuStreamDestroy`) when dropped.
pub(crate) struct Stream {
    dev: Arc<Device>,
    /// Null once [`Stream::discard`] destroyed it.
    handle: sys::CUstream,
}

// SAFETY: a `CUstream` is a driver handle any thread may use (the driver
// API is thread-safe); `Stream` only passes it to the driver.
unsafe impl Send for Stream {}

impl Stream {
    /// A new non-blocking stream in `dev`'s context.
    ///
    /// # Safety
    ///
    /// `dev`'s context is bound on the calling thread ([`Device::bind`]).
    pub(crate) unsafe fn new(dev: &Arc<Device>) -> Result<Stream, DriverError> {
        // SAFETY: the library is loaded (`dev` exists) and the context bound
        // (the caller's contract); destroyed once, by `drop` or `discard`.
        let handle = unsafe { raw::stream_create(sys::CUstream_flags::CU_STREAM_NON_BLOCKING) }?;
        Ok(Stream {
            dev: dev.clone(),
            handle,
        })
    }

    /// The handle, for enqueuing work; live while `self` is.
    pub(crate) fn handle(&self) -> sys::CUstream {
        self.handle
    }

    /// Waits for all the stream's work (`cuStreamSynchronize`).
    pub(crate) fn synchronize(&self) -> Result<(), Failure> {
        // SAFETY: the library is loaded (`self.dev` exists); the stream is
        // live.
        unsafe { raw::stream_synchronize(self.handle) }
    }

    /// `Ok` when all the stream's work is complete (`cuStreamQuery`); the
    /// [`Failure`] is `CUDA_ERROR_NOT_READY` while some is outstanding.
    pub(crate) fn query(&self) -> Result<(), Failure> {
        // SAFETY: the library is loaded (`self.dev` exists); the stream is
        // live.
        unsafe { raw::stream_query(self.handle) }
    }

    /// Destroys a stream nothing has used, ignoring the error: undoing
    /// what a failed construction had made, with nothing to report to.
    fn discard(mut self) {
        let handle = std::mem::replace(&mut self.handle, std::ptr::null_mut());
        // SAFETY: made by `new`, never used, and not used again (`drop`
        // sees the null handle).
        let _ = unsafe { raw::stream_destroy(handle) };
    }
}

// The handle only: every owner shows its device already.
impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Stream").field(&self.handle).finish()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let handle = self.handle;
        if handle.is_null() {
            return;
        }
        // SAFETY: made by `new` and not used after this (only `self` has
        // it); the library is loaded (`self.dev` exists).
        self.dev.cleanup(|| unsafe { raw::stream_destroy(handle) });
    }
}

/// An event; destroyed (`cuEventDestroy`) when dropped.
pub(crate) struct Event {
    dev: Arc<Device>,
    /// Null once [`Event::discard`] destroyed it.
    handle: sys::CUevent,
}

// SAFETY: a `CUevent` is a driver handle any thread may use (the driver API
// is thread-safe); `Event` only passes it to the driver.
unsafe impl Send for Event {}

impl Event {
    /// A new event in `dev`'s context, made with `flags`.
    ///
    /// # Safety
    ///
    /// `dev`'s context is bound on the calling thread ([`Device::bind`]).
    pub(crate) unsafe fn new(
        dev: &Arc<Device>,
        flags: sys::CUevent_flags,
    ) -> Result<Event, DriverError> {
        // SAFETY: the library is loaded (`dev` exists) and the context bound
        // (the caller's contract); destroyed once, by `drop` or `discard`.
        let handle = unsafe { raw::event_create(flags) }?;
        Ok(Event {
            dev: dev.clone(),
            handle,
        })
    }

    /// The handle; live while `self` is.
    pub(crate) fn handle(&self) -> sys::CUevent {
        self.handle
    }

    /// Records the event on `stream` (`cuEventRecord`).
    pub(crate) fn record(&self, stream: &Stream) -> Result<(), Failure> {
        // SAFETY: the library is loaded (`self.dev` exists); the event and
        // the stream are live.
        unsafe { raw::event_record(self.handle, stream.handle) }
    }

    /// The milliseconds between `start` and `end`, both recorded and made
    /// with timing (`cuEventElapsedTime`).
    pub(crate) fn elapsed(start: &Event, end: &Event) -> Result<f32, Failure> {
        // SAFETY: the library is loaded (`start.dev` exists); both events
        // are live.
        unsafe { raw::event_elapsed_time(start.handle, end.handle) }
    }

    /// As [`Stream::discard`].
    fn discard(mut self) {
        let handle = std::mem::replace(&mut self.handle, std::ptr::null_mut());
        // SAFETY: made by `new`, never used, and not used again (`drop`
        // sees the null handle).
        let _ = unsafe { raw::event_destroy(handle) };
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Event").field(&self.handle).finish()
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let handle = self.handle;
        if handle.is_null() {
            return;
        }
        // SAFETY: made by `new` and not used after this (only `self` has
        // it); the library is loaded (`self.dev` exists).
        self.dev.cleanup(|| unsafe { raw::event_destroy(handle) });
    }
}

/// A new non-blocking stream and two events made with `event_flags`, in
/// that order. On a failure, what was made is destroyed again (events
/// first), its errors ignored: nothing used it.
///
/// # Safety
///
/// `dev`'s context is bound on the calling thread ([`Device::bind`]).
pub(crate) unsafe fn stream_and_events(
    dev: &Arc<Device>,
    event_flags: sys::CUevent_flags,
) -> Result<(Stream, [Event; 2]), DriverError> {
    // SAFETY: the context is bound (the caller's contract).
    let stream = unsafe { Stream::new(dev) }?;
    // SAFETY: as above.
    let first = match unsafe { Event::new(dev, event_flags) } {
        Ok(event) => event,
        Err(e) => {
            stream.discard();
            return Err(e);
        }
    };
    // SAFETY: as above.
    let second = match unsafe { Event::new(dev, event_flags) } {
        Ok(event) => event,
        Err(e) => {
            first.discard();
            stream.discard();
            return Err(e);
        }
    };
    Ok((stream, [first, second]))
}
