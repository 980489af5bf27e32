//! The recording state of the process: one [`Recorder`] on the
//! [`Interposed`] executor, made at the first call that needs it (with a
//! context current), and what the program's handles are to it.

use std::collections::{HashMap, HashSet};
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};

use reprise_core::exec::{Executor, LaunchConfig};
use reprise_core::record::BackendKind;
use reprise_std::{Args, ImageId, Kernel, RecordConfig, Recorder};

use crate::executor::{Interposed, Raw, SUGGESTED_BASE};
use crate::heap::{ALIGN, Outside, heap};
use crate::image_len::image;
use crate::real::*;
use crate::summary::{self, Skipped};

/// A launch as the program made it.
pub struct Launch {
    pub function: Handle,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u32,
    pub stream: Handle,
    pub params: *mut *mut c_void,
}

struct State {
    rec: Recorder<Interposed>,
    images: HashMap<usize, ImageId>,
    kernels: HashMap<usize, Kernel<Interposed>>,
    /// What each known function handle is: its image and name.
    names: HashMap<usize, (ImageId, String)>,
    device: i32,
}

// SAFETY: the state is only reached through the mutex below; the driver's
// handles it keeps are plain values the driver accepts from any thread.
unsafe impl Send for State {}

enum Phase {
    /// Not started yet (no call has needed it).
    Idle,
    Recording(Box<State>),
    /// Turned off by a failure or by the configuration: calls pass through.
    Off,
}

fn cell() -> &'static Mutex<Phase> {
    static CELL: OnceLock<Mutex<Phase>> = OnceLock::new();
    CELL.get_or_init(|| Mutex::new(Phase::Idle))
}

/// The phase. Lock order: the phase, then the heap.
fn lock() -> MutexGuard<'static, Phase> {
    cell().lock().unwrap_or_else(|e| e.into_inner())
}

/// Where the captures go, once a recorder was made.
static DIR: OnceLock<PathBuf> = OnceLock::new();

/// Turns recording off for the rest of the run, saying why once. Memory the
/// region served stays mapped: the program goes on using it.
fn give_up(phase: &mut Phase, why: impl std::fmt::Display) {
    eprintln!("reprise: recording stopped: {why}; the program goes on unrecorded");
    *phase = Phase::Off;
}

/// The configuration, when it enables recording.
fn enabled_config() -> Option<RecordConfig> {
    RecordConfig::from_env().ok().filter(|c| c.enabled)
}

/// After the program's `cuInit`: reserves the region's address space now,
/// before anything allocates, where the driver allows it without a context
/// (else the first call with a context current does).
pub fn initialized() {
    if let Some(c) = enabled_config() {
        let _ = heap().reserve(c.region_size, SUGGESTED_BASE);
    }
}

/// After the program made a context current: the recorder (and the region)
/// are made now, before the program allocates.
pub fn context_current() {
    let mut phase = lock();
    let _ = state(&mut phase);
}

/// The device of the calling thread's context, `None` without one (a
/// driver without `cuCtxGetDevice` has device 0 only).
fn current_device() -> Option<i32> {
    let mut device = 0;
    if let Some(get) = crate::driver_fn!(CtxGetDevice, "cuCtxGetDevice") {
        // SAFETY: a valid out-pointer.
        return (unsafe { get(&mut device) } == SUCCESS).then_some(device);
    }
    let mut ctx: Handle = std::ptr::null_mut();
    let get = crate::driver_fn!(CtxGetCurrent, "cuCtxGetCurrent")?;
    // SAFETY: a valid out-pointer.
    (unsafe { get(&mut ctx) } == SUCCESS && !ctx.is_null()).then_some(0)
}

/// The recorder, made on first use (with a context current) when the
/// configuration enables recording.
fn state(phase: &mut Phase) -> Option<&mut State> {
    if let Phase::Idle = phase {
        let config = match RecordConfig::from_env() {
            Ok(c) if c.enabled => c,
            Ok(_) => {
                *phase = Phase::Off;
                return None;
            }
            Err(e) => {
                give_up(phase, e);
                return None;
            }
        };
        if let Err(name) = real() {
            give_up(
                phase,
                format!("the driver lacks {name}, which the interposer needs"),
            );
            return None;
        }
        // No context yet: try again at a later call.
        let device = current_device()?;
        let dir = config.dir.clone();
        match Recorder::new(Interposed::new(), BackendKind::Cuda, device, config) {
            Ok(rec) => {
                if DIR.set(dir).is_ok() {
                    // SAFETY: registers a plain function, run once at exit.
                    unsafe { libc::atexit(at_exit) };
                }
                *phase = Phase::Recording(Box::new(State {
                    rec,
                    images: HashMap::new(),
                    kernels: HashMap::new(),
                    names: HashMap::new(),
                    device,
                }));
            }
            Err(e) => {
                give_up(phase, e);
                return None;
            }
        }
    }
    match phase {
        Phase::Recording(s) => Some(s),
        _ => None,
    }
}

/// An allocation of `size` bytes from the region (`stream`: a
/// stream-ordered one, which may take a block freed on that stream), or
/// `None` for the driver to make: recording is off, the size is 0 (the
/// driver's error is the program's), or the region is full.
pub fn alloc(size: u64, stream: Option<Handle>) -> Option<u64> {
    if size == 0 {
        return None;
    }
    let mut phase = lock();
    let s = state(&mut phase)?;
    let mut heap = heap();
    if let Some(stream) = stream
        && let Some(addr) = heap.reuse(size, stream as usize)
    {
        return Some(addr);
    }
    let addr = s.rec.alloc(size, ALIGN).ok()?;
    if let Err(e) = heap.map_to(addr + size, s.device) {
        drop(heap);
        give_up(&mut phase, format!("mapping the recording region: {e}"));
        return None;
    }
    heap.hold(addr, size);
    Some(addr)
}

/// The driver placed `size` bytes at `addr`, outside the region.
pub fn placed_outside(addr: u64, size: u64, kind: Outside) {
    heap().outside(addr, size, kind);
}

/// Streams capturing a graph, by handle.
fn captures() -> MutexGuard<'static, HashSet<usize>> {
    static CAPTURES: OnceLock<Mutex<HashSet<usize>>> = OnceLock::new();
    CAPTURES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// `stream` began capturing (`begin`) or ended its capture.
pub fn capture(stream: Handle, begin: bool) {
    let mut c = captures();
    if begin {
        c.insert(stream as usize);
    } else {
        c.remove(&(stream as usize));
    }
}

/// Whether a launch on `stream` must not be recorded because of a stream
/// capture: one is under way (the interposer's synchronize could break it),
/// or the driver says `stream` captures.
fn capturing(stream: Handle) -> bool {
    if !captures().is_empty() {
        return true;
    }
    let mut status = 0;
    optional::<StreamIsCapturing>("cuStreamIsCapturing")
        // SAFETY: the program's stream and a valid out-pointer.
        .is_some_and(|f| unsafe { f(stream, &mut status) } == SUCCESS && status != 0)
}

/// The program loaded `module` from `image`.
///
/// # Safety
/// `code` is the image the driver just accepted.
pub unsafe fn loaded(module: Handle, code: *const u8) {
    let mut phase = lock();
    let Some(s) = state(&mut phase) else { return };
    // SAFETY: the caller's guarantee.
    let Some((start, len)) = (unsafe { image(code) }) else {
        return give_up(
            &mut phase,
            "an image whose length cannot be told from its header",
        );
    };
    // SAFETY: `len` bytes of the image, by its own header.
    let bytes = unsafe { std::slice::from_raw_parts(start, len) }.to_vec();
    *s.rec
        .executor()
        .adopt
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = Some(Raw(module as usize));
    match s.rec.load_image(&bytes) {
        Ok(id) => {
            s.images.insert(module as usize, id);
        }
        Err(e) => give_up(&mut phase, e),
    }
}

/// The program found `function` named `name` in `module`.
pub fn function(function: Handle, module: Handle, name: &str) {
    let mut phase = lock();
    let Some(s) = state(&mut phase) else { return };
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
    let mut phase = lock();
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
fn discover(s: &mut State, f: Handle) -> Option<reprise_std::Result<()>> {
    let (name, module) = name_and_module(f)?;
    let image = *s.images.get(&(module as usize))?;
    Some(s.rec.kernel(image, &name).map(|k| {
        s.kernels.insert(f as usize, k);
        s.names.insert(f as usize, (image, name));
    }))
}

/// A launch that cannot be recorded, counted for the summary while
/// recording is on.
pub fn not_recordable(why: Skipped) {
    if let Phase::Recording(_) = &*lock() {
        summary::skipped(why);
    }
}

/// Records `launch` when the configuration selects it: `Some` with the
/// launch's result when the recorder ran it, `None` for the driver to run
/// it (not selected, not recordable, or recording is off).
///
/// # Safety
/// `launch.params` holds one pointer per parameter of the function.
pub unsafe fn launch(launch: &Launch) -> Option<CuResult> {
    let mut phase = lock();
    let s = state(&mut phase)?;
    if capturing(launch.stream) {
        summary::skipped(Skipped::Capture);
        return None;
    }
    if !s.kernels.contains_key(&(launch.function as usize)) {
        match discover(s, launch.function) {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                give_up(&mut phase, e);
                return None;
            }
            None => {
                summary::skipped(Skipped::Unknown);
                return None;
            }
        }
    }
    let s = match &mut *phase {
        Phase::Recording(s) => s,
        _ => return None,
    };
    let Some(kernel) = s.kernels.remove(&(launch.function as usize)) else {
        summary::skipped(Skipped::Unknown);
        return None;
    };
    let result = launch_known(s, &kernel, launch);
    s.kernels.insert(launch.function as usize, kernel);
    match result {
        Some(Ok(recorded)) => {
            if recorded {
                summary::recorded();
            }
            Some(SUCCESS)
        }
        Some(Err(e)) => {
            give_up(&mut phase, e);
            None
        }
        None => {
            summary::skipped(Skipped::Unknown);
            None
        }
    }
}

/// [`launch`] of a function the recorder knows; `None` when the driver
/// does not tell its parameter sizes.
fn launch_known(
    s: &mut State,
    kernel: &Kernel<Interposed>,
    launch: &Launch,
) -> Option<reprise_std::Result<bool>> {
    let exec = s.rec.executor();
    let mut sizes = [0u32; 256];
    let n = match exec.param_sizes(kernel.handle(), &mut sizes) {
        Ok(Some(n)) if n <= sizes.len() => n,
        _ => return None,
    };
    let mut args = Args::new();
    let heap = heap();
    let mut outside = Vec::new();
    let mut in_globals = Vec::new();
    for (i, &size) in sizes[..n].iter().enumerate() {
        // SAFETY: the caller of `launch` guarantees parameter i is `size`
        // bytes at `params[i]`.
        let bytes = unsafe {
            std::slice::from_raw_parts(*launch.params.add(i) as *const u8, size as usize)
        };
        if let Ok(word) = <[u8; 8]>::try_from(bytes) {
            let v = u64::from_le_bytes(word);
            if !heap.in_region(v) {
                if heap.outside_kind(v).is_some() {
                    outside.push(i);
                } else if heap.in_global(v) {
                    in_globals.push(i);
                }
            }
        }
        args = args.bytes(bytes);
    }
    drop(heap);
    for i in outside {
        args = args.mark_outside(i);
    }
    for i in in_globals {
        args = args.mark_in_global(i);
    }
    *exec.stream.lock().unwrap_or_else(|e| e.into_inner()) = Raw(launch.stream as usize);
    let config = LaunchConfig {
        grid: launch.grid,
        block: launch.block,
        shared_mem: launch.shared,
    };
    Some(reprise_core::block_on(s.rec.launch(kernel, config, &args)).map(|r| r.recorded))
}

/// Writes what is still in flight and says what was recorded, and what
/// was not.
extern "C" fn at_exit() {
    // Another thread may be inside a recorded launch (the program exits
    // from one thread while another still works): wait for it a while, not
    // for ever.
    let mut phase = None;
    for _ in 0..1000 {
        match cell().try_lock() {
            Ok(g) => {
                phase = Some(g);
                break;
            }
            Err(std::sync::TryLockError::Poisoned(e)) => {
                phase = Some(e.into_inner());
                break;
            }
            Err(std::sync::TryLockError::WouldBlock) => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
    let Some(mut phase) = phase else {
        eprintln!(
            "reprise: a launch was still being recorded at exit; captures in flight are left as orphans"
        );
        return;
    };
    if let Phase::Recording(s) = std::mem::replace(&mut *phase, Phase::Off) {
        let mut s = s;
        s.rec
            .executor()
            .exiting
            .store(true, std::sync::atomic::Ordering::Release);
        if let Err(e) = reprise_core::block_on(s.rec.finish()) {
            eprintln!("reprise: finishing the recording: {e}");
        }
        // The driver may be shutting down: nothing of it is released.
        std::mem::forget(s);
    }
    if let Some(dir) = DIR.get() {
        summary::at_exit(dir);
    }
}
