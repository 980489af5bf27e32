//! The recording state of the process: one [`Recorder`] on the
//! [`Interposed`] executor, made at the first call that needs it (with a
//! context current), and what the program's handles are to it.
//!
//! - here: the phase, the recorder's making, allocations from the region,
//!   stream captures;
//! - `entry`: how a hook gets the phase (bounded waits, reentrancy, forks);
//! - `images`: modules, libraries and functions;
//! - `launch`: recording a launch, and what becomes of those not recorded;
//! - `exit`: finishing at exit.

use std::collections::{HashMap, HashSet};
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};

use reprise_core::exec::{Executor, LaunchConfig};
use reprise_std::{Args, ImageId, Kernel, RecordConfig, Recorder, WriterKind};

use crate::executor::{Interposed, Raw, SUGGESTED_BASE};
use crate::heap::{ALIGN, Outside, device_memory, heap};
use crate::image_len::image;
use crate::real::*;
use crate::say::say;
use crate::summary::{self, Skipped};

mod entry;
mod exit;
mod images;
mod launch;

use crate::process::forked;
use entry::{Busy, OWNER, enter};
use exit::at_exit;
use images::discover;
pub use images::{
    alias, function, library_loaded, library_loaded_from_file, library_module, loaded,
    loaded_from_file,
};
pub use launch::{launch, not_recordable};

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
    /// Recordings that failed before their kernel, since the last one that
    /// worked: a failure that persists stops recording (each keeps its
    /// snapshot buffers until a synchronize that would never come).
    failed_in_a_row: u32,
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
        let _ = heap().reserve(c.region_capacity(device_memory()), SUGGESTED_BASE);
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
        // Said once, here: the library's log has no logger in a program.
        for w in reprise_std::config::unknown_variables() {
            say(format_args!("reprise: {w}"));
        }
        let config = match RecordConfig::from_env() {
            // Device hashing's writer copies the chunks the host lacks from
            // a device copy: on the launching thread, inside the recorded
            // launch, where the program's context is current and cannot
            // have been released yet (a background writer could find it
            // gone, the program's own `cuDevicePrimaryCtxRelease` before
            // its exit included).
            Ok(c) if c.enabled && c.device_hashing => c.writer(WriterKind::Inline),
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
        match Recorder::new(Interposed::new(), device, config) {
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
                    failed_in_a_row: 0,
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

/// The program freed the region block at `addr` of `size` bytes
/// (`cuMemFree`): later allocations may take it again once the work
/// queued before the free is done. The driver's `cuMemFree` waits for that
/// work too, so the context is synchronized here first. Not while a stream
/// captures (a synchronize would break the capture), nor when recording
/// is off or the synchronize fails: the block is then never handed out
/// again.
pub fn freed(addr: u64, size: u64) {
    type CtxSynchronize = unsafe extern "C" fn() -> CuResult;
    let Ok(mut phase) = enter() else {
        return;
    };
    let Phase::Recording(s) = &mut *phase else {
        return;
    };
    if capturing(std::ptr::null_mut()) {
        return;
    }
    let Some(sync) = crate::driver_fn!(CtxSynchronize, "cuCtxSynchronize") else {
        return;
    };
    // SAFETY: no arguments; the program's context is current (it freed
    // memory of it).
    if unsafe { sync() } != SUCCESS {
        return;
    }
    // A block the recorder no longer lists (its list of live allocations
    // was replaced since) is still the region's to take back.
    if s.rec.free(addr).is_err() {
        let _ = s.rec.region().free(addr, size);
    }
}

/// What stream-ordered reuse knows a stream by: its handle, except that
/// the per-thread default stream (`CU_STREAM_PER_THREAD`, or 0 in a
/// `_ptsz` call) is each thread's own.
pub fn stream_key(stream: Handle, per_thread: bool) -> usize {
    let h = stream_meant(stream, per_thread) as usize;
    if h == STREAM_PER_THREAD {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as usize;
        // Odd, so never a stream handle (those are pointers).
        (tid << 2) | 1
    } else {
        h
    }
}

/// How long a launch waits for a host function queued before it on its
/// stream to run, before it goes unrecorded.
const HOST_FUNCTION_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Streams a host function was queued on, by [`stream_key`], each with an
/// event recorded after its latest host function.
fn host_functions() -> MutexGuard<'static, HashMap<usize, usize>> {
    static QUEUED: OnceLock<Mutex<HashMap<usize, usize>>> = OnceLock::new();
    QUEUED
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The program queued a host function (or callback) on `stream`: an event
/// recorded after it tells when it has run. Without one (the driver lacks
/// events, or refuses), launches on `stream` are recorded as before.
pub fn host_function_queued(stream: Handle, per_thread: bool) {
    if forked() {
        return;
    }
    let (Some(create), Some(record)) = (
        optional::<EventCreate>("cuEventCreate"),
        optional::<EventRecord>(if per_thread {
            "cuEventRecord_ptsz"
        } else {
            "cuEventRecord"
        }),
    ) else {
        return;
    };
    let key = stream_key(stream, per_thread);
    let mut queued = host_functions();
    let event = match queued.get(&key) {
        Some(&e) => e as Handle,
        None => {
            let mut e: Handle = std::ptr::null_mut();
            // CU_EVENT_DISABLE_TIMING (2): only its completion is asked.
            // SAFETY: a valid out-pointer.
            if unsafe { create(&mut e, 2) } != SUCCESS {
                return;
            }
            queued.insert(key, e as usize);
            e
        }
    };
    // SAFETY: an event of this context, and the program's stream.
    if unsafe { record(event, stream) } != SUCCESS {
        queued.remove(&key);
        if let Some(destroy) = optional::<EventDestroy>("cuEventDestroy_v2") {
            // SAFETY: the event made above, used by nothing queued.
            unsafe { destroy(event) };
        }
    }
}

/// Whether a launch on `stream` sits behind a host function that has not
/// run within [`HOST_FUNCTION_WAIT`]: the event recorded after it is still
/// not complete. The recorder's synchronize would wait for it, and a host
/// function may wait for the launching thread itself (CUDA Driver API,
/// Execution Control, cuLaunchHostFunc: the function runs once the
/// stream's earlier work is done, and the stream's later work waits while
/// it runs). One waiting for another thread (which may take the state
/// meanwhile: this is called before it) has its time to run.
pub fn behind_host_function(stream: Handle) -> bool {
    if forked() {
        return false;
    }
    let key = stream_key(stream, false);
    let Some(event) = host_functions().get(&key).copied() else {
        return false;
    };
    let Some(query) = optional::<EventQuery>("cuEventQuery") else {
        return false;
    };
    let started = std::time::Instant::now();
    let mut pause = std::time::Duration::from_micros(20);
    // Only the driver's "not ready" says the host function is pending.
    // SAFETY: the event made by `host_function_queued`.
    let mut pending = unsafe { query(event as Handle) } == ERROR_NOT_READY;
    while pending && started.elapsed() < HOST_FUNCTION_WAIT {
        std::thread::sleep(pause);
        pause = (pause * 2).min(std::time::Duration::from_millis(2));
        // SAFETY: as above.
        pending = unsafe { query(event as Handle) } == ERROR_NOT_READY;
    }
    let mut queued = host_functions();
    if !pending && queued.get(&key) == Some(&event) {
        queued.remove(&key);
        if let Some(destroy) = optional::<EventDestroy>("cuEventDestroy_v2") {
            // SAFETY: the event is complete; nothing waits on it.
            unsafe { destroy(event as Handle) };
        }
    }
    pending
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
pub fn capturing(stream: Handle) -> bool {
    if forked() {
        // The capture set's lock may be held by a thread the child lacks.
        return false;
    }
    if !captures().is_empty() {
        return true;
    }
    let mut status = 0;
    optional::<StreamIsCapturing>("cuStreamIsCapturing")
        // SAFETY: the program's stream and a valid out-pointer.
        .is_some_and(|f| unsafe { f(stream, &mut status) } == SUCCESS && status != 0)
}
