//! What an executor would refuse of a capture's image, decided from its
//! bytes and the descriptor without running anything: that some executor
//! runs this kind of image at all (not an empty file, an unknown format, an
//! ELF file for another machine or class, LLVM bitcode, an offload
//! container), and for the image's executor what its loader and launch
//! check, as its [`ImageInfo`](reprise_core::image::ImageInfo) says: on the
//! host, a whole x86-64 ELF shared object that defines the kernel and 8-byte
//! arguments; on an AMD GPU, a code object that defines the kernel with
//! metadata whose arguments fit its kernarg segment; on a CUDA GPU, an
//! image whose kernels, where they can be told, include the kernel. Each
//! recorded global must be one the image defines, with the recorded size
//! where the image gives one, wherever the executor lists its globals.
//!
//! `replay` opens a capture through [`super::assess`], so all of this is
//! refused before the image is loaded (and its constructors run), and
//! `inspect` and `list` report the same problems.

use std::path::Path;

use reprise_core::globals;
use reprise_core::globals::Layout;
use reprise_core::image::{ImageKind, ProblemSite};
use reprise_core::record::{BackendKind, KernelRecord};

use crate::error::{CaptureProblem, Error};
use crate::images::NoExecutor;

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
    let backend = match crate::images::choose(kind, forced) {
        Ok(b) => b,
        Err(NoExecutor::Wrong { runs_on, asked }) => {
            return vec![Error::WrongBackend {
                image: image_path.to_path_buf(),
                kind: kind.to_string(),
                runs_on,
                asked,
            }];
        }
        Err(NoExecutor::Unrunnable(e)) => return vec![at(CaptureProblem::NoExecutor(e))],
        // An executor not in the build: the replay says so.
        Err(NoExecutor::NotInBuild(_)) => return Vec::new(),
    };
    let Some(info) = crate::images::image_info(backend) else {
        return Vec::new();
    };
    let arg_sizes: Vec<u32> = (0..record.num_args()).map(|i| record.arg_size(i)).collect();
    let (arguments, image_problems): (Vec<_>, Vec<_>) = info
        .launch_problems(image, record.name.as_str(), &arg_sizes)
        .into_iter()
        .partition(|p| p.site == ProblemSite::Arguments);
    let refuses = |message| at(CaptureProblem::ExecutorRefuses { backend, message });
    let mut out: Vec<Error> = image_problems
        .into_iter()
        .map(|p| refuses(p.message))
        .collect();
    if let (Some((bytes, layout, globals_path)), Some(defined)) = (globals, info.globals(image)) {
        for g in globals::decode(layout, bytes)
            .into_iter()
            .flatten()
            .flatten()
        {
            // A global the image lists without a size is not checked.
            let size = match defined.iter().find(|d| d.name == g.name) {
                None => None,
                Some(found) if found.size.is_some() => found.size,
                Some(_) => continue,
            };
            out.extend(super::global_problem(
                globals_path,
                image_path,
                g.name,
                g.bytes.len(),
                size,
            ));
        }
    }
    out.extend(arguments.into_iter().map(|p| {
        let message = p.message;
        Error::capture(
            descriptor,
            CaptureProblem::ArgumentsRefused { backend, message },
        )
    }));
    out
}
