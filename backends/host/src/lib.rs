//! The host (CPU) executor of reprise.
//!
//! - **Region**: an anonymous `mmap` reserved lazily (`MAP_NORESERVE`). A
//!   replay maps it at the recorded address with `MAP_FIXED_NOREPLACE` (never
//!   `MAP_FIXED`, which would clobber live mappings); a taken address is an
//!   error naming it. A fresh recording's base is aligned to 2 GiB.
//! - **Images**: ELF x86-64 shared objects loaded from memory (a `memfd` per
//!   load, opened with `dlopen` of `/proc/self/fd/N`, `RTLD_LOCAL`), so two
//!   loads never share globals and no file lands at a predictable path.
//! - **Kernels**: LLVM's host-plugin ABI: an `extern "C"` function called with
//!   one pointer-sized argument per recorded argument, up to [`MAX_ARGS`].
//! - **Globals**: the image's writable data symbols; address from `dlsym`,
//!   size from the ELF symbol table.
//! - **Queues**: a worker thread per queue runs copies and launches in order
//!   and signals a [`Completion`] at each synchronize.
//! - **Faults**: a kernel that faults (bad address, stack overflow, division
//!   by zero, illegal instruction) does not end the process: the launch
//!   fails with [`HostError::KernelFault`], which the next synchronize
//!   reports, as a GPU driver reports an illegal address, and the queue
//!   keeps working. A process-wide signal handler, installed at the first
//!   launch, catches only faults of kernels running on a queue's worker and
//!   hands every other fault to the handler it replaced. Only a fault of an
//!   instruction in the kernel's image counts: one inside a library the
//!   kernel called (`memset`, `malloc`, `printf`), which may hold a lock
//!   the worker would then wait on forever, still ends the process, after a
//!   line on stderr saying so. After a fault the region's and globals'
//!   contents are undefined.
//!
//! A region is never placed at address 0 ([`HostError::NullBase`]).
//!
//! Every copy is checked against the live regions and globals before it
//! runs: an address outside them is an error, not a stray write. Regions and
//! images are reference-counted, so one dropped while a queue still uses it
//! stays mapped until that work is done.

#![warn(missing_docs)]

mod buffer;
mod call;
pub mod elf;
mod error;
mod executor;
mod fault;
mod guard;
mod image;
mod info;
mod os;
mod queue;
mod registry;

// Only for the crate docs' link to [`Completion`].
#[cfg(doc)]
use reprise_core::completion::Completion;

pub use buffer::HostBuffer;
pub use call::MAX_ARGS;
pub use error::{HostError, LoadStep, OsContext, OsError, TooLarge};
pub use executor::{HostExecutor, HostRegion, SUGGESTED_BASE};
pub use fault::{FaultKind, FaultPlace, KernelFault};
pub use guard::report_to as report_faults_to;
pub use image::{HostImage, HostKernel};
pub use info::HostImages;
pub use queue::HostQueue;
