//! The simulated HSA runtime (the C sources next to this file): built with
//! the C compiler once per source version into
//! `<CARGO_TARGET_TMPDIR>/sim-hsa-<hash>/libhsa-runtime64.so.1`, then named
//! by `REPRISE_HSA_LIBRARY`, which the executor reads when it first loads
//! the runtime (once per process).
//!
//! Which runtime a GPU test uses: `REPRISE_GPU_TESTS=0` skips the GPU
//! tests; anything else means the simulator. Without a C compiler the
//! simulated tests skip, unless `REPRISE_REQUIRE_SIM=1` (set by CI) makes
//! that a failure.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};

/// The simulator's sources: `(file name, text)`.
const SOURCES: [(&str, &str); 21] = [
    ("sim.h", include_str!("sim.h")),
    // The BLAKE3 code of the chunk-hashing kernel, which the CUDA
    // simulator's twin of it shares.
    (
        "blake3_chunks.h",
        include_str!("../cuda_driver/blake3_chunks.h"),
    ),
    // Each file's header says what it defines for the others (sim.h says
    // in which order they stand on each other).
    ("core.h", include_str!("core.h")),
    ("memory.h", include_str!("memory.h")),
    ("vmem.h", include_str!("vmem.h")),
    ("signal.h", include_str!("signal.h")),
    ("queue.h", include_str!("queue.h")),
    ("copy.h", include_str!("copy.h")),
    ("exe.h", include_str!("exe.h")),
    ("loader.h", include_str!("loader.h")),
    ("kernels.h", include_str!("kernels.h")),
    ("core.c", include_str!("core.c")),
    ("memory.c", include_str!("memory.c")),
    ("vmem.c", include_str!("vmem.c")),
    ("signal.c", include_str!("signal.c")),
    ("queue.c", include_str!("queue.c")),
    ("copy.c", include_str!("copy.c")),
    ("exe.c", include_str!("exe.c")),
    ("loader.c", include_str!("loader.c")),
    ("kernels.c", include_str!("kernels.c")),
    ("live.c", include_str!("live.c")),
];

/// The library's file name (and soname).
pub const NAME: &str = "libhsa-runtime64.so.1";

/// Whether the simulated tests run here, or why they skip:
/// `REPRISE_GPU_TESTS=0` skips them, and so does a missing C compiler
/// unless `REPRISE_REQUIRE_SIM=1` (then it panics).
pub fn available() -> Result<(), String> {
    if std::env::var("REPRISE_GPU_TESTS").as_deref() == Ok("0") {
        return Err("REPRISE_GPU_TESTS=0".into());
    }
    match library() {
        Ok(_) => Ok(()),
        Err(why) if std::env::var("REPRISE_REQUIRE_SIM").as_deref() == Ok("1") => {
            panic!("REPRISE_REQUIRE_SIM=1 but the simulated HSA runtime is unusable: {why}")
        }
        Err(why) => Err(why),
    }
}

/// FNV-1a of the sources and the build's defines, so an edited simulator
/// is rebuilt.
fn source_hash(defines: &[&str]) -> u64 {
    crate::source_hash(&SOURCES, "", defines)
}

/// The default build's library file.
pub fn library() -> Result<&'static Path, String> {
    static LIB: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    LIB.get_or_init(|| build(&[]))
        .as_deref()
        .map_err(Clone::clone)
}

/// A build with some of the simulator's `SIM_*` switches defined
/// (`-DSIM_NO_VMEM`): its library file.
pub fn variant(defines: &[&str]) -> Result<PathBuf, String> {
    build(defines)
}

fn build(defines: &[&str]) -> Result<PathBuf, String> {
    let dir = Path::new(env!("OUT_DIR")).join(format!("sim-hsa-{:016x}", source_hash(defines)));
    let lib = dir.join(NAME);
    if lib.exists() {
        return Ok(lib);
    }
    // Unique per build, so concurrent builds (threads or processes) of one
    // variant never share a temporary file.
    static BUILDS: AtomicUsize = AtomicUsize::new(0);
    let unique = format!(
        "{}-{}",
        std::process::id(),
        BUILDS.fetch_add(1, Ordering::Relaxed)
    );
    let src = dir.join(format!("src-{unique}"));
    std::fs::create_dir_all(&src).map_err(|e| format!("{}: {e}", src.display()))?;
    for (name, text) in SOURCES {
        let path = src.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let tmp = dir.join(format!("{NAME}-{unique}"));
    // `CC` may carry arguments (`ccache gcc`).
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut words = cc.split_whitespace();
    let program = words.next().unwrap_or("cc");
    let out = Command::new(program)
        .args(words)
        .args(["-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-pthread"])
        .args(defines)
        .arg(format!("-Wl,-soname,{NAME}"))
        .arg("-o")
        .arg(&tmp)
        .args(
            SOURCES
                .iter()
                .filter(|(name, _)| name.ends_with(".c"))
                .map(|(name, _)| src.join(name)),
        )
        .output()
        .map_err(|e| format!("no C compiler to build the simulated HSA runtime ({cc}: {e})"));
    let _ = std::fs::remove_dir_all(&src);
    let out = out?;
    // A compiler that fails must fail the tests, not skip them.
    assert!(
        out.status.success(),
        "building the simulated HSA runtime failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Another test process may have won the race; either copy is the same.
    std::fs::rename(&tmp, &lib).map_err(|e| format!("{}: {e}", tmp.display()))?;
    Ok(lib)
}

/// Builds the simulator and names it in `REPRISE_HSA_LIBRARY` for this
/// process, once. Every test calls this first, before it makes an
/// executor.
pub fn use_in_this_process() -> Result<(), String> {
    let lib = library()?;
    static SET: Once = Once::new();
    SET.call_once(|| {
        // SAFETY: edition 2024 makes `set_var` unsafe because another thread
        // may read the environment meanwhile without std's lock (C code's
        // `getenv`). Every test of a binary that opens an executor on the
        // simulator calls this function first, and the executor reads
        // REPRISE_HSA_LIBRARY (and the simulator its switches, with
        // `getenv` in `hsa_init`) only when it first loads the runtime,
        // after this call returned (`Once` makes concurrent callers wait
        // for it); tests that only spawn children read the environment
        // through std, which takes the same lock as `set_var`.
        unsafe { std::env::set_var("REPRISE_HSA_LIBRARY", lib) };
    });
    Ok(())
}

/// The simulator's introspection exports, called through its own handle
/// on the library file (the same library the executor loaded: the dynamic
/// loader finds it by path and soname).
pub struct Probe {
    lib: libloading::Library,
}

impl Probe {
    /// Opens the default build.
    pub fn open() -> Result<Probe, String> {
        let path = library()?;
        // SAFETY: the simulator's initialisers are the C runtime's own.
        let lib = unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Probe { lib })
    }

    /// `sim_hsa_live(what)`: how many of `what` are live ("allocations",
    /// "signals", "queues", "executables", "readers", "handlers",
    /// "reservations", "handles", "mappings", "copies").
    // `c_long` is `i64` here, but not on every target.
    #[allow(clippy::useless_conversion)]
    pub fn live(&self, what: &str) -> i64 {
        let c = std::ffi::CString::new(what).expect("no NUL");
        // SAFETY: the simulator defines it with this signature; it only
        // reads the string.
        unsafe {
            let f = self
                .lib
                .get::<unsafe extern "C" fn(*const std::ffi::c_char) -> std::ffi::c_long>(
                    b"sim_hsa_live",
                )
                .expect("the simulator exports sim_hsa_live");
            i64::from(f(c.as_ptr()))
        }
    }

    // As in `live`.
    #[allow(clippy::useless_conversion)]
    fn counter(&self, name: &[u8]) -> i64 {
        // SAFETY: the simulator defines its counters as `long f(void)`.
        unsafe {
            let f = self
                .lib
                .get::<unsafe extern "C" fn() -> std::ffi::c_long>(name)
                .expect("the simulator exports its counters");
            i64::from(f())
        }
    }

    /// `sim_hsa_waits()`: calls of `hsa_signal_wait_scacquire` so far.
    pub fn waits(&self) -> i64 {
        self.counter(b"sim_hsa_waits")
    }

    /// `sim_hsa_handlers()`: asynchronous handlers registered so far.
    pub fn handlers(&self) -> i64 {
        self.counter(b"sim_hsa_handlers")
    }

    /// `sim_hsa_packets()`: AQL packets processed so far.
    pub fn packets(&self) -> i64 {
        self.counter(b"sim_hsa_packets")
    }

    /// `sim_hsa_copied(direction)`: the bytes the copies that ran so far
    /// moved, `[host to device, device to host, on the device]` (by the
    /// agents each copy named).
    pub fn copied(&self) -> [i64; 3] {
        // SAFETY: defined as `long long sim_hsa_copied(int)`; it only
        // reads counters.
        unsafe {
            let f = self
                .lib
                .get::<unsafe extern "C" fn(std::ffi::c_int) -> std::ffi::c_longlong>(
                    b"sim_hsa_copied",
                )
                .expect("the simulator exports sim_hsa_copied");
            [f(0), f(1), f(2)]
        }
    }

    /// `sim_hsa_init_count()`: the runtime's reference count.
    pub fn init_count(&self) -> i64 {
        // SAFETY: defined as `int sim_hsa_init_count(void)`.
        unsafe {
            let f = self
                .lib
                .get::<unsafe extern "C" fn() -> std::ffi::c_int>(b"sim_hsa_init_count")
                .expect("the simulator exports sim_hsa_init_count");
            i64::from(f())
        }
    }
}
