//! What GPU code an image holds, for people: the SM architectures of a
//! CUDA image's PTX or cubins (`PTX sm_80 (ISA 7.0)`, `cubin sm_90`), or an
//! AMD code object's target, its features and its kernels with their
//! kernarg segment sizes. Read from the image alone, without a device, by
//! its executor's [`ImageInfo`](reprise_core::image::ImageInfo).

use reprise_core::image::ImageKind;

/// The GPU targets of `image` (of kind `kind`), one line each; empty for a
/// host image, one of no known kind, or one whose executor is not in the
/// build.
pub fn describe(kind: ImageKind, image: &[u8]) -> Vec<String> {
    kind.backend()
        .ok()
        .and_then(crate::images::image_info)
        .map(|info| info.targets(image))
        .unwrap_or_default()
}
