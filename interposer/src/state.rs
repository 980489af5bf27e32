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

thread_local! {
    /// Set while this thread is inside the interposer's recording code: a
    /// hook the driver (or a tool's callback) calls from in there passes
    /// straight through instead of waiting for the lock it holds.
    static INSIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The process that made the recorder: a forked child has the state but
/// not the recorder's threads, and passes everything through.
static OWNER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn forked() -> bool {
    let owner = OWNER.load(std::sync::atomic::Ordering::Relaxed);
    owner != 0 && owner != std::process::id()
}

/// How long a hook waits for another thread's recording before passing
/// its call through.
const WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The phase, held by this thread: lock order the phase, then the heap.
struct Entered(MutexGuard<'static, Phase>);

impl std::ops::Deref for Entered {
    type Target = Phase;
    fn deref(&self) -> &Phase {
        &self.0
    }
}

impl std::ops::DerefMut for Entered {
    fn deref_mut(&mut self) -> &mut Phase {
        &mut self.0
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        INSIDE.with(|i| i.set(false));
    }
}

/// Why a hook got no phase.
#[derive(Debug, PartialEq, Eq)]
enum Busy {
    /// Called from inside the interposer, or in a forked child.
    Passing,
    /// Another thread held it longer than [`WAIT`].
    Timeout,
}

/// The phase for a hook: waits at most [`WAIT`] for another thread's
/// recording (a recorded launch holds it through its synchronize, which
/// may wait for work that needs this thread to go on).
fn enter() -> Result<Entered, Busy> {
    if INSIDE.with(|i| i.get()) || forked() {
        return Err(Busy::Passing);
    }
    let start = std::time::Instant::now();
    let mut pause = std::time::Duration::from_micros(20);
    loop {
        match cell().try_lock() {
            Ok(g) => {
                INSIDE.with(|i| i.set(true));
                return Ok(Entered(g));
            }
            Err(std::sync::TryLockError::Poisoned(e)) => {
                INSIDE.with(|i| i.set(true));
                return Ok(Entered(e.into_inner()));
            }
            Err(std::sync::TryLockError::WouldBlock) if start.elapsed() < WAIT => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(2));
            }
            Err(std::sync::TryLockError::WouldBlock) => return Err(Busy::Timeout),
        }
    }
}

/// A line on stderr; a closed or broken stderr is no reason to stop the
/// program (`eprintln!` would panic, and a panic here aborts it).
fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Where the captures go, once a recorder was made.
static DIR: OnceLock<PathBuf> = OnceLock::new();

/// Turns recording off for the rest of the run, saying why once. Memory the
/// region served stays mapped: the program goes on using it.
fn give_up(phase: &mut Phase, why: impl std::fmt::Display) {
    say(format_args!(
        "reprise: recording stopped: {why}; the program goes on unrecorded"
    ));
    heap().stop_serving();
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
    if let Ok(mut phase) = enter() {
        let _ = state(&mut phase);
    }
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
                OWNER.store(std::process::id(), std::sync::atomic::Ordering::Relaxed);
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
/// stream-ordered one on the stream with that [`stream_key`], which may
/// take a block freed on that stream), or `None` for the driver to make
/// (and answer as it would): recording is off, the size is 0, no context
/// of the recording device is current, a stream capture is under way (its
/// allocations are the graph's), or the region is full.
pub fn alloc(size: u64, stream: Option<(Handle, usize)>) -> Option<u64> {
    if size == 0 {
        return None;
    }
    let mut phase = enter().ok()?;
    let s = state(&mut phase)?;
    if current_device() != Some(s.device) || capturing(stream.map_or(std::ptr::null_mut(), |s| s.0))
    {
        return None;
    }
    let mut heap = heap();
    if let Some((_, key)) = stream
        && let Some(addr) = heap.reuse(size, key)
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

/// What stream-ordered reuse knows a stream by: its handle, except that
/// the per-thread default stream (`CU_STREAM_PER_THREAD`, or 0 in a
/// `_ptsz` call) is each thread's own.
pub fn stream_key(stream: Handle, per_thread: bool) -> usize {
    const PER_THREAD: usize = 0x2;
    let h = stream as usize;
    if h == PER_THREAD || (per_thread && h == 0) {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as usize;
        // Odd, so never a stream handle (those are pointers).
        (tid << 2) | 1
    } else {
        h
    }
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
fn discover(s: &mut State, f: Handle) -> Option<reprise_std::Result<()>> {
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

/// A launch that cannot be recorded, counted for the summary while
/// recording is on.
pub fn not_recordable(why: Skipped) {
    if let Ok(phase) = enter()
        && let Phase::Recording(_) = &*phase
    {
        summary::skipped(why);
    }
}

/// Why [`launch_known`] did not record a launch.
enum NotRecorded {
    /// The launch cannot be recorded (counted for `why`); the driver runs
    /// it.
    Skip(Skipped),
    /// The recording failed before the kernel was queued: the driver runs
    /// it, and answers the program.
    Before(reprise_std::Error),
    /// The recording failed after the program's kernel was queued: it ran,
    /// and must not run again.
    After(reprise_std::Error),
}

/// Records `launch` when the configuration selects it: `Some` with the
/// launch's result when the recorder ran it, `None` for the driver to run
/// it (not selected, not recordable, or recording is off).
///
/// # Safety
/// `launch.params` holds one pointer per parameter of the function.
pub unsafe fn launch(launch: &Launch) -> Option<CuResult> {
    let mut phase = match enter() {
        Ok(p) => p,
        Err(Busy::Timeout) => {
            summary::skipped(Skipped::Busy);
            return None;
        }
        Err(Busy::Passing) => return None,
    };
    let s = state(&mut phase)?;
    if capturing(launch.stream) {
        summary::skipped(Skipped::Capture);
        return None;
    }
    if current_device() != Some(s.device) {
        summary::skipped(Skipped::OtherDevice);
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
    // SAFETY: the caller's guarantee.
    let result = unsafe { launch_known(s, &kernel, launch) };
    s.kernels.insert(launch.function as usize, kernel);
    match result {
        Ok(recorded) => {
            if recorded {
                summary::recorded();
            }
            Some(SUCCESS)
        }
        Err(NotRecorded::Skip(why)) => {
            summary::skipped(why);
            None
        }
        Err(NotRecorded::Before(e)) => {
            summary::skipped(Skipped::Failed);
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                say(format_args!(
                    "reprise: a launch was not recorded: {e} (the driver ran it; said once)"
                ))
            });
            None
        }
        Err(NotRecorded::After(e)) => {
            // The kernel ran: the program's launch happened, and a failure
            // the device reported is sticky, so the program sees it next.
            give_up(&mut phase, e);
            Some(SUCCESS)
        }
    }
}

/// [`launch`] of a function the recorder knows.
///
/// # Safety
/// As [`launch`].
unsafe fn launch_known(
    s: &mut State,
    kernel: &Kernel<Interposed>,
    launch: &Launch,
) -> Result<bool, NotRecorded> {
    use reprise_core::record::{MAX_ARG_DATA, MAX_ARGS, MAX_NAME_LEN};
    let exec = s.rec.executor();
    let mut sizes = [0u32; MAX_ARGS];
    let n = match exec.param_sizes(kernel.handle(), &mut sizes) {
        Ok(Some(n)) if n <= MAX_ARGS => n,
        Ok(Some(_)) => return Err(NotRecorded::Skip(Skipped::TooLarge)),
        _ => return Err(NotRecorded::Skip(Skipped::Unknown)),
    };
    let large: u64 = sizes[..n]
        .iter()
        .filter(|&&s| s > 8)
        .map(|&s| u64::from(s))
        .sum();
    if kernel.name().len() > MAX_NAME_LEN || large > MAX_ARG_DATA as u64 {
        return Err(NotRecorded::Skip(Skipped::TooLarge));
    }
    if n > 0 && launch.params.is_null() {
        // The driver's error to give, not ours.
        return Err(NotRecorded::Skip(Skipped::Unknown));
    }
    let mut args = Args::new();
    let heap = heap();
    let mut outside = Vec::new();
    let mut in_globals = Vec::new();
    for (i, &size) in sizes[..n].iter().enumerate() {
        // SAFETY: the caller of `launch` guarantees `params[i]` points at
        // parameter i, which the driver (or, before CUDA 12.4, the PTX the
        // kernel was loaded from) says is `size` bytes.
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
    exec.launched
        .store(false, std::sync::atomic::Ordering::Relaxed);
    let config = LaunchConfig {
        grid: launch.grid,
        block: launch.block,
        shared_mem: launch.shared,
    };
    let result = reprise_core::block_on(s.rec.launch(kernel, config, &args));
    result.map(|r| r.recorded).map_err(|e| {
        if s.rec
            .executor()
            .launched
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            NotRecorded::After(e)
        } else {
            NotRecorded::Before(e)
        }
    })
}

/// Writes what is still in flight and says what was recorded, and what
/// was not.
extern "C" fn at_exit() {
    if forked() {
        // A forked child: the recorder's threads are the parent's.
        return;
    }
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
        say(format_args!(
            "reprise: a launch was still being recorded at exit; captures in flight are left as orphans"
        ));
        return;
    };
    if let Phase::Recording(s) = std::mem::replace(&mut *phase, Phase::Off) {
        let mut s = s;
        s.rec
            .executor()
            .exiting
            .store(true, std::sync::atomic::Ordering::Release);
        if let Err(e) = reprise_core::block_on(s.rec.finish()) {
            say(format_args!("reprise: finishing the recording: {e}"));
        }
        // The driver may be shutting down: nothing of it is released.
        std::mem::forget(s);
    }
    if let Some(dir) = DIR.get() {
        summary::at_exit(dir);
    }
}
