//! What runs on machines without a GPU (CI): a missing driver is a typed
//! error, never a panic.

use reprise_cuda::{CudaError, CudaExecutor, driver_present};

#[test]
fn missing_driver_is_a_typed_error() {
    let result = CudaExecutor::new(0);
    if driver_present() {
        // A driver is installed: whatever happens must still be a value.
        match result {
            Ok(gpu) => assert_eq!(gpu.ordinal(), 0),
            Err(e) => assert_ne!(e, CudaError::DriverNotFound, "{e}"),
        }
        return;
    }
    let err = result.expect_err("no driver, yet an executor");
    assert_eq!(err, CudaError::DriverNotFound);
    assert_eq!(
        err.to_string(),
        "CUDA driver not found (libcuda.so could not be loaded)"
    );
    // Asking again gives the same answer (the failed load is remembered).
    assert_eq!(CudaExecutor::new(1).unwrap_err(), CudaError::DriverNotFound);
}

#[test]
fn bad_ordinals_are_rejected_before_use() {
    match CudaExecutor::new(-1) {
        Err(CudaError::DriverNotFound | CudaError::NoDevice) => {}
        Err(CudaError::BadOrdinal { ordinal: -1, .. }) => {}
        other => panic!("unexpected: {other:?}"),
    }
}
