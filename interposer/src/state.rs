//! The recording state of the process: one [`Recorder`] on the
//! [`Interposed`] executor, made at the first call that needs it, and what
//! the program's handles are to it.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Mutex, MutexGuard, OnceLock};

use reprise_core::exec::{Executor, LaunchConfig};
use reprise_core::record::BackendKind;
use reprise_std::{Args, ImageId, Kernel, RecordConfig, Recorder};

use crate::executor::{Interposed, Raw};
use crate::real::*;

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
    recorded: u64,
}

// SAFETY: the state is only reached through the mutex below; the driver's
// handles it keeps are plain values the driver accepts from any thread.
unsafe impl Send for State {}

enum Phase {
    /// Not started yet (no call has needed it), or recording is off.
    Idle,
    Recording(Box<State>),
    /// Turned off by a failure or by the configuration: calls pass through.
    Off,
}

fn cell() -> &'static Mutex<Phase> {
    static CELL: OnceLock<Mutex<Phase>> = OnceLock::new();
    CELL.get_or_init(|| Mutex::new(Phase::Idle))
}

fn lock() -> MutexGuard<'static, Phase> {
    cell().lock().unwrap_or_else(|e| e.into_inner())
}

/// Turns recording off for the rest of the run, saying why once.
fn give_up(phase: &mut Phase, why: impl std::fmt::Display) {
    eprintln!("reprise: recording stopped: {why}; the program goes on unrecorded");
    *phase = Phase::Off;
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
        let mut device = 0;
        if let Some(get) = optional::<CtxGetDevice>("cuCtxGetDevice")
            // SAFETY: a valid out-pointer.
            && unsafe { get(&mut device) } != SUCCESS
        {
            // No context yet: try again at a later call.
            return None;
        }
        match Recorder::new(Interposed::new(device), BackendKind::Cuda, device, config) {
            Ok(rec) => {
                // SAFETY: registers a plain function, run once at exit.
                unsafe { libc::atexit(at_exit) };
                *phase = Phase::Recording(Box::new(State {
                    rec,
                    images: HashMap::new(),
                    kernels: HashMap::new(),
                    names: HashMap::new(),
                    recorded: 0,
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

/// An allocation from the region, or `None` for the driver to make.
pub fn alloc(size: u64) -> Option<u64> {
    let mut phase = lock();
    let s = state(&mut phase)?;
    s.rec.alloc(size.max(1), 256).ok()
}

/// Whether `addr` is in the recording region.
pub fn in_region(addr: u64) -> bool {
    match &*lock() {
        Phase::Recording(s) => {
            let r = s.rec.region();
            addr >= r.base() && addr < r.base() + r.capacity()
        }
        _ => false,
    }
}

/// The length of the image at `p`, from its own header: PTX text up to its
/// NUL, an ELF file to the end of its section or program headers, a fat
/// binary by its header's size fields.
///
/// # Safety
/// `p` must point at an image the driver accepted.
unsafe fn image_len(p: *const u8) -> Option<usize> {
    const MAX: usize = 1 << 30;
    // SAFETY: every image kind is at least 16 bytes long.
    let head = unsafe { std::slice::from_raw_parts(p, 16) };
    let u16_at = |b: &[u8], i: usize| u16::from_le_bytes([b[i], b[i + 1]]) as usize;
    if head.starts_with(b"\x7fELF") {
        // SAFETY: a 64-bit ELF header is 64 bytes.
        let h = unsafe { std::slice::from_raw_parts(p, 64) };
        let u64_at =
            |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().expect("8 bytes")) as usize;
        let sections = u64_at(0x28) + u16_at(h, 0x3a) * u16_at(h, 0x3c);
        let segments = u64_at(0x20) + u16_at(h, 0x36) * u16_at(h, 0x38);
        return Some(sections.max(segments).max(64)).filter(|&n| n <= MAX);
    }
    if head[..4] == 0xBA55_ED50u32.to_le_bytes() {
        let header = u16_at(head, 6);
        // SAFETY: the fat binary header is 16 bytes: magic, version, size.
        let size = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes")) as usize;
        return header.checked_add(size).filter(|&n| n <= MAX);
    }
    // PTX: text up to its terminating NUL.
    (0..MAX).find(|&i| {
        // SAFETY: PTX is NUL-terminated; reading stops at the NUL.
        unsafe { *p.add(i) == 0 }
    })
}

/// The program loaded `module` from `image`.
///
/// # Safety
/// `image` is the image the driver just accepted.
pub unsafe fn loaded(module: Handle, image: *const u8) {
    let mut phase = lock();
    let Some(s) = state(&mut phase) else { return };
    // SAFETY: the caller's guarantee.
    let Some(len) = (unsafe { image_len(image) }) else {
        return give_up(
            &mut phase,
            "an image whose length cannot be told from its header",
        );
    };
    // SAFETY: `len` bytes of the image, by its own header.
    let bytes = unsafe { std::slice::from_raw_parts(image, len) }.to_vec();
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

/// Records `launch` when the configuration selects it: `Some` with the
/// launch's result when the recorder ran it, `None` for the driver to run
/// it (not selected, not known, or recording is off).
///
/// # Safety
/// `launch.params` holds one pointer per parameter of the function.
pub unsafe fn launch(launch: &Launch) -> Option<CuResult> {
    let mut phase = lock();
    let s = state(&mut phase)?;
    let kernel = s.kernels.remove(&(launch.function as usize))?;
    let result = launch_known(s, &kernel, launch);
    s.kernels.insert(launch.function as usize, kernel);
    match result {
        Some(Ok(recorded)) => {
            s.recorded += u64::from(recorded);
            Some(SUCCESS)
        }
        Some(Err(e)) => {
            give_up(&mut phase, e);
            None
        }
        None => None,
    }
}

/// [`launch`] of a function the recorder knows.
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
    for (i, &size) in sizes[..n].iter().enumerate() {
        // SAFETY: the caller of `launch` guarantees parameter i is `size`
        // bytes at `params[i]`.
        let bytes = unsafe {
            std::slice::from_raw_parts(*launch.params.add(i) as *const u8, size as usize)
        };
        args = args.bytes(bytes);
    }
    *exec.stream.lock().unwrap_or_else(|e| e.into_inner()) = Raw(launch.stream as usize);
    let config = LaunchConfig {
        grid: launch.grid,
        block: launch.block,
        shared_mem: launch.shared,
    };
    Some(reprise_core::block_on(s.rec.launch(kernel, config, &args)).map(|r| r.recorded))
}

/// Writes what is still in flight and says what was recorded.
extern "C" fn at_exit() {
    let mut phase = lock();
    let Phase::Recording(s) = std::mem::replace(&mut *phase, Phase::Off) else {
        return;
    };
    let mut s = s;
    s.rec
        .executor()
        .exiting
        .store(true, std::sync::atomic::Ordering::Release);
    let written = reprise_core::block_on(s.rec.finish());
    match written {
        Ok(files) => eprintln!(
            "reprise: recorded {} launches to {}",
            files.len(),
            s.rec.config().dir.display()
        ),
        Err(e) => eprintln!("reprise: finishing the recording: {e}"),
    }
    // The driver may be shutting down: the region is left to the process.
    std::mem::forget(s);
}
