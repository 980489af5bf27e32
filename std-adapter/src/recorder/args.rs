//! Kernel arguments as a recorder takes them and a capture stores them.

use reprise_core::exec::KernelArgs;
use reprise_core::record::{KernelRecord, MAX_ARG_DATA, MAX_ARGS, RecordError};

use crate::error::{Error, Result};

/// Kernel arguments, built in order.
///
/// Each argument is 8 bytes unless given otherwise: device addresses and
/// scalars in pointer slots (LLVM's convention) use [`Args::ptr`] and
/// [`Args::scalar`]; native kernels' smaller scalars and by-value structs use
/// [`Args::bytes`] and the typed helpers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Args {
    values: Vec<u64>,
    sizes: Vec<u32>,
    data: Vec<u8>,
    outside: Vec<u8>,
    in_globals: Vec<u8>,
}

impl Args {
    /// No arguments.
    pub fn new() -> Self {
        Args::default()
    }

    /// A device address.
    pub fn ptr(self, addr: u64) -> Self {
        self.scalar(addr)
    }

    /// A 64-bit scalar passed in a pointer-sized slot.
    pub fn scalar(mut self, v: u64) -> Self {
        self.values.push(v);
        self.sizes.push(8);
        self
    }

    /// A 32-bit integer.
    pub fn i32(self, v: i32) -> Self {
        self.bytes(&v.to_le_bytes())
    }

    /// A 32-bit float.
    pub fn f32(self, v: f32) -> Self {
        self.bytes(&v.to_le_bytes())
    }

    /// An argument of `b.len()` bytes (a by-value struct, say).
    pub fn bytes(mut self, b: &[u8]) -> Self {
        if b.len() <= 8 {
            let mut v = [0u8; 8];
            v[..b.len()].copy_from_slice(b);
            self.values.push(u64::from_le_bytes(v));
        } else {
            self.values.push(self.data.len() as u64);
            self.data.extend_from_slice(b);
        }
        self.sizes.push(b.len() as u32);
        self
    }

    /// Marks argument `index` as a device address outside the recording
    /// region (`ArgsOutside` in the capture): memory the capture does not
    /// hold, so a replay may not reproduce the launch. Indices past the
    /// last argument are ignored.
    pub fn mark_outside(mut self, index: usize) -> Self {
        if index < self.len()
            && let Ok(i) = u8::try_from(index)
        {
            self.outside.push(i);
        }
        self
    }

    /// Marks argument `index` as the address of a device global
    /// (`ArgsInGlobals`): a replay's globals may land elsewhere.
    pub fn mark_in_global(mut self, index: usize) -> Self {
        if index < self.len()
            && let Ok(i) = u8::try_from(index)
        {
            self.in_globals.push(i);
        }
        self
    }

    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    fn all_pointer_sized(&self) -> bool {
        self.sizes.iter().all(|&s| s == 8)
    }

    /// The view a queue launches with.
    pub fn as_kernel_args(&self) -> KernelArgs<'_> {
        KernelArgs {
            values: &self.values,
            sizes: if self.all_pointer_sized() {
                &[]
            } else {
                &self.sizes
            },
            data: &self.data,
        }
    }

    /// Copies the arguments into `record`: [`Error::Record`] when they are
    /// more than a capture holds ([`RecordError::TooManyArgs`],
    /// [`RecordError::ArgDataTooLong`]).
    pub fn fill(&self, record: &mut KernelRecord) -> Result<()> {
        record.arg_ptrs = self
            .values
            .iter()
            .map(|&v| v as i64)
            .collect::<heapless::Vec<_, MAX_ARGS>>();
        if record.arg_ptrs.len() != self.len() {
            return Err(Error::Record(RecordError::TooManyArgs {
                count: self.len() as u64,
                max: MAX_ARGS,
            }));
        }
        record.arg_offsets = self.values.iter().map(|_| 0).collect();
        record.arg_sizes = if self.all_pointer_sized() {
            heapless::Vec::new()
        } else {
            self.sizes.iter().copied().collect()
        };
        record.arg_data = heapless::Vec::from_slice(&self.data).map_err(|_| {
            Error::Record(RecordError::ArgDataTooLong {
                len: self.data.len(),
                max: MAX_ARG_DATA,
            })
        })?;
        // Never more marks than a capture holds.
        record.args_outside = self.outside.iter().copied().take(MAX_ARGS).collect();
        record.args_in_globals = self.in_globals.iter().copied().take(MAX_ARGS).collect();
        Ok(())
    }
}
