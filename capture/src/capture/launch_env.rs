//! The implicit first argument of LLVM 18 and later, in the captures
//! LLVM's runtime writes: what [`check`] refuses before a replay would pass
//! something the kernel cannot use.
//!
//! Since LLVM 18 clang gives every OpenMP target kernel a leading `dyn_ptr`
//! parameter, the kernel launch environment
//! (`{u32 ReductionCnt, u32 ReductionIterCnt, void *ReductionBuffer}`),
//! and the plugin counts it in `NumArgs` and records it as `ArgPtrs[0]`: `~0`
//! for a kernel without reductions, else the address of an environment it
//! allocated in the recorded region, with the reduction buffer after it.
//! A replay passes it back unchanged (LLVM's own replay tool does too), so
//! the environment must be in the memory snapshot. Two things go wrong in
//! captures LLVM really writes:
//!
//! - LLVM 19.1.7 to 22.1.8 record no argument values at all, but the
//!   addresses of the runtime's own argument array
//!   ([`Error::ArgumentsNotRecorded`]);
//! - LLVM 18 copies the environment to the device on the launch's stream
//!   and snapshots memory on another stream without waiting for that copy,
//!   so a snapshot can hold whatever was there before
//!   ([`Error::LaunchEnvironment`]).

use std::os::unix::fs::FileExt;

use reprise_core::record::{Generation, KernelRecord};

use super::CapturePaths;
use super::base::{BaseOrigin, ResolvedBase};
use super::open::open_regular;
use crate::error::Error;

/// The size of LLVM's `KernelLaunchEnvironmentTy` (18.1.8 to 22.1.8:
/// `uint32_t ReductionCnt; uint32_t ReductionIterCnt; void
/// *ReductionBuffer;`).
const ENVIRONMENT_LEN: u64 = 16;

/// How clang names OpenMP target kernels
/// (`__omp_offloading_<device>_<file>_<function>_l<line>`).
const OPENMP_KERNEL_PREFIX: &str = "__omp_offloading_";

/// What is wrong with the arguments of the capture `record` describes (its
/// region base `base`); empty for all but LLVM's descriptors.
pub fn check(
    record: &KernelRecord,
    paths: &CapturePaths,
    base: Option<ResolvedBase>,
) -> Vec<Error> {
    if record.generation != Generation::LlvmLegacy {
        return Vec::new();
    }
    let region = base
        .and_then(|b| b.addr)
        .map(|addr| (addr, record.region_size.or(record.memory_size).unwrap_or(0)));
    // Only LLVM 18 and later record BumpAllocVAStart (LLVM 16's first
    // argument is the program's), and only OpenMP target kernels take the
    // environment (reprise writes this format for any kernel).
    let environment = base.map(|b| b.origin) == Some(BaseOrigin::Recorded)
        && record.name.starts_with(OPENMP_KERNEL_PREFIX);
    lost_arguments(record, region, paths)
        .or_else(|| environment.then(|| unreachable_environment(record, region, paths))?)
        .into_iter()
        .collect()
}

/// Whether `v` lies inside `(base, len)`, with `extra` bytes after it.
fn inside((base, len): (u64, u64), v: u64, extra: u64) -> bool {
    v >= base && v - base < len && len - (v - base) >= extra
}

/// The error for an LLVM descriptor whose `ArgPtrs` are the addresses of
/// the recording runtime's argument array rather than the arguments, if it
/// is one.
///
/// LLVM 19.1.7 to 22.1.8 record `LaunchParams.Ptrs[I]`
/// (`offload/plugins-nextgen/common/src/PluginInterface.cpp`,
/// `saveKernelDescr`: `JsonArgPtrs.push_back((intptr_t)LaunchParams.Ptrs[I])`
/// at 19.1.7:286, 21.1.8:295, 22.1.8:300), and `prepareArgs` sets
/// `Ptrs[I] = &Args[I]` (19.1.7:601, 21.1.8:628, 22.1.8:586): host stack
/// addresses 8 bytes apart. LLVM 18.1.8 recorded the values
/// (`openmp/libomptarget/plugins-nextgen/common/src/PluginInterface.cpp`:
/// line 287 pushes `ArgPtrs[I]` of the `Ptrs.data()` that line 566 passes,
/// which `prepareArgs` fills at lines 593-598 with the launch environment
/// and `ArgPtrs[I - KLEOffset] + ArgOffsets[I - KLEOffset]`), slot 0 being
/// the environment: `~0`, or a pointer into the region. So: two or more
/// entries, offsets 0, the first 8-aligned and neither 0 nor `~0`, each 8
/// past the one before, and none inside the region. Real arguments never
/// look so: pointers fall inside the region, and scalars stepping by
/// exactly 8 from an 8-aligned address outside it, over every argument,
/// are no kernel's. (A kernel with no argument but the environment records
/// one address, which cannot be told from a value, and goes unnoticed.)
fn lost_arguments(
    record: &KernelRecord,
    region: Option<(u64, u64)>,
    paths: &CapturePaths,
) -> Option<Error> {
    if record.arg_ptrs.len() < 2 || record.arg_offsets.iter().any(|&o| o != 0) {
        return None;
    }
    let first = record.arg_ptrs[0] as u64;
    if first == 0 || first == u64::MAX || !first.is_multiple_of(8) {
        return None;
    }
    let region = region?;
    let consecutive = record.arg_ptrs.iter().enumerate().all(|(i, &p)| {
        first.checked_add(8 * i as u64) == Some(p as u64) && !inside(region, p as u64, 1)
    });
    consecutive.then(|| Error::ArgumentsNotRecorded {
        path: paths.descriptor.clone(),
        first,
        count: record.arg_ptrs.len(),
    })
}

/// The error for an LLVM 18+ capture whose launch environment (argument 0,
/// inside the region) points its reduction buffer outside the region in the
/// memory snapshot, if it is one.
///
/// LLVM 18.1.8 allocates the environment and then the buffer
/// (`getKernelLaunchEnvironment`, lines 483 and 497-503 of
/// `plugins-nextgen/common/src/PluginInterface.cpp`) in the recorded region
/// (`dataAlloc` takes `RecordReplay.alloc` while recording, lines 1304-1305),
/// copies the environment with `dataSubmit` on the launch's queue (line
/// 514), and `saveKernelInput` (line 565) snapshots memory with `dataRetrieve(...,
/// nullptr)` (line 177): another queue, which does not wait for that copy.
/// A genuine environment's buffer is always inside the region, so one that
/// is not is a snapshot taken before the copy landed: the kernel's
/// reduction would write through whatever pointer was there.
fn unreachable_environment(
    record: &KernelRecord,
    region: Option<(u64, u64)>,
    paths: &CapturePaths,
) -> Option<Error> {
    let region = region?;
    let at = *record.arg_ptrs.first()? as u64;
    if !inside(region, at, ENVIRONMENT_LEN) {
        return None;
    }
    // The snapshot starts at the region base. One that cannot be read here
    // is reported by the checks of the snapshot itself.
    let (file, len) = open_regular(&paths.input).ok()??;
    let offset = at - region.0;
    if offset.checked_add(ENVIRONMENT_LEN)? > len {
        return None;
    }
    let mut env = [0u8; ENVIRONMENT_LEN as usize];
    file.read_exact_at(&mut env, offset).ok()?;
    let mut word = [0u8; 8];
    word.copy_from_slice(&env[8..]);
    let buffer = u64::from_le_bytes(word);
    (!inside(region, buffer, 1)).then(|| Error::LaunchEnvironment {
        path: paths.input.clone(),
        at,
        buffer,
    })
}
