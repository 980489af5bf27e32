//! Reading AMDGPU HSA code objects (what clang builds for `amdgcn-amd-amdhsa`,
//! code object v3 and later): the target, the kernels with their kernel
//! argument layout, and the global variables, without loading anything.
//!
//! ```no_run
//! # fn demo(bytes: &[u8]) -> Result<(), reprise_amdgpu::code_object::CodeObjectError> {
//! let object = reprise_amdgpu::code_object::parse(bytes)?;
//! assert!(object.target().runs_on("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"));
//! let saxpy = object.kernel("saxpy").expect("a kernel named saxpy");
//! for arg in saxpy.explicit_args() {
//!     println!("{} bytes at {}", arg.size, arg.offset);
//! }
//! # Ok(()) }
//! ```
//!
//! Where each thing comes from:
//! - the target: the ELF header's `e_flags` (`EF_AMDGPU_MACH`, the xnack
//!   and sramecc bits), which is what the HSA loader checks against an
//!   agent. The metadata's `amdhsa.target` (v4 and later), when there, must
//!   say the same, or [`parse`] fails with
//!   [`CodeObjectError::TargetMismatch`];
//! - the kernels: the `NT_AMDGPU_METADATA` note (MessagePack). Each
//!   kernel's descriptor `<name>.kd` is looked up in the symbol tables and
//!   its first fields read into [`KernelMeta::descriptor`]. The metadata's
//!   sizes are the ones in [`KernelMeta`]; the descriptor's are there to
//!   cross-check them (LLVM writes the same values into both);
//! - the variables: the `STT_OBJECT` symbols of `.dynsym` and `.symtab`
//!   that are not kernel descriptors. A file without section headers has
//!   its notes read from its `PT_NOTE` segments, but no symbols.

mod error;
mod file;
mod metadata;
mod msgpack;
mod target;

#[cfg(test)]
mod tests;

pub use error::CodeObjectError;
pub use metadata::Metadata;
pub use target::{Feature, Target};

/// The size of an AMDHSA kernel descriptor (AMDGPUUsage.rst, "Kernel
/// Descriptor", table "Code Object V3 and Above Kernel Descriptor": 64
/// bytes, `GROUP_SEGMENT_FIXED_SIZE` u32 at byte 0,
/// `PRIVATE_SEGMENT_FIXED_SIZE` u32 at 4, `KERNARG_SIZE` u32 at 8; LLVM's
/// `llvm/Support/AMDHSAKernelDescriptor.h`, `kernel_descriptor_t`).
pub const KERNEL_DESCRIPTOR_SIZE: u64 = 64;

/// A parsed code object. It owns what it read; the bytes can go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeObject {
    target: Target,
    abi_version: u8,
    metadata_version: Option<[u32; 2]>,
    metadata_target: Option<String>,
    kernels: Vec<KernelMeta>,
    variables: Vec<VariableSymbol>,
}

/// A kernel, as the code object metadata describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelMeta {
    /// `.name`: the kernel's name in the source (`saxpy`).
    pub name: String,
    /// `.symbol`: its kernel descriptor's symbol (`saxpy.kd`), which the HSA
    /// runtime looks kernels up by.
    pub symbol: String,
    /// `.kernarg_segment_size`: the bytes of the kernel arguments, the
    /// hidden ones included.
    pub kernarg_segment_size: u32,
    /// `.kernarg_segment_align`: their alignment.
    pub kernarg_segment_align: u32,
    /// `.group_segment_fixed_size`: the static LDS (`__shared__`) bytes.
    pub group_segment_fixed_size: u32,
    /// `.private_segment_fixed_size`: the static scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// `.args`: the arguments, explicit then hidden, in the metadata's
    /// order.
    pub args: Vec<KernelArgMeta>,
    /// The kernel descriptor, when its symbol is in the file.
    pub descriptor: Option<KernelDescriptor>,
}

/// One kernel argument of the metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelArgMeta {
    /// `.offset`: where it is in the kernel argument segment.
    pub offset: u32,
    /// `.size`: its bytes.
    pub size: u32,
    /// `.value_kind`: `by_value`, `global_buffer`, `hidden_block_count_x`...
    pub value_kind: String,
    /// `.name`, when the compiler wrote it (OpenCL with kernel argument
    /// info; HIP writes none).
    pub name: Option<String>,
}

impl KernelArgMeta {
    /// Whether the runtime, not the caller, fills this argument in (its
    /// value kind starts with `hidden_`).
    pub fn is_hidden(&self) -> bool {
        self.value_kind.starts_with("hidden_")
    }
}

/// The first fields of a kernel descriptor (`<kernel>.kd`) in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelDescriptor {
    /// The descriptor symbol's `st_value`: its offset in the loaded image.
    pub value: u64,
    /// `GROUP_SEGMENT_FIXED_SIZE`, the u32 at byte 0.
    pub group_segment_fixed_size: u32,
    /// `PRIVATE_SEGMENT_FIXED_SIZE`, the u32 at byte 4.
    pub private_segment_fixed_size: u32,
    /// `KERNARG_SIZE`, the u32 at byte 8.
    pub kernarg_size: u32,
}

impl KernelMeta {
    /// The arguments the caller passes, in order.
    pub fn explicit_args(&self) -> impl Iterator<Item = &KernelArgMeta> {
        self.args.iter().filter(|a| !a.is_hidden())
    }

    /// The arguments the runtime fills in (`hidden_*`), in order.
    pub fn hidden_args(&self) -> impl Iterator<Item = &KernelArgMeta> {
        self.args.iter().filter(|a| a.is_hidden())
    }

    /// The hidden argument of value kind `kind` (`hidden_block_count_x`).
    pub fn hidden_arg(&self, kind: &str) -> Option<&KernelArgMeta> {
        self.hidden_args().find(|a| a.value_kind == kind)
    }
}

/// A global variable of the code object: an `STT_OBJECT` symbol, global or
/// weak, defined in a section, that is not a kernel descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariableSymbol {
    /// Its name (`bias`).
    pub name: String,
    /// Its `st_value`: its offset in the loaded image.
    pub value: u64,
    /// Its `st_size` in bytes.
    pub size: u64,
}

impl CodeObject {
    /// The target, from the ELF header.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The kernels, in the metadata's order.
    pub fn kernels(&self) -> &[KernelMeta] {
        &self.kernels
    }

    /// The kernel named `name` in the source (`saxpy`, not `saxpy.kd`).
    pub fn kernel(&self, name: &str) -> Option<&KernelMeta> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// The global variables, `.dynsym`'s first, each name once.
    pub fn variables(&self) -> &[VariableSymbol] {
        &self.variables
    }

    /// The variable named `name`.
    pub fn variable(&self, name: &str) -> Option<&VariableSymbol> {
        self.variables.iter().find(|v| v.name == name)
    }

    /// The code object version (3, 4, 5, 6), from the ELF header's
    /// `EI_ABIVERSION` (`ELFABIVERSION_AMDGPU_HSA_V3` = 1 ... `_V6` = 4),
    /// which tells v5 from v6 where the metadata's `amdhsa.version` cannot
    /// (both are `[1, 2]`); for a later ABI version, from `amdhsa.version`
    /// only when that names v3 or v4. `None` when neither tells.
    pub fn code_object_version(&self) -> Option<u32> {
        match self.abi_version {
            1..=4 => Some(u32::from(self.abi_version) + 2),
            _ => match self.metadata_version {
                Some([1, 0]) => Some(3),
                Some([1, 1]) => Some(4),
                _ => None,
            },
        }
    }

    /// The metadata's `amdhsa.version`: `[1, 2]` for v5.
    pub fn metadata_version(&self) -> Option<[u32; 2]> {
        self.metadata_version
    }

    /// The metadata's `amdhsa.target`, when it has one
    /// (`amdgcn-amd-amdhsa--gfx90a`); it agrees with [`Self::target`].
    pub fn metadata_target(&self) -> Option<&str> {
        self.metadata_target.as_deref()
    }
}

/// Parses an HSA code object: an ELF64 little-endian file for `EM_AMDGPU`,
/// OS ABI `ELFOSABI_AMDGPU_HSA`, code object v3 or later, with one
/// `NT_AMDGPU_METADATA` note. Never panics, whatever the bytes.
pub fn parse(bytes: &[u8]) -> Result<CodeObject, CodeObjectError> {
    let elf = file::Elf::read(bytes)?;
    if elf.machine != object::elf::EM_AMDGPU.0 {
        return Err(CodeObjectError::WrongMachine {
            machine: elf.machine,
        });
    }
    if elf.os_abi != file::ELFOSABI_AMDGPU_HSA {
        return Err(CodeObjectError::WrongOsAbi { os_abi: elf.os_abi });
    }
    if elf.abi_version == 0 {
        return Err(CodeObjectError::UnsupportedAbiVersion {
            abi_version: elf.abi_version,
        });
    }
    let target = Target::from_e_flags(elf.flags, elf.abi_version)?;

    let notes = elf.amdgpu_notes(file::NT_AMDGPU_METADATA)?;
    let (offset, desc) = match notes.as_slice() {
        [] => return Err(CodeObjectError::NoMetadata),
        [one] => *one,
        [_, second, ..] => return Err(CodeObjectError::DuplicateMetadata { offset: second.0 }),
    };
    let mut meta = metadata::read(desc, offset)?;
    if let Some(named) = &meta.target {
        let agrees = Target::parse(named).is_some_and(|t| target.agrees_with(&t));
        if !agrees {
            return Err(CodeObjectError::TargetMismatch {
                header: target.to_string(),
                metadata: named.clone(),
            });
        }
    }

    let symbols = elf.symbols()?;
    // By name, the first of each (`.dynsym`'s before `.symtab`'s), of the
    // names as long as some kernel's descriptor symbol.
    let lengths: std::collections::HashSet<usize> =
        meta.kernels.iter().map(|k| k.symbol.len()).collect();
    let mut by_name = std::collections::HashMap::new();
    let mut descriptor_names = Names::new(bytes.len());
    for sym in &symbols {
        if lengths.contains(&sym.name.len()) && descriptor_names.first_time(sym.name)? {
            by_name.entry(sym.name).or_insert(sym);
        }
    }
    for kernel in &mut meta.kernels {
        let Some(sym) = by_name.get(kernel.symbol.as_str()) else {
            continue;
        };
        let read = elf.symbol_bytes(
            sym.shndx,
            sym.value,
            KERNEL_DESCRIPTOR_SIZE,
            "kernel descriptor",
        )?;
        kernel.descriptor = read.map(|(_, kd)| KernelDescriptor {
            value: sym.value,
            group_segment_fixed_size: file::u32_at(kd, 0),
            private_segment_fixed_size: file::u32_at(kd, 4),
            kernarg_size: file::u32_at(kd, 8),
        });
    }
    let mut variables: Vec<VariableSymbol> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut variable_names = Names::new(bytes.len());
    for sym in &symbols {
        let wanted = sym.kind == object::elf::STT_OBJECT
            && sym.bind != object::elf::STB_LOCAL
            && sym.shndx != object::elf::SHN_UNDEF
            && !sym.name.is_empty()
            && !sym.name.ends_with(".kd");
        if wanted && variable_names.first_time(sym.name)? && seen.insert(sym.name) {
            variables.push(VariableSymbol {
                name: sym.name.to_string(),
                value: sym.value,
                size: sym.size,
            });
        }
    }

    Ok(CodeObject {
        target,
        abi_version: elf.abi_version,
        metadata_version: meta.version,
        metadata_target: meta.target,
        kernels: meta.kernels,
        variables,
    })
}

/// Parses code object metadata alone: the MessagePack descriptor of an
/// `NT_AMDGPU_METADATA` note (offsets in errors are in `bytes`).
pub fn parse_metadata(bytes: &[u8]) -> Result<Metadata, CodeObjectError> {
    metadata::read(bytes, 0)
}

/// The symbol names that [`parse`] hashes and copies for one use (finding
/// kernel descriptors, naming variables), bounded by the file: each name
/// once by its place in its string table (a name that many symbols share
/// costs what one does), and those places may add up to no more than the
/// file's length ([`CodeObjectError::Overlapping`]: they would have to
/// overlap, as the tails of one long string do). Without it, a file of
/// 200 KB naming 20,000 variables by the tails of one string would be
/// read into 4 GB of names.
struct Names {
    file_len: u64,
    total: u64,
    /// Where each name met starts, and its length.
    seen: std::collections::HashSet<(usize, usize)>,
}

impl Names {
    fn new(file_len: usize) -> Self {
        Self {
            file_len: file_len as u64,
            total: 0,
            seen: std::collections::HashSet::new(),
        }
    }

    /// Whether `name` (a slice of the file) is met at its place for the
    /// first time (then counted).
    fn first_time(&mut self, name: &str) -> Result<bool, CodeObjectError> {
        if !self.seen.insert((name.as_ptr().addr(), name.len())) {
            return Ok(false);
        }
        self.total = self.total.saturating_add(name.len() as u64);
        if self.total > self.file_len {
            return Err(CodeObjectError::Overlapping {
                what: "symbol names",
                read: self.total,
                len: self.file_len,
            });
        }
        Ok(true)
    }
}
