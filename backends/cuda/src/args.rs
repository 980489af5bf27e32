//! Packing [`KernelArgs`] into `cuLaunchKernel`'s `kernelParams`: one
//! pointer per parameter to that parameter's bytes.

use std::ffi::c_void;

use reprise_core::exec::KernelArgs;

use crate::error::CudaError;

/// The arguments of one launch, each in its own 8-byte aligned, zero-padded
/// slot of one buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedArgs {
    storage: Vec<u64>,
    /// `(offset, len)` of each argument in bytes.
    layout: Vec<(usize, usize)>,
}

impl PackedArgs {
    /// Packs `args`, checked against the kernel's parameter sizes when the
    /// driver told them (`cuFuncGetParamInfo`).
    ///
    /// Each slot is at least as large as the parameter, so the driver never
    /// reads past it: an 8-byte argument (an LLVM capture) for a 4-byte
    /// parameter passes its low 4 bytes; an argument smaller than its
    /// parameter is an error.
    pub fn pack(args: &KernelArgs<'_>, params: Option<&[u32]>) -> Result<Self, CudaError> {
        if let Some(p) = params
            && p.len() != args.len()
        {
            return Err(CudaError::ArgumentCount {
                expected: p.len(),
                got: args.len(),
            });
        }
        let mut bytes = Vec::new();
        let mut layout = Vec::with_capacity(args.len());
        let mut scratch = [0u8; 8];
        for index in 0..args.len() {
            let arg = args
                .bytes(index, &mut scratch)
                .ok_or(CudaError::BadArgument { index })?;
            let param = params.map_or(arg.len(), |p| p[index] as usize);
            if arg.len() < param {
                return Err(CudaError::ArgumentSize {
                    index,
                    expected: param as u32,
                    got: arg.len() as u32,
                });
            }
            let at = bytes.len();
            layout.push((at, arg.len()));
            bytes.extend_from_slice(arg);
            bytes.resize(at + arg.len().max(param).max(1).next_multiple_of(8), 0);
        }
        let storage = bytes
            .chunks(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w[..c.len()].copy_from_slice(c);
                u64::from_ne_bytes(w)
            })
            .collect();
        Ok(PackedArgs { storage, layout })
    }

    /// `(offset, len)` of each argument within [`PackedArgs::bytes`].
    pub fn layout(&self) -> &[(usize, usize)] {
        &self.layout
    }

    /// The packed bytes (slots padded to 8 bytes).
    pub fn bytes(&self) -> &[u8] {
        crate::raw::word_bytes(&self.storage)
    }

    /// One pointer per argument to its bytes: `cuLaunchKernel`'s
    /// `kernelParams`. The pointers are valid while `self` is neither moved
    /// out of nor dropped.
    pub fn pointers(&mut self) -> Vec<*mut c_void> {
        let base = self.storage.as_mut_ptr().cast::<u8>();
        self.layout
            .iter()
            // Every offset is inside `storage`, whose length covers each
            // padded slot: the pointers point into it.
            .map(|&(at, _)| base.wrapping_add(at).cast::<c_void>())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_sizes_get_aligned_slots() {
        // int, float, a 16-byte struct (at offset 0 of data), a pointer.
        let data: Vec<u8> = (1..=16).collect();
        let args = KernelArgs {
            values: &[7, 2.5f32.to_bits() as u64, 0, 0x1539_4000_0000],
            sizes: &[4, 4, 16, 8],
            data: &data,
        };
        let mut p = PackedArgs::pack(&args, Some(&[4, 4, 16, 8])).unwrap();
        assert_eq!(p.layout(), [(0, 4), (8, 4), (16, 16), (32, 8)]);
        let b = p.bytes();
        assert_eq!(b.len(), 40);
        assert_eq!(&b[0..8], &[7, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&b[8..12], &2.5f32.to_le_bytes());
        assert_eq!(&b[16..32], &data[..]);
        assert_eq!(&b[32..40], &0x1539_4000_0000u64.to_le_bytes());
        let base = b.as_ptr() as usize;
        let ptrs: Vec<usize> = p.pointers().iter().map(|&q| q as usize - base).collect();
        assert_eq!(ptrs, [0, 8, 16, 32]);
        assert!(p.pointers().iter().all(|q| (*q as usize).is_multiple_of(8)));
    }

    #[test]
    fn llvm_captures_are_eight_bytes_each() {
        let args = KernelArgs {
            values: &[0x1000, 42],
            sizes: &[],
            data: &[],
        };
        // Unknown parameter sizes: two 8-byte slots.
        let p = PackedArgs::pack(&args, None).unwrap();
        assert_eq!(p.layout(), [(0, 8), (8, 8)]);
        // A 4-byte parameter takes the low bytes of its 8-byte slot.
        let p = PackedArgs::pack(&args, Some(&[8, 4])).unwrap();
        assert_eq!(&p.bytes()[8..12], &42u32.to_le_bytes());
    }

    #[test]
    fn mismatches_are_errors() {
        let args = KernelArgs {
            values: &[1, 0],
            sizes: &[4, 32],
            data: &[0; 16],
        };
        assert_eq!(
            PackedArgs::pack(&args, Some(&[4])),
            Err(CudaError::ArgumentCount {
                expected: 1,
                got: 2
            })
        );
        // The 32-byte argument reaches past `data`.
        assert_eq!(
            PackedArgs::pack(&args, None),
            Err(CudaError::BadArgument { index: 1 })
        );
        let small = KernelArgs {
            values: &[1],
            sizes: &[4],
            data: &[],
        };
        assert_eq!(
            PackedArgs::pack(&small, Some(&[8])),
            Err(CudaError::ArgumentSize {
                index: 0,
                expected: 8,
                got: 4
            })
        );
        let none = PackedArgs::pack(
            &KernelArgs {
                values: &[],
                sizes: &[],
                data: &[],
            },
            Some(&[]),
        )
        .unwrap();
        assert!(none.layout().is_empty() && none.bytes().is_empty());
    }
}
