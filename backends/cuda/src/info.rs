//! What the CUDA executor reads from PTX, cubins and fat binaries without a
//! device: [`CudaImages`], its [`ImageInfo`].

use reprise_core::image::{EM_CUDA, ImageInfo, ImageKind, ImageProblem, sniff};
use reprise_core::record::BackendKind;

use crate::{cubin, ptx, targets};

/// The CUDA executor's [`ImageInfo`]: kernels are PTX `.entry` functions
/// or a cubin's kernel symbols (every entry's, for a fat binary), globals
/// its `.global` variables.
#[derive(Debug, Clone, Copy, Default)]
pub struct CudaImages;

/// PTX as the driver reads it: up to its first NUL byte.
pub(crate) fn ptx_text(image: &[u8]) -> &[u8] {
    match image.iter().position(|&b| b == 0) {
        Some(end) => &image[..end],
        None => image,
    }
}

/// The names of the globals `image` defines (of kind `kind`), as the
/// executor looks them up when loading it (a fat binary's compressed
/// entries are not read). [`CudaImages`] lists no globals (a capture's
/// globals are checked when the driver loads the image), so this is what
/// lists them without a device.
pub fn global_names(kind: ImageKind, image: &[u8]) -> Vec<String> {
    match kind {
        ImageKind::Ptx => ptx::globals(&String::from_utf8_lossy(ptx_text(image)))
            .into_iter()
            .map(|g| g.name)
            .collect(),
        ImageKind::Elf {
            machine: EM_CUDA, ..
        } => cubin::elf_globals(image),
        ImageKind::Fatbin => cubin::fatbin_globals(image),
        _ => Vec::new(),
    }
}

impl ImageInfo for CudaImages {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn kernels(&self, image: &[u8]) -> Vec<String> {
        match sniff(image) {
            ImageKind::Elf {
                machine: EM_CUDA, ..
            } => cubin::elf_kernels(image),
            ImageKind::Ptx => ptx::entries(&String::from_utf8_lossy(ptx_text(image))),
            ImageKind::Fatbin => {
                let mut all: Vec<String> = cubin::fatbin_entries(image)
                    .into_iter()
                    .flat_map(|entry| self.kernels(entry))
                    .collect();
                all.sort();
                all.dedup();
                all
            }
            _ => Vec::new(),
        }
    }

    /// From PTX's `.entry` declaration; a cubin's or fat binary's layout
    /// is the driver's to tell (`cuFuncGetParamInfo`, once loaded).
    fn param_sizes(&self, image: &[u8], kernel: &str) -> Option<Vec<u32>> {
        (sniff(image) == ImageKind::Ptx)
            .then(|| ptx::param_sizes(&String::from_utf8_lossy(ptx_text(image)), kernel))
            .flatten()
    }

    fn targets(&self, image: &[u8]) -> Vec<String> {
        targets::targets(image)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// A kernel the image lacks, when the image lists its kernels (PTX
    /// entries, a cubin's functions); the driver checks the rest.
    fn launch_problems(&self, image: &[u8], kernel: &str, _: &[u32]) -> Vec<ImageProblem> {
        let kernels = self.kernels(image);
        if kernels.is_empty() || kernels.iter().any(|k| k == kernel) {
            return Vec::new();
        }
        let mut shown: Vec<&str> = kernels.iter().map(String::as_str).take(12).collect();
        shown.sort_unstable();
        vec![ImageProblem::image(format!(
            "the image defines no kernel `{kernel}` (it defines: {})",
            shown.join(", ")
        ))]
    }
}
