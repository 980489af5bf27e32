//! Device-side staging of a queue's downloads (see
//! [`crate::CudaExecutor::with_device_staging`]): a download before the
//! kernel is copied on the device into a shadow allocation, then drained
//! from the shadow to its host buffer on a copy stream of its own while the
//! kernel runs.

use std::sync::Arc;

use cudarc::driver::sys;
use reprise_core::exec::Segment;

use crate::device::Device;
use crate::error::{CudaError, DriverError};
use crate::memory::CudaBuffer;
use crate::raw::{self, DeviceMemory};
use crate::stream::{Event, Stream, stream_and_events};

/// Device-side staging of a queue: a shadow allocation, the copy stream
/// that drains it, and the events ordering the two streams. Dropping it
/// waits for the copy stream, then frees the shadow, the events and the
/// stream (in that order), keeping errors for the next synchronize of the
/// executor; the queue drops it once its own stream is idle, before the
/// buffers the drains write into.
///
/// Every method that enqueues work takes the queue's stream (`main`).
#[derive(Debug)]
pub(super) struct Staging {
    dev: Arc<Device>,
    /// Smallest download staged.
    min_bytes: u64,
    /// Recorded on the queue's stream after the copies into the shadow.
    staged: Event,
    /// Recorded on the copy stream after the drain.
    drained: Event,
    /// Drains the shadow to the host. Declared after the events: destroyed
    /// after them.
    stream: Stream,
    /// The shadow (none yet at first).
    shadow: DeviceMemory,
    /// A staged download not yet drained: the host buffer's first byte and
    /// its segments (host offset, length); the shadow mirrors host offsets.
    pending: Option<(*mut u8, Vec<(usize, usize)>)>,
    /// A drain the queue's stream has not been made to wait for yet.
    draining: bool,
    /// A kernel was enqueued since the last synchronize: later downloads
    /// in this stretch are the kernel's output, which staging would only
    /// slow down. (With the sync schedule a synchronize separates kernel and
    /// output, so the output is staged too, and drained at once.)
    launched: bool,
    /// A drain that failed, for the next synchronize to report.
    failed: Option<CudaError>,
}

impl Staging {
    /// Staging of downloads of at least `min_bytes`; refused where the
    /// library lacks what staging needs (`Library::staging`), which every
    /// function here relies on.
    pub(super) fn new(dev: &Arc<Device>, min_bytes: u64) -> Result<Staging, CudaError> {
        if !dev.lib.staging {
            return Err(CudaError::Driver(DriverError::from_code(
                "cuMemcpyDtoDAsync",
                sys::CUresult::CUDA_ERROR_NOT_SUPPORTED as u32,
            )));
        }
        // Events without timing are the cheapest kind.
        let (stream, [staged, drained]) =
            stream_and_events(dev, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)?;
        Ok(Staging {
            dev: dev.clone(),
            min_bytes,
            staged,
            drained,
            stream,
            shadow: DeviceMemory::default(),
            pending: None,
            draining: false,
            launched: false,
            failed: None,
        })
    }

    /// Makes the shadow at least `len` bytes; `false` when it cannot be.
    fn reserve_shadow(&mut self, main: &Stream, len: usize) -> Result<bool, CudaError> {
        if self.shadow.len() >= len {
            return Ok(true);
        }
        if self.shadow.len() > 0 {
            // Either stream may still copy into or out of the old shadow (a
            // synchronize that was given up on leaves work queued): wait for
            // both. Growing is rare; this blocks only then.
            for stream in [main, &self.stream] {
                stream.synchronize()?;
            }
            // Nothing uses it now: both streams are idle and no staged
            // download is pending.
            self.shadow.free()?;
        }
        // The queue bound the context.
        match DeviceMemory::alloc(&self.dev.lib, len) {
            Ok(shadow) => {
                self.shadow = shadow;
                Ok(true)
            }
            // No room on the device: download straight to the host.
            Err(f) if f.code() == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => Ok(false),
            Err(f) => Err(f.into()),
        }
    }

    /// Stages a download into the shadow when it qualifies; `true` when it
    /// did (the copies are enqueued on `main`).
    ///
    /// # Safety
    ///
    /// The context is bound; every segment lies inside `buffer`, and the
    /// queue keeps `buffer` until a synchronize that joined the staging
    /// ([`Staging::join`]) covered the download, or until the staging is
    /// dropped.
    pub(super) unsafe fn stage(
        &mut self,
        main: &Stream,
        buffer: &CudaBuffer,
        segments: &[Segment],
    ) -> Result<bool, CudaError> {
        let total: usize = segments.iter().map(|s| s.len).sum();
        if self.launched || self.pending.is_some() || (total as u64) < self.min_bytes || total == 0
        {
            return Ok(false);
        }
        if !self.reserve_shadow(main, buffer.as_ref().len())? {
            return Ok(false);
        }
        if self.draining {
            // The last drain must finish reading the shadow first.
            main.wait(&self.drained)?;
            self.draining = false;
        }
        let mut segs = Vec::with_capacity(segments.len());
        for s in segments.iter().filter(|s| s.len > 0) {
            // SAFETY: the shadow outlives the copy, which no type here can
            // show: it is freed only once both streams are idle
            // (`reserve_shadow`, `Drop`); the device range is the caller's.
            unsafe {
                self.shadow
                    .copy_from_device(s.host_offset, s.len, s.device, main.raw())
            }?;
            segs.push((s.host_offset, s.len));
        }
        self.staged.record(main)?;
        self.pending = Some((buffer.as_ptr(), segs));
        Ok(true)
    }

    /// Copies a staged download from the shadow to its host buffer: on the
    /// copy stream (after the kernel was queued), or on the queue's own
    /// stream (`main`) when a synchronize comes first.
    ///
    /// On an error the copy stream is waited for (so no copy still writes
    /// into the buffer once a synchronize hands it back) and the error is
    /// kept for the next synchronize too, which fails with it: the staged
    /// download is incomplete. The context is bound by the caller.
    fn drain(&mut self, main: &Stream, on_copy_stream: bool) -> Result<(), CudaError> {
        let result = self.try_drain(main, on_copy_stream);
        if let Err(e) = &result {
            // Waiting is all this does.
            let _ = self.stream.synchronize();
            self.draining = false;
            self.failed.get_or_insert(e.clone());
        }
        result
    }

    fn try_drain(&mut self, main: &Stream, on_copy_stream: bool) -> Result<(), CudaError> {
        let Some((host, segs)) = self.pending.take() else {
            return Ok(());
        };
        let stream = if on_copy_stream { &self.stream } else { main };
        if on_copy_stream {
            self.stream.wait(&self.staged)?;
        }
        for (offset, len) in segs {
            // SAFETY: the buffer outlives the copy, which no type here can
            // show (the staging keeps only its address): `host + offset ..
            // + len` lies in the download's page-locked buffer, which the
            // queue holds until a synchronize covered the download (and a
            // synchronize waits for this drain; `stage`'s contract); the
            // shadow holds the same range.
            unsafe {
                raw::memcpy_dtoh_async(
                    host.add(offset).cast(),
                    self.shadow.ptr() + offset as u64,
                    len,
                    stream.handle(),
                )
            }?;
        }
        if on_copy_stream {
            self.drained.record(&self.stream)?;
            self.draining = true;
        }
        Ok(())
    }

    /// After a kernel was enqueued on `main`: the snapshot staged before it
    /// leaves for the host (on the copy stream) while it runs, and later
    /// downloads in this stretch are not staged. The context is bound by
    /// the caller.
    pub(super) fn kernel_queued(&mut self, main: &Stream) -> Result<(), CudaError> {
        self.drain(main, true)?;
        self.launched = true;
        Ok(())
    }

    /// Before a synchronize: drains what is still staged and makes the
    /// queue's stream (`main`) wait for the copy stream, so the host
    /// callback covers both. A drain that failed earlier fails this
    /// synchronize (once). The context is bound by the caller.
    pub(super) fn join(&mut self, main: &Stream) -> Result<(), CudaError> {
        if let Err(e) = self.drain(main, false) {
            // Reported now, by this synchronize: not kept for the next.
            self.failed = None;
            return Err(e);
        }
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if self.draining {
            main.wait(&self.drained)?;
            self.draining = false;
        }
        self.launched = false;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Waits for the drains writing into the queue's buffers (freed
        // after this).
        self.dev.cleanup(|| self.stream.synchronize());
        if self.shadow.len() > 0 {
            // Both streams are idle (the queue waited for its own).
            let shadow = &mut self.shadow;
            self.dev.cleanup(|| shadow.free());
        }
        // Then the events and the copy stream (the fields, in order).
    }
}
