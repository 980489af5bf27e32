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
use crate::raw::{EventHandle, Failure, StreamHandle};

/// A non-blocking stream; destroyed (`cuStreamDestroy`) when dropped.
pub(crate) struct Stream {
    dev: Arc<Device>,
    /// `None` once dropped or [`Stream::discard`]ed.
    raw: Option<StreamHandle>,
}

impl Stream {
    /// A new non-blocking stream in `dev`'s context.
    pub(crate) fn new(dev: &Arc<Device>) -> Result<Stream, DriverError> {
        dev.bind()?;
        let raw = StreamHandle::create(&dev.lib, sys::CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        Ok(Stream {
            dev: dev.clone(),
            raw: Some(raw),
        })
    }

    /// The stream, live while `self` is.
    pub(crate) fn raw(&self) -> &StreamHandle {
        self.raw.as_ref().expect("a stream is live until dropped")
    }

    /// The handle, for enqueuing work; live while `self` is.
    pub(crate) fn handle(&self) -> sys::CUstream {
        self.raw().get()
    }

    /// Waits for all the stream's work (`cuStreamSynchronize`).
    pub(crate) fn synchronize(&self) -> Result<(), Failure> {
        self.raw().synchronize()
    }

    /// `Ok` when all the stream's work is complete (`cuStreamQuery`); the
    /// [`Failure`] is `CUDA_ERROR_NOT_READY` while some is outstanding.
    pub(crate) fn query(&self) -> Result<(), Failure> {
        self.raw().query()
    }

    /// Later work on the stream waits for the last record of `event`
    /// (`cuStreamWaitEvent`, a staging symbol).
    pub(crate) fn wait(&self, event: &Event) -> Result<(), Failure> {
        self.raw().wait(event.raw())
    }

    /// Destroys a stream nothing has used, ignoring the error: undoing
    /// what a failed construction had made, with nothing to report to.
    fn discard(mut self) {
        if let Some(raw) = self.raw.take() {
            let _ = raw.destroy();
        }
    }
}

// The handle only: every owner shows its device already.
impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Stream")
            .field(&self.raw.as_ref().map(StreamHandle::get))
            .finish()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let Some(raw) = self.raw.take() {
            self.dev.cleanup(|| raw.destroy());
        }
    }
}

/// An event; destroyed (`cuEventDestroy`) when dropped.
pub(crate) struct Event {
    dev: Arc<Device>,
    /// `None` once dropped or [`Event::discard`]ed.
    raw: Option<EventHandle>,
}

impl Event {
    /// A new event in `dev`'s context, made with `flags`.
    pub(crate) fn new(dev: &Arc<Device>, flags: sys::CUevent_flags) -> Result<Event, DriverError> {
        dev.bind()?;
        let raw = EventHandle::create(&dev.lib, flags)?;
        Ok(Event {
            dev: dev.clone(),
            raw: Some(raw),
        })
    }

    /// The event, live while `self` is.
    fn raw(&self) -> &EventHandle {
        self.raw.as_ref().expect("an event is live until dropped")
    }

    /// Records the event on `stream` (`cuEventRecord`).
    pub(crate) fn record(&self, stream: &Stream) -> Result<(), Failure> {
        self.raw().record(stream.raw())
    }

    /// The milliseconds between `start` and `end`, both recorded and made
    /// with timing (`cuEventElapsedTime`).
    pub(crate) fn elapsed(start: &Event, end: &Event) -> Result<f32, Failure> {
        EventHandle::elapsed(start.raw(), end.raw())
    }

    /// As [`Stream::discard`].
    fn discard(mut self) {
        if let Some(raw) = self.raw.take() {
            let _ = raw.destroy();
        }
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Event").field(&self.raw).finish()
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if let Some(raw) = self.raw.take() {
            self.dev.cleanup(|| raw.destroy());
        }
    }
}

/// A new non-blocking stream and two events made with `event_flags`, in
/// that order, in `dev`'s context. On a failure, what was made is destroyed
/// again (events first), its errors ignored: nothing used it.
pub(crate) fn stream_and_events(
    dev: &Arc<Device>,
    event_flags: sys::CUevent_flags,
) -> Result<(Stream, [Event; 2]), DriverError> {
    let stream = Stream::new(dev)?;
    let first = match Event::new(dev, event_flags) {
        Ok(event) => event,
        Err(e) => {
            stream.discard();
            return Err(e);
        }
    };
    let second = match Event::new(dev, event_flags) {
        Ok(event) => event,
        Err(e) => {
            first.discard();
            stream.discard();
            return Err(e);
        }
    };
    Ok((stream, [first, second]))
}
