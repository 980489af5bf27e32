//! The handles a recorder hands out (images, kernels) and what it reports
//! of a launch.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use reprise_core::exec::Executor;

/// Identities of recorders, process-wide: handles carry the identity of the
/// recorder that made them, so that one recorder refuses another's.
pub(super) static NEXT_RECORDER_ID: AtomicU64 = AtomicU64::new(0);

/// An image loaded by [`Recorder::load_image`](crate::Recorder::load_image). It is only good for the
/// recorder that loaded it: another one refuses it with
/// [`Error::ForeignHandle`](crate::Error::ForeignHandle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageId {
    pub(super) recorder: u64,
    pub(super) index: usize,
}

/// A kernel found by [`Recorder::kernel`](crate::Recorder::kernel) in a loaded image. It is only good
/// for the recorder that found it: another one refuses to launch it with
/// [`Error::ForeignHandle`](crate::Error::ForeignHandle).
pub struct Kernel<E: Executor> {
    pub(super) kernel: E::Kernel,
    pub(super) recorder: u64,
    pub(super) image: usize,
    pub(super) name: String,
}

impl<E: Executor> Kernel<E> {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The executor's kernel (for asking the executor about it).
    pub fn handle(&self) -> &E::Kernel {
        &self.kernel
    }
}

pub(super) struct LoadedImage<E: Executor> {
    pub(super) image: E::Image,
    pub(super) bytes: Arc<Vec<u8>>,
    /// Writable globals: name, device address, size.
    pub(super) globals: Vec<(String, u64, u64)>,
    /// The LLVM bitcode the image was compiled from, when attached
    /// ([`super::Recorder::attach_ir`]): written beside each capture.
    pub(super) ir: Option<Arc<Vec<u8>>>,
}

/// What a launch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchReport {
    /// Whether the launch was recorded.
    pub recorded: bool,
    /// Its launch sequence number, when recorded.
    pub seq: Option<u64>,
}
