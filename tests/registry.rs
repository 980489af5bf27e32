//! The registry (`reprise::executors`): the one place that chooses by
//! executor kind hands out, for each kind in the build, the executor's
//! `ImageInfo`, which reads the built-in sample images as their
//! executors would, without a device. CI runs this with each backend
//! feature alone too.

use reprise::core::image::ProblemSite;
use reprise::core::record::BackendKind;
use reprise::executors::{capabilities, image_info, in_build};
use reprise::samples::{bench_kernel, demo_kernel};

const KINDS: [BackendKind; 3] = [BackendKind::Host, BackendKind::Cuda, BackendKind::Amdgpu];

/// The sizes of the arguments a sample passes, as its executor packs them.
fn sizes(kind: BackendKind) -> Vec<u32> {
    match kind {
        // Every host argument is one 8-byte word.
        BackendKind::Host => vec![8, 8, 8],
        // saxpy(float a, float *x, float *y, int n).
        _ => vec![4, 8, 8, 4],
    }
}

#[test]
fn each_kind_in_the_build_has_image_info_of_its_own_kind() {
    for kind in KINDS {
        let info = image_info(kind);
        assert_eq!(info.is_some(), in_build(kind), "{kind}");
        if let Some(info) = info {
            assert_eq!(info.kind(), kind);
        }
    }
}

#[test]
fn each_executor_reads_its_sample_kernels_without_a_device() {
    for kind in KINDS {
        let Some(info) = image_info(kind) else {
            continue;
        };
        for sample in [demo_kernel(kind), bench_kernel(kind)]
            .into_iter()
            .flatten()
        {
            let kernels = info.kernels(sample.image);
            assert!(
                kernels.iter().any(|k| k == sample.name),
                "{kind}: {} not among {kernels:?}",
                sample.name
            );
        }
        let demo = demo_kernel(kind).expect("a demo kernel for every kind");
        assert_eq!(
            info.launch_problems(demo.image, demo.name, &sizes(kind)),
            [],
            "{kind}: the demo launches as recorded"
        );
        // A kernel the image lacks is the image's problem, named.
        let missing = info.launch_problems(demo.image, "no_such_kernel", &sizes(kind));
        assert_eq!(missing.len(), 1, "{kind}: {missing:?}");
        assert_eq!(missing[0].site, ProblemSite::Image);
        assert!(
            missing[0].message.contains("no_such_kernel"),
            "{kind}: {missing:?}"
        );
    }
}

#[test]
fn gpu_images_say_their_parameter_layout_and_targets() {
    for kind in [BackendKind::Cuda, BackendKind::Amdgpu] {
        let Some(info) = image_info(kind) else {
            continue;
        };
        let demo = demo_kernel(kind).unwrap();
        assert_eq!(
            info.param_sizes(demo.image, demo.name),
            Some(sizes(kind)),
            "{kind}"
        );
        assert_eq!(
            info.param_sizes(demo.image, "no_such_kernel"),
            None,
            "{kind}"
        );
        assert!(
            !info.targets(demo.image).is_empty(),
            "{kind}: some GPU target"
        );
    }
}

#[test]
fn host_images_hold_no_gpu_code_and_take_8_byte_arguments() {
    let Some(info) = image_info(BackendKind::Host) else {
        return;
    };
    let demo = demo_kernel(BackendKind::Host).unwrap();
    assert!(info.targets(demo.image).is_empty());
    assert_eq!(info.param_sizes(demo.image, demo.name), None);
    let narrow = info.launch_problems(demo.image, demo.name, &[8, 4, 8]);
    assert_eq!(narrow.len(), 1, "{narrow:?}");
    assert_eq!(narrow[0].site, ProblemSite::Arguments);
    // Not an image the host loader takes: said, not a panic.
    let junk = info.launch_problems(b"\x7fELF but not really", demo.name, &[8]);
    assert_eq!(junk.len(), 1, "{junk:?}");
    assert!(info.kernels(b"").is_empty());
}

/// What each backend says it can do (a kind this build lacks reads as a
/// GPU's, so each backend's own facts are checked where it is built).
#[test]
fn the_capabilities_say_what_the_command_line_used_to_compare_kinds_for() {
    #[cfg(feature = "host")]
    {
        let host = capabilities(BackendKind::Host);
        assert!(!host.has_devices && host.in_process && !host.launch_geometry);
        assert!(!host.device_memory && !host.interposed);
    }
    for gpu in [BackendKind::Cuda, BackendKind::Amdgpu] {
        let t = capabilities(gpu);
        assert!(t.has_devices && !t.in_process && t.launch_geometry && t.device_memory);
    }
    #[cfg(feature = "cuda")]
    assert!(capabilities(BackendKind::Cuda).interposed);
    #[cfg(feature = "amdgpu")]
    assert_eq!(
        capabilities(BackendKind::Amdgpu).library_var,
        Some("REPRISE_HSA_LIBRARY")
    );
    // CUDA's driver is found by the dynamic loader; an unknown image is
    // refused for it rather than handed to its loader.
    #[cfg(feature = "cuda")]
    {
        assert_eq!(capabilities(BackendKind::Cuda).library_var, None);
        assert!(!capabilities(BackendKind::Cuda).judges_unknown_images);
    }
}
