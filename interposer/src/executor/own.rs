//! What device-side hashing (`REPRISE_RECORD_DEVICE_HASHING`) needs of the
//! interposer's executor beyond the program's own objects: reprise's
//! chunk-hashing kernel, loaded as a module of the interposer's own in the
//! program's context, and the device copies of the region the recorder
//! hashes, allocated with the driver's own `cuMemAlloc` (past the
//! interposer's hook: they are not the program's allocations, and the
//! region's reservation does not back them).
//!
//! The recorder's writer runs on the launching thread with device hashing
//! on (the interposer's state chooses it), so every call here and every copy
//! from a device copy is made inside a recorded launch, with the program's
//! context current, before the program can release that context.

use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::error::{check, driver};
use super::{CallOn, DriverError, Raw};
use crate::real::*;

/// Whether `image` is reprise's chunk-hashing kernel, the one image the
/// recorder loads that the program did not.
pub(super) fn is_hashing_kernel(image: &[u8]) -> bool {
    image == reprise_cuda::chunk_hash::PTX
}

/// Loads reprise's chunk-hashing PTX into the current context with the
/// driver's `cuModuleLoadData` (the interposer's hook would take it for
/// the program's). It stays loaded for the process, as the region stays
/// mapped.
pub(super) fn load_hashing_kernel(image: &[u8]) -> Result<Raw, DriverError> {
    let r = driver()?;
    // PTX is loaded as a NUL-terminated string.
    let mut text = image.to_vec();
    if text.last() != Some(&0) {
        text.push(0);
    }
    let mut module: Handle = std::ptr::null_mut();
    // SAFETY: a valid out-pointer and a NUL-terminated PTX image, alive for
    // the call (the driver copies what it keeps).
    let rc = unsafe { (r.cuModuleLoadData)(&mut module, text.as_ptr() as *const c_void) };
    check("cuModuleLoadData", rc)?;
    Ok(Raw(module as usize))
}

/// A device copy of the region: memory of the driver's `cuMemAlloc`,
/// freed when the recorder drops it (after the writer read what it
/// needed), except at exit, when the driver may be gone.
#[derive(Debug)]
pub(super) struct DeviceCopy {
    pub(super) base: u64,
    exiting: Arc<AtomicBool>,
}

/// Said once per process: a device copy could not be had.
static WARNED: AtomicBool = AtomicBool::new(false);

impl DeviceCopy {
    /// `size` bytes of device memory for a copy of the region. Refused
    /// (device memory short), the recorder records the launch the ordinary
    /// way; a line on stderr says so, once (the library's log has no logger
    /// in a program).
    pub(super) fn alloc(size: u64, exiting: Arc<AtomicBool>) -> Result<DeviceCopy, DriverError> {
        let r = driver()?;
        let mut base = 0;
        let rc = usize::try_from(size).map_or(ERROR_INVALID_VALUE, |n| {
            // SAFETY: a valid out-pointer.
            unsafe { (r.cuMemAlloc_v2)(&mut base, n) }
        });
        if rc != SUCCESS {
            if !WARNED.swap(true, Ordering::Relaxed) {
                crate::say::warn(format_args!(
                    "device hashing: no device memory for a {size}-byte copy of the region \
                     ({}); such launches are recorded the ordinary way, their snapshots \
                     copied to the host whole",
                    error_name(rc)
                ));
            }
            return Err(DriverError::Call {
                call: "cuMemAlloc",
                on: CallOn::Bytes(size),
                code: rc,
            });
        }
        Ok(DeviceCopy { base, exiting })
    }
}

impl Drop for DeviceCopy {
    fn drop(&mut self) {
        if self.exiting.load(Ordering::Acquire) {
            return;
        }
        if let Ok(r) = driver() {
            // SAFETY: memory this copy allocated, which no queued work
            // uses any more (the recorder drops a copy once a synchronize
            // covered its copies and the writer read it).
            let _ = unsafe { (r.cuMemFree_v2)(self.base) };
        }
    }
}
