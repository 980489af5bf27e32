//! The AMD executor's errors.

use std::fmt;

use hsa_sys::{LoadError, status};

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
    /// The recorded arguments do not fit the kernel's.
    Arguments(String),
    /// A copy segment outside its host buffer.
    Segment(reprise_core::exec::SegmentOutOfBounds),
    /// An empty request, or memory the runtime gave that cannot be used.
    Invalid(String),
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
            AmdError::Arguments(m) | AmdError::Invalid(m) => f.write_str(m),
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
