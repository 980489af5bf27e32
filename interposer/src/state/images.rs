//! Images and functions: what the program's modules, libraries and
//! function handles are to the recorder.

use super::*;

/// The program loaded `module` from `image`.
///
/// # Safety
/// `code` is the image the driver just accepted.
pub unsafe fn loaded(module: Handle, code: *const u8) {
    let Ok(mut phase) = enter() else { return };
    let Some(s) = state(&mut phase) else { return };
    // SAFETY: the caller's guarantee.
    let Some(bytes) = (unsafe { image_bytes(code) }) else {
        return give_up(
            &mut phase,
            "an image whose length cannot be told from its header",
        );
    };
    if let Err(e) = load_into(s, module, &bytes) {
        give_up(&mut phase, e);
    }
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

/// Libraries loaded whose module the recorder does not know yet: a
/// library is loaded without a context (CUDA 12's context-independent
/// loading), and has a module only in a context.
fn pending_libraries() -> MutexGuard<'static, Vec<(usize, Vec<u8>)>> {
    static PENDING: Mutex<Vec<(usize, Vec<u8>)>> = Mutex::new(Vec::new());
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
    let Ok(mut phase) = enter() else { return };
    if matches!(*phase, Phase::Off) {
        return;
    }
    // SAFETY: the caller's guarantee.
    let Some(bytes) = (unsafe { image_bytes(code) }) else {
        return give_up(
            &mut phase,
            "an image whose length cannot be told from its header",
        );
    };
    pending_libraries().push((library as usize, bytes));
    if let Some(s) = state(&mut phase)
        && let Err(e) = resolve_libraries(s)
    {
        give_up(&mut phase, e);
    }
}

/// Loads the libraries that have a module in the current context.
fn resolve_libraries(s: &mut State) -> reprise_std::Result<()> {
    let ready: Vec<(Handle, Vec<u8>)> = {
        let mut pending = pending_libraries();
        let mut ready = Vec::new();
        pending.retain(|(lib, bytes)| match library_module(*lib as Handle) {
            Some(module) => {
                ready.push((module, bytes.clone()));
                false
            }
            None => true,
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
        && let Err(e) = resolve_libraries(s)
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
        && let Err(e) = resolve_libraries(s)
    {
        return Some(Err(e));
    }
    let image = *s.images.get(&(module as usize))?;
    Some(s.rec.kernel(image, &name).map(|k| {
        s.kernels.insert(f as usize, k);
        s.names.insert(f as usize, (image, name));
    }))
}
