//! reprise's interposer on the CUDA driver API: preloaded into an
//! unmodified program (`reprise record -- PROGRAM`, or `LD_PRELOAD`), it
//! serves the program's `cuMemAlloc` from a recording region at a fixed
//! address and records the launches the `REPRISE_RECORD_*` variables
//! select, on the program's own stream, in reprise's capture format.
//!
//! - [`real`]: the driver's own entry points (`dlsym(RTLD_NEXT, ...)`);
//! - `executor`: an executor over the program's context, modules,
//!   functions and streams, which the std adapter's `Recorder` runs on;
//! - `state`: the process's recorder and what the program's handles are;
//! - `heap`: the region's memory, what the program holds of it, and the
//!   memory the driver placed elsewhere;
//! - `hooks`: the exported `cu*` entry points;
//! - `summary`: what was not recorded, and why, said at exit.
//!
//! Programs linked with `-lcuda` are caught by the exports; programs that
//! reach the driver through `dlopen` + `cuGetProcAddress` (CUDA's runtime)
//! by the exported `dlsym` and `cuGetProcAddress[_v2]` (`resolve`).

mod executor;
mod heap;
mod hooks;
mod image_len;
mod process;
pub mod real;
mod resolve;
mod say;
mod state;
mod summary;
