//! What the AMD executor reads from a code object without a device:
//! [`AmdImages`], its [`ImageInfo`], from the ELF header and the metadata
//! note.

use reprise_core::image::{ImageInfo, ImageProblem};
use reprise_core::record::BackendKind;

use crate::AmdError;
use crate::code_object;

/// The AMD executor's [`ImageInfo`]: kernels and their kernarg layout come
/// from the code object's metadata note (`amdhsa.kernels`).
#[derive(Debug, Clone, Copy, Default)]
pub struct AmdImages;

/// The hidden arguments the executor fills (at most 8 bytes of each).
fn filled(kind: &str) -> bool {
    kind.starts_with("hidden_block_count_")
        || kind.starts_with("hidden_group_size_")
        || kind == "hidden_grid_dims"
        || kind == "hidden_dynamic_lds_size"
}

impl ImageInfo for AmdImages {
    fn kind(&self) -> BackendKind {
        BackendKind::Amdgpu
    }

    fn kernels(&self, image: &[u8]) -> Vec<String> {
        code_object::parse(image)
            .map(|c| c.kernels().iter().map(|k| k.name.clone()).collect())
            .unwrap_or_default()
    }

    /// The sizes of the kernel's explicit arguments, from its metadata (the
    /// hidden ones the executor fills are not the caller's).
    fn param_sizes(&self, image: &[u8], kernel: &str) -> Option<Vec<u32>> {
        let code = code_object::parse(image).ok()?;
        let k = code.kernels().iter().find(|k| k.name == kernel)?;
        Some(k.explicit_args().map(|a| a.size).collect())
    }

    /// The target (LLVM target id: processor and features) and the kernels
    /// with their kernarg segment sizes.
    fn targets(&self, image: &[u8]) -> Vec<String> {
        match code_object::parse(image) {
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

    /// The kernel, and where its arguments go in its kernarg segment (as
    /// the executor packs them): an argument the metadata sizes otherwise
    /// (an 8-byte value may fill a smaller one), or placed past the segment.
    fn launch_problems(&self, image: &[u8], name: &str, arg_sizes: &[u32]) -> Vec<ImageProblem> {
        let code = match code_object::parse(image) {
            Ok(c) => c,
            Err(e) => {
                return vec![ImageProblem::image(format!(
                    "unreadable AMDGPU code object: {e}"
                ))];
            }
        };
        let Some(k) = code.kernels().iter().find(|k| k.name == name) else {
            let e = AmdError::NoKernel {
                name: name.to_string(),
                available: code.kernels().iter().map(|k| k.name.clone()).collect(),
            };
            return vec![ImageProblem::image(e.to_string())];
        };
        let segment = u64::from(k.kernarg_segment_size);
        let mut out = Vec::new();
        let explicit: Vec<_> = k.explicit_args().collect();
        if explicit.len() != arg_sizes.len() {
            out.push(ImageProblem::image(format!(
                "the kernel `{name}` takes {} arguments, the descriptor records {}",
                explicit.len(),
                arg_sizes.len()
            )));
        }
        for (i, m) in explicit.iter().enumerate() {
            if let Some(&given) = arg_sizes.get(i)
                && given != m.size
                && !(given == 8 && m.size < 8)
            {
                out.push(ImageProblem::image(format!(
                    "argument {i} of `{name}` is {} bytes, the descriptor records {given}",
                    m.size
                )));
            }
        }
        let placed = explicit.iter().map(|m| (*m, u64::from(m.size))).chain(
            k.hidden_args()
                .filter(|m| filled(&m.value_kind))
                .map(|m| (m, u64::from(m.size.min(8)))),
        );
        for (m, len) in placed {
            let end = u64::from(m.offset) + len;
            if end > segment {
                out.push(ImageProblem::image(format!(
                    "the metadata of `{name}` puts an argument ({}) at {}+{len} beyond its \
                     {segment}-byte kernarg segment",
                    m.value_kind, m.offset
                )));
                break;
            }
        }
        out
    }
}
