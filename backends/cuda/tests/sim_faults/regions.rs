//! Regions: a step of a reservation that fails undoes every earlier one, and
//! a recorded address whose plain hint fails outright is tried aligned.

use reprise_core::exec::{DeviceRegion, Executor, RegionRequest};

use crate::common::sim;
use crate::{MIB, OUT_OF_MEMORY, simulated};

#[test]
fn a_failed_step_of_a_region_undoes_every_earlier_step() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    // A fresh region falls back to any address when the suggested one
    // fails, so the reservation itself is made to fail at a recorded
    // address, for both tries (the plain hint, then the aligned one).
    let recorded = reprise_cuda::SUGGESTED_BASE + (64 << 30);
    for (call, base, times) in [
        ("cuMemGetAllocationGranularity", None, 1),
        ("cuMemAddressReserve", Some(recorded), 2),
        ("cuMemCreate", None, 1),
        ("cuMemMap", Some(recorded), 1),
        ("cuMemSetAccess", None, 1),
    ] {
        let before = sim::counts().unwrap();
        assert!(sim::fail_times(call, OUT_OF_MEMORY, 0, times));
        let err = exec.reserve(RegionRequest::new(base, MIB)).expect_err(call);
        assert!(err.to_string().contains(call), "{call}: {err}");
        assert_eq!(
            sim::counts().unwrap(),
            before,
            "{call} left something behind"
        );
    }
    // And the executor still works.
    let r = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    assert!(r.capacity() >= MIB);
}

#[test]
fn a_recorded_address_is_tried_aligned_when_the_plain_hint_fails_outright() {
    let Some((_lock, exec)) = simulated() else {
        return;
    };
    let recorded = reprise_cuda::SUGGESTED_BASE + (96 << 30);
    // The plain hint fails; the aligned try gets the address.
    assert!(sim::fail("cuMemAddressReserve", OUT_OF_MEMORY, 0));
    let r = exec
        .reserve(RegionRequest::new(Some(recorded), MIB))
        .unwrap_or_else(|e| panic!("the aligned try was not made: {e}"));
    assert_eq!(r.base(), recorded);
    drop(r);
    // Both fail outright: the driver's error, naming the address.
    let before = sim::counts().unwrap();
    assert!(sim::fail_times("cuMemAddressReserve", OUT_OF_MEMORY, 0, 2));
    let err = exec
        .reserve(RegionRequest::new(Some(recorded), MIB))
        .expect_err("both tries failed");
    assert!(
        matches!(err, reprise_cuda::CudaError::AddressUnavailable { requested, .. } if requested == recorded),
        "{err:?}"
    );
    assert!(err.to_string().contains("0x155140000000"), "{err}");
    assert_eq!(sim::counts().unwrap(), before);
}
