//! The executors in the build are the `reprise` package's features (`host`,
//! `cuda`, `amdgpu`, all on by default): a capture for one that is not in
//! the build is refused as such, before anything is opened. CI runs this
//! with each feature alone as well as with all.

use reprise::core::record::{BackendKind, KernelRecord};
use reprise::store::{CaptureData, CaptureStore, CaptureWriter};

const PTX: &[u8] = include_bytes!("../backends/cuda/fixtures/saxpy.ptx");

#[test]
fn in_build_is_what_the_features_say() {
    use reprise::executors::in_build;
    assert_eq!(in_build(BackendKind::Host), cfg!(feature = "host"));
    assert_eq!(in_build(BackendKind::Cuda), cfg!(feature = "cuda"));
    assert_eq!(in_build(BackendKind::Amdgpu), cfg!(feature = "amdgpu"));
}

#[test]
fn a_capture_for_an_executor_not_in_the_build_is_refused_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let store = CaptureStore::new(dir.path(), false).unwrap();
    let mut r = KernelRecord::new("saxpy").unwrap();
    for a in [0x4040_0000, 0x2000_0000_0000, 0x2000_0000_0400, 256] {
        r.push_arg(a).unwrap();
    }
    r.region_base = Some(0x2000_0000_0000);
    r.backend = Some(BackendKind::Cuda);
    r.grid = [1, 1, 1];
    r.block = [256, 1, 1];
    let d = store
        .write(
            &mut r,
            CaptureData {
                input: &[0; 2048],
                output: Some(&[0; 2048]),
                globals: &[0, 0, 0, 0],
                image: PTX,
            },
        )
        .unwrap();
    let capture = reprise::Capture::open(&d).unwrap();
    let backend = reprise::replay(&capture).resolved_backend();
    if cfg!(feature = "cuda") {
        assert_eq!(backend.unwrap(), BackendKind::Cuda);
    } else {
        let e = backend.unwrap_err();
        assert!(matches!(e, reprise::Error::NotInBuild { .. }), "{e}");
        assert!(e.to_string().contains(&d.display().to_string()), "{e}");
    }
}
