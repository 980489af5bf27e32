//! The simulated CUDA driver (the C sources next to this file: `sim.h` and
//! the `.c` files it lists): built with the C compiler once per source
//! version, then either loaded into the test process (before the executor
//! first looks for the driver, so its `libcuda.so` lookup finds the
//! simulator) or handed to a child process through `LD_LIBRARY_PATH`.
//!
//! The directory [`library_dir`] names holds `libcuda.so.1` (soname
//! `libcuda.so.1`, as the NVIDIA driver's) and a `libcuda.so` link to it, so
//! that a C program links against it with `-L<dir> -lcuda` (and records
//! `NEEDED libcuda.so.1`), finds it at run time through `LD_LIBRARY_PATH`, or
//! `dlopen`s `libcuda.so.1` as CUDA's runtime does; any of those names loads
//! the one copy. The copy [`load`] loads into the test process is a second
//! build, with soname `libcuda.so`, in `inproc/` below it: the executor asks
//! for `libcuda.so` first, and the dynamic loader matches that name against
//! the sonames of what is already loaded before it searches the system (which
//! may have the real driver).
//!
//! Which driver a GPU test uses: `REPRISE_GPU_TESTS=1` means the real one
//! (on a machine with an NVIDIA GPU), `REPRISE_GPU_TESTS=0` skips the GPU
//! tests, and anything else means the simulator. Without a C compiler the
//! simulated tests skip, unless `REPRISE_REQUIRE_SIM=1` (set by CI) makes
//! that a failure.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The simulator's sources: `(file name, text)`. Every `.c` and `.h` file
/// of this folder ([`sources_left_out`] checks it).
pub const SOURCES: [(&str, &str); 34] = [
    ("sim.h", include_str!("sim.h")),
    ("blake3_chunks.h", include_str!("blake3_chunks.h")),
    // Each file's header says what it defines for the others (sim.h says
    // in which order they stand on each other).
    ("errors.h", include_str!("errors.h")),
    ("core.h", include_str!("core.h")),
    ("ranges.h", include_str!("ranges.h")),
    ("capture.h", include_str!("capture.h")),
    ("kernels.h", include_str!("kernels.h")),
    ("stream.h", include_str!("stream.h")),
    ("event.h", include_str!("event.h")),
    ("memory.h", include_str!("memory.h")),
    ("host_memory.h", include_str!("host_memory.h")),
    ("graph.h", include_str!("graph.h")),
    ("module.h", include_str!("module.h")),
    ("library.h", include_str!("library.h")),
    ("core.c", include_str!("core.c")),
    ("errors.c", include_str!("errors.c")),
    ("ranges.c", include_str!("ranges.c")),
    ("memory.c", include_str!("memory.c")),
    ("host_memory.c", include_str!("host_memory.c")),
    ("pools.c", include_str!("pools.c")),
    ("contexts.c", include_str!("contexts.c")),
    ("module.c", include_str!("module.c")),
    ("kernels.c", include_str!("kernels.c")),
    ("library.c", include_str!("library.c")),
    ("stream.c", include_str!("stream.c")),
    ("event.c", include_str!("event.c")),
    ("waits.c", include_str!("waits.c")),
    ("copy.c", include_str!("copy.c")),
    ("copy2d.c", include_str!("copy2d.c")),
    ("launch.c", include_str!("launch.c")),
    ("capture.c", include_str!("capture.c")),
    ("graph.c", include_str!("graph.c")),
    ("procs.c", include_str!("procs.c")),
    ("counts.c", include_str!("counts.c")),
];

/// The folder of the simulator's sources.
pub fn source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cuda_driver")
}

/// Which driver the GPU tests run against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// The machine's NVIDIA driver (`REPRISE_GPU_TESTS=1`).
    Real,
    /// The simulated driver, loaded into this process.
    Simulated,
}

/// The driver the GPU tests use here, or why they skip.
pub fn driver() -> Result<Driver, String> {
    match std::env::var("REPRISE_GPU_TESTS").as_deref() {
        Ok("1") => Ok(Driver::Real),
        Ok("0") => Err("REPRISE_GPU_TESTS=0".into()),
        _ => match load() {
            Ok(()) => Ok(Driver::Simulated),
            Err(why) if std::env::var("REPRISE_REQUIRE_SIM").as_deref() == Ok("1") => {
                panic!("REPRISE_REQUIRE_SIM=1 but the simulated CUDA driver is unusable: {why}")
            }
            Err(why) => Err(why),
        },
    }
}

/// FNV-1a of the sources (names and texts) and the build's defines, so an
/// edited simulator is rebuilt.
fn source_hash(defines: &[&str]) -> u64 {
    // The recipe's version too: what `build` makes from the sources.
    crate::source_hash(&SOURCES, "libcuda.so.1+libcuda.so+inproc", defines)
}

/// The directory holding the built `libcuda.so.1` and its `libcuda.so` link
/// (for `LD_LIBRARY_PATH`, and `-L` when linking a program with `-lcuda`).
pub fn library_dir() -> Result<&'static Path, String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| build(&[]))
        .as_deref()
        .map_err(Clone::clone)
}

/// A variant of the simulator built with some of its `SIM_*` switches
/// defined (`-DSIM_NO_STREAM_CALLBACK`, `-DSIM_NO_PARAM_INFO`): the
/// directory of its `libcuda.so`, for a child's `LD_LIBRARY_PATH`.
pub fn variant_dir(defines: &[&str]) -> Result<PathBuf, String> {
    build(defines)
}

fn build(defines: &[&str]) -> Result<PathBuf, String> {
    let dir = Path::new(env!("OUT_DIR")).join(format!("sim-cuda-{:016x}", source_hash(defines)));
    // Made last, so its presence means the directory is complete.
    let link = dir.join("libcuda.so");
    if link.exists() {
        return Ok(dir);
    }
    compile(&dir, "libcuda.so.1", defines)?;
    // The link `-lcuda` and the executor's lookup find; made aside and
    // renamed over, as two builds may race.
    let tmp = dir.join(format!("libcuda.so-{}", unique()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink("libcuda.so.1", &tmp)
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &link).map_err(|e| format!("{}: {e}", tmp.display()))?;
    Ok(dir)
}

/// A name for temporary files unique to this build, so concurrent builds
/// (threads or processes) of one variant never share one.
fn unique() -> String {
    static BUILDS: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        BUILDS.fetch_add(1, Ordering::Relaxed)
    )
}

/// Builds the simulator into `dir/soname` (with that soname) unless it is
/// there.
fn compile(dir: &Path, soname: &str, defines: &[&str]) -> Result<(), String> {
    let lib = dir.join(soname);
    if lib.exists() {
        return Ok(());
    }
    let unique = unique();
    // The sources in a directory of this build's own, as `sim.h` must sit
    // next to the `.c` files.
    let src = dir.join(format!("src-{unique}"));
    std::fs::create_dir_all(&src).map_err(|e| format!("{}: {e}", src.display()))?;
    let tmp = dir.join(format!("libcuda-{unique}.so"));
    for (name, text) in SOURCES {
        let path = src.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    // `CC` may carry arguments (`ccache gcc`).
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut words = cc.split_whitespace();
    let program = words.next().unwrap_or("cc");
    let out = Command::new(program)
        .args(words)
        .args(["-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-pthread"])
        .args(defines)
        .arg(format!("-Wl,-soname,{soname}"))
        .arg("-o")
        .arg(&tmp)
        .args(
            SOURCES
                .iter()
                .filter(|(name, _)| name.ends_with(".c"))
                .map(|(name, _)| src.join(name)),
        )
        // dladdr/dlopen/dlsym (cuGetProcAddress) live in libdl before glibc
        // 2.34.
        .arg("-ldl")
        .output()
        .map_err(|e| format!("no C compiler to build the simulated CUDA driver ({cc}: {e})"));
    let _ = std::fs::remove_dir_all(&src);
    let out = out?;
    // A compiler that fails must fail the tests, not skip them.
    assert!(
        out.status.success(),
        "building the simulated CUDA driver failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Another test process may have won the race; either copy is the same.
    std::fs::rename(&tmp, &lib).map_err(|e| format!("{}: {e}", tmp.display()))?;
    Ok(())
}

/// The simulator as [`load`] loaded it into this process (or why not).
static LOADED: OnceLock<Result<libloading::Library, String>> = OnceLock::new();

/// Builds the simulator and loads it into this process for good, so the
/// executor's lookup of `libcuda.so` finds it (the dynamic loader matches
/// the name against the loaded library's soname).
pub fn load() -> Result<(), String> {
    LOADED
        .get_or_init(|| {
            let inproc = library_dir()?.join("inproc");
            compile(&inproc, "libcuda.so", &[])?;
            let lib = inproc.join("libcuda.so");
            // SAFETY: the simulator's initialisers are the C runtime's own;
            // the handle lives in a static, so the library stays loaded for
            // the life of the process.
            unsafe { libloading::Library::new(&lib) }.map_err(|e| format!("{}: {e}", lib.display()))
        })
        .as_ref()
        .map(|_| ())
        .map_err(Clone::clone)
}

/// Makes every kernel launched from now on on the simulator loaded in this
/// process wait `us` microseconds before it runs (so later work is queued
/// before it faults); kernels already launched keep the delay they were
/// launched with. Does nothing unless [`load`] loaded the simulator.
pub fn set_kernel_delay_us(us: u32) {
    call_u32(b"reprise_sim_set_kernel_delay_us", us);
}

/// Makes every `cuLaunchKernel` of the simulator loaded in this process
/// from now on take `us` microseconds to return once it has queued the
/// kernel, which may run (and fault) meanwhile. Does nothing unless
/// [`load`] loaded the simulator.
pub fn set_launch_return_delay_us(us: u32) {
    call_u32(b"reprise_sim_set_launch_return_delay_us", us);
}

/// Puts the simulator loaded in this process back as it starts: no copy,
/// upload, kernel or launch delays, no pending fault injection or callback status, no static
/// shared memory, the opt-in limit it started with.
pub fn reset() {
    set_copy_delay_us(0);
    set_upload_delay_us(0);
    set_kernel_delay_us(0);
    set_launch_return_delay_us(0);
    set_callback_status(0);
    set_static_shared(0);
    set_shared_optin(0);
    fail("", 0, 0);
}

/// Makes the simulator loaded in this process report and enforce `bytes`
/// (at least 48 KiB; 0: as it started, an sm_90's 227 KiB unless
/// `REPRISE_SIM_CUDA_SHARED_OPTIN` said otherwise) as the device's opt-in
/// limit of shared memory per block, as an sm_75 (64 KiB) or sm_86 (99
/// KiB) would; executors made from then on see it. A child process gets
/// the same from `REPRISE_SIM_CUDA_SHARED_OPTIN=BYTES`. Does nothing unless
/// [`load`] loaded the simulator.
pub fn set_shared_optin(bytes: u32) {
    call_u32(b"reprise_sim_set_shared_optin", bytes);
}

/// Gives every function of the modules the simulator loaded in this
/// process loads from now on `bytes` of static shared memory (as an OpenMP
/// kernel always has): it counts against the 48 KiB a function gets
/// without opting in and against the opt-in limit. A child process gets
/// the same from `REPRISE_SIM_CUDA_STATIC_SHARED=BYTES`. Does nothing
/// unless [`load`] loaded the simulator.
pub fn set_static_shared(bytes: u32) {
    call_u32(b"reprise_sim_set_static_shared", bytes);
}

/// Hands the next stream callback of the simulator loaded in this process
/// the status `code` (without spoiling the context), as a driver that
/// reports a failure only to the callback would. Does nothing unless
/// [`load`] loaded the simulator.
pub fn set_callback_status(code: u32) {
    call_u32(b"reprise_sim_set_callback_status", code);
}

/// Calls the simulator's `void name(unsigned)` hook, if it is loaded.
fn call_u32(name: &[u8], value: u32) {
    if let Some(Ok(lib)) = LOADED.get() {
        // SAFETY: the simulator defines the hooks called through here with
        // this signature; they only store the value.
        unsafe {
            let f = lib
                .get::<unsafe extern "C" fn(u32)>(name)
                .unwrap_or_else(|e| panic!("the simulator lacks a hook: {e}"));
            f(value);
        }
    }
}

/// Makes each device-to-host and device-to-device copy of the simulator
/// loaded in this process take a random 0 to `us` microseconds more, so work
/// on two streams overlaps unpredictably and a missing dependency between
/// them shows. Does nothing unless [`load`] loaded the simulator.
pub fn set_copy_delay_us(us: u32) {
    call_u32(b"reprise_sim_set_copy_delay_us", us);
}

/// Makes each host-to-device copy from page-locked memory of the simulator
/// loaded in this process wait a random 0 to `us` microseconds on its
/// stream before it reads its source (the driver documents such a copy as
/// fully asynchronous), so a caller that rewrites a staging buffer before
/// a synchronize covered its copy uploads the wrong bytes. A child process
/// gets the same from `REPRISE_SIM_CUDA_UPLOAD_DELAY_US=N`. Does nothing
/// unless [`load`] loaded the simulator.
pub fn set_upload_delay_us(us: u32) {
    call_u32(b"reprise_sim_set_upload_delay_us", us);
}

/// The environment a child process needs to find the simulator as its CUDA
/// driver, once this process loaded it (`None` before).
pub fn child_env() -> Option<(&'static str, std::ffi::OsString)> {
    LOADED.get()?.as_ref().ok()?;
    let mut path = std::ffi::OsString::from(library_dir().ok()?);
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        path.push(":");
        path.push(old);
    }
    Some(("LD_LIBRARY_PATH", path))
}

/// The simulator's exported function `name` (a driver entry point or a
/// hook for tests), once [`load`] loaded it into this process.
///
/// # Safety
/// `F` is the function pointer type of `name` as cuda.h (or core.c, for a
/// hook) declares it.
pub unsafe fn symbol<F: Copy>(name: &str) -> Option<F> {
    let Some(Ok(lib)) = LOADED.get() else {
        return None;
    };
    let name = std::ffi::CString::new(name).ok()?;
    // SAFETY: the caller's guarantee on `F`; the library stays loaded.
    unsafe { lib.get::<F>(name.as_bytes_with_nul()).ok().map(|f| *f) }
}

/// Makes the simulator's next call of `call` (after `skip` that succeed)
/// fail with `code`. Returns `false` (and does nothing) unless [`load`]
/// loaded the simulator into this process.
pub fn fail(call: &str, code: u32, skip: u32) -> bool {
    fail_times(call, code, skip, 1)
}

/// As [`fail`], but the `times` calls of `call` after the `skip` that
/// succeed all fail.
pub fn fail_times(call: &str, code: u32, skip: u32, times: u32) -> bool {
    let Some(Ok(lib)) = LOADED.get() else {
        return false;
    };
    let call = std::ffi::CString::new(call).expect("a call name");
    // SAFETY: the simulator defines the function with this signature; it
    // copies the name before returning.
    unsafe {
        let f = lib
            .get::<unsafe extern "C" fn(*const std::ffi::c_char, i32, i32, i32)>(
                b"reprise_sim_fail_times",
            )
            .expect("the simulator exports reprise_sim_fail_times");
        f(call.as_ptr(), code as i32, skip as i32, times as i32);
    }
    true
}

/// What the simulator has live: `[reservations, mappings, physical
/// allocations, device allocations, page-locked host ranges (allocated or
/// registered), streams (not the default ones), events, modules, MiB of
/// physical allocations]` (`None` unless [`load`] loaded it).
pub fn counts() -> Option<[i32; 9]> {
    let Some(Ok(lib)) = LOADED.get() else {
        return None;
    };
    let mut out = [0i32; 9];
    // SAFETY: the simulator defines the function with this signature and
    // writes nine ints.
    unsafe {
        let f = lib
            .get::<unsafe extern "C" fn(*mut i32)>(b"reprise_sim_counts")
            .expect("the simulator exports reprise_sim_counts");
        f(out.as_mut_ptr());
    }
    Some(out)
}

/// The bytes the copies that ran on the simulator loaded in this process
/// moved so far: `[host to device, device to host, device to device]`
/// (`None` unless [`load`] loaded it). Tests take the difference around
/// what they measure.
pub fn copied_bytes() -> Option<[u64; 3]> {
    let Some(Ok(lib)) = LOADED.get() else {
        return None;
    };
    let mut out = [0u64; 3];
    // SAFETY: the simulator defines the function with this signature and
    // writes three unsigned long longs.
    unsafe {
        let f = lib
            .get::<unsafe extern "C" fn(*mut u64)>(b"reprise_sim_copied_bytes")
            .expect("the simulator exports reprise_sim_copied_bytes");
        f(out.as_mut_ptr());
    }
    Some(out)
}

/// The `.c` and `.h` files in `dir` (this folder) that [`SOURCES`] leaves out, and
/// the names in it that have no file: both empty when the build takes
/// every source (a new file left out would still build in the GPU-check
/// rehearsal, which compiles `*.c`, but not here).
pub fn sources_left_out(dir: &Path) -> (Vec<String>, Vec<String>) {
    let on_disk: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.ends_with(".c") || n.ends_with(".h"))
                .collect()
        })
        .unwrap_or_default();
    let listed: Vec<&str> = SOURCES.iter().map(|(n, _)| *n).collect();
    let missing = on_disk
        .iter()
        .filter(|n| !listed.contains(&n.as_str()))
        .cloned()
        .collect();
    let stale = listed
        .iter()
        .filter(|n| !on_disk.iter().any(|d| d == *n))
        .map(|n| n.to_string())
        .collect();
    (missing, stale)
}
