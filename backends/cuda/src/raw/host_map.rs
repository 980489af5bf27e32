//! Host memory at an exact address, page-locked and mapped for the device
//! at that same address: the route that places memory at a recorded
//! address without depending on the driver's address hints.
//!
//! - `mmap` with `MAP_FIXED_NOREPLACE` takes the address or fails (EEXIST
//!   when something is there);
//! - `cuMemHostRegister` with `CU_MEMHOSTREGISTER_DEVICEMAP` page-locks it
//!   and maps it for the device (CUDA Driver API, Memory Management,
//!   cuMemHostRegister);
//! - `cuMemHostGetDevicePointer` says where the device sees it: the host
//!   pointer itself where every device has
//!   `CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM` (CUDA
//!   Driver API, Memory Management, cuMemHostGetDevicePointer: "If all
//!   devices visible to the application have a non-zero value for the
//!   device attribute, the device pointer returned ... will match the
//!   original pointer").

use std::ffi::c_void;

use cudarc::driver::sys;

use super::failure::{Failure, result};
use super::library::Library;

/// Why host memory could not be placed at an address.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HostMapError {
    /// The library lacks a function the route needs.
    #[error("the driver lacks cuMemHostRegister or cuMemHostGetDevicePointer")]
    Unsupported,
    /// `mmap` would not put memory there (EEXIST: something is there).
    #[error("{}", mmap_text(.0))]
    Mmap(std::io::Error),
    /// A driver call failed.
    #[error("{}", crate::error::DriverError::from(*.0))]
    Driver(Failure),
    /// The device sees the memory at another address.
    #[error("the device sees it at {0:#x} (cuMemHostGetDevicePointer), not at the host address")]
    Elsewhere(u64),
}

/// What [`HostMapError::Mmap`] says: EEXIST is a range already taken.
fn mmap_text(e: &std::io::Error) -> String {
    if e.raw_os_error() == Some(libc::EEXIST) {
        "the address range is taken in this process".to_string()
    } else {
        format!("mmap failed: {e}")
    }
}

/// `len` bytes of anonymous host memory at `addr`, page-locked and mapped
/// for the device at `addr`; unregistered and unmapped by
/// [`HostMapping::release`] (or left to the process).
#[derive(Debug)]
pub(crate) struct HostMapping {
    addr: u64,
    len: usize,
}

impl HostMapping {
    /// Places it; `addr` and `len` are multiples of the page size. Nothing
    /// is left behind when it fails.
    pub(crate) fn place(lib: &Library, addr: u64, len: usize) -> Result<Self, HostMapError> {
        if !lib.host_map {
            return Err(HostMapError::Unsupported);
        }
        // SAFETY: a new anonymous mapping that replaces nothing
        // (MAP_FIXED_NOREPLACE fails where anything is mapped).
        let p = unsafe {
            libc::mmap(
                addr as *mut c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(HostMapError::Mmap(std::io::Error::last_os_error()));
        }
        if p as u64 != addr {
            // A kernel older than MAP_FIXED_NOREPLACE takes it as a hint.
            // SAFETY: the mapping just made, used by nothing.
            unsafe { libc::munmap(p, len) };
            return Err(HostMapError::Mmap(std::io::Error::from_raw_os_error(
                libc::EEXIST,
            )));
        }
        let unmap = || {
            // SAFETY: the mapping made above, registered no more.
            unsafe { libc::munmap(p, len) };
        };
        // SAFETY: the library has the function (`host_map`); `p` is `len`
        // bytes mapped above.
        if let Err(e) = result("cuMemHostRegister", unsafe {
            sys::cuMemHostRegister_v2(p, len, sys::CU_MEMHOSTREGISTER_DEVICEMAP)
        }) {
            unmap();
            return Err(HostMapError::Driver(e));
        }
        let mut dptr = 0;
        // SAFETY: as above; `dptr` is a live out-parameter and `p` was
        // registered with DEVICEMAP.
        let got = result("cuMemHostGetDevicePointer", unsafe {
            sys::cuMemHostGetDevicePointer_v2(&mut dptr, p, 0)
        });
        if got.is_err() || dptr != addr {
            // SAFETY: registered above, used by nothing yet.
            let _ = unsafe { sys::cuMemHostUnregister(p) };
            unmap();
            return Err(match got {
                Err(e) => HostMapError::Driver(e),
                Ok(()) => HostMapError::Elsewhere(dptr),
            });
        }
        Ok(HostMapping { addr, len })
    }

    /// Unregisters and unmaps it. Nothing queued or running may use it.
    pub(crate) fn release(self) -> Result<(), Failure> {
        let p = self.addr as *mut c_void;
        // SAFETY: registered by `place`; the caller's contract says nothing
        // uses it.
        let r = result("cuMemHostUnregister", unsafe {
            sys::cuMemHostUnregister(p)
        });
        // SAFETY: mapped by `place`, registered no more (or the driver
        // refused, and the process keeps a page-locked range it never
        // touches again rather than a dangling registration).
        if r.is_ok() {
            unsafe { libc::munmap(p, self.len) };
        }
        r
    }
}
