//! What an executor would refuse of a capture's image, decided from its
//! bytes and the descriptor without running anything: that some executor
//! runs this kind of image at all (not an empty file, an unknown format, an
//! ELF file for another machine or class, LLVM bitcode, an offload
//! container), and for the image's executor what its loader and launch
//! check: on the host, a whole x86-64 ELF shared object that defines the
//! kernel and each recorded global with the recorded size, and 8-byte
//! arguments; on an AMD GPU, a code object that defines the kernel with
//! metadata whose arguments fit its kernarg segment; on a CUDA GPU, an
//! image whose kernels, where they can be told, include the kernel.
//!
//! `replay` opens a capture through [`super::assess`], so all of this is
//! refused before the image is loaded (and its constructors run), and
//! `inspect` and `list` report the same problems.

use std::path::Path;

#[cfg(feature = "host")]
use reprise_core::globals;
use reprise_core::globals::Layout;
use reprise_core::image::ImageKind;
use reprise_core::record::{BackendKind, KernelRecord};

use crate::error::{CaptureProblem, Error};

/// The problems of `image` (read from `image_path`, of kind `kind`) for
/// replaying the kernel `record` (read from `descriptor`) names on the
/// executor `forced` names, or else the one the image's kind runs on, with
/// the globals `globals` (in `layout`, from `globals_path`), when there is
/// a globals file.
pub(super) fn problems(
    record: &KernelRecord,
    descriptor: &Path,
    (image, kind, image_path): (&[u8], ImageKind, &Path),
    forced: Option<BackendKind>,
    globals: Option<(&[u8], Layout, &Path)>,
) -> Vec<Error> {
    let at = |problem: CaptureProblem| Error::capture(image_path, problem);
    if image.is_empty() {
        return vec![at(CaptureProblem::EmptyImage)];
    }
    let backend = match (forced, kind.backend()) {
        // As the replay refuses it, before an executor is opened.
        (Some(asked), Ok(runs_on)) if asked != runs_on => {
            return vec![Error::WrongBackend {
                image: image_path.to_path_buf(),
                kind: kind.to_string(),
                runs_on,
                asked,
            }];
        }
        (_, Ok(b)) => b,
        // The host's and AMD's loaders say what they make of it.
        (Some(b @ (BackendKind::Host | BackendKind::Amdgpu)), Err(_)) => b,
        (_, Err(e)) => return vec![at(CaptureProblem::NoExecutor(e))],
    };
    match backend {
        #[cfg(feature = "host")]
        BackendKind::Host => host(record, descriptor, image, image_path, globals),
        #[cfg(feature = "amdgpu")]
        BackendKind::Amdgpu => amdgpu(record, image)
            .into_iter()
            .map(|message| {
                at(CaptureProblem::ExecutorRefuses {
                    backend: BackendKind::Amdgpu,
                    message,
                })
            })
            .collect(),
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => cuda(record, image)
            .into_iter()
            .map(|message| {
                at(CaptureProblem::ExecutorRefuses {
                    backend: BackendKind::Cuda,
                    message,
                })
            })
            .collect(),
        // An executor not in the build: the replay says so.
        _ => {
            let _ = (record, descriptor, globals);
            Vec::new()
        }
    }
}

/// What the host executor's loader and launch refuse.
#[cfg(feature = "host")]
fn host(
    record: &KernelRecord,
    descriptor: &Path,
    image: &[u8],
    image_path: &Path,
    globals: Option<(&[u8], Layout, &Path)>,
) -> Vec<Error> {
    let refused = |message| CaptureProblem::ExecutorRefuses {
        backend: BackendKind::Host,
        message,
    };
    let mut out = Vec::new();
    let symbols = match reprise_host::elf::shared_object(image) {
        Ok(s) => s,
        Err(message) => return vec![Error::capture(image_path, refused(message))],
    };
    let name = record.name.as_str();
    if !symbols.functions.iter().any(|f| f == name) {
        let e = reprise_host::HostError::KernelNotFound {
            name: name.to_string(),
            hint: reprise_host::elf::defined_hint(&symbols.functions),
        };
        out.push(Error::capture(image_path, refused(e.to_string())));
    }
    if let Some((bytes, layout, globals_path)) = globals {
        for g in globals::decode(layout, bytes)
            .into_iter()
            .flatten()
            .flatten()
        {
            let size = symbols
                .data
                .iter()
                .find(|(n, _)| n == g.name)
                .map(|(_, s)| *s);
            if let Some(e) =
                super::global_problem(globals_path, image_path, g.name, g.bytes.len(), size)
            {
                out.push(e);
            }
        }
    }
    if let Some(index) = (0..record.num_args()).find(|&i| record.arg_size(i) != 8) {
        let e = reprise_host::HostError::ArgSize {
            index,
            size: record.arg_size(index),
        };
        out.push(Error::capture(
            descriptor,
            CaptureProblem::ArgumentsRefused {
                backend: BackendKind::Host,
                message: e.to_string(),
            },
        ));
    }
    out
}

/// What the AMD executor's loader and launch refuse, from the code
/// object's metadata: the kernel, and where its arguments go in its kernarg
/// segment (as the executor packs them).
#[cfg(feature = "amdgpu")]
fn amdgpu(record: &KernelRecord, image: &[u8]) -> Vec<String> {
    let code = match reprise_amdgpu::code_object::parse(image) {
        Ok(c) => c,
        Err(e) => return vec![format!("unreadable AMDGPU code object: {e}")],
    };
    let name = record.name.as_str();
    let Some(k) = code.kernels().iter().find(|k| k.name == name) else {
        let e = reprise_amdgpu::AmdError::NoKernel {
            name: name.to_string(),
            available: code.kernels().iter().map(|k| k.name.clone()).collect(),
        };
        return vec![e.to_string()];
    };
    let segment = u64::from(k.kernarg_segment_size);
    let mut out = Vec::new();
    let explicit: Vec<_> = k.explicit_args().collect();
    if explicit.len() != record.num_args() {
        out.push(format!(
            "the kernel `{name}` takes {} arguments, the descriptor records {}",
            explicit.len(),
            record.num_args()
        ));
    }
    for (i, m) in explicit.iter().enumerate() {
        let given = record.arg_size(i);
        if i < record.num_args() && given != m.size && !(given == 8 && m.size < 8) {
            out.push(format!(
                "argument {i} of `{name}` is {} bytes, the descriptor records {given}",
                m.size
            ));
        }
    }
    // The hidden arguments the executor fills, at most 8 bytes of each.
    let filled = |kind: &str| {
        kind.starts_with("hidden_block_count_")
            || kind.starts_with("hidden_group_size_")
            || kind == "hidden_grid_dims"
            || kind == "hidden_dynamic_lds_size"
    };
    let placed = explicit.iter().map(|m| (*m, u64::from(m.size))).chain(
        k.hidden_args()
            .filter(|m| filled(&m.value_kind))
            .map(|m| (m, u64::from(m.size.min(8)))),
    );
    for (m, len) in placed {
        let end = u64::from(m.offset) + len;
        if end > segment {
            out.push(format!(
                "the metadata of `{name}` puts an argument ({}) at {}+{len} beyond its \
                 {segment}-byte kernarg segment",
                m.value_kind, m.offset
            ));
            break;
        }
    }
    out
}

/// A CUDA image that lists its kernels (PTX entries, a cubin's functions)
/// and lacks the capture's.
#[cfg(feature = "cuda")]
fn cuda(record: &KernelRecord, image: &[u8]) -> Vec<String> {
    let kernels = super::super::offload::kernels_of(image);
    let name = record.name.as_str();
    if kernels.is_empty() || kernels.iter().any(|k| k == name) {
        return Vec::new();
    }
    let mut shown: Vec<&str> = kernels.iter().map(String::as_str).take(12).collect();
    shown.sort_unstable();
    vec![format!(
        "the image defines no kernel `{name}` (it defines: {})",
        shown.join(", ")
    )]
}
