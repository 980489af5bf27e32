//! Images: ELF x86-64 shared objects loaded from memory with `dlopen`,
//! their kernels and their globals.

use std::ffi::{CStr, CString, c_void};
use std::fs::File;
use std::sync::Arc;

use reprise_core::exec::GlobalInfo;

use crate::elf;
use crate::error::{HostError, LoadStep, OsContext, OsError, os_error};

/// A loaded image; closed when the last reference goes.
pub(crate) struct Library {
    handle: *mut c_void,
    /// The image's executable segments in memory, `[start, end)`: where a
    /// fault is the kernel's own (see `guard.rs`).
    pub(crate) text: Vec<[usize; 2]>,
    pub(crate) globals: Vec<(String, u64, u64)>,
    functions: Vec<String>,
    /// The memfd the image was loaded from, open for as long as the image is
    /// loaded: `dlopen` recognises libraries by path, and a closed
    /// descriptor's number (hence `/proc/self/fd/N`) would be reused by the
    /// next load, which would then get this library back, globals and all.
    _memfd: File,
}

// SAFETY: a dlopen handle may be used and closed from any thread.
unsafe impl Send for Library {}
// SAFETY: the handle is only passed to thread-safe dl* functions.
unsafe impl Sync for Library {}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: `handle` came from dlopen and is closed exactly once, after
        // every kernel and copy that used it has finished (they hold an Arc).
        unsafe {
            libc::dlclose(self.handle);
        }
    }
}

/// A loaded image.
pub struct HostImage {
    pub(crate) lib: Arc<Library>,
}

/// A kernel entry point.
#[derive(Clone)]
pub struct HostKernel {
    pub(crate) entry: usize,
    pub(crate) name: String,
    // Keeps the image loaded while the kernel may run; its code ranges tell
    // the kernel's own faults from those of libraries it calls.
    pub(crate) lib: Arc<Library>,
}

impl HostKernel {
    /// The kernel's symbol name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Loads an image: checks that `bytes` are an ELF x86-64 shared object, reads
/// its symbols and executable segments, and opens it from memory. Its globals
/// are the caller's to register.
pub(crate) fn load(bytes: &[u8]) -> Result<HostImage, HostError> {
    let symbols = elf::shared_object(bytes).map_err(HostError::BadImage)?;
    let segments = elf::executable_segments(bytes).map_err(HostError::BadImage)?;
    let (handle, memfd) = load_from_memory(bytes)?;
    let text = match load_bias(handle) {
        Ok(bias) => segments
            .iter()
            .map(|&(vaddr, size)| {
                let start = bias.wrapping_add(vaddr as usize);
                [start, start.saturating_add(size as usize)]
            })
            .collect(),
        Err(e) => {
            // SAFETY: the handle just opened, used by nothing else.
            unsafe { libc::dlclose(handle) };
            return Err(e);
        }
    };
    // Owned from here: an early return closes the handle (`Library`'s Drop).
    let mut lib = Library {
        handle,
        text,
        globals: Vec::new(),
        functions: symbols.functions,
        _memfd: memfd,
    };
    for (name, size) in symbols.data {
        let c = CString::new(name.as_str())
            .map_err(|_| HostError::BadImage(elf::BadImageReason::SymbolName(name.clone())))?;
        // SAFETY: `handle` is a live dlopen handle, `c` a NUL-terminated name.
        let addr = unsafe { libc::dlsym(lib.handle, c.as_ptr()) };
        if !addr.is_null() {
            lib.globals.push((name, addr as u64, size));
        }
    }
    let lib = Arc::new(lib);
    Ok(HostImage { lib })
}

/// The function `name` of `image`, as a kernel.
pub(crate) fn kernel(image: &HostImage, name: &str) -> Result<HostKernel, HostError> {
    let not_found = || HostError::KernelNotFound {
        name: name.to_string(),
        hint: elf::defined_hint(&image.lib.functions),
    };
    if !image.lib.functions.iter().any(|f| f == name) {
        return Err(not_found());
    }
    let c = CString::new(name).map_err(|_| not_found())?;
    // SAFETY: live handle, NUL-terminated name.
    let entry = unsafe { libc::dlsym(image.lib.handle, c.as_ptr()) };
    if entry.is_null() {
        return Err(not_found());
    }
    let entry_addr = entry as usize;
    if !image
        .lib
        .text
        .iter()
        .any(|&[start, end]| (start..end).contains(&entry_addr))
    {
        log::warn!(
            "kernel `{name}` at {entry_addr:#x} lies outside its image's code; a fault in it will end the process"
        );
    }
    Ok(HostKernel {
        entry: entry_addr,
        name: name.to_string(),
        lib: image.lib.clone(),
    })
}

/// The global `name` of `image`, if it has one.
pub(crate) fn global<'n>(image: &HostImage, name: &'n str) -> Option<GlobalInfo<'n>> {
    image
        .lib
        .globals
        .iter()
        .find(|(n, _, _)| n == name)
        .map(|(_, addr, size)| GlobalInfo {
            name,
            addr: *addr,
            size: *size,
        })
}

/// Calls `f` with each global of `image`.
pub(crate) fn for_each_global(image: &HostImage, f: &mut dyn FnMut(GlobalInfo<'_>)) {
    for (name, addr, size) in &image.lib.globals {
        f(GlobalInfo {
            name,
            addr: *addr,
            size: *size,
        });
    }
}

/// Loads an ELF shared object from memory: a memfd holds the bytes and
/// `dlopen` opens it through `/proc/self/fd`.
fn load_from_memory(bytes: &[u8]) -> Result<(*mut c_void, File), HostError> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    // SAFETY: memfd_create with a static NUL-terminated name and valid flags.
    let fd = unsafe { libc::memfd_create(c"reprise-image".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(os_error("memfd_create"));
    }
    // SAFETY: `fd` is a fresh descriptor owned by nobody else.
    let mut file = unsafe { File::from_raw_fd(fd) };
    file.write_all(bytes)
        .map_err(|e| HostError::os("write", OsError::from(&e), OsContext::ImageFile))?;
    let path = CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL in a path of digits");
    // SAFETY: dlopen of a path to a complete ELF shared object we just wrote;
    // loading runs the image's constructors, which is what replaying a
    // capture means (a capture is code).
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        // SAFETY: dlerror returns a thread-local message or null.
        let msg = unsafe {
            let e = libc::dlerror();
            if e.is_null() {
                "unknown error".to_string()
            } else {
                CStr::from_ptr(e).to_string_lossy().into_owned()
            }
        };
        return Err(HostError::Load {
            step: LoadStep::Open,
            detail: msg,
        });
    }
    Ok((handle, file))
}

unsafe extern "C" {
    // In the C library on glibc (libdl before 2.34) and musl alike; the
    // `libc` crate declares it for glibc only.
    fn dlinfo(handle: *mut c_void, request: std::ffi::c_int, info: *mut c_void) -> std::ffi::c_int;
}

/// `dlinfo`'s request for the object's `struct link_map`, on glibc and musl.
const RTLD_DI_LINKMAP: std::ffi::c_int = 2;

/// How far from its ELF virtual addresses a loaded object lies: its link
/// map's `l_addr`.
fn load_bias(handle: *mut c_void) -> Result<usize, HostError> {
    let mut map: *const usize = std::ptr::null();
    // SAFETY: `handle` is a live dlopen handle; RTLD_DI_LINKMAP stores one
    // pointer into `map`.
    let rc = unsafe { dlinfo(handle, RTLD_DI_LINKMAP, (&raw mut map).cast()) };
    if rc != 0 || map.is_null() {
        // SAFETY: dlerror returns a thread-local message or null.
        let msg = unsafe {
            let e = libc::dlerror();
            if e.is_null() {
                "no link map".to_string()
            } else {
                CStr::from_ptr(e).to_string_lossy().into_owned()
            }
        };
        return Err(HostError::Load {
            step: LoadStep::LinkMap,
            detail: msg,
        });
    }
    // SAFETY: a `struct link_map` begins with `ElfW(Addr) l_addr` (glibc's
    // <link.h>, musl's struct dso), and lives as long as the handle.
    Ok(unsafe { map.read() })
}
