//! The AMD executor's errors.

use std::fmt;

use hsa_sys::{LoadError, status};
use reprise_core::exec::{ErrorKind, ExecError};

use crate::code_object::CodeObjectError;

/// A failed HSA call: the call, its status and the runtime's description.
#[derive(Debug, Clone, PartialEq, Eq)]
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

impl fmt::Display for HsaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.call, self.status_name())
    }
}

/// Why the AMD executor could not do something.
#[non_exhaustive]
#[derive(Debug)]
pub enum AmdError {
    /// The HSA runtime library, or an entry point it must have, is missing.
    RuntimeNotFound(LoadError),
    /// `hsa_init` failed, or found no GPU agent.
    NoGpu {
        /// `hsa_init`'s failed status, or `None` when it succeeded but the
        /// runtime reports no GPU agent.
        status: Option<u32>,
    },
    /// The ordinal asked for is not a GPU agent of this machine.
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: i32,
        /// GPU agents found.
        count: usize,
    },
    /// The runtime lacks an agent or memory pool the executor needs (named).
    NoPool(&'static str),
    /// An HSA call failed.
    Hsa(HsaError),
    /// The image is not a usable AMDGPU code object.
    CodeObject(CodeObjectError),
    /// The code object is built for another processor than the agent's.
    WrongTarget {
        /// What the code object is built for (LLVM target id).
        image: String,
        /// The agent's ISA name.
        device: String,
    },
    /// The code object has no kernel of that name.
    NoKernel {
        /// The kernel asked for.
        name: String,
        /// The kernels it has.
        available: Vec<String>,
    },
    /// A replay at a recorded address needs virtual memory management,
    /// which this runtime lacks.
    NoVirtualMemory {
        /// The recorded address.
        base: u64,
        /// The entry points the runtime lacks.
        missing: Vec<&'static str>,
    },
    /// The runtime reserved another address than the one asked for.
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
    Geometry(reprise_core::exec::GeometryError),
    /// The code object asks for a larger kernarg segment than reprise
    /// allows (a damaged or hostile code object: AMD's compilers stay far
    /// below it).
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
    BadArgument {
        /// Argument index.
        index: usize,
    },
    /// An argument's size is not its parameter's (nor an 8-byte slot
    /// holding a smaller scalar, as LLVM records them).
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
    Segment(reprise_core::exec::SegmentOutOfBounds),
    /// A region of 0 bytes was asked for.
    EmptyRegion,
    /// A region too large to round to the runtime's allocation granule or
    /// to map in this address space.
    RegionTooLarge {
        /// Bytes asked for.
        bytes: u64,
    },
    /// A region base that is not a multiple of the runtime's allocation
    /// granule, where no reservation can start.
    UnalignedBase {
        /// The base asked for.
        base: u64,
        /// The granule in bytes.
        granule: u64,
    },
    /// The runtime reports a longer ISA name than reprise reads (4 KiB).
    IsaNameLength {
        /// The length it reports.
        len: u32,
    },
    /// The kernarg pool gave memory not aligned as the kernel needs.
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
    KernelFault {
        /// The kernels the queue had in flight.
        kernels: Vec<String>,
        /// The status the runtime reported.
        status: u32,
        /// The address a memory fault hit, when the runtime said.
        address: Option<u64>,
    },
    /// An earlier fault made the queue unusable.
    QueueLost(u32),
}

impl AmdError {
    pub(crate) fn call(call: &'static str, status: u32) -> AmdError {
        AmdError::Hsa(HsaError { call, status })
    }
}

impl fmt::Display for AmdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AmdError::RuntimeNotFound(e) => e.fmt(f),
            AmdError::NoGpu { status: Some(s) } => {
                write!(f, "no AMD GPU found ({} from hsa_init)", status_name(*s))
            }
            AmdError::NoGpu { status: None } => f.write_str(
                "no AMD GPU found (hsa_init succeeded but the runtime reports no GPU agent)",
            ),
            AmdError::NoSuchDevice { ordinal, count } => write!(
                f,
                "no AMD GPU {ordinal}: this machine has {count} (numbered from 0)"
            ),
            AmdError::NoPool(what) => write!(f, "the HSA runtime reports no {what}"),
            AmdError::Hsa(e) => e.fmt(f),
            AmdError::CodeObject(e) => {
                write!(f, "the image is not a usable AMDGPU code object: {e}")
            }
            AmdError::WrongTarget { image, device } => write!(
                f,
                "the code object is built for {image}, but the device is {device}"
            ),
            AmdError::NoKernel { name, available } => write!(
                f,
                "the code object has no kernel `{name}` (it has: {})",
                if available.is_empty() {
                    "none".to_string()
                } else {
                    available.join(", ")
                }
            ),
            AmdError::NoVirtualMemory { base, missing } => write!(
                f,
                "replaying at the recorded address {base:#x} needs the HSA runtime's virtual memory \
                 management (ROCm 6 and later); this runtime lacks {}",
                missing.join(", ")
            ),
            AmdError::AddressUnavailable {
                wanted,
                len,
                offered,
            } => {
                write!(
                    f,
                    "the HSA runtime cannot reserve {len} bytes at {wanted:#x}"
                )?;
                if *offered != 0 {
                    write!(f, " (it offered {offered:#x} instead)")?;
                }
                f.write_str(
                    ": something else holds that range, or the runtime ignores address hints",
                )
            }
            AmdError::Geometry(e) => e.fmt(f),
            AmdError::Segment(e) => e.fmt(f),
            AmdError::KernargTooLarge { kernel, size, max } => write!(
                f,
                "the kernel `{kernel}` asks for a {size}-byte kernarg segment, more than the \
                 {max} bytes reprise allows"
            ),
            AmdError::ArgumentCount {
                kernel,
                expected,
                got,
            } => write!(
                f,
                "the kernel `{kernel}` takes {expected} arguments, the launch has {got}"
            ),
            AmdError::BadArgument { index } => write!(
                f,
                "argument {index} points outside the recorded argument data"
            ),
            AmdError::ArgumentSize {
                kernel,
                index,
                expected,
                got,
            } => write!(
                f,
                "argument {index} of `{kernel}` is {expected} bytes, the launch gives {got}"
            ),
            AmdError::ArgumentPlacement {
                kernel,
                offset,
                len,
                segment,
            } => write!(
                f,
                "the metadata of `{kernel}` puts an argument at {offset}+{len} beyond its \
                 {segment}-byte kernarg segment"
            ),
            AmdError::EmptyRegion => f.write_str("a region of 0 bytes cannot be reserved"),
            AmdError::RegionTooLarge { bytes } => write!(
                f,
                "a region of {bytes} bytes is larger than the runtime can reserve"
            ),
            AmdError::UnalignedBase { base, granule } => write!(
                f,
                "the region base {base:#x} is not a multiple of the runtime's allocation granule \
                 ({granule} bytes), so no reservation can start there"
            ),
            AmdError::IsaNameLength { len } => {
                write!(f, "the runtime reports an ISA name of {len} bytes")
            }
            AmdError::KernargMisaligned {
                kernel,
                address,
                align,
            } => write!(
                f,
                "the kernarg pool gave {address:#x}, not aligned to the {align} bytes `{kernel}` \
                 needs"
            ),
            AmdError::KernelFault {
                kernels,
                status,
                address,
            } => {
                match kernels.as_slice() {
                    [one] => write!(f, "the kernel `{one}` faulted")?,
                    [] => f.write_str("a kernel faulted")?,
                    many => write!(f, "one of the kernels `{}` faulted", many.join("`, `"))?,
                }
                write!(f, ": {}", status_name(*status))?;
                if let Some(a) = address {
                    write!(f, " (an access at {a:#x})")?;
                }
                f.write_str("; the queue is unusable")
            }
            AmdError::QueueLost(s) => write!(
                f,
                "the queue was lost to an earlier kernel fault ({})",
                status_name(*s)
            ),
        }
    }
}

impl std::error::Error for AmdError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AmdError::RuntimeNotFound(e) => Some(e),
            AmdError::CodeObject(e) => Some(e),
            _ => None,
        }
    }
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

impl From<CodeObjectError> for AmdError {
    fn from(e: CodeObjectError) -> Self {
        AmdError::CodeObject(e)
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
mod tests {
    use super::*;

    #[test]
    fn typed_errors_keep_their_messages_and_say_their_kinds() {
        let cases = [
            (
                AmdError::KernargTooLarge {
                    kernel: "k".into(),
                    size: 2 << 20,
                    max: 1 << 20,
                },
                "the kernel `k` asks for a 2097152-byte kernarg segment, more than the 1048576 \
                 bytes reprise allows",
                ErrorKind::InvalidInput,
            ),
            (
                AmdError::BadArgument { index: 2 },
                "argument 2 points outside the recorded argument data",
                ErrorKind::InvalidInput,
            ),
            (
                AmdError::ArgumentPlacement {
                    kernel: "k".into(),
                    offset: 280,
                    len: 16,
                    segment: 288,
                },
                "the metadata of `k` puts an argument at 280+16 beyond its 288-byte kernarg \
                 segment",
                ErrorKind::InvalidInput,
            ),
            (
                AmdError::RegionTooLarge { bytes: u64::MAX },
                "a region of 18446744073709551615 bytes is larger than the runtime can reserve",
                ErrorKind::OutOfMemory,
            ),
            (
                AmdError::UnalignedBase {
                    base: 0x1001,
                    granule: 4096,
                },
                "the region base 0x1001 is not a multiple of the runtime's allocation granule \
                 (4096 bytes), so no reservation can start there",
                ErrorKind::InvalidInput,
            ),
            (
                AmdError::IsaNameLength { len: 70000 },
                "the runtime reports an ISA name of 70000 bytes",
                ErrorKind::Other,
            ),
            (
                AmdError::KernargMisaligned {
                    kernel: "k".into(),
                    address: 0x7f00_0000_0004,
                    align: 16,
                },
                "the kernarg pool gave 0x7f0000000004, not aligned to the 16 bytes `k` needs",
                ErrorKind::Other,
            ),
        ];
        for (e, message, kind) in &cases {
            assert_eq!(e.to_string(), *message);
            assert_eq!(e.kind(), *kind, "{e}");
            assert!(!e.device_lost(), "{e}");
        }
    }

    #[test]
    fn runtime_errors_say_their_kinds() {
        let hsa = |s| AmdError::call("hsa_amd_memory_pool_allocate", s);
        assert_eq!(
            hsa(status::ERROR_OUT_OF_RESOURCES).kind(),
            ErrorKind::OutOfMemory
        );
        assert_eq!(
            hsa(status::ERROR_INVALID_CODE_OBJECT).kind(),
            ErrorKind::InvalidInput
        );
        assert_eq!(hsa(status::ERROR).kind(), ErrorKind::Other);
        assert_eq!(AmdError::NoGpu { status: None }.kind(), ErrorKind::NoDevice);
        let fault = AmdError::KernelFault {
            kernels: vec!["saxpy".into()],
            status: status::ERROR_MEMORY_FAULT,
            address: Some(0xdead_0000),
        };
        assert_eq!(
            (fault.kind(), fault.device_lost()),
            (ErrorKind::KernelFault, true)
        );
        let lost = AmdError::QueueLost(status::ERROR_MEMORY_FAULT);
        assert_eq!(
            (lost.kind(), lost.device_lost()),
            (ErrorKind::DeviceLost, true)
        );
    }
}
