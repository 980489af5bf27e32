use core::mem::{offset_of, size_of};

use super::*;

// Sizes and offsets as `hsa.h` lays the structures out (large model):
// `hsa_queue_t` is 40 bytes, AQL packets 64.
#[test]
fn layouts_match_the_header() {
    assert_eq!(size_of::<hsa_queue_t>(), 40);
    assert_eq!(offset_of!(hsa_queue_t, base_address), 8);
    assert_eq!(offset_of!(hsa_queue_t, doorbell_signal), 16);
    assert_eq!(offset_of!(hsa_queue_t, size), 24);
    assert_eq!(offset_of!(hsa_queue_t, id), 32);
    assert_eq!(size_of::<hsa_kernel_dispatch_packet_t>(), 64);
    assert_eq!(offset_of!(hsa_kernel_dispatch_packet_t, setup), 2);
    assert_eq!(
        offset_of!(hsa_kernel_dispatch_packet_t, workgroup_size_x),
        4
    );
    assert_eq!(offset_of!(hsa_kernel_dispatch_packet_t, grid_size_x), 12);
    assert_eq!(
        offset_of!(hsa_kernel_dispatch_packet_t, private_segment_size),
        24
    );
    assert_eq!(
        offset_of!(hsa_kernel_dispatch_packet_t, group_segment_size),
        28
    );
    assert_eq!(offset_of!(hsa_kernel_dispatch_packet_t, kernel_object), 32);
    assert_eq!(
        offset_of!(hsa_kernel_dispatch_packet_t, kernarg_address),
        40
    );
    assert_eq!(
        offset_of!(hsa_kernel_dispatch_packet_t, completion_signal),
        56
    );
    assert_eq!(size_of::<hsa_barrier_and_packet_t>(), 64);
    assert_eq!(offset_of!(hsa_barrier_and_packet_t, dep_signal), 8);
    assert_eq!(offset_of!(hsa_barrier_and_packet_t, completion_signal), 56);
    assert_eq!(size_of::<hsa_amd_memory_access_desc_t>(), 16);
    assert_eq!(offset_of!(hsa_amd_memory_access_desc_t, agent_handle), 8);
    assert_eq!(size_of::<hsa_dim3_t>(), 12);
}

#[test]
fn every_status_has_one_name() {
    for (i, (v, n)) in status::NAMES.iter().enumerate() {
        assert!(n.starts_with("HSA_STATUS_"), "{n}");
        assert_eq!(status::name(*v), Some(*n));
        assert!(
            status::NAMES[i + 1..].iter().all(|(w, m)| w != v && m != n),
            "{n} twice"
        );
    }
    assert_eq!(
        status::name(0x1008),
        Some("HSA_STATUS_ERROR_OUT_OF_RESOURCES")
    );
}

#[test]
fn a_missing_library_is_an_error_naming_it() {
    let err = Hsa::load_from(&["/nonexistent/libhsa-runtime64.so.1"]).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("HSA runtime not found (/nonexistent/libhsa-runtime64.so.1: "),
        "{text}"
    );
    assert!(text.contains("No such file"), "{text}");
}

#[test]
fn a_library_without_the_entry_points_is_an_error_naming_the_first() {
    // The C library is a real shared object without any HSA entry point.
    let err = Hsa::load_from(&["libc.so.6"]).unwrap_err();
    assert_eq!(
        err,
        LoadError::Symbol {
            library: "libc.so.6".into(),
            symbol: "hsa_init"
        }
    );
    assert_eq!(
        err.to_string(),
        "HSA runtime not found (libc.so.6 lacks hsa_init, which reprise requires)"
    );
}

#[test]
fn headers_bits_compose() {
    let h = packet::header(packet::TYPE_BARRIER_AND);
    assert_eq!(h & 0xff, packet::TYPE_BARRIER_AND);
    assert_eq!((h >> packet::HEADER_BARRIER) & 1, 1);
    assert_eq!(
        (h >> packet::HEADER_SCACQUIRE_FENCE_SCOPE) & 3,
        packet::FENCE_SCOPE_SYSTEM
    );
    assert_eq!(
        (h >> packet::HEADER_SCRELEASE_FENCE_SCOPE) & 3,
        packet::FENCE_SCOPE_SYSTEM
    );
}
