//! The HSA runtime's types and constants that reprise uses, with the values
//! and layouts of `hsa.h` and `hsa_ext_amd.h` (HSA runtime 1.x as ROCm
//! ships it; the `hsa_amd_vmem_*` types are ROCm 6's). The layouts are
//! `#[repr(C)]` and their sizes and field offsets are checked by this
//! crate's tests against the header's.

#![allow(non_camel_case_types)]

use core::ffi::c_void;

/// `hsa_status_t`.
pub type hsa_status_t = u32;
/// `hsa_signal_value_t` (64-bit large model).
pub type hsa_signal_value_t = i64;

macro_rules! handle {
    ($(#[$doc:meta] $name:ident),* $(,)?) => {$(
        #[$doc]
        #[repr(C)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name {
            /// The runtime's opaque handle.
            pub handle: u64,
        }
    )*};
}

handle! {
    /// `hsa_agent_t`.
    hsa_agent_t,
    /// `hsa_signal_t`.
    hsa_signal_t,
    /// `hsa_isa_t`.
    hsa_isa_t,
    /// `hsa_executable_t`.
    hsa_executable_t,
    /// `hsa_executable_symbol_t`.
    hsa_executable_symbol_t,
    /// `hsa_code_object_reader_t`.
    hsa_code_object_reader_t,
    /// `hsa_amd_memory_pool_t`.
    hsa_amd_memory_pool_t,
    /// `hsa_amd_vmem_alloc_handle_t` (ROCm 6).
    hsa_amd_vmem_alloc_handle_t,
}

/// `hsa_queue_t`, the user-visible head of an AQL queue (large model, little
/// endian).
#[repr(C)]
#[derive(Debug)]
pub struct hsa_queue_t {
    /// `hsa_queue_type32_t`.
    pub type_: u32,
    /// Feature bits.
    pub features: u32,
    /// Start of the ring of 64-byte packets.
    pub base_address: *mut c_void,
    /// Signal rung after a packet is written.
    pub doorbell_signal: hsa_signal_t,
    /// Packets the ring holds (a power of two).
    pub size: u32,
    /// Reserved.
    pub reserved1: u32,
    /// Queue identifier.
    pub id: u64,
}

/// `hsa_kernel_dispatch_packet_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct hsa_kernel_dispatch_packet_t {
    /// Packet header (type, barrier bit, fence scopes): written last.
    pub header: u16,
    /// Dimensions in bits 0-1.
    pub setup: u16,
    /// Work-items per work-group in x.
    pub workgroup_size_x: u16,
    /// Work-items per work-group in y.
    pub workgroup_size_y: u16,
    /// Work-items per work-group in z.
    pub workgroup_size_z: u16,
    /// Reserved, 0.
    pub reserved0: u16,
    /// Work-items (not work-groups) in x.
    pub grid_size_x: u32,
    /// Work-items in y.
    pub grid_size_y: u32,
    /// Work-items in z.
    pub grid_size_z: u32,
    /// Private (scratch) bytes per work-item.
    pub private_segment_size: u32,
    /// Group (LDS) bytes per work-group, static plus dynamic.
    pub group_segment_size: u32,
    /// The kernel's code descriptor address.
    pub kernel_object: u64,
    /// The kernel arguments (16-byte aligned, in kernarg memory).
    pub kernarg_address: u64,
    /// Reserved, 0.
    pub reserved2: u64,
    /// Decremented when the kernel completes.
    pub completion_signal: hsa_signal_t,
}

/// `hsa_barrier_and_packet_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct hsa_barrier_and_packet_t {
    /// Packet header: written last.
    pub header: u16,
    /// Reserved, 0.
    pub reserved0: u16,
    /// Reserved, 0.
    pub reserved1: u32,
    /// Signals that must all reach 0 (handle 0: none).
    pub dep_signal: [hsa_signal_t; 5],
    /// Reserved, 0.
    pub reserved2: u64,
    /// Decremented when the barrier resolves.
    pub completion_signal: hsa_signal_t,
}

/// `hsa_dim3_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct hsa_dim3_t {
    /// x.
    pub x: u32,
    /// y.
    pub y: u32,
    /// z.
    pub z: u32,
}

/// `hsa_amd_memory_access_desc_t` (ROCm 6).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hsa_amd_memory_access_desc_t {
    /// `hsa_access_permission_t`.
    pub permissions: u32,
    /// The agent given the access.
    pub agent_handle: hsa_agent_t,
}

/// `hsa_amd_gpu_memory_fault_info_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct hsa_amd_gpu_memory_fault_info_t {
    /// The agent where the fault occurred.
    pub agent: hsa_agent_t,
    /// The virtual address accessed.
    pub virtual_address: u64,
    /// `hsa_amd_memory_fault_reason_t` bits.
    pub fault_reason_mask: u32,
}

/// `hsa_amd_event_t`: an event type and, for
/// `HSA_AMD_GPU_MEMORY_FAULT_EVENT` (0), the fault (the only member of the
/// header's union in the runtimes reprise knows).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct hsa_amd_event_t {
    /// `hsa_amd_event_type_t`.
    pub event_type: u32,
    /// Valid for a memory fault event.
    pub memory_fault: hsa_amd_gpu_memory_fault_info_t,
}

/// `hsa_amd_event_type_t`.
pub mod event_type {
    /// `HSA_AMD_GPU_MEMORY_FAULT_EVENT`.
    pub const GPU_MEMORY_FAULT: u32 = 0;
}

/// `hsa_status_t` values.
pub mod status {
    /// `HSA_STATUS_SUCCESS`.
    pub const SUCCESS: u32 = 0x0;
    /// `HSA_STATUS_INFO_BREAK`: an iteration callback stopped early.
    pub const INFO_BREAK: u32 = 0x1;
    /// `HSA_STATUS_ERROR`.
    pub const ERROR: u32 = 0x1000;
    /// `HSA_STATUS_ERROR_INVALID_ARGUMENT`.
    pub const ERROR_INVALID_ARGUMENT: u32 = 0x1001;
    /// `HSA_STATUS_ERROR_INVALID_QUEUE_CREATION`.
    pub const ERROR_INVALID_QUEUE_CREATION: u32 = 0x1002;
    /// `HSA_STATUS_ERROR_INVALID_ALLOCATION`.
    pub const ERROR_INVALID_ALLOCATION: u32 = 0x1003;
    /// `HSA_STATUS_ERROR_INVALID_AGENT`.
    pub const ERROR_INVALID_AGENT: u32 = 0x1004;
    /// `HSA_STATUS_ERROR_INVALID_REGION`.
    pub const ERROR_INVALID_REGION: u32 = 0x1005;
    /// `HSA_STATUS_ERROR_INVALID_SIGNAL`.
    pub const ERROR_INVALID_SIGNAL: u32 = 0x1006;
    /// `HSA_STATUS_ERROR_INVALID_QUEUE`.
    pub const ERROR_INVALID_QUEUE: u32 = 0x1007;
    /// `HSA_STATUS_ERROR_OUT_OF_RESOURCES`.
    pub const ERROR_OUT_OF_RESOURCES: u32 = 0x1008;
    /// `HSA_STATUS_ERROR_INVALID_PACKET_FORMAT`.
    pub const ERROR_INVALID_PACKET_FORMAT: u32 = 0x1009;
    /// `HSA_STATUS_ERROR_RESOURCE_FREE`.
    pub const ERROR_RESOURCE_FREE: u32 = 0x100A;
    /// `HSA_STATUS_ERROR_NOT_INITIALIZED`.
    pub const ERROR_NOT_INITIALIZED: u32 = 0x100B;
    /// `HSA_STATUS_ERROR_REFCOUNT_OVERFLOW`.
    pub const ERROR_REFCOUNT_OVERFLOW: u32 = 0x100C;
    /// `HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS`.
    pub const ERROR_INCOMPATIBLE_ARGUMENTS: u32 = 0x100D;
    /// `HSA_STATUS_ERROR_INVALID_INDEX`.
    pub const ERROR_INVALID_INDEX: u32 = 0x100E;
    /// `HSA_STATUS_ERROR_INVALID_ISA`.
    pub const ERROR_INVALID_ISA: u32 = 0x100F;
    /// `HSA_STATUS_ERROR_INVALID_CODE_OBJECT`.
    pub const ERROR_INVALID_CODE_OBJECT: u32 = 0x1010;
    /// `HSA_STATUS_ERROR_INVALID_EXECUTABLE`.
    pub const ERROR_INVALID_EXECUTABLE: u32 = 0x1011;
    /// `HSA_STATUS_ERROR_FROZEN_EXECUTABLE`.
    pub const ERROR_FROZEN_EXECUTABLE: u32 = 0x1012;
    /// `HSA_STATUS_ERROR_INVALID_SYMBOL_NAME`.
    pub const ERROR_INVALID_SYMBOL_NAME: u32 = 0x1013;
    /// `HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED`.
    pub const ERROR_VARIABLE_ALREADY_DEFINED: u32 = 0x1014;
    /// `HSA_STATUS_ERROR_VARIABLE_UNDEFINED`.
    pub const ERROR_VARIABLE_UNDEFINED: u32 = 0x1015;
    /// `HSA_STATUS_ERROR_EXCEPTION`.
    pub const ERROR_EXCEPTION: u32 = 0x1016;
    /// `HSA_STATUS_ERROR_INVALID_ISA_NAME`.
    pub const ERROR_INVALID_ISA_NAME: u32 = 0x1017;
    /// `HSA_STATUS_ERROR_INVALID_CODE_SYMBOL`.
    pub const ERROR_INVALID_CODE_SYMBOL: u32 = 0x1018;
    /// `HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL`.
    pub const ERROR_INVALID_EXECUTABLE_SYMBOL: u32 = 0x1019;
    /// `HSA_STATUS_ERROR_INVALID_FILE`.
    pub const ERROR_INVALID_FILE: u32 = 0x1020;
    /// `HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER`.
    pub const ERROR_INVALID_CODE_OBJECT_READER: u32 = 0x1021;
    /// `HSA_STATUS_ERROR_INVALID_CACHE`.
    pub const ERROR_INVALID_CACHE: u32 = 0x1022;
    /// `HSA_STATUS_ERROR_INVALID_WAVEFRONT`.
    pub const ERROR_INVALID_WAVEFRONT: u32 = 0x1023;
    /// `HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP`.
    pub const ERROR_INVALID_SIGNAL_GROUP: u32 = 0x1024;
    /// `HSA_STATUS_ERROR_INVALID_RUNTIME_STATE`.
    pub const ERROR_INVALID_RUNTIME_STATE: u32 = 0x1025;
    /// `HSA_STATUS_ERROR_FATAL`.
    pub const ERROR_FATAL: u32 = 0x1026;
    /// `HSA_STATUS_ERROR_INVALID_MEMORY_POOL` (AMD extension).
    pub const ERROR_INVALID_MEMORY_POOL: u32 = 40;
    /// `HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION` (AMD extension).
    pub const ERROR_MEMORY_APERTURE_VIOLATION: u32 = 41;
    /// `HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION` (AMD extension).
    pub const ERROR_ILLEGAL_INSTRUCTION: u32 = 42;
    /// `HSA_STATUS_ERROR_MEMORY_FAULT` (AMD extension).
    pub const ERROR_MEMORY_FAULT: u32 = 43;
    /// `HSA_STATUS_CU_MASK_REDUCED` (AMD extension).
    pub const CU_MASK_REDUCED: u32 = 44;

    /// Every status above with its name, as the header spells it.
    pub const NAMES: &[(u32, &str)] = &[
        (SUCCESS, "HSA_STATUS_SUCCESS"),
        (INFO_BREAK, "HSA_STATUS_INFO_BREAK"),
        (ERROR, "HSA_STATUS_ERROR"),
        (ERROR_INVALID_ARGUMENT, "HSA_STATUS_ERROR_INVALID_ARGUMENT"),
        (
            ERROR_INVALID_QUEUE_CREATION,
            "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION",
        ),
        (
            ERROR_INVALID_ALLOCATION,
            "HSA_STATUS_ERROR_INVALID_ALLOCATION",
        ),
        (ERROR_INVALID_AGENT, "HSA_STATUS_ERROR_INVALID_AGENT"),
        (ERROR_INVALID_REGION, "HSA_STATUS_ERROR_INVALID_REGION"),
        (ERROR_INVALID_SIGNAL, "HSA_STATUS_ERROR_INVALID_SIGNAL"),
        (ERROR_INVALID_QUEUE, "HSA_STATUS_ERROR_INVALID_QUEUE"),
        (ERROR_OUT_OF_RESOURCES, "HSA_STATUS_ERROR_OUT_OF_RESOURCES"),
        (
            ERROR_INVALID_PACKET_FORMAT,
            "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT",
        ),
        (ERROR_RESOURCE_FREE, "HSA_STATUS_ERROR_RESOURCE_FREE"),
        (ERROR_NOT_INITIALIZED, "HSA_STATUS_ERROR_NOT_INITIALIZED"),
        (
            ERROR_REFCOUNT_OVERFLOW,
            "HSA_STATUS_ERROR_REFCOUNT_OVERFLOW",
        ),
        (
            ERROR_INCOMPATIBLE_ARGUMENTS,
            "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS",
        ),
        (ERROR_INVALID_INDEX, "HSA_STATUS_ERROR_INVALID_INDEX"),
        (ERROR_INVALID_ISA, "HSA_STATUS_ERROR_INVALID_ISA"),
        (
            ERROR_INVALID_CODE_OBJECT,
            "HSA_STATUS_ERROR_INVALID_CODE_OBJECT",
        ),
        (
            ERROR_INVALID_EXECUTABLE,
            "HSA_STATUS_ERROR_INVALID_EXECUTABLE",
        ),
        (
            ERROR_FROZEN_EXECUTABLE,
            "HSA_STATUS_ERROR_FROZEN_EXECUTABLE",
        ),
        (
            ERROR_INVALID_SYMBOL_NAME,
            "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME",
        ),
        (
            ERROR_VARIABLE_ALREADY_DEFINED,
            "HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED",
        ),
        (
            ERROR_VARIABLE_UNDEFINED,
            "HSA_STATUS_ERROR_VARIABLE_UNDEFINED",
        ),
        (ERROR_EXCEPTION, "HSA_STATUS_ERROR_EXCEPTION"),
        (ERROR_INVALID_ISA_NAME, "HSA_STATUS_ERROR_INVALID_ISA_NAME"),
        (
            ERROR_INVALID_CODE_SYMBOL,
            "HSA_STATUS_ERROR_INVALID_CODE_SYMBOL",
        ),
        (
            ERROR_INVALID_EXECUTABLE_SYMBOL,
            "HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL",
        ),
        (ERROR_INVALID_FILE, "HSA_STATUS_ERROR_INVALID_FILE"),
        (
            ERROR_INVALID_CODE_OBJECT_READER,
            "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER",
        ),
        (ERROR_INVALID_CACHE, "HSA_STATUS_ERROR_INVALID_CACHE"),
        (
            ERROR_INVALID_WAVEFRONT,
            "HSA_STATUS_ERROR_INVALID_WAVEFRONT",
        ),
        (
            ERROR_INVALID_SIGNAL_GROUP,
            "HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP",
        ),
        (
            ERROR_INVALID_RUNTIME_STATE,
            "HSA_STATUS_ERROR_INVALID_RUNTIME_STATE",
        ),
        (ERROR_FATAL, "HSA_STATUS_ERROR_FATAL"),
        (
            ERROR_INVALID_MEMORY_POOL,
            "HSA_STATUS_ERROR_INVALID_MEMORY_POOL",
        ),
        (
            ERROR_MEMORY_APERTURE_VIOLATION,
            "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION",
        ),
        (
            ERROR_ILLEGAL_INSTRUCTION,
            "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION",
        ),
        (ERROR_MEMORY_FAULT, "HSA_STATUS_ERROR_MEMORY_FAULT"),
        (CU_MASK_REDUCED, "HSA_STATUS_CU_MASK_REDUCED"),
    ];

    /// The header's name of `status`, or `None` for a value it does not
    /// define.
    ///
    /// ```
    /// assert_eq!(hsa_sys::status::name(0x1008), Some("HSA_STATUS_ERROR_OUT_OF_RESOURCES"));
    /// assert_eq!(hsa_sys::status::name(0x7777), None);
    /// ```
    pub fn name(status: u32) -> Option<&'static str> {
        NAMES.iter().find(|(v, _)| *v == status).map(|(_, n)| *n)
    }
}

/// `hsa_agent_info_t` values used here.
pub mod agent_info {
    /// `HSA_AGENT_INFO_NAME`: `char[64]`.
    pub const NAME: u32 = 0;
    /// `HSA_AGENT_INFO_WAVEFRONT_SIZE`: `u32`.
    pub const WAVEFRONT_SIZE: u32 = 6;
    /// `HSA_AGENT_INFO_WORKGROUP_MAX_DIM`: `u16[3]`.
    pub const WORKGROUP_MAX_DIM: u32 = 7;
    /// `HSA_AGENT_INFO_WORKGROUP_MAX_SIZE`: `u32`.
    pub const WORKGROUP_MAX_SIZE: u32 = 8;
    /// `HSA_AGENT_INFO_GRID_MAX_DIM`: [`super::hsa_dim3_t`].
    pub const GRID_MAX_DIM: u32 = 9;
    /// `HSA_AGENT_INFO_QUEUE_MAX_SIZE`: `u32`.
    pub const QUEUE_MAX_SIZE: u32 = 14;
    /// `HSA_AGENT_INFO_DEVICE`: `hsa_device_type_t` (`u32`).
    pub const DEVICE: u32 = 17;
    /// `HSA_AGENT_INFO_ISA` (deprecated): [`super::hsa_isa_t`].
    pub const ISA: u32 = 19;
}

/// `hsa_device_type_t`.
pub mod device_type {
    /// `HSA_DEVICE_TYPE_CPU`.
    pub const CPU: u32 = 0;
    /// `HSA_DEVICE_TYPE_GPU`.
    pub const GPU: u32 = 1;
    /// `HSA_DEVICE_TYPE_DSP`.
    pub const DSP: u32 = 2;
}

/// `hsa_isa_info_t` values used here.
pub mod isa_info {
    /// `HSA_ISA_INFO_NAME_LENGTH`: `u32`.
    pub const NAME_LENGTH: u32 = 0;
    /// `HSA_ISA_INFO_NAME`: `char[NAME_LENGTH]`, not terminated.
    pub const NAME: u32 = 1;
}

/// `hsa_amd_memory_pool_info_t` values used here.
pub mod pool_info {
    /// `HSA_AMD_MEMORY_POOL_INFO_SEGMENT`: `hsa_amd_segment_t` (`u32`).
    pub const SEGMENT: u32 = 0;
    /// `HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS`: `u32` of [`super::global_flag`].
    pub const GLOBAL_FLAGS: u32 = 1;
    /// `HSA_AMD_MEMORY_POOL_INFO_SIZE`: `usize`.
    pub const SIZE: u32 = 2;
    /// `HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED`: `bool`.
    pub const RUNTIME_ALLOC_ALLOWED: u32 = 5;
    /// `HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE`: `usize`.
    pub const RUNTIME_ALLOC_GRANULE: u32 = 6;
    /// `HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT`: `usize`.
    pub const RUNTIME_ALLOC_ALIGNMENT: u32 = 7;
    /// `HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL`: `bool`.
    pub const ACCESSIBLE_BY_ALL: u32 = 15;
}

/// `hsa_amd_segment_t`.
pub mod segment {
    /// `HSA_AMD_SEGMENT_GLOBAL`.
    pub const GLOBAL: u32 = 0;
    /// `HSA_AMD_SEGMENT_READONLY`.
    pub const READONLY: u32 = 1;
    /// `HSA_AMD_SEGMENT_PRIVATE`.
    pub const PRIVATE: u32 = 2;
    /// `HSA_AMD_SEGMENT_GROUP`.
    pub const GROUP: u32 = 3;
}

/// `hsa_amd_memory_pool_global_flag_t` bits.
pub mod global_flag {
    /// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT`.
    pub const KERNARG_INIT: u32 = 1;
    /// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED`.
    pub const FINE_GRAINED: u32 = 2;
    /// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED`.
    pub const COARSE_GRAINED: u32 = 4;
}

/// `hsa_signal_condition_t`.
pub mod condition {
    /// `HSA_SIGNAL_CONDITION_EQ`.
    pub const EQ: u32 = 0;
    /// `HSA_SIGNAL_CONDITION_NE`.
    pub const NE: u32 = 1;
    /// `HSA_SIGNAL_CONDITION_LT`.
    pub const LT: u32 = 2;
    /// `HSA_SIGNAL_CONDITION_GTE`.
    pub const GTE: u32 = 3;
}

/// `hsa_wait_state_t`.
pub mod wait_state {
    /// `HSA_WAIT_STATE_BLOCKED`.
    pub const BLOCKED: u32 = 0;
    /// `HSA_WAIT_STATE_ACTIVE`.
    pub const ACTIVE: u32 = 1;
}

/// `hsa_queue_type_t`.
pub mod queue_type {
    /// `HSA_QUEUE_TYPE_MULTI`.
    pub const MULTI: u32 = 0;
    /// `HSA_QUEUE_TYPE_SINGLE`.
    pub const SINGLE: u32 = 1;
}

/// `hsa_packet_type_t`, header bit positions (`hsa_packet_header_t`) and
/// fence scopes (`hsa_fence_scope_t`).
pub mod packet {
    /// `HSA_PACKET_TYPE_VENDOR_SPECIFIC`.
    pub const TYPE_VENDOR_SPECIFIC: u16 = 0;
    /// `HSA_PACKET_TYPE_INVALID`: a slot the packet processor skips.
    pub const TYPE_INVALID: u16 = 1;
    /// `HSA_PACKET_TYPE_KERNEL_DISPATCH`.
    pub const TYPE_KERNEL_DISPATCH: u16 = 2;
    /// `HSA_PACKET_TYPE_BARRIER_AND`.
    pub const TYPE_BARRIER_AND: u16 = 3;
    /// `HSA_PACKET_HEADER_TYPE`: bit offset of the type (8 bits).
    pub const HEADER_TYPE: u16 = 0;
    /// `HSA_PACKET_HEADER_BARRIER`: bit offset of the barrier bit.
    pub const HEADER_BARRIER: u16 = 8;
    /// `HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE`: bit offset (2 bits).
    pub const HEADER_SCACQUIRE_FENCE_SCOPE: u16 = 9;
    /// `HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE`: bit offset (2 bits).
    pub const HEADER_SCRELEASE_FENCE_SCOPE: u16 = 11;
    /// `HSA_FENCE_SCOPE_NONE`.
    pub const FENCE_SCOPE_NONE: u16 = 0;
    /// `HSA_FENCE_SCOPE_AGENT`.
    pub const FENCE_SCOPE_AGENT: u16 = 1;
    /// `HSA_FENCE_SCOPE_SYSTEM`.
    pub const FENCE_SCOPE_SYSTEM: u16 = 2;
    /// `HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS`: bit offset (2 bits).
    pub const SETUP_DIMENSIONS: u16 = 0;

    /// A header of `packet_type` with the barrier bit set and system-scope
    /// acquire and release fences: the header reprise writes, which makes
    /// every packet wait for the one before it and see (and publish) host
    /// memory.
    ///
    /// ```
    /// use hsa_sys::packet::*;
    /// assert_eq!(header(TYPE_KERNEL_DISPATCH), 0x1502);
    /// ```
    pub const fn header(packet_type: u16) -> u16 {
        (packet_type << HEADER_TYPE)
            | (1 << HEADER_BARRIER)
            | (FENCE_SCOPE_SYSTEM << HEADER_SCACQUIRE_FENCE_SCOPE)
            | (FENCE_SCOPE_SYSTEM << HEADER_SCRELEASE_FENCE_SCOPE)
    }
}

/// `hsa_symbol_kind_t`.
pub mod symbol_kind {
    /// `HSA_SYMBOL_KIND_VARIABLE`.
    pub const VARIABLE: u32 = 0;
    /// `HSA_SYMBOL_KIND_KERNEL`.
    pub const KERNEL: u32 = 1;
    /// `HSA_SYMBOL_KIND_INDIRECT_FUNCTION`.
    pub const INDIRECT_FUNCTION: u32 = 2;
}

/// `hsa_executable_symbol_info_t` values used here.
pub mod symbol_info {
    /// `HSA_EXECUTABLE_SYMBOL_INFO_TYPE`: `hsa_symbol_kind_t` (`u32`).
    pub const TYPE: u32 = 0;
    /// `HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH`: `u32`.
    pub const NAME_LENGTH: u32 = 1;
    /// `HSA_EXECUTABLE_SYMBOL_INFO_NAME`: `char[NAME_LENGTH]`, not terminated.
    pub const NAME: u32 = 2;
    /// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE`: `u32`.
    pub const KERNEL_KERNARG_SEGMENT_SIZE: u32 = 11;
    /// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT`: `u32`.
    pub const KERNEL_KERNARG_SEGMENT_ALIGNMENT: u32 = 12;
    /// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE`: `u32`.
    pub const KERNEL_GROUP_SEGMENT_SIZE: u32 = 13;
    /// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE`: `u32`.
    pub const KERNEL_PRIVATE_SEGMENT_SIZE: u32 = 14;
    /// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK`: `bool`.
    pub const KERNEL_DYNAMIC_CALLSTACK: u32 = 15;
    /// `HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE`: `u32`.
    pub const VARIABLE_SIZE: u32 = 9;
    /// `HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS`: `u64`.
    pub const VARIABLE_ADDRESS: u32 = 21;
    /// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT`: `u64`.
    pub const KERNEL_OBJECT: u32 = 22;
}

/// `hsa_profile_t`.
pub mod profile {
    /// `HSA_PROFILE_BASE`.
    pub const BASE: u32 = 0;
    /// `HSA_PROFILE_FULL`.
    pub const FULL: u32 = 1;
}

/// `hsa_default_float_rounding_mode_t`.
pub mod rounding {
    /// `HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT`.
    pub const DEFAULT: u32 = 0;
}

/// `hsa_access_permission_t`.
pub mod access {
    /// `HSA_ACCESS_PERMISSION_NONE`.
    pub const NONE: u32 = 0;
    /// `HSA_ACCESS_PERMISSION_RO`.
    pub const RO: u32 = 1;
    /// `HSA_ACCESS_PERMISSION_WO`.
    pub const WO: u32 = 2;
    /// `HSA_ACCESS_PERMISSION_RW`.
    pub const RW: u32 = 3;
}

/// `hsa_amd_memory_type_t` (ROCm 6).
pub mod memory_type {
    /// `MEMORY_TYPE_NONE`.
    pub const NONE: u32 = 0;
    /// `MEMORY_TYPE_PINNED`.
    pub const PINNED: u32 = 1;
}
