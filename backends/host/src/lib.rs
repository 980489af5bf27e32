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

mod call;
mod elf;
mod guard;

use std::collections::VecDeque;
use std::ffi::{CStr, CString, c_void};
use std::fs::File;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use reprise_core::completion::Completion;
use reprise_core::exec::{
    DeviceRegion, ErrorType, Executor, GlobalInfo, Launch, MapFile, Queue, RegionRequest, Segment,
    Ticket,
};
use reprise_core::image::{self, EM_X86_64, ImageKind};
use reprise_core::region::RECORDING_BASE_ALIGN;

pub use call::MAX_ARGS;

/// Errors of the host executor.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// The requested region overlaps a mapping that already exists.
    #[error("address range {addr:#x}..{end:#x} ({size} bytes) is already mapped in this process", end = addr + size)]
    AddressTaken {
        /// Requested base.
        addr: u64,
        /// Requested size.
        size: u64,
    },
    /// The requested base is not page-aligned.
    #[error("region base {0:#x} is not page-aligned")]
    Unaligned(u64),
    /// `mmap` or a related call failed.
    #[error("{call} failed: {message}")]
    Os {
        /// The call.
        call: &'static str,
        /// The operating system's message.
        message: String,
    },
    /// The image is not an ELF x86-64 shared object.
    #[error("{0}")]
    BadImage(String),
    /// `dlopen` failed.
    #[error("loading the image failed: {0}")]
    Load(String),
    /// No function of that name in the image.
    #[error("kernel `{name}` is not a function in the image{hint}")]
    KernelNotFound {
        /// The name asked for.
        name: String,
        /// A list of what the image does define.
        hint: String,
    },
    /// A launch has more arguments than the host ABI supports.
    #[error("{count} kernel arguments, more than the host executor's maximum of {max}")]
    TooManyArgs {
        /// Arguments given.
        count: usize,
        /// The maximum.
        max: usize,
    },
    /// A launch argument is not pointer-sized.
    #[error("argument {index} is {size} bytes; host kernels take pointer-sized (8-byte) arguments")]
    ArgSize {
        /// Which argument.
        index: usize,
        /// Its size.
        size: u32,
    },
    /// A copy touches memory outside every region and global.
    #[error("copy of {len} bytes at {addr:#x} is outside every live region and global")]
    OutOfBounds {
        /// Device address.
        addr: u64,
        /// Length.
        len: usize,
    },
    /// A copy's host range is outside its buffer.
    #[error("copy of {len} bytes at buffer offset {offset} overruns the {buffer}-byte buffer")]
    BufferOverrun {
        /// Offset in the buffer.
        offset: usize,
        /// Length.
        len: usize,
        /// Buffer length.
        buffer: usize,
    },
    /// The host executor runs on x86-64 Linux only.
    #[error("the host executor runs x86-64 kernels on x86-64 Linux only")]
    Unsupported,
    /// The queue's worker thread is gone.
    #[error("the queue's worker thread has stopped")]
    WorkerGone,
    /// A region was asked for at address 0, where no region can be: a null
    /// pointer into it would be valid (and mapping page 0 needs privileges).
    #[error("region base {0:#x} is not a usable address")]
    NullBase(u64),
    /// A kernel faulted (bad memory access, stack overflow, arithmetic
    /// fault, illegal instruction); reported by the next synchronize, as a
    /// GPU driver reports an illegal address.
    #[error("{0}")]
    KernelFault(Box<KernelFault>),
}

/// A fault that stopped a kernel.
///
/// The kernel stopped at the faulting instruction: what it had written to
/// regions and globals until then is there, and the rest of what it would
/// have written is not (the contents are undefined). The queue and the
/// executor stay usable.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelFault {
    /// The kernel's name.
    pub kernel: String,
    /// What went wrong.
    pub kind: FaultKind,
    /// The signal (`SIGSEGV`, `SIGBUS`, `SIGFPE` or `SIGILL`).
    pub signal: i32,
    /// The signal's `si_code` (e.g. `SEGV_MAPERR`).
    pub code: i32,
    /// The address accessed (memory faults), or the faulting instruction's
    /// (arithmetic faults, illegal instructions).
    pub addr: u64,
    /// Where `addr` lies relative to the executor's memory.
    pub place: FaultPlace,
}

/// The kind of a [`KernelFault`].
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// An access to an address with nothing mapped (`SIGSEGV`,
    /// `SEGV_MAPERR`).
    InvalidAccess,
    /// An access the mapping does not permit, such as a write to read-only
    /// memory (`SIGSEGV`, other codes).
    Protection,
    /// The kernel overflowed the worker thread's stack (`SIGSEGV` at the
    /// stack's end).
    StackOverflow,
    /// A bus error (`SIGBUS`): e.g. a mapped file's page past its end.
    Bus,
    /// An arithmetic fault (`SIGFPE`): integer division by zero or overflow.
    Arithmetic,
    /// An illegal instruction (`SIGILL`), e.g. `__builtin_trap()`.
    IllegalInstruction,
}

/// Where a [`KernelFault`]'s address lies.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultPlace {
    /// Inside a live region `base..end`.
    Region {
        /// First address.
        base: u64,
        /// One past the last.
        end: u64,
    },
    /// Inside a global of a loaded image, `start..end`.
    Global {
        /// First address.
        start: u64,
        /// One past the last.
        end: u64,
    },
    /// Outside every region and global; `regions` lists the live regions
    /// (`base`, `end`), in no particular order.
    Outside {
        /// The executor's live regions.
        regions: Vec<(u64, u64)>,
    },
    /// The worker thread's stack `low..high`.
    Stack {
        /// Lowest usable address.
        low: u64,
        /// One past the highest.
        high: u64,
    },
    /// The address is the faulting instruction's, not data.
    Instruction,
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        _ => "signal",
    }
}

/// What a signal's `si_code` says, where it says something useful.
fn code_text(signal: i32, code: i32) -> Option<&'static str> {
    Some(match (signal, code) {
        (libc::SIGSEGV, 1) => "address not mapped",
        (libc::SIGSEGV, 2) => "access not permitted",
        (libc::SIGBUS, 1) => "misaligned address",
        (libc::SIGBUS, 2) => "nonexistent physical address, e.g. past the end of a mapped file",
        (libc::SIGFPE, 1) => "integer division by zero or overflow",
        (libc::SIGFPE, 2) => "integer overflow",
        (libc::SIGFPE, 3) => "floating-point divide by zero",
        (libc::SIGFPE, 4) => "floating-point overflow",
        (libc::SIGFPE, 5) => "floating-point underflow",
        (libc::SIGFPE, 6) => "floating-point inexact result",
        (libc::SIGFPE, 7) => "invalid floating-point operation",
        (libc::SIGILL, 1) => "illegal opcode",
        (libc::SIGILL, 2) => "illegal operand",
        (libc::SIGILL, 5) => "privileged opcode",
        _ => return None,
    })
}

impl std::fmt::Display for KernelFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.kind {
            FaultKind::InvalidAccess => "invalid memory access",
            FaultKind::Protection => "protection fault",
            FaultKind::StackOverflow => "stack overflow",
            FaultKind::Bus => "bus error",
            FaultKind::Arithmetic => "arithmetic fault",
            FaultKind::IllegalInstruction => "illegal instruction",
        };
        let at = if self.place == FaultPlace::Instruction {
            "by the instruction at"
        } else {
            "at"
        };
        write!(
            f,
            "the kernel `{}` faulted: {what} {at} {:#x} ({}",
            self.kernel,
            self.addr,
            signal_name(self.signal)
        )?;
        if let Some(t) = code_text(self.signal, self.code) {
            write!(f, ": {t}")?;
        }
        f.write_str(")")?;
        match &self.place {
            FaultPlace::Region { base, end } => {
                write!(f, ", inside the region {base:#x}..{end:#x}")
            }
            FaultPlace::Global { start, end } => {
                write!(f, ", inside the image's global at {start:#x}..{end:#x}")
            }
            FaultPlace::Outside { regions } => match regions.as_slice() {
                [] => f.write_str(", and no region is reserved"),
                [(b, e)] => write!(f, ", outside the region {b:#x}..{e:#x}"),
                many => {
                    f.write_str(", outside every region (")?;
                    for (i, (b, e)) in many.iter().enumerate() {
                        let sep = if i == 0 { "" } else { ", " };
                        write!(f, "{sep}{b:#x}..{e:#x}")?;
                    }
                    f.write_str(") and global")
                }
            },
            FaultPlace::Stack { low, high } => write!(
                f,
                ", past the end of the worker thread's stack {low:#x}..{high:#x} ({} bytes)",
                high - low
            ),
            FaultPlace::Instruction => Ok(()),
        }
    }
}

fn os_error(call: &'static str) -> HostError {
    HostError::Os {
        call,
        message: std::io::Error::last_os_error().to_string(),
    }
}

/// Where a fresh recording's region goes when that address is free: 32 TiB,
/// between the executable and heap (low) and the shared libraries and
/// thread stacks (near 128 TiB), and 2 GiB-aligned.
pub const SUGGESTED_BASE: u64 = 0x2000_0000_0000;

/// Buffers of at least this many bytes are mapped with huge pages.
const HUGE_BUFFER: usize = 4 << 20;

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as u64 } else { 4096 }
}

// ---------------------------------------------------------------------------
// Live memory registry

/// An `mmap`ed region; unmapped when the last reference goes.
#[derive(Debug)]
struct Mapping {
    base: u64,
    len: u64,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base..base+len` was mapped by this process for this value
        // alone, and no reference to it remains (this is the last `Arc`).
        unsafe {
            libc::munmap(self.base as *mut c_void, self.len as usize);
        }
    }
}

/// A loaded image; closed when the last reference goes.
struct Library {
    handle: *mut c_void,
    /// The image's executable segments in memory, `[start, end)`: where a
    /// fault is the kernel's own (see `guard.rs`).
    text: Vec<[usize; 2]>,
    globals: Vec<(String, u64, u64)>,
    functions: Vec<String>,
    /// The memfd the image was loaded from, open for as long as the image is
    /// loaded: `dlopen` recognises libraries by path, and a closed
    /// descriptor's number (hence `/proc/self/fd/N`) would be reused by the
    /// next load, which would then get this library back, globals and all.
    _memfd: File,
}

// SAFETY: a dlopen handle may be used and closed from any thread.
unsafe impl Send for Library {}
// SAFETY: the handle is only passed to thread-safe dl* functions.
unsafe impl Sync for Library {}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: `handle` came from dlopen and is closed exactly once, after
        // every kernel and copy that used it has finished (they hold an Arc).
        unsafe {
            libc::dlclose(self.handle);
        }
    }
}

#[derive(Clone)]
enum Owner {
    Map(Weak<Mapping>),
    Lib(Weak<Library>),
}

/// Something that keeps a range of memory alive while it is used.
#[allow(dead_code)] // held for its Drop, never read
enum Pin {
    Map(Arc<Mapping>),
    Lib(Arc<Library>),
}

#[derive(Default)]
struct Registry {
    ranges: Vec<(u64, u64, Owner)>,
}

impl Registry {
    fn add(&mut self, start: u64, len: u64, owner: Owner) {
        self.ranges.retain(|(_, _, o)| match o {
            Owner::Map(w) => w.strong_count() > 0,
            Owner::Lib(w) => w.strong_count() > 0,
        });
        self.ranges.push((start, len, owner));
    }

    /// Pins the live range holding `[addr, addr + len)`.
    fn pin(&self, addr: u64, len: usize) -> Result<Pin, HostError> {
        let end = addr
            .checked_add(len as u64)
            .ok_or(HostError::OutOfBounds { addr, len })?;
        for (start, size, owner) in &self.ranges {
            if addr >= *start && end <= start + size {
                let pin = match owner {
                    Owner::Map(w) => w.upgrade().map(Pin::Map),
                    Owner::Lib(w) => w.upgrade().map(Pin::Lib),
                };
                if let Some(p) = pin {
                    return Ok(p);
                }
            }
        }
        Err(HostError::OutOfBounds { addr, len })
    }

    /// Where `addr` lies: in a live region, in a live global, or outside
    /// them all (with the live regions listed).
    fn place(&self, addr: u64) -> FaultPlace {
        let mut regions = Vec::new();
        let mut global = None;
        for (start, size, owner) in &self.ranges {
            let end = start.saturating_add(*size);
            match owner {
                Owner::Map(w) if w.strong_count() > 0 => {
                    if (*start..end).contains(&addr) {
                        return FaultPlace::Region { base: *start, end };
                    }
                    regions.push((*start, end));
                }
                Owner::Lib(w) if w.strong_count() > 0 && (*start..end).contains(&addr) => {
                    global = Some(FaultPlace::Global { start: *start, end });
                }
                _ => {}
            }
        }
        global.unwrap_or(FaultPlace::Outside { regions })
    }

    /// Pins every live range (for the duration of a kernel).
    fn pin_all(&self) -> Vec<Pin> {
        self.ranges
            .iter()
            .filter_map(|(_, _, o)| match o {
                Owner::Map(w) => w.upgrade().map(Pin::Map),
                Owner::Lib(w) => w.upgrade().map(Pin::Lib),
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------
// Executor

/// The host executor. Cheap to clone; clones share the registry of live
/// regions and images.
#[derive(Clone, Default)]
pub struct HostExecutor {
    registry: Arc<Mutex<Registry>>,
}

impl std::fmt::Debug for HostExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostExecutor").finish_non_exhaustive()
    }
}

/// A reserved region of host memory.
#[derive(Debug)]
pub struct HostRegion {
    map: Arc<Mapping>,
}

impl DeviceRegion for HostRegion {
    fn base(&self) -> u64 {
        self.map.base
    }
    fn capacity(&self) -> u64 {
        self.map.len
    }
}

/// A loaded image.
pub struct HostImage {
    lib: Arc<Library>,
}

/// A kernel entry point.
#[derive(Clone)]
pub struct HostKernel {
    entry: usize,
    name: String,
    // Keeps the image loaded while the kernel may run; its code ranges tell
    // the kernel's own faults from those of libraries it calls.
    lib: Arc<Library>,
}

impl HostKernel {
    /// The kernel's symbol name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A host staging buffer: heap memory, or a private copy-on-write mapping of
/// a file (replays read snapshots this way, without copying them).
#[derive(Debug)]
pub enum HostBuffer {
    /// Heap memory.
    Heap(Vec<u8>),
    /// A private mapping of a file, or an anonymous mapping (large buffers).
    Mapped(memmap2::MmapMut),
}

impl AsRef<[u8]> for HostBuffer {
    fn as_ref(&self) -> &[u8] {
        match self {
            HostBuffer::Heap(v) => v,
            HostBuffer::Mapped(m) => m,
        }
    }
}

impl AsMut<[u8]> for HostBuffer {
    fn as_mut(&mut self) -> &mut [u8] {
        match self {
            HostBuffer::Heap(v) => v,
            HostBuffer::Mapped(m) => m,
        }
    }
}

impl HostExecutor {
    /// A host executor.
    pub fn new() -> Result<Self, HostError> {
        if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
            return Err(HostError::Unsupported);
        }
        Ok(HostExecutor::default())
    }

    fn register(&self, start: u64, len: u64, owner: Owner) {
        self.registry
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add(start, len, owner);
    }

    fn map_exact(&self, base: u64, len: u64) -> Result<u64, HostError> {
        if base == 0 {
            // Never attempted: where it succeeds (with CAP_SYS_RAWIO, or
            // vm.mmap_min_addr = 0) a null pointer would point into the
            // region.
            return Err(HostError::NullBase(base));
        }
        // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping; the
        // new anonymous mapping is owned by the `Mapping` built from it.
        let p = unsafe {
            libc::mmap(
                base as *mut c_void,
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE
                    | libc::MAP_ANONYMOUS
                    | libc::MAP_NORESERVE
                    | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let err = std::io::Error::last_os_error();
            return Err(if err.raw_os_error() == Some(libc::EEXIST) {
                HostError::AddressTaken {
                    addr: base,
                    size: len,
                }
            } else {
                HostError::Os {
                    call: "mmap",
                    message: format!("{err} (at {base:#x}, {len} bytes)"),
                }
            });
        }
        if p as u64 != base {
            // A kernel without MAP_FIXED_NOREPLACE placed it elsewhere.
            // SAFETY: `p` is the mapping just made, unused by anyone.
            unsafe { libc::munmap(p, len as usize) };
            return Err(HostError::AddressTaken {
                addr: base,
                size: len,
            });
        }
        Ok(base)
    }

    /// A fresh recording's region: at [`SUGGESTED_BASE`] (or the next free
    /// 2 GiB-aligned slot above it), far from where libraries and heaps are
    /// mapped, so that a replay in another process finds the address free;
    /// anywhere 2 GiB-aligned if none of those is free.
    fn map_fresh(&self, len: u64) -> Result<u64, HostError> {
        let stride = len.div_ceil(RECORDING_BASE_ALIGN).max(1) * RECORDING_BASE_ALIGN;
        for k in 0..16u64 {
            let Some(base) = stride
                .checked_mul(k)
                .and_then(|o| SUGGESTED_BASE.checked_add(o))
            else {
                break;
            };
            match self.map_exact(base, len) {
                Ok(b) => return Ok(b),
                Err(HostError::AddressTaken { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        self.map_aligned(len)
    }

    fn map_aligned(&self, len: u64) -> Result<u64, HostError> {
        let span = len.checked_add(RECORDING_BASE_ALIGN).ok_or(HostError::Os {
            call: "mmap",
            message: format!("region of {len} bytes is too large"),
        })?;
        // SAFETY: a fresh PROT_NONE reservation at an address of the kernel's
        // choosing; it touches no existing mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span as usize,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(os_error("mmap"));
        }
        let start = p as u64;
        let base =
            reprise_core::region::align_recording_base(start).ok_or_else(|| os_error("mmap"))?;
        // SAFETY: the head, the tail and the middle all lie inside the
        // reservation just made, which nothing else uses.
        unsafe {
            if base > start {
                libc::munmap(p, (base - start) as usize);
            }
            let tail = base + len;
            let end = start + span;
            if end > tail {
                libc::munmap(tail as *mut c_void, (end - tail) as usize);
            }
            if libc::mprotect(
                base as *mut c_void,
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
            ) != 0
            {
                let e = os_error("mprotect");
                libc::munmap(base as *mut c_void, len as usize);
                return Err(e);
            }
        }
        Ok(base)
    }
}

impl ErrorType for HostExecutor {
    type Error = HostError;
}

impl Executor for HostExecutor {
    type Region = HostRegion;
    type Image = HostImage;
    type Kernel = HostKernel;
    type Buffer = HostBuffer;
    type Queue = HostQueue;

    fn reserve(&self, request: RegionRequest) -> Result<HostRegion, HostError> {
        let page = page_size();
        let len = request
            .capacity
            .max(1)
            .checked_next_multiple_of(page)
            .ok_or(HostError::Os {
                call: "mmap",
                message: format!("region of {} bytes is too large", request.capacity),
            })?;
        let base = match request.base {
            Some(b) if b % page != 0 => return Err(HostError::Unaligned(b)),
            Some(b) => self.map_exact(b, len)?,
            None => self.map_fresh(len)?,
        };
        // Huge pages where the kernel allows them: a region is large and
        // 2 GiB-aligned (or at least page-aligned); advice failing is harmless.
        // SAFETY: `[base, base + len)` is the anonymous mapping just made;
        // MADV_HUGEPAGE changes no contents.
        unsafe { libc::madvise(base as *mut c_void, len as usize, libc::MADV_HUGEPAGE) };
        let map = Arc::new(Mapping { base, len });
        self.register(base, len, Owner::Map(Arc::downgrade(&map)));
        log::debug!("host region at {base:#x}, {len} bytes");
        Ok(HostRegion { map })
    }

    fn load_image(&self, bytes: &[u8]) -> Result<HostImage, HostError> {
        match image::sniff(bytes) {
            ImageKind::Elf {
                machine: EM_X86_64,
                elf_type: 3,
            } => {}
            ImageKind::Elf {
                machine: EM_X86_64, ..
            } => {
                return Err(HostError::BadImage(
                    "the image is an x86-64 ELF file but not a shared object (link it with -shared)".into(),
                ));
            }
            ImageKind::Elf { machine, .. } => {
                return Err(HostError::BadImage(format!(
                    "the image is an ELF file for machine {machine} ({}), but the host executor runs x86-64 only",
                    image::sniff(bytes)
                )));
            }
            other => {
                return Err(HostError::BadImage(format!(
                    "the image is not an ELF shared object (it looks like: {other})"
                )));
            }
        }
        let symbols = elf::symbols(bytes).map_err(HostError::BadImage)?;
        let segments = elf::executable_segments(bytes).map_err(HostError::BadImage)?;
        let (handle, memfd) = load_from_memory(bytes)?;
        let text = match load_bias(handle) {
            Ok(bias) => segments
                .iter()
                .map(|&(vaddr, size)| {
                    let start = bias.wrapping_add(vaddr as usize);
                    [start, start.saturating_add(size as usize)]
                })
                .collect(),
            Err(e) => {
                // SAFETY: the handle just opened, used by nothing else.
                unsafe { libc::dlclose(handle) };
                return Err(e);
            }
        };
        let mut globals = Vec::new();
        for (name, size) in symbols.data {
            let c = CString::new(name.as_str())
                .map_err(|_| HostError::BadImage(format!("symbol {name:?}")))?;
            // SAFETY: `handle` is a live dlopen handle, `c` a NUL-terminated name.
            let addr = unsafe { libc::dlsym(handle, c.as_ptr()) };
            if !addr.is_null() {
                globals.push((name, addr as u64, size));
            }
        }
        let lib = Arc::new(Library {
            handle,
            text,
            globals,
            functions: symbols.functions,
            _memfd: memfd,
        });
        for (_, addr, size) in &lib.globals {
            self.register(*addr, *size, Owner::Lib(Arc::downgrade(&lib)));
        }
        Ok(HostImage { lib })
    }

    fn kernel(&self, image: &HostImage, name: &str) -> Result<HostKernel, HostError> {
        let not_found = || {
            let mut names: Vec<&str> = image
                .lib
                .functions
                .iter()
                .map(String::as_str)
                .take(12)
                .collect();
            names.sort_unstable();
            HostError::KernelNotFound {
                name: name.to_string(),
                hint: if names.is_empty() {
                    String::new()
                } else {
                    format!(" (it defines: {})", names.join(", "))
                },
            }
        };
        if !image.lib.functions.iter().any(|f| f == name) {
            return Err(not_found());
        }
        let c = CString::new(name).map_err(|_| not_found())?;
        // SAFETY: live handle, NUL-terminated name.
        let entry = unsafe { libc::dlsym(image.lib.handle, c.as_ptr()) };
        if entry.is_null() {
            return Err(not_found());
        }
        let entry_addr = entry as usize;
        if !image
            .lib
            .text
            .iter()
            .any(|&[start, end]| (start..end).contains(&entry_addr))
        {
            log::warn!(
                "kernel `{name}` at {entry_addr:#x} lies outside its image's code; a fault in it will end the process"
            );
        }
        Ok(HostKernel {
            entry: entry_addr,
            name: name.to_string(),
            lib: image.lib.clone(),
        })
    }

    fn global<'n>(
        &self,
        image: &HostImage,
        name: &'n str,
    ) -> Result<Option<GlobalInfo<'n>>, HostError> {
        Ok(image
            .lib
            .globals
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, addr, size)| GlobalInfo {
                name,
                addr: *addr,
                size: *size,
            }))
    }

    fn for_each_global(
        &self,
        image: &HostImage,
        f: &mut dyn FnMut(GlobalInfo<'_>),
    ) -> Result<(), HostError> {
        for (name, addr, size) in &image.lib.globals {
            f(GlobalInfo {
                name,
                addr: *addr,
                size: *size,
            });
        }
        Ok(())
    }

    fn buffer(&self, len: usize) -> Result<HostBuffer, HostError> {
        if len < HUGE_BUFFER {
            return Ok(HostBuffer::Heap(vec![0; len]));
        }
        // Large snapshot buffers: an anonymous mapping backed by huge pages
        // where the kernel allows it (fewer page faults when first touched,
        // fewer TLB misses when copied).
        let map = memmap2::MmapMut::map_anon(len).map_err(|e| HostError::Os {
            call: "mmap",
            message: e.to_string(),
        })?;
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        Ok(HostBuffer::Mapped(map))
    }

    fn queue(&self) -> Result<HostQueue, HostError> {
        HostQueue::new(self.registry.clone())
    }

    fn reserve_mapped(
        &self,
        request: RegionRequest,
        file: MapFile,
    ) -> Result<Option<HostRegion>, HostError> {
        if request.base.is_none() || file.len == 0 {
            return Ok(None);
        }
        // A region that cannot be reserved is the caller's to report (it
        // retries with a plain reservation).
        let Ok(region) = self.reserve(request) else {
            return Ok(None);
        };
        let map_len = file.len.next_multiple_of(page_size());
        if map_len > region.capacity() {
            return Ok(None);
        }
        // SAFETY: `[base, base + map_len)` lies inside the region just
        // reserved for this replay alone (so MAP_FIXED replaces only our own
        // fresh mapping). The mapping is private: the kernel's writes never
        // reach the file. Pages past the end of the file within the last page
        // read as zeros; no page lies wholly past it (`file.len` is at most
        // the file's length, which the caller checked).
        let p = unsafe {
            libc::mmap(
                region.base() as *mut c_void,
                map_len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_FIXED,
                file.fd,
                0,
            )
        };
        if p == libc::MAP_FAILED || p as u64 != region.base() {
            log::debug!(
                "mapping file descriptor {} as the region failed ({}); copying instead",
                file.fd,
                std::io::Error::last_os_error()
            );
            return Ok(None);
        }
        Ok(Some(region))
    }

    fn buffer_mapped(&self, file: MapFile) -> Result<Option<HostBuffer>, HostError> {
        let len = usize::try_from(file.len).map_err(|_| HostError::Os {
            call: "mmap",
            message: format!(
                "a buffer of {} bytes is larger than the address space",
                file.len
            ),
        })?;
        if len == 0 {
            return Ok(Some(HostBuffer::Heap(Vec::new())));
        }
        // SAFETY: `file.fd` is an open descriptor the caller keeps open for
        // the call (the `MapFile` contract); memmap2 duplicates nothing and
        // the mapping outlives the descriptor. The mapping is private
        // (copy-on-write): writes through it never reach the file. Another
        // process truncating the file while it is mapped would fault on
        // access; captures are not modified while replayed.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(file.fd) };
        // SAFETY: as above.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map_copy(&fd) }.map_err(|e| {
            HostError::Os {
                call: "mmap",
                message: format!("{e} (mapping {len} bytes of a snapshot file)"),
            }
        })?;
        Ok(Some(HostBuffer::Mapped(map)))
    }
}

/// Loads an ELF shared object from memory: a memfd holds the bytes and
/// `dlopen` opens it through `/proc/self/fd`.
fn load_from_memory(bytes: &[u8]) -> Result<(*mut c_void, File), HostError> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    // SAFETY: memfd_create with a static NUL-terminated name and valid flags.
    let fd = unsafe { libc::memfd_create(c"reprise-image".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(os_error("memfd_create"));
    }
    // SAFETY: `fd` is a fresh descriptor owned by nobody else.
    let mut file = unsafe { File::from_raw_fd(fd) };
    file.write_all(bytes).map_err(|e| HostError::Os {
        call: "write",
        message: e.to_string(),
    })?;
    let path = CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL in a path of digits");
    // SAFETY: dlopen of a path to a complete ELF shared object we just wrote;
    // loading runs the image's constructors, which is what replaying a
    // capture means (a capture is code).
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        // SAFETY: dlerror returns a thread-local message or null.
        let msg = unsafe {
            let e = libc::dlerror();
            if e.is_null() {
                "unknown error".to_string()
            } else {
                CStr::from_ptr(e).to_string_lossy().into_owned()
            }
        };
        return Err(HostError::Load(msg));
    }
    Ok((handle, file))
}

unsafe extern "C" {
    // In the C library on glibc (libdl before 2.34) and musl alike; the
    // `libc` crate declares it for glibc only.
    fn dlinfo(handle: *mut c_void, request: std::ffi::c_int, info: *mut c_void) -> std::ffi::c_int;
}

/// `dlinfo`'s request for the object's `struct link_map`, on glibc and musl.
const RTLD_DI_LINKMAP: std::ffi::c_int = 2;

/// How far from its ELF virtual addresses a loaded object lies: its link
/// map's `l_addr`.
fn load_bias(handle: *mut c_void) -> Result<usize, HostError> {
    let mut map: *const usize = std::ptr::null();
    // SAFETY: `handle` is a live dlopen handle; RTLD_DI_LINKMAP stores one
    // pointer into `map`.
    let rc = unsafe { dlinfo(handle, RTLD_DI_LINKMAP, (&raw mut map).cast()) };
    if rc != 0 || map.is_null() {
        // SAFETY: dlerror returns a thread-local message or null.
        let msg = unsafe {
            let e = libc::dlerror();
            if e.is_null() {
                "no link map".to_string()
            } else {
                CStr::from_ptr(e).to_string_lossy().into_owned()
            }
        };
        return Err(HostError::Load(format!("dlinfo: {msg}")));
    }
    // SAFETY: a `struct link_map` begins with `ElfW(Addr) l_addr` (glibc's
    // <link.h>, musl's struct dso), and lives as long as the handle.
    Ok(unsafe { map.read() })
}

// ---------------------------------------------------------------------------
// Queue

enum Work {
    Upload(HostBuffer, Vec<Segment>, Ticket),
    Download(HostBuffer, Vec<Segment>, Ticket),
    Launch(HostKernel, Vec<u64>),
    Sync(u64),
}

struct Shared {
    completion: Completion,
    done: Mutex<VecDeque<(Ticket, HostBuffer)>>,
    error: Mutex<Option<HostError>>,
    kernel_time: Mutex<Option<Duration>>,
}

/// A queue: a worker thread running copies and launches in order.
pub struct HostQueue {
    tx: Option<Sender<Work>>,
    worker: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
    ready: VecDeque<(Ticket, HostBuffer)>,
    next_ticket: u64,
    next_mark: u64,
    waiting: Option<u64>,
    syncs: u64,
}

impl ErrorType for HostQueue {
    type Error = HostError;
}

fn check_segments(buf: &HostBuffer, segments: &[Segment]) -> Result<(), HostError> {
    let buffer = buf.as_ref().len();
    for s in segments {
        if s.host_offset
            .checked_add(s.len)
            .is_none_or(|end| end > buffer)
        {
            return Err(HostError::BufferOverrun {
                offset: s.host_offset,
                len: s.len,
                buffer,
            });
        }
    }
    Ok(())
}

fn copy(
    registry: &Mutex<Registry>,
    buf: &mut HostBuffer,
    segs: &[Segment],
    to_device: bool,
) -> Result<(), HostError> {
    for s in segs {
        let _pin = registry
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pin(s.device, s.len)?;
        let host = &mut buf.as_mut()[s.host_offset..s.host_offset + s.len];
        let t = Instant::now();
        // SAFETY: `[s.device, s.device + s.len)` lies inside a live region or
        // global, kept mapped by `_pin` for the copy; the host range was
        // checked against the buffer when enqueued. The two never overlap: a
        // buffer is never inside a region.
        unsafe {
            if to_device {
                std::ptr::copy_nonoverlapping(host.as_ptr(), s.device as *mut u8, s.len);
            } else {
                std::ptr::copy_nonoverlapping(s.device as *const u8, host.as_mut_ptr(), s.len);
            }
        }
        log::trace!("copied {} bytes in {:?}", s.len, t.elapsed());
    }
    Ok(())
}

/// What a fault the guard caught in `kernel` was, and where.
fn describe_fault(
    registry: &Mutex<Registry>,
    kernel: &HostKernel,
    stack: Option<(u64, u64)>,
    caught: guard::Caught,
) -> KernelFault {
    let addr = caught.addr as u64;
    let sp = caught.sp as u64;
    let page = page_size();
    // The stack pointer at (or past) the stack's low end, and the access
    // just below it: the kernel ran out of stack. (Each kernel call's frames
    // lie below the worker's, so that is where an overflow shows.)
    let overflow = stack.filter(|&(low, _)| {
        caught.signal == libc::SIGSEGV
            && sp < low.saturating_add(page)
            && addr < low
            && addr >= sp.min(low).saturating_sub(page.max(64 << 10))
    });
    let (kind, place) = match caught.signal {
        libc::SIGFPE => (FaultKind::Arithmetic, FaultPlace::Instruction),
        libc::SIGILL => (FaultKind::IllegalInstruction, FaultPlace::Instruction),
        _ => {
            let place = match overflow {
                Some((low, size)) => FaultPlace::Stack {
                    low,
                    high: low + size,
                },
                None => registry
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .place(addr),
            };
            let kind = match (caught.signal, caught.code) {
                _ if overflow.is_some() => FaultKind::StackOverflow,
                (libc::SIGBUS, _) => FaultKind::Bus,
                (_, 1) => FaultKind::InvalidAccess, // SEGV_MAPERR
                _ => FaultKind::Protection,
            };
            (kind, place)
        }
    };
    KernelFault {
        kernel: kernel.name.clone(),
        kind,
        signal: caught.signal,
        code: caught.code,
        addr,
        place,
    }
}

fn worker(
    rx: std::sync::mpsc::Receiver<Work>,
    shared: Arc<Shared>,
    registry: Arc<Mutex<Registry>>,
) {
    // An alternate signal stack where the thread has none, so that a kernel
    // overflowing this thread's stack is reported, not fatal; and the stack's
    // bounds, to tell such an overflow from other faults.
    let _alt_stack = guard::AltStack::ensure();
    let stack = guard::thread_stack();
    let failed = |e: HostError| {
        let mut slot = shared.error.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert(e);
    };
    let healthy = || {
        shared
            .error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    };
    for work in rx {
        match work {
            Work::Upload(mut buf, segs, t) => {
                if healthy() {
                    copy(&registry, &mut buf, &segs, true).unwrap_or_else(failed);
                }
                shared
                    .done
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_back((t, buf));
            }
            Work::Download(mut buf, segs, t) => {
                if healthy() {
                    copy(&registry, &mut buf, &segs, false).unwrap_or_else(failed);
                }
                shared
                    .done
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_back((t, buf));
            }
            Work::Launch(kernel, args) => {
                if !healthy() {
                    continue;
                }
                if let Err(errno) = guard::install() {
                    failed(HostError::Os {
                        call: "sigaction",
                        message: format!(
                            "{} (installing the handler that reports kernel faults)",
                            std::io::Error::from_raw_os_error(errno)
                        ),
                    });
                    continue;
                }
                let _pins = registry.lock().unwrap_or_else(|e| e.into_inner()).pin_all();
                let start = Instant::now();
                // SAFETY: `entry` is a function symbol of a loaded image (kept
                // loaded by `kernel.lib`), called with the host plugin's ABI:
                // one pointer-sized argument per recorded argument. What the
                // kernel does is the capture's code; its regions stay mapped
                // (`_pins`) while it runs. A fault in its image's code
                // (`kernel.lib.text`) returns here (the guard's handler is
                // installed, above) and skips only the guard's plain old
                // frames (see guard.rs); a kernel that overwrote the frames
                // above those ends the process instead of returning into
                // them. `stack` is this thread's, read on it by
                // `thread_stack` above.
                let ran = unsafe {
                    guard::call_guarded(kernel.entry, &args, &kernel.lib.text, &kernel.name, stack)
                };
                let elapsed = start.elapsed();
                match ran {
                    Ok(()) => {
                        *shared.kernel_time.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some(elapsed);
                    }
                    Err(caught) => {
                        let fault = describe_fault(&registry, &kernel, stack, caught);
                        log::debug!("{fault}");
                        *shared.kernel_time.lock().unwrap_or_else(|e| e.into_inner()) = None;
                        failed(HostError::KernelFault(Box::new(fault)));
                    }
                }
                drop(kernel);
            }
            Work::Sync(mark) => shared.completion.signal(mark),
        }
    }
}

impl HostQueue {
    fn new(registry: Arc<Mutex<Registry>>) -> Result<Self, HostError> {
        let (tx, rx) = channel();
        let shared = Arc::new(Shared {
            completion: Completion::new(),
            done: Mutex::new(VecDeque::new()),
            error: Mutex::new(None),
            kernel_time: Mutex::new(None),
        });
        let s = shared.clone();
        let worker = std::thread::Builder::new()
            .name("reprise-host-queue".into())
            .spawn(move || worker(rx, s, registry))
            .map_err(|e| HostError::Os {
                call: "spawn",
                message: e.to_string(),
            })?;
        Ok(HostQueue {
            tx: Some(tx),
            worker: Some(worker),
            shared,
            ready: VecDeque::new(),
            next_ticket: 0,
            next_mark: 0,
            waiting: None,
            syncs: 0,
        })
    }

    fn send(&self, w: Work) -> Result<(), HostError> {
        self.tx
            .as_ref()
            .ok_or(HostError::WorkerGone)?
            .send(w)
            .map_err(|_| HostError::WorkerGone)
    }

    fn ticket(&mut self) -> Ticket {
        self.next_ticket += 1;
        Ticket(self.next_ticket)
    }

    /// Synchronizes completed so far (for tests and benchmarks).
    pub fn synchronizations(&self) -> u64 {
        self.syncs
    }
}

impl Queue for HostQueue {
    type Buffer = HostBuffer;
    type Kernel = HostKernel;

    fn upload(&mut self, buffer: HostBuffer, segments: &[Segment]) -> Result<Ticket, HostError> {
        check_segments(&buffer, segments)?;
        let t = self.ticket();
        self.send(Work::Upload(buffer, segments.to_vec(), t))?;
        Ok(t)
    }

    fn download(&mut self, buffer: HostBuffer, segments: &[Segment]) -> Result<Ticket, HostError> {
        check_segments(&buffer, segments)?;
        let t = self.ticket();
        self.send(Work::Download(buffer, segments.to_vec(), t))?;
        Ok(t)
    }

    fn launch(&mut self, kernel: &HostKernel, launch: &Launch<'_>) -> Result<(), HostError> {
        let n = launch.args.len();
        if n > MAX_ARGS {
            return Err(HostError::TooManyArgs {
                count: n,
                max: MAX_ARGS,
            });
        }
        if let Some(index) = (0..n).find(|&i| launch.args.size(i) != 8) {
            return Err(HostError::ArgSize {
                index,
                size: launch.args.size(index),
            });
        }
        self.send(Work::Launch(kernel.clone(), launch.args.values.to_vec()))
    }

    fn poll_synchronize(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), HostError>> {
        let mark = match self.waiting {
            Some(m) => m,
            None => {
                self.next_mark += 1;
                let m = self.next_mark;
                self.send(Work::Sync(m))?;
                self.waiting = Some(m);
                m
            }
        };
        if self.shared.completion.poll_reached(mark, cx).is_pending() {
            return Poll::Pending;
        }
        self.waiting = None;
        self.syncs += 1;
        self.ready.extend(
            self.shared
                .done
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .drain(..),
        );
        match self
            .shared
            .error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            Some(e) => Poll::Ready(Err(e)),
            None => Poll::Ready(Ok(())),
        }
    }

    fn reclaim(&mut self) -> Option<(Ticket, HostBuffer)> {
        self.ready.pop_front()
    }

    fn last_kernel_time(&self) -> Option<Duration> {
        *self
            .shared
            .kernel_time
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for HostQueue {
    fn drop(&mut self) {
        // Closing the channel lets the worker finish what was queued; joining
        // waits for it, so no buffer is freed while a copy still uses it.
        self.tx.take();
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}
