//! Kernel arguments in the kernarg segment: the recorded arguments at the
//! offsets the code object's metadata gives, then the implicit arguments
//! the compiler's code expects after them.
//!
//! Implicit arguments are filled by their metadata kind, as LLVM's AMDGPU
//! offload plugin fills them for code object v5 (`AMDGPUImplicitArgsTy` in
//! `offload/plugins-nextgen/amdgpu/utils/UtilitiesRTL.h`: block counts,
//! group sizes, grid dimensions, dynamic LDS size; everything else zero).
//! Teams are the grid's work-groups and threads the work-group size, as in
//! LLVM's plugin.

use reprise_core::exec::Launch;

use crate::code_object::KernelArgMeta;
use crate::error::AmdError;
use crate::image::AmdKernel;

/// The largest kernarg segment a launch may have (AMD's compilers stay far
/// below it; a larger one is a damaged or hostile code object).
const MAX_KERNARG: u32 = 1 << 20;

/// The kernarg segment for `launch` of `kernel`.
pub(crate) fn pack(kernel: &AmdKernel, launch: &Launch<'_>) -> Result<Vec<u8>, AmdError> {
    let meta = kernel.meta();
    // The segment's size comes from the code object: bounded before it
    // sizes an allocation.
    if kernel.kernarg_size > MAX_KERNARG {
        return Err(AmdError::KernargTooLarge {
            kernel: kernel.name().to_string(),
            size: kernel.kernarg_size,
            max: MAX_KERNARG,
        });
    }
    let mut out = vec![0u8; kernel.kernarg_size as usize];
    let explicit: Vec<&KernelArgMeta> = meta.explicit_args().collect();
    let args = &launch.args;
    if explicit.len() != args.len() {
        return Err(AmdError::ArgumentCount {
            kernel: kernel.name().to_string(),
            expected: explicit.len(),
            got: args.len(),
        });
    }
    let mut scratch = [0u8; 8];
    for (i, m) in explicit.iter().enumerate() {
        let bytes = args
            .bytes(i, &mut scratch)
            .ok_or(AmdError::BadArgument { index: i })?;
        let want = m.size as usize;
        // A recording that keeps every argument in an 8-byte slot (LLVM's)
        // holds a smaller scalar in its low bytes (little endian).
        let bytes = if bytes.len() == want || (bytes.len() == 8 && want < 8) {
            &bytes[..want]
        } else {
            return Err(AmdError::ArgumentSize {
                kernel: kernel.name().to_string(),
                index: i,
                expected: want,
                got: bytes.len(),
            });
        };
        put(&mut out, m.offset, bytes, kernel)?;
    }
    let c = &launch.config;
    let dims: u16 = if c.grid[2] > 1 || c.block[2] > 1 {
        3
    } else if c.grid[1] > 1 || c.block[1] > 1 {
        2
    } else {
        1
    };
    for m in meta.hidden_args() {
        let axis = |s: &str| match s.as_bytes().last() {
            Some(b'x') => 0,
            Some(b'y') => 1,
            _ => 2,
        };
        let kind = m.value_kind.as_str();
        let value: Option<u64> = match kind {
            k if k.starts_with("hidden_block_count_") => Some(c.grid[axis(k)].into()),
            k if k.starts_with("hidden_group_size_") => Some(c.block[axis(k)].into()),
            "hidden_grid_dims" => Some(dims.into()),
            "hidden_dynamic_lds_size" => Some(c.shared_mem.into()),
            // Remainders are 0 (the grid is whole work-groups); offsets,
            // the hostcall buffer, the heap and the rest stay 0.
            _ => None,
        };
        if let Some(v) = value {
            let size = (m.size as usize).min(8);
            put(&mut out, m.offset, &v.to_le_bytes()[..size], kernel)?;
        }
    }
    Ok(out)
}

fn put(out: &mut [u8], offset: u32, bytes: &[u8], kernel: &AmdKernel) -> Result<(), AmdError> {
    let at = offset as usize;
    let len = out.len();
    let slot = at
        .checked_add(bytes.len())
        .and_then(|end| out.get_mut(at..end))
        .ok_or_else(|| AmdError::ArgumentPlacement {
            kernel: kernel.name().to_string(),
            offset: at,
            len: bytes.len(),
            segment: len,
        })?;
    slot.copy_from_slice(bytes);
    Ok(())
}
