//! The AMD executor's errors.

use hsa_sys::{LoadError, status};
use reprise_core::exec::{ErrorKind, ExecError};

use crate::code_object::CodeObjectError;

/// A failed HSA call: the call, its status and the runtime's description.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{call} failed: {}", status_name(*.status))]
pub struct HsaError {
    /// The entry point that failed.
    pub call: &'static str,
    /// Its status.
    pub status: u32,
}

impl HsaError {
    /// The header's name of the status, or its value in hex.
    pub fn status_name(&self) -> String {
        status_name(self.status)
    }
}

/// The header's name of `status`, or its value in hex.
pub fn status_name(s: u32) -> String {
    status::name(s).map_or_else(|| format!("HSA status {s:#x}"), str::to_string)
}

/// Why the AMD executor could not do something.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum AmdError {
    /// The HSA runtime library, or an entry point it must have, is missing.
    #[error("{0}")]
    RuntimeNotFound(#[source] LoadError),
    /// `hsa_init` failed, or found no GPU agent.
    #[error("no AMD GPU found ({})", no_gpu(*.status))]
    NoGpu {
        /// `hsa_init`'s failed status, or `None` when it succeeded but the
        /// runtime reports no GPU agent.
        status: Option<u32>,
    },
    /// The ordinal asked for is not a GPU agent of this machine.
    #[error("no AMD GPU {ordinal}: this machine has {count} (numbered from 0)")]
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: i32,
        /// GPU agents found.
        count: usize,
    },
    /// The runtime lacks an agent or memory pool the executor needs (named).
    #[error("the HSA runtime reports no {0}")]
    NoPool(&'static str),
    /// An HSA call failed.
    #[error("{0}")]
    Hsa(HsaError),
    /// The image is not a usable AMDGPU code object.
    #[error("the image is not a usable AMDGPU code object: {0}")]
    CodeObject(#[from] CodeObjectError),
    /// The code object is built for another processor than the agent's.
    #[error("the code object is built for {image}, but the device is {device}")]
    WrongTarget {
        /// What the code object is built for (LLVM target id).
        image: String,
        /// The agent's ISA name.
        device: String,
    },
    /// The code object has no kernel of that name.
    #[error(
        "the code object has no kernel `{name}` (it has: {})",
        listed(.available)
    )]
    NoKernel {
        /// The kernel asked for.
        name: String,
        /// The kernels it has.
        available: Vec<String>,
    },
    /// A replay at a recorded address needs virtual memory management,
    /// which this runtime lacks.
    #[error(
        "replaying at the recorded address {base:#x} needs the HSA runtime's virtual memory \
         management (ROCm 6 and later); this runtime lacks {}",
        .missing.join(", ")
    )]
    NoVirtualMemory {
        /// The recorded address.
        base: u64,
        /// The entry points the runtime lacks.
        missing: Vec<&'static str>,
    },
    /// The runtime reserved another address than the one asked for.
    #[error(
        "the HSA runtime cannot reserve {len} bytes at {wanted:#x}{}: something else holds \
         that range, or the runtime ignores address hints",
        offer(*.offered)
    )]
    AddressUnavailable {
        /// The address asked for.
        wanted: u64,
        /// Bytes asked for.
        len: u64,
        /// What the runtime offered instead (0: nothing).
        offered: u64,
    },
    /// A launch the agent cannot run (the core's one geometry check against
    /// the agent's limits).
    #[error("{0}")]
    Geometry(reprise_core::exec::GeometryError),
    /// The code object asks for a larger kernarg segment than reprise
    /// allows (a damaged or hostile code object: AMD's compilers stay far
    /// below it).
    #[error(
        "the kernel `{kernel}` asks for a {size}-byte kernarg segment, more than the \
         {max} bytes reprise allows"
    )]
    KernargTooLarge {
        /// The kernel.
        kernel: String,
        /// The segment's size in bytes, as the code object gives it.
        size: u32,
        /// The most reprise allows.
        max: u32,
    },
    /// The launch passes a different number of arguments than the kernel
    /// takes (its code object's metadata says how many).
    #[error("the kernel `{kernel}` takes {expected} arguments, the launch has {got}")]
    ArgumentCount {
        /// The kernel.
        kernel: String,
        /// Arguments the kernel takes.
        expected: usize,
        /// Arguments the launch gives.
        got: usize,
    },
    /// An argument larger than 8 bytes points outside the recorded
    /// argument data.
    #[error("argument {index} points outside the recorded argument data")]
    BadArgument {
        /// Argument index.
        index: usize,
    },
    /// An argument's size is not its parameter's (nor an 8-byte slot
    /// holding a smaller scalar, as LLVM records them).
    #[error("argument {index} of `{kernel}` is {expected} bytes, the launch gives {got}")]
    ArgumentSize {
        /// The kernel.
        kernel: String,
        /// Argument index.
        index: usize,
        /// The parameter's size in bytes.
        expected: usize,
        /// The argument's size in bytes.
        got: usize,
    },
    /// The code object's metadata puts an argument beyond the kernel's
    /// kernarg segment.
    #[error(
        "the metadata of `{kernel}` puts an argument at {offset}+{len} beyond its \
         {segment}-byte kernarg segment"
    )]
    ArgumentPlacement {
        /// The kernel.
        kernel: String,
        /// Where the argument goes in the segment.
        offset: usize,
        /// Its size in bytes.
        len: usize,
        /// The segment's size in bytes.
        segment: usize,
    },
    /// A copy segment outside its host buffer.
    #[error("{0}")]
    Segment(reprise_core::exec::SegmentOutOfBounds),
    /// A region of 0 bytes was asked for.
    #[error("a region of 0 bytes cannot be reserved")]
    EmptyRegion,
    /// A region too large to round to the runtime's allocation granule or
    /// to map in this address space.
    #[error("a region of {bytes} bytes is larger than the runtime can reserve")]
    RegionTooLarge {
        /// Bytes asked for.
        bytes: u64,
    },
    /// A region base that is not a multiple of the runtime's allocation
    /// granule, where no reservation can start.
    #[error(
        "the region base {base:#x} is not a multiple of the runtime's allocation granule \
         ({granule} bytes), so no reservation can start there"
    )]
    UnalignedBase {
        /// The base asked for.
        base: u64,
        /// The granule in bytes.
        granule: u64,
    },
    /// The runtime reports a longer ISA name than reprise reads (4 KiB).
    #[error("the runtime reports an ISA name of {len} bytes")]
    IsaNameLength {
        /// The length it reports.
        len: u32,
    },
    /// The kernarg pool gave memory not aligned as the kernel needs.
    #[error(
        "the kernarg pool gave {address:#x}, not aligned to the {align} bytes `{kernel}` \
         needs"
    )]
    KernargMisaligned {
        /// The kernel.
        kernel: String,
        /// The address the pool gave.
        address: u64,
        /// The alignment the kernel needs, in bytes.
        align: u32,
    },
    /// A kernel faulted (reported by the queue's error callback); the queue
    /// is unusable afterwards.
    #[error(
        "{}: {}{}; the queue is unusable",
        faulted(.kernels),
        status_name(*.status),
        access(*.address)
    )]
    KernelFault {
        /// The kernels the queue had in flight.
        kernels: Vec<String>,
        /// The status the runtime reported.
        status: u32,
        /// The address a memory fault hit, when the runtime said.
        address: Option<u64>,
    },
    /// An earlier fault made the queue unusable.
    #[error(
        "the queue was lost to an earlier kernel fault ({})",
        status_name(*.0)
    )]
    QueueLost(u32),
}

impl AmdError {
    pub(crate) fn call(call: &'static str, status: u32) -> AmdError {
        AmdError::Hsa(HsaError { call, status })
    }
}

/// Why no GPU was found: `hsa_init`'s status, or that it found none.
fn no_gpu(status: Option<u32>) -> String {
    match status {
        Some(s) => format!("{} from hsa_init", status_name(s)),
        None => "hsa_init succeeded but the runtime reports no GPU agent".to_string(),
    }
}

/// The names, or "none".
fn listed(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// `" (it offered {offered:#x} instead)"`, or nothing when the runtime
/// offered nothing (0).
fn offer(offered: u64) -> String {
    if offered == 0 {
        String::new()
    } else {
        format!(" (it offered {offered:#x} instead)")
    }
}

/// What faulted: a kernel, the kernel named, or one of those named.
fn faulted(kernels: &[String]) -> String {
    match kernels {
        [] => "a kernel faulted".to_string(),
        [one] => format!("the kernel `{one}` faulted"),
        many => format!("one of the kernels `{}` faulted", many.join("`, `")),
    }
}

/// `" (an access at {address:#x})"`, or nothing when the runtime did not
/// say where.
fn access(address: Option<u64>) -> String {
    address.map_or_else(String::new, |a| format!(" (an access at {a:#x})"))
}

impl ExecError for AmdError {
    /// - [`ErrorKind::DeviceMissing`]: no HSA runtime (or one without an
    ///   entry point the executor needs);
    /// - [`ErrorKind::NoDevice`]: no GPU agent, not the ordinal asked for,
    ///   or not the agent or pool the executor needs;
    /// - [`ErrorKind::KernelFault`]: a kernel faulted (and the queue is
    ///   lost with it: [`ExecError::device_lost`]);
    /// - [`ErrorKind::DeviceLost`]: a queue lost to an earlier fault;
    /// - [`ErrorKind::LaunchRefused`]: a geometry beyond the agent's limits;
    /// - [`ErrorKind::AddressUnavailable`]: the recorded address cannot be
    ///   reserved (taken, or no virtual memory management);
    /// - [`ErrorKind::OutOfMemory`]: a region larger than the runtime can
    ///   reserve, or an HSA call out of resources;
    /// - [`ErrorKind::InvalidInput`]: a code object that is unusable, built
    ///   for another target or without the kernel, arguments that do not
    ///   fit the kernel, a copy outside its buffer, an empty region or an
    ///   unaligned base, an HSA call refusing its arguments;
    /// - [`ErrorKind::Other`]: anything else (what the runtime reports that
    ///   cannot be used, other HSA failures).
    fn kind(&self) -> ErrorKind {
        match self {
            AmdError::RuntimeNotFound(_) => ErrorKind::DeviceMissing,
            AmdError::NoGpu { .. } | AmdError::NoSuchDevice { .. } | AmdError::NoPool(_) => {
                ErrorKind::NoDevice
            }
            AmdError::Hsa(e) => status_kind(e.status),
            AmdError::CodeObject(_)
            | AmdError::WrongTarget { .. }
            | AmdError::NoKernel { .. }
            | AmdError::KernargTooLarge { .. }
            | AmdError::ArgumentCount { .. }
            | AmdError::BadArgument { .. }
            | AmdError::ArgumentSize { .. }
            | AmdError::ArgumentPlacement { .. }
            | AmdError::Segment(_)
            | AmdError::EmptyRegion
            | AmdError::UnalignedBase { .. } => ErrorKind::InvalidInput,
            AmdError::NoVirtualMemory { .. } | AmdError::AddressUnavailable { .. } => {
                ErrorKind::AddressUnavailable
            }
            AmdError::RegionTooLarge { .. } => ErrorKind::OutOfMemory,
            AmdError::Geometry(_) => ErrorKind::LaunchRefused,
            AmdError::IsaNameLength { .. } | AmdError::KernargMisaligned { .. } => ErrorKind::Other,
            AmdError::KernelFault { .. } => ErrorKind::KernelFault,
            AmdError::QueueLost(_) => ErrorKind::DeviceLost,
        }
    }

    /// A kernel fault (the queue is unusable afterwards) or a queue lost
    /// to one.
    fn device_lost(&self) -> bool {
        matches!(self, AmdError::KernelFault { .. } | AmdError::QueueLost(_))
    }
}

/// What kind of failure an HSA call returning `s` is: out of resources is
/// [`ErrorKind::OutOfMemory`], a status that calls an argument, code
/// object, executable, symbol or file invalid is
/// [`ErrorKind::InvalidInput`], anything else [`ErrorKind::Other`].
pub(crate) fn status_kind(s: u32) -> ErrorKind {
    match s {
        status::ERROR_OUT_OF_RESOURCES => ErrorKind::OutOfMemory,
        status::ERROR_INVALID_ARGUMENT
        | status::ERROR_INVALID_ALLOCATION
        | status::ERROR_INCOMPATIBLE_ARGUMENTS
        | status::ERROR_INVALID_INDEX
        | status::ERROR_INVALID_ISA
        | status::ERROR_INVALID_CODE_OBJECT
        | status::ERROR_INVALID_EXECUTABLE
        | status::ERROR_INVALID_SYMBOL_NAME
        | status::ERROR_VARIABLE_UNDEFINED
        | status::ERROR_INVALID_ISA_NAME
        | status::ERROR_INVALID_CODE_SYMBOL
        | status::ERROR_INVALID_EXECUTABLE_SYMBOL
        | status::ERROR_INVALID_FILE
        | status::ERROR_INVALID_CODE_OBJECT_READER => ErrorKind::InvalidInput,
        _ => ErrorKind::Other,
    }
}

/// `Ok(())` for `HSA_STATUS_SUCCESS`, else the call's error.
pub(crate) fn check(call: &'static str, status: u32) -> Result<(), AmdError> {
    if status == status::SUCCESS {
        Ok(())
    } else {
        Err(AmdError::call(call, status))
    }
}

#[cfg(test)]
mod tests;
