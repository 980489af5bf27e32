//! The host executor's errors are typed and say their kind
//! (`ExecError::kind`): what code above the executors decides by without
//! knowing `HostError`.

use std::future::poll_fn;

use reprise_core::block_on;
use reprise_core::exec::{
    ErrorKind, ExecError, Executor, KernelArgs, Launch, LaunchConfig, Queue, RegionRequest,
};
use reprise_host::elf::BadImageReason;
use reprise_host::{HostError, HostExecutor, LoadStep, OsContext, OsError, TooLarge};

const FAULTS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels/faults.so"));

fn kind(e: &HostError) -> (ErrorKind, bool) {
    (e.kind(), e.device_lost())
}

fn load_err(exec: &HostExecutor, image: &[u8]) -> HostError {
    match exec.load_image(image) {
        Ok(_) => panic!("the image loaded"),
        Err(e) => e,
    }
}

#[test]
fn a_bad_image_is_invalid_input_with_a_typed_reason() {
    let exec = HostExecutor::new().unwrap();
    let e = load_err(&exec, b"just some text");
    assert_eq!(kind(&e), (ErrorKind::InvalidInput, false), "{e}");
    assert!(
        matches!(e, HostError::BadImage(BadImageReason::NotElf(_))),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .starts_with("the image is not an ELF shared object (it looks like: "),
        "{e}"
    );

    // An executable (e_type 2), and an image for another machine (AArch64,
    // e_machine 183).
    let mut exe = FAULTS.to_vec();
    exe[16..18].copy_from_slice(&2u16.to_le_bytes());
    let e = load_err(&exec, &exe);
    assert_eq!(
        e,
        HostError::BadImage(BadImageReason::NotSharedObject { elf_type: 2 })
    );
    assert!(
        e.to_string()
            .contains("not a shared object (ELF type 2, ET_EXEC"),
        "{e}"
    );
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let mut arm = FAULTS.to_vec();
    arm[18..20].copy_from_slice(&183u16.to_le_bytes());
    let e = load_err(&exec, &arm);
    assert!(
        matches!(
            e,
            HostError::BadImage(BadImageReason::WrongMachine { machine: 183, .. })
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("x86-64 only"), "{e}");

    // Truncated: whatever part is cut, a reason, never a load.
    for len in [64, 200, FAULTS.len() / 2] {
        let e = load_err(&exec, &FAULTS[..len]);
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{len}: {e}");
        assert!(
            matches!(
                e,
                HostError::BadImage(
                    BadImageReason::Truncated { .. } | BadImageReason::Unreadable { .. }
                )
            ),
            "{len}: {e:?}"
        );
        assert!(e.to_string().contains("truncated"), "{len}: {e}");
    }
}

#[test]
fn requests_the_executor_cannot_serve_say_their_kind() {
    let exec = HostExecutor::new().unwrap();
    let e = exec.reserve(RegionRequest::new(Some(0), 4096)).unwrap_err();
    assert_eq!(
        (e.clone(), kind(&e).0),
        (HostError::NullBase(0), ErrorKind::InvalidInput)
    );
    let e = exec
        .reserve(RegionRequest::new(Some(0x1000_0001), 4096))
        .unwrap_err();
    assert_eq!(kind(&e), (ErrorKind::InvalidInput, false), "{e}");
    let e = exec
        .reserve(RegionRequest::new(None, u64::MAX))
        .unwrap_err();
    assert!(matches!(e, HostError::TooLarge { .. }), "{e:?}");
    assert_eq!(kind(&e), (ErrorKind::OutOfMemory, false), "{e}");
    assert!(e.to_string().starts_with("mmap failed: region of "), "{e}");

    // The address of a live region is taken.
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let base = reprise_core::exec::DeviceRegion::base(&region);
    let e = exec
        .reserve(RegionRequest::new(Some(base), 1 << 20))
        .unwrap_err();
    assert_eq!(kind(&e), (ErrorKind::AddressUnavailable, false), "{e}");

    let image = exec.load_image(FAULTS).unwrap();
    let Err(e) = exec.kernel(&image, "no_such_kernel") else {
        panic!("a kernel the image lacks");
    };
    assert_eq!(kind(&e), (ErrorKind::InvalidInput, false), "{e}");
    let kernel = exec.kernel(&image, "store").unwrap();
    let mut q = exec.queue().unwrap();
    let values = vec![0u64; reprise_host::MAX_ARGS + 1];
    let launch = Launch {
        config: LaunchConfig {
            grid: [1, 1, 1],
            block: [1, 1, 1],
            shared_mem: 0,
        },
        args: KernelArgs {
            values: &values,
            sizes: &[],
            data: &[],
        },
    };
    let e = q.launch(&kernel, &launch).unwrap_err();
    assert!(matches!(e, HostError::TooManyArgs { .. }), "{e:?}");
    assert_eq!(kind(&e), (ErrorKind::InvalidInput, false), "{e}");
}

#[test]
fn a_kernel_fault_is_of_its_kind_and_leaves_the_device_usable() {
    let exec = HostExecutor::new().unwrap();
    let image = exec.load_image(FAULTS).unwrap();
    let kernel = exec.kernel(&image, "store").unwrap();
    let mut q = exec.queue().unwrap();
    let values = [8u64, 1];
    let launch = Launch {
        config: LaunchConfig {
            grid: [1, 1, 1],
            block: [1, 1, 1],
            shared_mem: 0,
        },
        args: KernelArgs {
            values: &values,
            sizes: &[],
            data: &[],
        },
    };
    q.launch(&kernel, &launch).unwrap();
    let e = block_on(poll_fn(|cx| q.poll_synchronize(cx))).unwrap_err();
    assert!(matches!(e, HostError::KernelFault(_)), "{e:?}");
    // The host's queue goes on working after a fault: not lost.
    assert_eq!(kind(&e), (ErrorKind::KernelFault, false), "{e}");
}

#[test]
fn operating_system_errors_keep_the_errno_and_their_messages() {
    let e = HostError::Os {
        call: "mmap",
        error: OsError::from_errno(libc::ENOMEM),
        context: OsContext::At {
            base: 0x1000,
            len: 4096,
        },
    };
    assert_eq!(kind(&e), (ErrorKind::OutOfMemory, false));
    let m = e.to_string();
    assert!(
        m.starts_with("mmap failed: Cannot allocate memory (os error 12)"),
        "{m}"
    );
    assert!(m.ends_with(" (at 0x1000, 4096 bytes)"), "{m}");
    let e = HostError::Os {
        call: "sigaction",
        error: OsError::from_errno(libc::EINVAL),
        context: OsContext::FaultHandler,
    };
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(
        e.to_string()
            .ends_with("(installing the handler that reports kernel faults)"),
        "{e}"
    );
    let e = HostError::TooLarge {
        what: TooLarge::Buffer(1 << 62),
    };
    assert_eq!(
        e.to_string(),
        "mmap failed: a buffer of 4611686018427387904 bytes is larger than the address space"
    );
    let e = HostError::Load {
        step: LoadStep::Open,
        detail: "libomp.so: cannot open shared object file".into(),
    };
    assert_eq!(kind(&e), (ErrorKind::InvalidInput, false));
    assert_eq!(
        e.to_string(),
        "loading the image failed: libomp.so: cannot open shared object file"
    );
    let e = HostError::Load {
        step: LoadStep::LinkMap,
        detail: "no link map".into(),
    };
    assert_eq!(
        e.to_string(),
        "loading the image failed: dlinfo: no link map"
    );
    assert_eq!(HostError::WorkerGone.kind(), ErrorKind::DeviceLost);
    assert!(HostError::WorkerGone.device_lost());
}
