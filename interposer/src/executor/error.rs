//! [`DriverError`]: what the interposer's executor fails with, typed, each
//! with the CUDA result code the driver gives (or would give) for it.

use std::fmt;

use reprise_core::exec::{ErrorKind, ExecError, SegmentOutOfBounds};

use crate::real::*;

/// A failed driver call made by the interposer, or a request it refused
/// before any driver call, with the result code the driver itself gives
/// for such a request ([`DriverError::code`]).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriverError {
    /// A driver call failed.
    Call {
        /// The entry point (`"cuMemcpyHtoDAsync"`).
        call: &'static str,
        /// What it was called for, where its name does not say.
        on: CallOn,
        /// The driver's result.
        code: CuResult,
    },
    /// The driver lacks an entry point the recording needs (it may not be
    /// loaded yet).
    MissingEntry(&'static str),
    /// The recorder loaded an image, and the program had loaded no module
    /// for it to stand for.
    NoModule,
    /// A kernel name no C string can hold (a NUL byte inside it).
    KernelName(String),
    /// A copy segment outside its host buffer: refused before any copy is
    /// queued, as the driver refuses an out-of-range copy
    /// (`CUDA_ERROR_INVALID_VALUE`).
    Segment(SegmentOutOfBounds),
    /// An argument larger than 8 bytes points outside the recorded
    /// argument data.
    BadArgument {
        /// Argument index.
        index: usize,
    },
}

/// What a failed driver call was for ([`DriverError::Call`]).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOn {
    /// Nothing more to say.
    Nothing,
    /// The kernel of this name.
    Kernel(String),
    /// Reserving this many bytes.
    Bytes(u64),
}

impl DriverError {
    /// `call` failing with `code`.
    pub fn call(call: &'static str, code: CuResult) -> DriverError {
        DriverError::Call {
            call,
            on: CallOn::Nothing,
            code,
        }
    }

    /// The CUDA result code: the driver's answer for a failed call, and for
    /// a request refused before any call the code the driver gives for the
    /// like (`CUDA_ERROR_INVALID_VALUE` for a copy out of range or an
    /// argument outside its data, `CUDA_ERROR_NOT_FOUND` for an entry
    /// point, a module or a kernel name it does not have).
    pub fn code(&self) -> CuResult {
        match self {
            DriverError::Call { code, .. } => *code,
            DriverError::MissingEntry(_) | DriverError::NoModule | DriverError::KernelName(_) => {
                ERROR_NOT_FOUND
            }
            DriverError::Segment(_) | DriverError::BadArgument { .. } => ERROR_INVALID_VALUE,
        }
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = error_name(self.code());
        match self {
            DriverError::Call { call, on, .. } => {
                f.write_str(call)?;
                match on {
                    CallOn::Nothing => {}
                    CallOn::Kernel(k) => write!(f, "({k})")?,
                    CallOn::Bytes(n) => write!(f, " of {n} bytes")?,
                }
                write!(f, " failed: {name}")
            }
            DriverError::MissingEntry(entry) => {
                write!(f, "finding the driver's {entry} failed: {name}")
            }
            DriverError::NoModule => write!(
                f,
                "adopting the program's module (none was loaded) failed: {name}"
            ),
            DriverError::KernelName(k) => {
                write!(f, "the kernel name {k:?} holds a NUL byte ({name})")
            }
            DriverError::Segment(e) => write!(f, "{e} ({name})"),
            DriverError::BadArgument { index } => write!(
                f,
                "argument {index} points outside the recorded argument data ({name})"
            ),
        }
    }
}

impl std::error::Error for DriverError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DriverError::Segment(e) => Some(e),
            _ => None,
        }
    }
}

impl ExecError for DriverError {
    /// A failed call: its code's kind, as the CUDA executor tells it
    /// (`reprise_cuda::error::call_kind`: a launch the driver refuses is
    /// [`ErrorKind::LaunchRefused`], a code a kernel fault leaves behind
    /// [`ErrorKind::DeviceLost`]); an entry point the driver lacks
    /// [`ErrorKind::DeviceMissing`]; a copy out of range, an argument
    /// outside its data, a bad kernel name, no module to adopt
    /// [`ErrorKind::InvalidInput`].
    fn kind(&self) -> ErrorKind {
        match self {
            DriverError::Call { call, code, .. } => {
                reprise_cuda::error::call_kind(call, *code as u32)
            }
            DriverError::MissingEntry(_) => ErrorKind::DeviceMissing,
            DriverError::NoModule
            | DriverError::KernelName(_)
            | DriverError::Segment(_)
            | DriverError::BadArgument { .. } => ErrorKind::InvalidInput,
        }
    }
}

/// `Ok(())` for `CUDA_SUCCESS`, else `call`'s error.
pub(super) fn check(call: &'static str, code: CuResult) -> Result<(), DriverError> {
    if code == SUCCESS {
        Ok(())
    } else {
        Err(DriverError::call(call, code))
    }
}

/// The driver's entry points, or the one it lacks.
pub(super) fn driver() -> Result<&'static Real, DriverError> {
    real().map_err(DriverError::MissingEntry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reprise_core::exec::Segment;

    #[test]
    fn a_buffer_overrun_is_the_drivers_invalid_value_not_not_found() {
        let segments = [Segment {
            device: 0x1000,
            host_offset: 8,
            len: 16,
        }];
        let e = super::super::check_segments(&segments, &[0; 16]).unwrap_err();
        assert_eq!(
            e,
            DriverError::Segment(SegmentOutOfBounds {
                offset: 8,
                len: 16,
                buffer: 16
            })
        );
        assert_eq!(e.code(), ERROR_INVALID_VALUE);
        assert_ne!(e.code(), ERROR_NOT_FOUND);
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert_eq!(
            e.to_string(),
            "copy of 16 bytes at buffer offset 8 overruns the 16-byte buffer \
             (CUDA_ERROR_INVALID_VALUE)"
        );
        // Inside the buffer: no error.
        assert_eq!(super::super::check_segments(&segments, &[0; 24]), Ok(()));
    }

    #[test]
    fn an_argument_outside_its_data_is_an_invalid_value() {
        use reprise_core::exec::KernelArgs;
        let args = KernelArgs {
            values: &[0, 4],
            sizes: &[8, 16],
            data: &[0; 8],
        };
        let e = super::super::pack(&args).unwrap_err();
        assert_eq!(e, DriverError::BadArgument { index: 1 });
        assert_eq!(
            (e.code(), e.kind()),
            (ERROR_INVALID_VALUE, ErrorKind::InvalidInput)
        );
    }

    #[test]
    fn failed_calls_say_the_call_and_their_codes_kind() {
        let e = DriverError::call("cuLaunchKernel", ERROR_INVALID_VALUE);
        assert_eq!(e.kind(), ErrorKind::LaunchRefused);
        assert_eq!(
            e.to_string(),
            "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE"
        );
        let e = DriverError::Call {
            call: "cuMemAddressReserve",
            on: CallOn::Bytes(1 << 20),
            code: 2,
        };
        assert_eq!(e.kind(), ErrorKind::OutOfMemory);
        assert_eq!(
            e.to_string(),
            "cuMemAddressReserve of 1048576 bytes failed: CUDA_ERROR_OUT_OF_MEMORY"
        );
        let e = DriverError::Call {
            call: "cuModuleGetFunction",
            on: CallOn::Kernel("saxpy".into()),
            code: ERROR_NOT_FOUND,
        };
        assert_eq!(
            e.to_string(),
            "cuModuleGetFunction(saxpy) failed: CUDA_ERROR_NOT_FOUND"
        );
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        // A fault's code: the context is lost.
        let e = DriverError::call("cuStreamSynchronize", 700);
        assert_eq!(e.kind(), ErrorKind::DeviceLost);
        assert!(e.device_lost());
        assert_eq!(
            DriverError::MissingEntry("cuMemMap").kind(),
            ErrorKind::DeviceMissing
        );
    }
}
