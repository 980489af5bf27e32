//! Images and functions: what the program's modules, libraries and
//! function handles are to the recorder.

use std::ffi::CStr;

use super::*;

/// The program loaded `module` from `image`. While another thread's
/// recording holds the state longer than a hook waits, the image is kept
/// for the next holder to make known.
///
/// # Safety
/// `code` is the image the driver just accepted.
pub unsafe fn loaded(module: Handle, code: *const u8) {
    // SAFETY: the caller's guarantee.
    loaded_with(module, || {
        unsafe { image_bytes(code) }.ok_or_else(no_length)
    });
}

/// The program loaded `module` from the file at `path` (`cuModuleLoad`):
/// the file's bytes are the image.
pub fn loaded_from_file(module: Handle, path: &CStr) {
    loaded_with(module, || file_image(path));
}

/// [`loaded`] with the image's bytes from `bytes`.
fn loaded_with(module: Handle, bytes: impl FnOnce() -> Result<Vec<u8>, String>) {
    let mut phase = match enter() {
        Ok(p) => p,
        Err(Busy::Timeout) => {
            if let Ok(bytes) = bytes() {
                pending().push((Pending::Module(module as usize), bytes));
            }
            return;
        }
        Err(Busy::Passing) => return,
    };
    let Some(s) = state(&mut phase) else { return };
    let bytes = match bytes() {
        Ok(b) => b,
        Err(e) => return give_up(&mut phase, e),
    };
    if let Err(e) = load_into(s, module, &bytes) {
        give_up(&mut phase, e);
    }
}

fn no_length() -> String {
    "an image whose length cannot be told from its header".into()
}

/// The image in the file at `path`, which the driver just loaded: its
/// bytes (PTX without a terminating NUL, as [`image_bytes`] reads it from
/// memory).
fn file_image(path: &CStr) -> Result<Vec<u8>, String> {
    use std::os::unix::ffi::OsStrExt as _;
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path.to_bytes()));
    let mut bytes = std::fs::read(path).map_err(|e| {
        format!(
            "reading the image file {} the driver loaded: {e}",
            path.display()
        )
    })?;
    let ptx = !bytes.starts_with(b"\x7fELF") && !bytes.starts_with(&0xBA55_ED50u32.to_le_bytes());
    if ptx && let Some(nul) = bytes.iter().position(|&b| b == 0) {
        bytes.truncate(nul);
    }
    Ok(bytes)
}

/// The bytes of the image at `code`, by its own header.
///
/// # Safety
/// As [`image`].
unsafe fn image_bytes(code: *const u8) -> Option<Vec<u8>> {
    // SAFETY: the caller's guarantee.
    let (start, len) = unsafe { image(code) }?;
    // SAFETY: `len` bytes of the image, by its own header.
    Some(unsafe { std::slice::from_raw_parts(start, len) }.to_vec())
}

/// Makes the recorder know `module`, loaded from `bytes`.
fn load_into(s: &mut State, module: Handle, bytes: &[u8]) -> reprise_std::Result<()> {
    *s.rec
        .executor()
        .adopt
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = Some(Raw(module as usize));
    let id = s.rec.load_image(bytes)?;
    s.images.insert(module as usize, id);
    Ok(())
}

/// An image the recorder does not know yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    /// A library loaded without a context (CUDA 12's context-independent
    /// loading): it has a module only in a context.
    Library(usize),
    /// A module loaded while another thread's recording held the state.
    Module(usize),
}

/// Images loaded that the recorder does not know yet, with their bytes.
fn pending() -> MutexGuard<'static, Vec<(Pending, Vec<u8>)>> {
    static PENDING: Mutex<Vec<(Pending, Vec<u8>)>> = Mutex::new(Vec::new());
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// The module of `library` in the current context.
pub fn library_module(library: Handle) -> Option<Handle> {
    let get = crate::driver_fn!(LibraryGetModule, "cuLibraryGetModule")?;
    let mut module: Handle = std::ptr::null_mut();
    // SAFETY: a library the driver handed out, and a valid out-pointer.
    (unsafe { get(&mut module, library) } == SUCCESS && !module.is_null()).then_some(module)
}

/// The program loaded `library` from `code` (`cuLibraryLoadData`): its
/// image is kept, and made known to the recorder in the first context that
/// has its module (now, when one is current).
///
/// # Safety
/// `code` is the image the driver just accepted.
pub unsafe fn library_loaded(library: Handle, code: *const u8) {
    // SAFETY: the caller's guarantee.
    library_loaded_with(library, || {
        unsafe { image_bytes(code) }.ok_or_else(no_length)
    });
}

/// The program loaded `library` from the file at `path`
/// (`cuLibraryLoadFromFile`): as [`library_loaded`], the file's bytes the
/// image.
pub fn library_loaded_from_file(library: Handle, path: &CStr) {
    library_loaded_with(library, || file_image(path));
}

/// [`library_loaded`] with the image's bytes from `bytes`.
fn library_loaded_with(library: Handle, bytes: impl FnOnce() -> Result<Vec<u8>, String>) {
    let phase = enter();
    if let Ok(p) = &phase
        && matches!(**p, Phase::Off)
    {
        return;
    }
    if matches!(phase, Err(Busy::Passing)) {
        return;
    }
    let bytes = bytes();
    let Ok(mut phase) = phase else {
        // Another thread's recording: the next holder makes it known.
        if let Ok(bytes) = bytes {
            pending().push((Pending::Library(library as usize), bytes));
        }
        return;
    };
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) => return give_up(&mut phase, e),
    };
    pending().push((Pending::Library(library as usize), bytes));
    if let Some(s) = state(&mut phase)
        && let Err(e) = resolve_pending(s)
    {
        give_up(&mut phase, e);
    }
}

/// Makes the pending images known that can be: modules, and libraries
/// with a module in the current context, when that is a context of the
/// recording device (a library's module in another device's context is
/// not the one its launches here use).
fn resolve_pending(s: &mut State) -> reprise_std::Result<()> {
    let on_device = current_device() == Some(s.device);
    let ready: Vec<(Handle, Vec<u8>)> = {
        let mut pending = pending();
        let mut ready = Vec::new();
        pending.retain(|(what, bytes)| {
            let module = match *what {
                Pending::Module(m) => Some(m as Handle),
                Pending::Library(lib) if on_device => library_module(lib as Handle),
                Pending::Library(_) => None,
            };
            match module {
                Some(m) => {
                    ready.push((m, bytes.clone()));
                    false
                }
                None => true,
            }
        });
        ready
    };
    for (module, bytes) in ready {
        load_into(s, module, &bytes)?;
    }
    Ok(())
}

/// The program found `function` named `name` in `module`.
pub fn function(function: Handle, module: Handle, name: &str) {
    let Ok(mut phase) = enter() else { return };
    let Some(s) = state(&mut phase) else { return };
    if !s.images.contains_key(&(module as usize))
        && let Err(e) = resolve_pending(s)
    {
        return give_up(&mut phase, e);
    }
    let Some(&image) = s.images.get(&(module as usize)) else {
        return;
    };
    match s.rec.kernel(image, name) {
        Ok(k) => {
            s.kernels.insert(function as usize, k);
            s.names.insert(function as usize, (image, name.to_string()));
        }
        Err(e) => give_up(&mut phase, e),
    }
}

/// `new` is another handle of the function `old` (a `CUfunction` of a
/// library's `CUkernel`).
pub fn alias(new: Handle, old: Handle) {
    let Ok(mut phase) = enter() else { return };
    let Some(s) = state(&mut phase) else { return };
    let Some((image, name)) = s.names.get(&(old as usize)).cloned() else {
        return;
    };
    match s.rec.kernel(image, &name) {
        Ok(k) => {
            s.kernels.insert(new as usize, k);
            s.names.insert(new as usize, (image, name));
        }
        Err(e) => give_up(&mut phase, e),
    }
}

/// The name and module of a launch handle the program never looked up by
/// name (a kernel of `cuLibraryEnumerateKernels`, say), asked of the
/// driver: as a `CUfunction`, else as a `CUkernel`'s function.
fn name_and_module(f: Handle) -> Option<(String, Handle)> {
    let get_name = crate::driver_fn!(FuncGetName, "cuFuncGetName")?;
    let get_module = crate::driver_fn!(FuncGetModule, "cuFuncGetModule")?;
    let ask = |f: Handle| {
        let mut name: *const std::ffi::c_char = std::ptr::null();
        let mut module: Handle = std::ptr::null_mut();
        // SAFETY: valid out-pointers; the driver refuses a handle it does
        // not know.
        let ok =
            unsafe { get_name(&mut name, f) == SUCCESS && get_module(&mut module, f) == SUCCESS };
        (ok && !name.is_null()).then(|| {
            // SAFETY: the driver's NUL-terminated name of the function.
            let name = unsafe { std::ffi::CStr::from_ptr(name) };
            (name.to_string_lossy().into_owned(), module)
        })
    };
    ask(f).or_else(|| {
        let get = crate::driver_fn!(KernelGetFunction, "cuKernelGetFunction")?;
        let mut g: Handle = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the driver refuses a handle that is
        // not a kernel.
        (unsafe { get(&mut g, f) } == SUCCESS)
            .then(|| ask(g))
            .flatten()
    })
}

/// Makes an unknown launch handle known, when the driver tells its name
/// and its module is one the program loaded: `None` when it cannot.
pub(super) fn discover(s: &mut State, f: Handle) -> Option<reprise_std::Result<()>> {
    let (name, module) = name_and_module(f)?;
    if !s.images.contains_key(&(module as usize))
        && let Err(e) = resolve_pending(s)
    {
        return Some(Err(e));
    }
    let image = *s.images.get(&(module as usize))?;
    Some(s.rec.kernel(image, &name).map(|k| {
        s.kernels.insert(f as usize, k);
        s.names.insert(f as usize, (image, name));
    }))
}
