//! The AMD executor's errors: their messages, kinds and sources.

use super::*;

#[test]
fn typed_errors_keep_their_messages_and_say_their_kinds() {
    let cases = [
        (
            AmdError::KernargTooLarge {
                kernel: "k".into(),
                size: 2 << 20,
                max: 1 << 20,
            },
            "the kernel `k` asks for a 2097152-byte kernarg segment, more than the 1048576 \
             bytes reprise allows",
            ErrorKind::InvalidInput,
        ),
        (
            AmdError::BadArgument { index: 2 },
            "argument 2 points outside the recorded argument data",
            ErrorKind::InvalidInput,
        ),
        (
            AmdError::ArgumentPlacement {
                kernel: "k".into(),
                offset: 280,
                len: 16,
                segment: 288,
            },
            "the metadata of `k` puts an argument at 280+16 beyond its 288-byte kernarg \
             segment",
            ErrorKind::InvalidInput,
        ),
        (
            AmdError::RegionTooLarge { bytes: u64::MAX },
            "a region of 18446744073709551615 bytes is larger than the runtime can reserve",
            ErrorKind::OutOfMemory,
        ),
        (
            AmdError::UnalignedBase {
                base: 0x1001,
                granule: 4096,
            },
            "the region base 0x1001 is not a multiple of the runtime's allocation granule \
             (4096 bytes), so no reservation can start there",
            ErrorKind::InvalidInput,
        ),
        (
            AmdError::IsaNameLength { len: 70000 },
            "the runtime reports an ISA name of 70000 bytes",
            ErrorKind::Other,
        ),
        (
            AmdError::KernargMisaligned {
                kernel: "k".into(),
                address: 0x7f00_0000_0004,
                align: 16,
            },
            "the kernarg pool gave 0x7f0000000004, not aligned to the 16 bytes `k` needs",
            ErrorKind::Other,
        ),
    ];
    for (e, message, kind) in &cases {
        assert_eq!(e.to_string(), *message);
        assert_eq!(e.kind(), *kind, "{e}");
        assert!(!e.device_lost(), "{e}");
    }
}

#[test]
fn runtime_errors_say_their_kinds() {
    let hsa = |s| AmdError::call("hsa_amd_memory_pool_allocate", s);
    assert_eq!(
        hsa(status::ERROR_OUT_OF_RESOURCES).kind(),
        ErrorKind::OutOfMemory
    );
    assert_eq!(
        hsa(status::ERROR_INVALID_CODE_OBJECT).kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(hsa(status::ERROR).kind(), ErrorKind::Other);
    assert_eq!(AmdError::NoGpu { status: None }.kind(), ErrorKind::NoDevice);
    let fault = AmdError::KernelFault {
        kernels: vec!["saxpy".into()],
        status: status::ERROR_MEMORY_FAULT,
        address: Some(0xdead_0000),
    };
    assert_eq!(
        (fault.kind(), fault.device_lost()),
        (ErrorKind::KernelFault, true)
    );
    let lost = AmdError::QueueLost(status::ERROR_MEMORY_FAULT);
    assert_eq!(
        (lost.kind(), lost.device_lost()),
        (ErrorKind::DeviceLost, true)
    );
}

/// Every variant's message (those the test above pins aside), byte
/// for byte, with each branch of the messages that have logic: a status
/// the header names or not, a list of kernels (none, one, several), an
/// offer or none, an address or none; and which have a source.
#[test]
fn every_message_is_pinned_with_its_source() {
    use reprise_core::exec::{Dims, GeometryError, SegmentOutOfBounds};
    use std::error::Error;
    let no_metadata = "no code object metadata (an \"AMDGPU\" note of type NT_AMDGPU_METADATA, 32)";
    let cases = [
        (
            AmdError::RuntimeNotFound(LoadError::Symbol {
                library: "libhsa-runtime64.so.1".into(),
                symbol: "hsa_init",
            }),
            "HSA runtime not found (libhsa-runtime64.so.1 lacks hsa_init, which reprise \
             requires)"
                .to_string(),
            Some(
                "HSA runtime not found (libhsa-runtime64.so.1 lacks hsa_init, which reprise \
                 requires)",
            ),
        ),
        (
            AmdError::RuntimeNotFound(LoadError::Library {
                tried: vec![
                    ("a.so".into(), "no such file".into()),
                    ("b.so".into(), "bad ELF".into()),
                ],
            }),
            "HSA runtime not found (a.so: no such file; b.so: bad ELF)".to_string(),
            Some("HSA runtime not found (a.so: no such file; b.so: bad ELF)"),
        ),
        (
            AmdError::NoGpu {
                status: Some(status::ERROR),
            },
            "no AMD GPU found (HSA_STATUS_ERROR from hsa_init)".to_string(),
            None,
        ),
        (
            AmdError::NoGpu {
                status: Some(0x7777),
            },
            "no AMD GPU found (HSA status 0x7777 from hsa_init)".to_string(),
            None,
        ),
        (
            AmdError::NoGpu { status: None },
            "no AMD GPU found (hsa_init succeeded but the runtime reports no GPU agent)"
                .to_string(),
            None,
        ),
        (
            AmdError::NoSuchDevice {
                ordinal: 2,
                count: 1,
            },
            "no AMD GPU 2: this machine has 1 (numbered from 0)".to_string(),
            None,
        ),
        (
            AmdError::NoPool("kernarg pool"),
            "the HSA runtime reports no kernarg pool".to_string(),
            None,
        ),
        (
            AmdError::call("hsa_queue_create", status::ERROR_OUT_OF_RESOURCES),
            "hsa_queue_create failed: HSA_STATUS_ERROR_OUT_OF_RESOURCES".to_string(),
            None,
        ),
        (
            AmdError::call("hsa_queue_create", 0x7777),
            "hsa_queue_create failed: HSA status 0x7777".to_string(),
            None,
        ),
        (
            AmdError::CodeObject(CodeObjectError::NoMetadata),
            format!("the image is not a usable AMDGPU code object: {no_metadata}"),
            Some(no_metadata),
        ),
        (
            AmdError::WrongTarget {
                image: "gfx90a:xnack+".into(),
                device: "gfx1100".into(),
            },
            "the code object is built for gfx90a:xnack+, but the device is gfx1100".to_string(),
            None,
        ),
        (
            AmdError::NoKernel {
                name: "saxpy".into(),
                available: Vec::new(),
            },
            "the code object has no kernel `saxpy` (it has: none)".to_string(),
            None,
        ),
        (
            AmdError::NoKernel {
                name: "saxpy".into(),
                available: vec!["a".into(), "b".into()],
            },
            "the code object has no kernel `saxpy` (it has: a, b)".to_string(),
            None,
        ),
        (
            AmdError::NoVirtualMemory {
                base: 0x7f00_0000_0000,
                missing: vec!["hsa_amd_vmem_address_reserve", "hsa_amd_vmem_map"],
            },
            "replaying at the recorded address 0x7f0000000000 needs the HSA runtime's \
             virtual memory management (ROCm 6 and later); this runtime lacks \
             hsa_amd_vmem_address_reserve, hsa_amd_vmem_map"
                .to_string(),
            None,
        ),
        (
            AmdError::AddressUnavailable {
                wanted: 0x7f00_0000_0000,
                len: 4096,
                offered: 0,
            },
            "the HSA runtime cannot reserve 4096 bytes at 0x7f0000000000: something else \
             holds that range, or the runtime ignores address hints"
                .to_string(),
            None,
        ),
        (
            AmdError::AddressUnavailable {
                wanted: 0x7f00_0000_0000,
                len: 4096,
                offered: 0x1000,
            },
            "the HSA runtime cannot reserve 4096 bytes at 0x7f0000000000 (it offered 0x1000 \
             instead): something else holds that range, or the runtime ignores address \
             hints"
                .to_string(),
            None,
        ),
        (
            AmdError::Geometry(GeometryError::ZeroDimension {
                what: Dims::Grid,
                dims: [0, 1, 1],
            }),
            "grid 0x1x1: every dimension must be at least 1".to_string(),
            None,
        ),
        (
            AmdError::Segment(SegmentOutOfBounds {
                offset: 8,
                len: 16,
                buffer: 16,
            }),
            "copy of 16 bytes at buffer offset 8 overruns the 16-byte buffer".to_string(),
            None,
        ),
        (
            AmdError::ArgumentCount {
                kernel: "k".into(),
                expected: 3,
                got: 2,
            },
            "the kernel `k` takes 3 arguments, the launch has 2".to_string(),
            None,
        ),
        (
            AmdError::ArgumentSize {
                kernel: "k".into(),
                index: 1,
                expected: 4,
                got: 8,
            },
            "argument 1 of `k` is 4 bytes, the launch gives 8".to_string(),
            None,
        ),
        (
            AmdError::EmptyRegion,
            "a region of 0 bytes cannot be reserved".to_string(),
            None,
        ),
        (
            AmdError::KernelFault {
                kernels: Vec::new(),
                status: status::ERROR_MEMORY_FAULT,
                address: None,
            },
            "a kernel faulted: HSA_STATUS_ERROR_MEMORY_FAULT; the queue is unusable".to_string(),
            None,
        ),
        (
            AmdError::KernelFault {
                kernels: vec!["saxpy".into()],
                status: status::ERROR_MEMORY_FAULT,
                address: Some(0xdead_0000),
            },
            "the kernel `saxpy` faulted: HSA_STATUS_ERROR_MEMORY_FAULT (an access at \
             0xdead0000); the queue is unusable"
                .to_string(),
            None,
        ),
        (
            AmdError::KernelFault {
                kernels: vec!["a".into(), "b".into(), "c".into()],
                status: 0x7777,
                address: Some(0),
            },
            "one of the kernels `a`, `b`, `c` faulted: HSA status 0x7777 (an access at \
             0x0); the queue is unusable"
                .to_string(),
            None,
        ),
        (
            AmdError::QueueLost(status::ERROR_MEMORY_FAULT),
            "the queue was lost to an earlier kernel fault (HSA_STATUS_ERROR_MEMORY_FAULT)"
                .to_string(),
            None,
        ),
    ];
    for (e, message, source) in &cases {
        assert_eq!(e.to_string(), *message, "{e:?}");
        let got = e.source().map(|s| s.to_string());
        assert_eq!(got.as_deref(), *source, "{e:?}");
    }
    let hsa = HsaError {
        call: "hsa_init",
        status: status::ERROR,
    };
    assert_eq!(hsa.to_string(), "hsa_init failed: HSA_STATUS_ERROR");
}
