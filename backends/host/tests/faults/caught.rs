//! Faults caught in a kernel: a wild store, a store to read-only memory,
//! division by zero, an illegal instruction, a call through a wild pointer,
//! each an error of its launch, with the queue and the executor working on.

use reprise_core::exec::{DeviceRegion, Executor, Queue, RegionRequest};
use reprise_host::{FaultKind, FaultPlace, HostError, HostExecutor};

use crate::{FAULTS, fault, good_launch, launch, read_u64, run, sync};

#[test]
fn a_wild_store_is_an_error_and_later_launches_work() {
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    let f = fault(run(&exec, &mut q, "store", &[8, 1]));
    assert_eq!(f.kind, FaultKind::InvalidAccess);
    assert_eq!((f.signal, f.code, f.addr), (libc::SIGSEGV, 1, 8));
    assert_eq!(f.kernel, "store");
    match &f.place {
        FaultPlace::Outside { regions } => assert!(
            regions.contains(&(region.base(), region.base() + region.capacity())),
            "{regions:x?}"
        ),
        other => panic!("{other:?}"),
    }
    let text = f.to_string();
    let want = "the kernel `store` faulted: invalid memory access at 0x8 (SIGSEGV: address not mapped), outside";
    assert!(text.starts_with(want), "{text}");
    assert!(
        text.contains(&format!(
            "{:#x}..{:#x}",
            region.base(),
            region.base() + region.capacity()
        )),
        "{text}"
    );

    // The same queue, after the error was reported: works.
    good_launch(&exec, &mut q, &region, 42);
    // A store just past the region's end is outside it, too.
    let end = region.base() + region.capacity();
    let f = fault(run(&exec, &mut q, "store", &[end, 1]));
    assert_eq!(f.addr, end);
    assert!(matches!(f.place, FaultPlace::Outside { .. }), "{f}");
    // Again and again: each fault is caught, not just the first.
    for _ in 0..3 {
        fault(run(&exec, &mut q, "store", &[16, 1]));
    }
    good_launch(&exec, &mut q, &region, 43);
    drop(q);
    drop(region);

    // A fresh executor and queue in the same process.
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    good_launch(&exec, &mut q, &region, 44);
}

#[test]
fn work_queued_after_a_fault_is_skipped_until_the_synchronize() {
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    let image = exec.load_image(FAULTS).unwrap();
    let store = exec.kernel(&image, "store").unwrap();
    q.launch(&store, &launch(&[8, 1])).unwrap();
    q.launch(&store, &launch(&[region.base(), 7])).unwrap();
    assert!(matches!(sync(&mut q), Err(HostError::KernelFault(_))));
    assert_eq!(read_u64(&exec, &mut q, region.base()), 0, "skipped");
}

#[test]
fn a_store_to_read_only_memory_is_a_protection_fault() {
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    let f = fault(run(&exec, &mut q, "store_read_only", &[1]));
    assert_eq!(
        (f.kind, f.signal, f.code),
        (FaultKind::Protection, libc::SIGSEGV, 2)
    );
    assert!(f.to_string().contains("protection fault at 0x"), "{f}");
    good_launch(&exec, &mut q, &region, 5);
}

#[test]
fn division_by_zero_and_illegal_instructions_are_caught() {
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    let f = fault(run(&exec, &mut q, "divide", &[region.base(), 1, 0]));
    assert_eq!((f.kind, f.signal), (FaultKind::Arithmetic, libc::SIGFPE));
    assert_eq!(f.place, FaultPlace::Instruction);
    assert!(
        f.to_string()
            .contains("arithmetic fault by the instruction at 0x"),
        "{f}"
    );
    assert!(f.to_string().contains("integer division by zero"), "{f}");
    let f = fault(run(&exec, &mut q, "illegal", &[]));
    assert_eq!(
        (f.kind, f.signal),
        (FaultKind::IllegalInstruction, libc::SIGILL)
    );
    good_launch(&exec, &mut q, &region, 6);
}

#[test]
fn a_call_through_a_wild_pointer_is_caught() {
    let exec = HostExecutor::new().unwrap();
    let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
    let mut q = exec.queue().unwrap();
    // The fetch at 0x8 faults outside the image, but the return address the
    // call pushed is the kernel's: nothing outside it ran.
    let f = fault(run(&exec, &mut q, "call_pointer", &[8]));
    assert_eq!(
        (f.kind, f.signal, f.addr),
        (FaultKind::InvalidAccess, libc::SIGSEGV, 8)
    );
    good_launch(&exec, &mut q, &region, 9);
}

#[test]
fn a_region_at_address_zero_is_refused() {
    let exec = HostExecutor::new().unwrap();
    let err = exec
        .reserve(RegionRequest::new(Some(0), 1 << 20))
        .unwrap_err();
    assert_eq!(err, HostError::NullBase(0));
    assert_eq!(err.to_string(), "region base 0x0 is not a usable address");
}
