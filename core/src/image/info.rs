//! What an executor kind can read from one of its images without a device:
//! the [`ImageInfo`] each backend implements.
//!
//! `inspect`, `list` and `replay`'s checks ask it which kernels and globals
//! an image defines, what GPU code it holds, and what the executor's loader
//! and launch would refuse, before any device is opened. The std adapter's
//! registry hands out the one for a [`BackendKind`]; nothing else chooses
//! by kind.
//!
//! ```
//! use reprise_core::BackendKind;
//! use reprise_core::image::{ImageInfo, ImageProblem};
//!
//! /// Images of one kernel, `k`, that takes one 8-byte argument.
//! struct OneKernel;
//!
//! impl ImageInfo for OneKernel {
//!     fn kind(&self) -> BackendKind {
//!         BackendKind::Host
//!     }
//!     fn kernels(&self, _image: &[u8]) -> Vec<String> {
//!         vec!["k".into()]
//!     }
//!     fn launch_problems(&self, _: &[u8], kernel: &str, args: &[u32]) -> Vec<ImageProblem> {
//!         let mut out = Vec::new();
//!         if kernel != "k" {
//!             out.push(ImageProblem::image(format!("no kernel `{kernel}`")));
//!         }
//!         if args != [8] {
//!             out.push(ImageProblem::arguments("`k` takes one 8-byte argument"));
//!         }
//!         out
//!     }
//! }
//!
//! let info: &dyn ImageInfo = &OneKernel;
//! assert!(info.launch_problems(b"", "k", &[8]).is_empty());
//! assert_eq!(info.launch_problems(b"", "j", &[8])[0].message, "no kernel `j`");
//! assert_eq!(info.globals(b""), None, "no globals listed unless the backend can");
//! assert_eq!(info.param_sizes(b"", "k"), None, "nor a parameter layout");
//! ```

use alloc::string::String;
use alloc::vec::Vec;

use crate::record::BackendKind;

/// Which of a capture's files a problem an [`ImageInfo`] found is about.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemSite {
    /// The image itself (it lacks the kernel, its metadata disagrees).
    Image,
    /// The arguments the descriptor records (their sizes).
    Arguments,
}

/// A reason an executor would refuse to load an image or launch a kernel
/// from it, in the executor's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageProblem {
    /// What it is about.
    pub site: ProblemSite,
    /// What is wrong, as a sentence without a file name.
    pub message: String,
}

impl ImageProblem {
    /// A problem of the image.
    pub fn image(message: impl Into<String>) -> Self {
        ImageProblem {
            site: ProblemSite::Image,
            message: message.into(),
        }
    }

    /// A problem of the recorded arguments.
    pub fn arguments(message: impl Into<String>) -> Self {
        ImageProblem {
            site: ProblemSite::Arguments,
            message: message.into(),
        }
    }
}

/// A device global an image defines: its name and, where the image says,
/// its size in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageGlobal {
    /// The symbol's name.
    pub name: String,
    /// Its size, when the image records one.
    pub size: Option<u64>,
}

/// What one executor kind reads from its images without a device. Each
/// backend implements it on a unit type; every method takes the image's
/// bytes as recorded, checks every offset it reads, and never panics on
/// hostile input.
pub trait ImageInfo: Sync {
    /// The executor kind whose images these are.
    fn kind(&self) -> BackendKind;

    /// The kernels `image` defines, in the image's order; empty when they
    /// cannot be told.
    fn kernels(&self, image: &[u8]) -> Vec<String>;

    /// The device globals `image` defines, `None` when this backend does
    /// not list them (the executor then finds them when loading).
    fn globals(&self, image: &[u8]) -> Option<Vec<ImageGlobal>> {
        let _ = image;
        None
    }

    /// The GPU code `image` holds, one line each for people (`PTX sm_80
    /// (ISA 7.0)`, an AMD code object's target and kernels); empty for host
    /// images.
    fn targets(&self, image: &[u8]) -> Vec<String> {
        let _ = image;
        Vec::new()
    }

    /// The parameter layout of `kernel`: each parameter's size in bytes as
    /// the image declares it (PTX `.param`s, an AMD code object's explicit
    /// kernel arguments); `None` when the image does not say (a host shared
    /// object, a cubin) or lacks the kernel.
    fn param_sizes(&self, image: &[u8], kernel: &str) -> Option<Vec<u32>> {
        let _ = (image, kernel);
        None
    }

    /// What the executor's loader and launch would refuse in launching
    /// `kernel` of `image` with arguments of `arg_sizes` bytes each, as it
    /// packs them (its parameter layout); empty when nothing is seen wrong.
    fn launch_problems(&self, image: &[u8], kernel: &str, arg_sizes: &[u32]) -> Vec<ImageProblem>;
}
