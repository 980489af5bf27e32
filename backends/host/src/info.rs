//! What the host executor reads from a shared object without loading it:
//! [`HostImages`], its [`ImageInfo`].

use reprise_core::image::{ImageGlobal, ImageInfo, ImageProblem};
use reprise_core::record::BackendKind;

use crate::HostError;
use crate::elf;

/// The host executor's [`ImageInfo`]: kernels are the shared object's
/// exported functions, globals its writable exported data, and every
/// argument is passed as one 8-byte word.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostImages;

impl ImageInfo for HostImages {
    fn kind(&self) -> BackendKind {
        BackendKind::Host
    }

    fn kernels(&self, image: &[u8]) -> Vec<String> {
        elf::symbols(image).map(|s| s.functions).unwrap_or_default()
    }

    fn globals(&self, image: &[u8]) -> Option<Vec<ImageGlobal>> {
        let symbols = elf::shared_object(image).ok()?;
        Some(
            symbols
                .data
                .into_iter()
                .map(|(name, size)| ImageGlobal {
                    name,
                    size: Some(size),
                })
                .collect(),
        )
    }

    /// What the loader refuses (an image that is no x86-64 shared object),
    /// a kernel it does not export, and arguments that are not 8 bytes.
    fn launch_problems(&self, image: &[u8], kernel: &str, arg_sizes: &[u32]) -> Vec<ImageProblem> {
        let symbols = match elf::shared_object(image) {
            Ok(s) => s,
            Err(e) => return vec![ImageProblem::image(e.to_string())],
        };
        let mut out = Vec::new();
        if !symbols.functions.iter().any(|f| f == kernel) {
            let e = HostError::KernelNotFound {
                name: kernel.to_string(),
                hint: elf::defined_hint(&symbols.functions),
            };
            out.push(ImageProblem::image(e.to_string()));
        }
        if let Some(index) = arg_sizes.iter().position(|&s| s != 8) {
            let e = HostError::ArgSize {
                index,
                size: arg_sizes[index],
            };
            out.push(ImageProblem::arguments(e.to_string()));
        }
        out
    }
}
