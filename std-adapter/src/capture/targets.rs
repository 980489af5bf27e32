//! What GPU code an image holds, for people: the SM architectures of a
//! CUDA image's PTX or cubins (`PTX sm_80 (ISA 7.0)`, `cubin sm_90`), or an
//! AMD code object's target, its features and its kernels with their
//! kernarg segment sizes. Read from the image alone, without a device.

#[cfg(feature = "amdgpu")]
use reprise_core::image::EM_AMDGPU;
#[cfg(feature = "cuda")]
use reprise_core::image::EM_CUDA;
use reprise_core::image::ImageKind;

/// The GPU targets of `image` (of kind `kind`), one line each; empty for a
/// host image, one of no known kind, or one whose executor is not in the
/// build.
pub fn describe(kind: ImageKind, image: &[u8]) -> Vec<String> {
    match kind {
        #[cfg(feature = "amdgpu")]
        ImageKind::Elf {
            machine: EM_AMDGPU, ..
        } => amdgpu(image),
        #[cfg(feature = "cuda")]
        ImageKind::Ptx
        | ImageKind::Fatbin
        | ImageKind::Elf {
            machine: EM_CUDA, ..
        } => reprise_cuda::targets::targets(image)
            .iter()
            .map(ToString::to_string)
            .collect(),
        _ => {
            let _ = image;
            Vec::new()
        }
    }
}

/// An AMDGPU code object's target (LLVM target id: processor and
/// features) and its kernels with their kernarg segment sizes, from its
/// ELF header and metadata note.
#[cfg(feature = "amdgpu")]
fn amdgpu(image: &[u8]) -> Vec<String> {
    match reprise_amdgpu::code_object::parse(image) {
        Ok(c) => {
            let kernels: Vec<String> = c
                .kernels()
                .iter()
                .map(|k| format!("{} ({} kernarg bytes)", k.name, k.kernarg_segment_size))
                .collect();
            // "amdgpu " is the kind, which the text rendering drops.
            vec![format!(
                "amdgpu {}{}: {}",
                c.target(),
                c.code_object_version()
                    .map(|v| format!(" (code object v{v})"))
                    .unwrap_or_default(),
                if kernels.is_empty() {
                    "no kernels".to_string()
                } else {
                    kernels.join(", ")
                }
            )]
        }
        Err(e) => vec![format!("unreadable AMDGPU code object: {e}")],
    }
}
