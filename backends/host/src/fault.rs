//! Kernel faults: what a fault the guard caught was, and how it reads.

use crate::guard;

/// A fault that stopped a kernel.
///
/// The kernel stopped at the faulting instruction: what it had written to
/// regions and globals until then is there, and the rest of what it would
/// have written is not (the contents are undefined). The queue and the
/// executor stay usable.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the kernel `{kernel}` faulted: {} {} {addr:#x} ({}){}",
    kind.text(),
    place.preposition(),
    signal_text(*signal, *code),
    place_text(place)
)]
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
    /// In a file the replay mapped (a snapshot or a chunk file), at
    /// `offset`: a bus error there is a page the file no longer has.
    MappedFile {
        /// The file's path.
        path: String,
        /// Where in the file.
        offset: u64,
    },
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

impl FaultKind {
    /// What the fault was, in words.
    fn text(self) -> &'static str {
        match self {
            FaultKind::InvalidAccess => "invalid memory access",
            FaultKind::Protection => "protection fault",
            FaultKind::StackOverflow => "stack overflow",
            FaultKind::Bus => "bus error",
            FaultKind::Arithmetic => "arithmetic fault",
            FaultKind::IllegalInstruction => "illegal instruction",
        }
    }
}

impl FaultPlace {
    /// How the fault's address relates to the fault: the instruction's own,
    /// or the one it accessed.
    fn preposition(&self) -> &'static str {
        if *self == FaultPlace::Instruction {
            "by the instruction at"
        } else {
            "at"
        }
    }
}

/// The signal's name, and what its `si_code` says where that is useful.
fn signal_text(signal: i32, code: i32) -> String {
    match code_text(signal, code) {
        Some(t) => format!("{}: {t}", signal_name(signal)),
        None => signal_name(signal).to_string(),
    }
}

/// Where the fault's address lies, as the message's tail (empty for an
/// instruction's address).
fn place_text(place: &FaultPlace) -> String {
    match place {
        FaultPlace::Region { base, end } => format!(", inside the region {base:#x}..{end:#x}"),
        FaultPlace::Global { start, end } => {
            format!(", inside the image's global at {start:#x}..{end:#x}")
        }
        FaultPlace::Outside { regions } => match regions.as_slice() {
            [] => ", and no region is reserved".to_string(),
            [(b, e)] => format!(", outside the region {b:#x}..{e:#x}"),
            many => {
                let list: Vec<String> = many
                    .iter()
                    .map(|(b, e)| format!("{b:#x}..{e:#x}"))
                    .collect();
                format!(", outside every region ({}) and global", list.join(", "))
            }
        },
        FaultPlace::Stack { low, high } => format!(
            ", past the end of the worker thread's stack {low:#x}..{high:#x} ({} bytes)",
            high - low
        ),
        FaultPlace::Instruction => String::new(),
        FaultPlace::MappedFile { path, offset } => format!(
            ", reading the file {path} at offset {offset:#x}: the file changed under the replay \
             (it is shorter than when it was mapped)"
        ),
    }
}

/// What a fault the guard caught in the kernel `kernel` was, and where.
///
/// `stack` is the worker thread's stack (`low`, size), `page` the page size,
/// and `place` says where a data address lies among the live regions and
/// globals (it is asked only for a memory fault that is not a stack
/// overflow).
pub(crate) fn describe_fault(
    kernel: &str,
    stack: Option<(u64, u64)>,
    caught: guard::Caught,
    page: u64,
    place: impl FnOnce(u64) -> FaultPlace,
) -> KernelFault {
    let addr = caught.addr as u64;
    let sp = caught.sp as u64;
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
            let mapped = (caught.signal == libc::SIGBUS)
                .then(|| guard::file_at(addr))
                .flatten();
            let place = match (overflow, mapped) {
                (Some((low, size)), _) => FaultPlace::Stack {
                    low,
                    high: low + size,
                },
                (None, Some((path, offset))) => FaultPlace::MappedFile { path, offset },
                (None, None) => place(addr),
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
        kernel: kernel.to_string(),
        kind,
        signal: caught.signal,
        code: caught.code,
        addr,
        place,
    }
}
