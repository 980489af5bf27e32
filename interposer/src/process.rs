//! Which process owns the recorder: a forked child has the state but not
//! the recorder's threads, and passes everything through. A leaf module:
//! the heap and the state both ask it.

use std::sync::atomic::{AtomicU32, Ordering};

/// The process that made the recorder (0 before one was made).
pub(crate) static OWNER: AtomicU32 = AtomicU32::new(0);

/// Whether this process is a forked child of the one that made the
/// recorder.
pub(crate) fn forked() -> bool {
    let owner = OWNER.load(Ordering::Relaxed);
    owner != 0 && owner != std::process::id()
}
