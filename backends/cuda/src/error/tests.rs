//! The error messages, the code table and which errors mean the context is
//! lost.

use reprise_core::exec::{Dims, GeometryError};

use super::codes::{CODES, KERNEL_FAULTS};
use super::*;

#[test]
fn table_is_sorted_and_names_common_codes() {
    assert!(CODES.windows(2).all(|w| w[0].0 < w[1].0));
    for (code, name) in [
        (1, "CUDA_ERROR_INVALID_VALUE"),
        (2, "CUDA_ERROR_OUT_OF_MEMORY"),
        (100, "CUDA_ERROR_NO_DEVICE"),
        (200, "CUDA_ERROR_INVALID_IMAGE"),
        (500, "CUDA_ERROR_NOT_FOUND"),
        (700, "CUDA_ERROR_ILLEGAL_ADDRESS"),
        (719, "CUDA_ERROR_LAUNCH_FAILED"),
    ] {
        assert_eq!(code_name(code).map(|c| c.0), Some(name));
    }
    assert_eq!(code_name(12345), None);
}

#[test]
fn driver_error_display_names_call_and_code() {
    let e = DriverError::from_code("cuModuleLoadData", 200);
    assert_eq!(
        e.to_string(),
        "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (200): device kernel image is invalid"
    );
    let u = DriverError::from_code("cuInit", 4242);
    assert_eq!(
        u.to_string(),
        "cuInit failed: CUDA_ERROR_UNRECOGNIZED (4242)"
    );
    assert_eq!(CudaError::from(e).driver(), Some(&e));
}

#[test]
fn messages_name_what_went_wrong() {
    assert_eq!(
        CudaError::DriverNotFound.to_string(),
        "CUDA driver not found (libcuda.so could not be loaded)"
    );
    let m = CudaError::AddressMismatch {
        requested: 0x1539_4000_0000,
        got: 0x7f00_0000_0000,
    }
    .to_string();
    assert!(
        m.contains("0x153940000000") && m.contains("0x7f0000000000"),
        "{m}"
    );
    // Both reasons a driver offers another range, not only the first.
    assert!(
        m.contains("in use in this process") && m.contains("its own address pool"),
        "{m}"
    );
    assert!(m.contains("some drivers ignore address hints"), "{m}");
    let b = CudaError::BadOrdinal {
        ordinal: 3,
        count: 1,
    }
    .to_string();
    assert!(b.contains("device 3") && b.contains("has 1"), "{b}");
    assert!(
        CudaError::KernelNotFound("saxpy".into())
            .to_string()
            .contains("\"saxpy\"")
    );
}

#[test]
fn source_is_the_driver_error_underneath() {
    use std::error::Error;
    let d = DriverError::from_code("cuModuleLoadData", 218);
    let cases = [
        CudaError::Driver(d),
        CudaError::AddressUnavailable {
            requested: 0x1000,
            size: 2 << 20,
            source: d,
        },
        CudaError::NoCodeForDevice {
            device_sm: 75,
            image: "PTX sm_80 (ISA 7.0)".into(),
            source: d,
        },
    ];
    for e in &cases {
        let source = e.source().unwrap_or_else(|| panic!("{e:?} has no source"));
        assert_eq!(source.to_string(), d.to_string());
        // Messages end with their cause, so it is not printed twice.
        assert!(e.to_string().ends_with(&d.to_string()), "{e}");
    }
    assert!(CudaError::NoDevice.source().is_none());
}

#[test]
fn a_kernel_fault_code_says_the_context_was_lost() {
    for code in KERNEL_FAULTS {
        let e = DriverError::from_code("cuMemHostAlloc", code as u32);
        assert!(e.is_kernel_fault() && e.context_lost(), "{code:?}");
        assert_eq!(format!("{code:?}"), e.name, "named from the table");
        assert!(
            e.to_string().ends_with(
                " (the context was lost to an earlier kernel fault; restart the process)"
            ),
            "{e}"
        );
    }
    assert_eq!(
        DriverError::from_code("cuMemHostAlloc", 700).to_string(),
        "cuMemHostAlloc failed: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory \
         access was encountered (the context was lost to an earlier kernel fault; \
         restart the process)"
    );
    // Errors that leave the context usable say nothing of the sort.
    for code in [1, 2, 201, 600, 701, 4242] {
        let e = DriverError::from_code("cuLaunchKernel", code);
        assert!(!e.is_kernel_fault() && !e.context_lost(), "{code}");
        assert!(!e.to_string().contains("context was lost"), "{e}");
    }
}

#[test]
fn a_kernel_fault_names_the_kernels_and_keeps_the_driver_error() {
    use std::error::Error;
    let d = DriverError::from_code("cuStreamQuery", 700);
    let e = CudaError::kernel_fault(vec!["saxpy".into()], d);
    assert_eq!(
        e.to_string(),
        "the kernel `saxpy` faulted: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access \
         was encountered); the device context is unusable until the process restarts"
    );
    // The error underneath is the call that found the fault, not a
    // context lost earlier.
    let source = e.source().expect("the driver error");
    assert_eq!(
        source.to_string(),
        "cuStreamQuery failed: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access \
         was encountered"
    );
    assert_eq!(
        e.driver().map(|d| (d.call, d.code)),
        Some(("cuStreamQuery", 700))
    );
    let two = CudaError::kernel_fault(
        vec!["a".into(), "b".into()],
        DriverError::from_code("cuStreamQuery", 719),
    );
    assert_eq!(
        two.to_string(),
        "one of the kernels `a`, `b` faulted: CUDA_ERROR_LAUNCH_FAILED (unspecified launch \
         failure); the device context is unusable until the process restarts"
    );
}

#[test]
fn the_context_is_lost_from_the_first_report_of_a_fault_on() {
    // The first report: the fault, named, whose driver error does not
    // repeat the note, yet says the context is lost.
    let first = CudaError::kernel_fault(
        vec!["saxpy".into()],
        DriverError::from_code("cuStreamQuery", 700),
    );
    let source = first.driver().expect("the driver error");
    assert!(!source.to_string().contains("context was lost"), "{source}");
    assert!(source.context_lost() && first.context_lost());
    // Later calls meeting it.
    for code in KERNEL_FAULTS {
        let d = DriverError::from_code("cuMemHostAlloc", code as u32);
        assert!(d.context_lost(), "{code:?}");
        assert!(CudaError::Driver(d).context_lost(), "{code:?}");
        let lost = CudaError::AddressUnavailable {
            requested: 0x1000,
            size: 4096,
            source: d,
        };
        assert!(lost.context_lost(), "{code:?}");
    }
    // A fault named without a driver error to show (never made so, but
    // the variant is public).
    let bare = CudaError::KernelFault {
        kernels: Vec::new(),
        source: DriverError::from_code("cuStreamQuery", 719),
    };
    assert!(bare.context_lost());
    // Errors that leave the context usable.
    for e in [
        CudaError::Driver(DriverError::from_code("cuLaunchKernel", 1)),
        CudaError::Driver(DriverError::from_code("cuMemHostAlloc", 2)),
        CudaError::NoDevice,
        CudaError::DriverNotFound,
        CudaError::Geometry(GeometryError::ZeroDimension {
            what: Dims::Grid,
            dims: [0, 1, 1],
        }),
    ] {
        assert!(!e.context_lost(), "{e}");
    }
}

#[test]
fn launch_limits_name_the_launch_and_the_device_limit() {
    let t = CudaError::Geometry(GeometryError::ThreadsPerBlock {
        block: [2048, 1, 1],
        limit: 1024,
    });
    assert_eq!(
        t.to_string(),
        "block 2048x1x1 (2048 threads) exceeds this device's limit of 1024 threads per block"
    );
    let k = CudaError::KernelThreadsPerBlock {
        kernel: "k".into(),
        block: [256, 1, 1],
        limit: 128,
    };
    assert_eq!(
        k.to_string(),
        "block 256x1x1 (256 threads) exceeds kernel k's limit of 128 threads per block \
         (its launch bounds, or the registers it uses)"
    );
    let d = CudaError::Geometry(GeometryError::Dimension {
        what: Dims::Grid,
        dims: [1, 70000, 1],
        axis: 1,
        limit: 65535,
    });
    assert_eq!(
        d.to_string(),
        "grid 1x70000x1 exceeds this device's limit of 65535 in y"
    );
    let z = CudaError::Geometry(GeometryError::ZeroDimension {
        what: Dims::Grid,
        dims: [0, 1, 1],
    });
    assert_eq!(
        z.to_string(),
        "grid 0x1x1: every dimension must be at least 1"
    );
    let s = CudaError::Geometry(GeometryError::SharedMemory {
        static_bytes: 0,
        dynamic_bytes: 300 << 10,
        limit: 227 << 10,
    })
    .to_string();
    assert_eq!(
        s,
        "the launch asks for 307200 bytes of dynamic shared memory, more than \
         this device's limit of 232448 bytes per block"
    );
    let s = CudaError::Geometry(GeometryError::SharedMemory {
        static_bytes: 16 << 10,
        dynamic_bytes: 220 << 10,
        limit: 227 << 10,
    })
    .to_string();
    assert_eq!(
        s,
        "the launch asks for 225280 bytes of dynamic shared memory; with the \
         kernel's 16384 bytes of static shared memory that is 241664 bytes, more \
         than this device's limit of 232448 bytes per block"
    );
}

#[test]
fn every_geometry_error_converts_both_ways_with_the_cores_message() {
    let errors = [
        GeometryError::ZeroDimension {
            what: Dims::Grid,
            dims: [0, 1, 1],
        },
        GeometryError::ZeroDimension {
            what: Dims::Block,
            dims: [1, 0, 1],
        },
        GeometryError::ThreadsPerBlock {
            block: [2048, 1, 1],
            limit: 1024,
        },
        GeometryError::Dimension {
            what: Dims::Grid,
            dims: [1, 70000, 1],
            axis: 1,
            limit: 65535,
        },
        GeometryError::SharedMemory {
            static_bytes: 1,
            dynamic_bytes: 227 << 10,
            limit: 227 << 10,
        },
        GeometryError::GridThreads {
            grid: [2, 1, 1],
            block: [2, 1, 1],
            axis: 0,
            limit: 3,
        },
    ];
    for e in errors {
        let cuda = CudaError::from(e);
        assert_eq!(cuda, CudaError::Geometry(e));
        assert_eq!(cuda.geometry(), Some(e), "{cuda:?}");
        assert_eq!(cuda.to_string(), e.to_string());
    }
    assert_eq!(CudaError::NoDevice.geometry(), None);
}

#[test]
fn every_error_says_its_kind() {
    use reprise_core::exec::{ErrorKind as K, ExecError};
    let d = |code| DriverError::from_code("cuModuleLoadData", code);
    let cases = [
        (CudaError::DriverNotFound, K::DeviceMissing),
        (CudaError::MissingSymbol("cuMemMap"), K::DeviceMissing),
        (CudaError::NoDevice, K::NoDevice),
        (
            CudaError::BadOrdinal {
                ordinal: 3,
                count: 1,
            },
            K::NoDevice,
        ),
        (
            CudaError::kernel_fault(vec!["saxpy".into()], d(700)),
            K::KernelFault,
        ),
        (
            CudaError::Geometry(GeometryError::ThreadsPerBlock {
                block: [2048, 1, 1],
                limit: 1024,
            }),
            K::LaunchRefused,
        ),
        (
            CudaError::Geometry(GeometryError::ZeroDimension {
                what: Dims::Grid,
                dims: [0, 1, 1],
            }),
            K::LaunchRefused,
        ),
        (
            CudaError::KernelThreadsPerBlock {
                kernel: "k".into(),
                block: [256, 1, 1],
                limit: 128,
            },
            K::LaunchRefused,
        ),
        (
            CudaError::AddressMismatch {
                requested: 0x1000,
                got: 0x2000,
            },
            K::AddressUnavailable,
        ),
        (CudaError::KernelNotFound("k".into()), K::InvalidInput),
        (CudaError::BadArgument { index: 1 }, K::InvalidInput),
        (
            CudaError::Thread {
                name: "reprise-cuda-watch",
                errno: Some(11),
                io_kind: std::io::ErrorKind::WouldBlock,
            },
            K::Io,
        ),
        (CudaError::Driver(d(2)), K::OutOfMemory),
        (CudaError::Driver(d(200)), K::InvalidInput),
        (CudaError::Driver(d(34)), K::DeviceMissing),
        (CudaError::Driver(d(700)), K::DeviceLost),
        (CudaError::Driver(d(999)), K::Other),
        (
            CudaError::Driver(DriverError::from_code("cuLaunchKernel", 1)),
            K::LaunchRefused,
        ),
        (
            CudaError::Driver(DriverError::from_code("cuLaunchKernel", 701)),
            K::LaunchRefused,
        ),
    ];
    for (e, kind) in &cases {
        assert_eq!(e.kind(), *kind, "{e:?}");
        // The device is lost exactly when the context is.
        assert_eq!(e.device_lost(), e.context_lost(), "{e:?}");
    }
    // A fault loses the context; an address taken does not, unless a
    // fault left its code behind.
    assert!(CudaError::kernel_fault(Vec::new(), d(719)).device_lost());
    let lost = CudaError::AddressUnavailable {
        requested: 0x1000,
        size: 4096,
        source: d(700),
    };
    assert_eq!(lost.kind(), K::AddressUnavailable);
    assert!(lost.device_lost());
}

#[test]
fn a_thread_that_would_not_start_says_the_systems_reason() {
    let e = CudaError::Thread {
        name: "reprise-cuda-watch",
        errno: Some(11),
        io_kind: std::io::ErrorKind::WouldBlock,
    };
    let m = e.to_string();
    assert!(
        m.starts_with("could not start a helper thread (reprise-cuda-watch): "),
        "{m}"
    );
    assert!(m.contains("os error 11"), "{m}");
}
