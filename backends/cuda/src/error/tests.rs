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

/// Every variant's message, byte for byte, with each branch of the messages
/// that have logic: a list of kernels (none, one, several), a description
/// or none, the note of a context lost earlier, a JIT log or only
/// whitespace, an errno or only a kind; and which have a source (the driver
/// error underneath).
#[test]
fn every_message_is_pinned_and_the_driver_error_is_the_source() {
    use reprise_core::image::ImageKind;
    use std::error::Error;
    let d = DriverError::from_code("cuModuleLoadData", 218);
    let unnamed = DriverError::from_code("cuStreamQuery", 4242);
    let d_text =
        "cuModuleLoadData failed: CUDA_ERROR_INVALID_PTX (218): a PTX JIT compilation failed";
    let restart = "; the device context is unusable until the process restarts";
    let cases = [
        (
            CudaError::DriverNotFound,
            "CUDA driver not found (libcuda.so could not be loaded)".to_string(),
            false,
        ),
        (
            CudaError::MissingSymbol("cuMemMap"),
            "the CUDA driver library has no function cuMemMap; a driver for CUDA 12 or later \
             is needed"
                .to_string(),
            false,
        ),
        (CudaError::Driver(d), d_text.to_string(), true),
        (
            CudaError::Driver(DriverError::from_code("cuMemHostAlloc", 700)),
            "cuMemHostAlloc failed: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access \
             was encountered (the context was lost to an earlier kernel fault; restart the \
             process)"
                .to_string(),
            true,
        ),
        (
            CudaError::Driver(unnamed),
            "cuStreamQuery failed: CUDA_ERROR_UNRECOGNIZED (4242)".to_string(),
            true,
        ),
        (CudaError::NoDevice, "no CUDA device".to_string(), false),
        (
            CudaError::kernel_fault(Vec::new(), DriverError::from_code("cuStreamQuery", 719)),
            format!(
                "a kernel faulted: CUDA_ERROR_LAUNCH_FAILED (unspecified launch failure){restart}"
            ),
            true,
        ),
        (
            CudaError::kernel_fault(
                vec!["saxpy".into()],
                DriverError::from_code("cuStreamQuery", 700),
            ),
            format!(
                "the kernel `saxpy` faulted: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory \
                 access was encountered){restart}"
            ),
            true,
        ),
        (
            CudaError::kernel_fault(
                vec!["a".into(), "b".into(), "c".into()],
                DriverError::from_code("cuStreamQuery", 710),
            ),
            format!(
                "one of the kernels `a`, `b`, `c` faulted: CUDA_ERROR_ASSERT (device-side \
                 assert triggered){restart}"
            ),
            true,
        ),
        (
            CudaError::kernel_fault(vec!["k".into()], unnamed),
            format!("the kernel `k` faulted: CUDA_ERROR_UNRECOGNIZED{restart}"),
            true,
        ),
        (
            CudaError::BadOrdinal {
                ordinal: 3,
                count: 2,
            },
            "there is no CUDA device 3: the machine has 2 (ordinals 0 to 1)".to_string(),
            false,
        ),
        (
            CudaError::NoVirtualMemory { ordinal: 1 },
            "CUDA device 1 does not support virtual memory management, so no region can be \
             reserved at a chosen address"
                .to_string(),
            false,
        ),
        (
            CudaError::AddressMismatch {
                requested: 0x1539_4000_0000,
                got: 0x7f00_0000_0000,
            },
            "could not reserve recorded virtual address 0x153940000000: the driver offered \
             0x7f0000000000 instead; either that range is already in use in this process, or \
             the driver places reservations only in its own address pool (some drivers ignore \
             address hints)"
                .to_string(),
            false,
        ),
        (
            CudaError::AddressUnavailable {
                requested: 0x1000,
                size: 2 << 20,
                source: d,
            },
            format!("could not reserve recorded virtual address 0x1000 (2097152 bytes): {d_text}"),
            true,
        ),
        (
            CudaError::UnsupportedImage(ImageKind::Bitcode),
            "the CUDA executor cannot load this image (LLVM bitcode); it takes PTX, cubins and \
             fat binaries"
                .to_string(),
            false,
        ),
        (
            CudaError::KernelNotFound("sa\"xpy".into()),
            "the image has no kernel named \"sa\\\"xpy\"".to_string(),
            false,
        ),
        (
            CudaError::JitOptionsNeedPtx(ImageKind::Fatbin),
            "JIT options apply to PTX only, and this image is CUDA fat binary: a cubin is \
             compiled already, and the driver applies no JIT option to it (record the PTX, or \
             replay without JIT options)"
                .to_string(),
            false,
        ),
        (
            CudaError::JitFailed {
                options: "MAX_REGISTERS=32".into(),
                log: "ptxas error: bad\ninfo: 3 registers\n\n".into(),
                source: d,
            },
            format!(
                "the driver's JIT could not compile the PTX with MAX_REGISTERS=32: {d_text}\n\
                 JIT log:\nptxas error: bad\ninfo: 3 registers"
            ),
            true,
        ),
        (
            CudaError::JitFailed {
                options: "OPTIMIZATION_LEVEL=0".into(),
                log: " \n\t".into(),
                source: d,
            },
            format!(
                "the driver's JIT could not compile the PTX with OPTIMIZATION_LEVEL=0: {d_text}"
            ),
            true,
        ),
        (
            CudaError::BadName("a\0b".into()),
            "the name \"a\\0b\" contains a NUL byte".to_string(),
            false,
        ),
        (
            CudaError::SegmentOutOfBounds {
                end: 4097,
                buffer: 4096,
            },
            "a copy reaches byte 4097 of a host buffer of 4096 bytes".to_string(),
            false,
        ),
        (
            CudaError::ArgumentCount {
                expected: 3,
                got: 2,
            },
            "the kernel takes 3 parameters but the launch passes 2 arguments".to_string(),
            false,
        ),
        (
            CudaError::ArgumentSize {
                index: 1,
                expected: 8,
                got: 4,
            },
            "argument 1 has 4 bytes but the kernel's parameter has 8".to_string(),
            false,
        ),
        (
            CudaError::BadArgument { index: 2 },
            "argument 2 points outside the recorded argument data".to_string(),
            false,
        ),
        (
            CudaError::Thread {
                name: "reprise-cuda-watch",
                errno: None,
                io_kind: std::io::ErrorKind::WouldBlock,
            },
            "could not start a helper thread (reprise-cuda-watch): operation would block"
                .to_string(),
            false,
        ),
        (
            CudaError::Thread {
                name: "reprise-cuda-watch",
                errno: Some(11),
                io_kind: std::io::ErrorKind::WouldBlock,
            },
            format!(
                "could not start a helper thread (reprise-cuda-watch): {}",
                std::io::Error::from_raw_os_error(11)
            ),
            false,
        ),
        (
            CudaError::KernelThreadsPerBlock {
                kernel: "k".into(),
                block: [u32::MAX, u32::MAX, 2],
                limit: 1024,
            },
            "block 4294967295x4294967295x2 (36893488130239234050 threads) exceeds kernel k's \
             limit of 1024 threads per block (its launch bounds, or the registers it uses)"
                .to_string(),
            false,
        ),
        (
            CudaError::Geometry(GeometryError::ZeroDimension {
                what: Dims::Block,
                dims: [1, 0, 1],
            }),
            "block 1x0x1: every dimension must be at least 1".to_string(),
            false,
        ),
        (
            CudaError::NoCodeForDevice {
                device_sm: 75,
                image: "PTX sm_80 (ISA 7.0)".into(),
                source: DriverError::from_code("cuModuleLoadData", 209),
            },
            "the image has no code for this device: the device is sm_75, the image holds PTX \
             sm_80 (ISA 7.0): cuModuleLoadData failed: CUDA_ERROR_NO_BINARY_FOR_GPU (209): no \
             kernel image is available for execution on the device"
                .to_string(),
            true,
        ),
    ];
    for (e, message, has_source) in &cases {
        assert_eq!(e.to_string(), *message, "{e:?}");
        let source = e.source().map(|s| s.to_string());
        let driver = e.driver().map(|d| d.to_string());
        assert_eq!((source.is_some(), &source), (*has_source, &driver), "{e:?}");
    }
    // A driver error has no source of its own.
    assert!(d.source().is_none());
}
