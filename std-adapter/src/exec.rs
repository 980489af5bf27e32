//! std glue for executors: a parking `block_on`, and reading files straight
//! into an executor's buffers.

use std::fs::File;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::task::{Context, Poll, Wake};
use std::thread::Thread;

use reprise_core::exec::{Executor, RegionRequest};

use crate::error::{Error, Result};

struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future to completion on this thread, parking between polls.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let waker = Arc::new(ThreadWaker(std::thread::current())).into();
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// Executors whose buffers can be filled from files. The default reads into
/// a fresh buffer; an executor that can map files (the host) overrides it.
pub trait FileBuffers: Executor
where
    Self::Error: std::error::Error + Send + Sync + 'static,
{
    /// A buffer holding the first `len` bytes of `file` (at `path`, for
    /// messages).
    fn buffer_from_file(&self, file: &File, path: &Path, len: usize) -> Result<Self::Buffer> {
        use std::os::unix::fs::FileExt;
        let mut buf = self.buffer(len).map_err(|e| {
            Error::executor(format!("allocating {len} bytes for {}", path.display()), e)
        })?;
        file.read_exact_at(&mut buf.as_mut()[..len], 0)
            .map_err(|e| Error::io(path, "read", e))?;
        Ok(buf)
    }

    /// Reserves a region as [`Executor::reserve`] does, with its first `len`
    /// bytes already holding the first `len` bytes of `file` — where the
    /// executor can map files into device memory (the host can: the region
    /// is then a private mapping of the snapshot, and nothing is copied).
    /// `Ok(None)` means it cannot, and the caller reserves and uploads.
    fn reserve_from_file(
        &self,
        request: RegionRequest,
        file: &File,
        path: &Path,
        len: usize,
    ) -> Result<Option<Self::Region>> {
        let _ = (request, file, path, len);
        Ok(None)
    }
}
