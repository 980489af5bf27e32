//! Against what we did not write: the installed HSA headers (the layouts
//! and values in `types.rs` must be theirs) and the installed HSA runtime
//! library (every required entry point must resolve, `hsa_init` must answer
//! with a status the crate can name).
//!
//! Both skip with a message when absent, unless `REPRISE_REQUIRE_HSA=1`
//! (set by CI, which installs them) makes that a failure.

use std::path::Path;
use std::process::Command;

use hsa_sys::*;

fn required() -> bool {
    std::env::var("REPRISE_REQUIRE_HSA").as_deref() == Ok("1")
}

fn skip(why: &str) {
    assert!(!required(), "REPRISE_REQUIRE_HSA=1 but {why}");
    eprintln!("skipped: {why}");
}

const HEADER: &str = "/usr/include/hsa/hsa.h";

/// A C program that prints `name value` for every size, offset and
/// constant the crate declares, compiled against the installed headers.
fn c_program() -> String {
    let mut checks = vec![
        "Z(hsa_queue_t)".to_string(),
        "O(hsa_queue_t, base_address)".into(),
        "O(hsa_queue_t, doorbell_signal)".into(),
        "O(hsa_queue_t, size)".into(),
        "O(hsa_queue_t, id)".into(),
        "Z(hsa_kernel_dispatch_packet_t)".into(),
    ];
    for f in [
        "setup",
        "workgroup_size_x",
        "workgroup_size_y",
        "workgroup_size_z",
        "grid_size_x",
        "grid_size_y",
        "grid_size_z",
        "private_segment_size",
        "group_segment_size",
        "kernel_object",
        "kernarg_address",
        "completion_signal",
    ] {
        checks.push(format!("O(hsa_kernel_dispatch_packet_t, {f})"));
    }
    checks.push("Z(hsa_barrier_and_packet_t)".into());
    checks.push("O(hsa_barrier_and_packet_t, dep_signal)".into());
    checks.push("O(hsa_barrier_and_packet_t, completion_signal)".into());
    checks.push("Z(hsa_dim3_t)".into());
    checks.push("Z(hsa_amd_event_t)".into());
    checks.push("O(hsa_amd_event_t, memory_fault)".into());
    checks.push("O(hsa_amd_gpu_memory_fault_info_t, virtual_address)".into());
    checks.push("O(hsa_amd_gpu_memory_fault_info_t, fault_reason_mask)".into());
    checks.push("V(HSA_AMD_GPU_MEMORY_FAULT_EVENT)".into());
    for (_, name) in status::NAMES {
        checks.push(format!("V({name})"));
    }
    for c in [
        "HSA_AGENT_INFO_NAME",
        "HSA_AGENT_INFO_WAVEFRONT_SIZE",
        "HSA_AGENT_INFO_WORKGROUP_MAX_DIM",
        "HSA_AGENT_INFO_WORKGROUP_MAX_SIZE",
        "HSA_AGENT_INFO_GRID_MAX_DIM",
        "HSA_AGENT_INFO_QUEUE_MAX_SIZE",
        "HSA_AGENT_INFO_DEVICE",
        "HSA_AGENT_INFO_ISA",
        "HSA_DEVICE_TYPE_GPU",
        "HSA_ISA_INFO_NAME_LENGTH",
        "HSA_ISA_INFO_NAME",
        "HSA_AMD_MEMORY_POOL_INFO_SEGMENT",
        "HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS",
        "HSA_AMD_MEMORY_POOL_INFO_SIZE",
        "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED",
        "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE",
        "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT",
        "HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL",
        "HSA_AMD_SEGMENT_GLOBAL",
        "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT",
        "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED",
        "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED",
        "HSA_SIGNAL_CONDITION_EQ",
        "HSA_SIGNAL_CONDITION_LT",
        "HSA_WAIT_STATE_BLOCKED",
        "HSA_QUEUE_TYPE_MULTI",
        "HSA_QUEUE_TYPE_SINGLE",
        "HSA_PACKET_TYPE_INVALID",
        "HSA_PACKET_TYPE_KERNEL_DISPATCH",
        "HSA_PACKET_TYPE_BARRIER_AND",
        "HSA_PACKET_HEADER_BARRIER",
        "HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE",
        "HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE",
        "HSA_FENCE_SCOPE_SYSTEM",
        "HSA_SYMBOL_KIND_VARIABLE",
        "HSA_SYMBOL_KIND_KERNEL",
        "HSA_EXECUTABLE_SYMBOL_INFO_TYPE",
        "HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH",
        "HSA_EXECUTABLE_SYMBOL_INFO_NAME",
        "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE",
        "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT",
        "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE",
        "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE",
        "HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE",
        "HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS",
        "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT",
        "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK",
        "HSA_PROFILE_FULL",
        "HSA_ACCESS_PERMISSION_RW",
    ] {
        checks.push(format!("V({c})"));
    }
    let mut src = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <hsa/hsa.h>\n#include <hsa/hsa_ext_amd.h>\n\
         #define Z(t) printf(\"sizeof %s %zu\\n\", #t, sizeof(t));\n\
         #define O(t, f) printf(\"offsetof %s.%s %zu\\n\", #t, #f, offsetof(t, f));\n\
         #define V(c) printf(\"value %s %lld\\n\", #c, (long long)(c));\n\
         int main(void) {\n",
    );
    for c in checks {
        src.push_str("  ");
        src.push_str(&c);
        src.push('\n');
    }
    src.push_str("  return 0;\n}\n");
    src
}

/// What the crate says each name is.
fn ours(line: &str) -> Option<u64> {
    use core::mem::{offset_of, size_of};
    let mut it = line.split_whitespace();
    let kind = it.next()?;
    let name = it.next()?;
    Some(match (kind, name) {
        ("sizeof", "hsa_queue_t") => size_of::<hsa_queue_t>() as u64,
        ("sizeof", "hsa_kernel_dispatch_packet_t") => {
            size_of::<hsa_kernel_dispatch_packet_t>() as u64
        }
        ("sizeof", "hsa_barrier_and_packet_t") => size_of::<hsa_barrier_and_packet_t>() as u64,
        ("sizeof", "hsa_dim3_t") => size_of::<hsa_dim3_t>() as u64,
        ("sizeof", "hsa_amd_event_t") => size_of::<hsa_amd_event_t>() as u64,
        ("offsetof", f) => {
            let (t, f) = f.split_once('.')?;
            (match (t, f) {
                ("hsa_queue_t", "base_address") => offset_of!(hsa_queue_t, base_address),
                ("hsa_queue_t", "doorbell_signal") => offset_of!(hsa_queue_t, doorbell_signal),
                ("hsa_queue_t", "size") => offset_of!(hsa_queue_t, size),
                ("hsa_queue_t", "id") => offset_of!(hsa_queue_t, id),
                ("hsa_barrier_and_packet_t", "dep_signal") => {
                    offset_of!(hsa_barrier_and_packet_t, dep_signal)
                }
                ("hsa_barrier_and_packet_t", "completion_signal") => {
                    offset_of!(hsa_barrier_and_packet_t, completion_signal)
                }
                ("hsa_kernel_dispatch_packet_t", f) => dispatch_offset(f)?,
                ("hsa_amd_event_t", "memory_fault") => offset_of!(hsa_amd_event_t, memory_fault),
                ("hsa_amd_gpu_memory_fault_info_t", "virtual_address") => {
                    offset_of!(hsa_amd_gpu_memory_fault_info_t, virtual_address)
                }
                ("hsa_amd_gpu_memory_fault_info_t", "fault_reason_mask") => {
                    offset_of!(hsa_amd_gpu_memory_fault_info_t, fault_reason_mask)
                }
                _ => return None,
            }) as u64
        }
        ("value", c) => value(c)?,
        _ => return None,
    })
}

fn dispatch_offset(f: &str) -> Option<usize> {
    use core::mem::offset_of;
    type P = hsa_kernel_dispatch_packet_t;
    Some(match f {
        "setup" => offset_of!(P, setup),
        "workgroup_size_x" => offset_of!(P, workgroup_size_x),
        "workgroup_size_y" => offset_of!(P, workgroup_size_y),
        "workgroup_size_z" => offset_of!(P, workgroup_size_z),
        "grid_size_x" => offset_of!(P, grid_size_x),
        "grid_size_y" => offset_of!(P, grid_size_y),
        "grid_size_z" => offset_of!(P, grid_size_z),
        "private_segment_size" => offset_of!(P, private_segment_size),
        "group_segment_size" => offset_of!(P, group_segment_size),
        "kernel_object" => offset_of!(P, kernel_object),
        "kernarg_address" => offset_of!(P, kernarg_address),
        "completion_signal" => offset_of!(P, completion_signal),
        _ => return None,
    })
}

fn value(c: &str) -> Option<u64> {
    if let Some((v, _)) = status::NAMES.iter().find(|(_, n)| *n == c) {
        return Some(u64::from(*v));
    }
    let v: u32 = match c {
        "HSA_AGENT_INFO_NAME" => agent_info::NAME,
        "HSA_AGENT_INFO_WAVEFRONT_SIZE" => agent_info::WAVEFRONT_SIZE,
        "HSA_AGENT_INFO_WORKGROUP_MAX_DIM" => agent_info::WORKGROUP_MAX_DIM,
        "HSA_AGENT_INFO_WORKGROUP_MAX_SIZE" => agent_info::WORKGROUP_MAX_SIZE,
        "HSA_AGENT_INFO_GRID_MAX_DIM" => agent_info::GRID_MAX_DIM,
        "HSA_AGENT_INFO_QUEUE_MAX_SIZE" => agent_info::QUEUE_MAX_SIZE,
        "HSA_AGENT_INFO_DEVICE" => agent_info::DEVICE,
        "HSA_AGENT_INFO_ISA" => agent_info::ISA,
        "HSA_DEVICE_TYPE_GPU" => device_type::GPU,
        "HSA_ISA_INFO_NAME_LENGTH" => isa_info::NAME_LENGTH,
        "HSA_ISA_INFO_NAME" => isa_info::NAME,
        "HSA_AMD_MEMORY_POOL_INFO_SEGMENT" => pool_info::SEGMENT,
        "HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS" => pool_info::GLOBAL_FLAGS,
        "HSA_AMD_MEMORY_POOL_INFO_SIZE" => pool_info::SIZE,
        "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED" => pool_info::RUNTIME_ALLOC_ALLOWED,
        "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE" => pool_info::RUNTIME_ALLOC_GRANULE,
        "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT" => pool_info::RUNTIME_ALLOC_ALIGNMENT,
        "HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL" => pool_info::ACCESSIBLE_BY_ALL,
        "HSA_AMD_SEGMENT_GLOBAL" => segment::GLOBAL,
        "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT" => global_flag::KERNARG_INIT,
        "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED" => global_flag::FINE_GRAINED,
        "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED" => global_flag::COARSE_GRAINED,
        "HSA_SIGNAL_CONDITION_EQ" => condition::EQ,
        "HSA_SIGNAL_CONDITION_LT" => condition::LT,
        "HSA_WAIT_STATE_BLOCKED" => wait_state::BLOCKED,
        "HSA_QUEUE_TYPE_MULTI" => queue_type::MULTI,
        "HSA_QUEUE_TYPE_SINGLE" => queue_type::SINGLE,
        "HSA_PACKET_TYPE_INVALID" => packet::TYPE_INVALID.into(),
        "HSA_PACKET_TYPE_KERNEL_DISPATCH" => packet::TYPE_KERNEL_DISPATCH.into(),
        "HSA_PACKET_TYPE_BARRIER_AND" => packet::TYPE_BARRIER_AND.into(),
        "HSA_PACKET_HEADER_BARRIER" => packet::HEADER_BARRIER.into(),
        "HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE" => packet::HEADER_SCACQUIRE_FENCE_SCOPE.into(),
        "HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE" => packet::HEADER_SCRELEASE_FENCE_SCOPE.into(),
        "HSA_FENCE_SCOPE_SYSTEM" => packet::FENCE_SCOPE_SYSTEM.into(),
        "HSA_SYMBOL_KIND_VARIABLE" => symbol_kind::VARIABLE,
        "HSA_SYMBOL_KIND_KERNEL" => symbol_kind::KERNEL,
        "HSA_EXECUTABLE_SYMBOL_INFO_TYPE" => symbol_info::TYPE,
        "HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH" => symbol_info::NAME_LENGTH,
        "HSA_EXECUTABLE_SYMBOL_INFO_NAME" => symbol_info::NAME,
        "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE" => {
            symbol_info::KERNEL_KERNARG_SEGMENT_SIZE
        }
        "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT" => {
            symbol_info::KERNEL_KERNARG_SEGMENT_ALIGNMENT
        }
        "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE" => {
            symbol_info::KERNEL_GROUP_SEGMENT_SIZE
        }
        "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE" => {
            symbol_info::KERNEL_PRIVATE_SEGMENT_SIZE
        }
        "HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE" => symbol_info::VARIABLE_SIZE,
        "HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS" => symbol_info::VARIABLE_ADDRESS,
        "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT" => symbol_info::KERNEL_OBJECT,
        "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK" => {
            symbol_info::KERNEL_DYNAMIC_CALLSTACK
        }
        "HSA_PROFILE_FULL" => profile::FULL,
        "HSA_ACCESS_PERMISSION_RW" => access::RW,
        "HSA_AMD_GPU_MEMORY_FAULT_EVENT" => event_type::GPU_MEMORY_FAULT,
        _ => return None,
    };
    Some(u64::from(v))
}

#[test]
fn declarations_match_the_installed_headers() {
    if !Path::new(HEADER).exists() {
        return skip(&format!("{HEADER} is not installed"));
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("layout.c");
    let exe = dir.path().join("layout");
    std::fs::write(&src, c_program()).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .arg("-DAMD_INTERNAL_BUILD")
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => return skip(&format!("no C compiler ({cc}: {e})")),
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    let text = String::from_utf8(run.stdout).unwrap();
    let mut checked = 0;
    for line in text.lines() {
        let theirs: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        let mine = ours(line).unwrap_or_else(|| panic!("the test does not know {line}"));
        assert_eq!(mine, theirs, "{line}: hsa-sys says {mine}");
        checked += 1;
    }
    assert!(checked > 90, "only {checked} checks ran:\n{text}");
}

#[test]
fn the_installed_runtime_loads_and_answers_hsa_init() {
    let hsa = match Hsa::load_from(&DEFAULT_NAMES) {
        Ok(h) => h,
        Err(LoadError::Library { tried }) => {
            return skip(&format!("no HSA runtime library: {tried:?}"));
        }
        Err(e) => panic!("the installed runtime lacks an entry point: {e}"),
    };
    eprintln!(
        "{}: virtual memory entry points {}",
        hsa.path(),
        if hsa.vmem.is_some() {
            "present".to_string()
        } else {
            format!("missing: {:?}", hsa.vmem_missing)
        }
    );
    assert_eq!(hsa.vmem.is_some(), hsa.vmem_missing.is_empty());
    // SAFETY: hsa_init takes no arguments; a failure leaves nothing to undo.
    let status = unsafe { (hsa.fns.hsa_init)() };
    let name =
        status::name(status).unwrap_or_else(|| panic!("hsa_init returned unknown {status:#x}"));
    let text = hsa
        .status_string(status)
        .expect("the runtime describes its own status");
    assert!(text.starts_with(name), "{name} vs {text}");
    if status == status::SUCCESS {
        // SAFETY: balances the successful hsa_init.
        assert_eq!(unsafe { (hsa.fns.hsa_shut_down)() }, status::SUCCESS);
    } else {
        assert!(
            !Path::new("/dev/kfd").exists(),
            "hsa_init failed ({name}) although the machine has /dev/kfd"
        );
        // Nothing to balance: a second shut down says so.
        // SAFETY: hsa_shut_down takes no arguments.
        assert_eq!(
            unsafe { (hsa.fns.hsa_shut_down)() },
            status::ERROR_NOT_INITIALIZED
        );
    }
}
