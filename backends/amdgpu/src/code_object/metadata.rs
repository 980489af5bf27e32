//! The code object metadata (v3 and later): what the MessagePack map of the
//! `NT_AMDGPU_METADATA` note says about the kernels.
//!
//! Keys, from AMDGPUUsage.rst: table "AMDHSA Code Object V3 Metadata Map
//! Keys" (`amdhsa.version`, "Required. The first integer is the major
//! version. Currently 1. The second integer is the minor version. Currently
//! 0.", and `amdhsa.kernels`, "Required. Sequence of the maps for each
//! kernel"); "Code Object V4 Metadata" (version 1.1, adds `amdhsa.target`,
//! "the target ID of the code object"); "Code Object V5 Metadata" (version
//! 1.2, adds the hidden arguments `hidden_block_count_x` and the like);
//! "AMDHSA Code Object V3 Kernel Metadata Map Keys" (`.name`, `.symbol`,
//! `.kernarg_segment_size`, `.kernarg_segment_align`,
//! `.group_segment_fixed_size`, `.private_segment_fixed_size`, all
//! required, and `.args`); "AMDHSA Code Object V3 Kernel Argument Metadata
//! Map Keys" (`.name` optional, `.offset`, `.size` and `.value_kind`
//! required). LLVM's `llvm/Support/AMDGPUMetadata.h` has the versions:
//! `VersionMajorV5 = 1`, `VersionMinorV5 = 2` (v6 the same).

use super::msgpack::{self, Value};
use super::{CodeObjectError, KernelArgMeta, KernelMeta};

/// What the code object metadata says, read by
/// [`parse_metadata`](super::parse_metadata).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    /// `amdhsa.version`: `[1, 0]` for code object v3, `[1, 1]` for v4,
    /// `[1, 2]` for v5 and v6.
    pub version: Option<[u32; 2]>,
    /// `amdhsa.target` (v4 and later): the target-id after the triple,
    /// `amdgcn-amd-amdhsa--gfx90a:xnack+`.
    pub target: Option<String>,
    /// `amdhsa.kernels`, in their order there (none when the key is
    /// missing). Their [`KernelMeta::descriptor`] is `None`: it comes from
    /// the ELF file.
    pub kernels: Vec<KernelMeta>,
}

/// Reads the metadata from its MessagePack bytes, `base` their offset in
/// the file (for the errors).
pub(super) fn read(bytes: &[u8], base: u64) -> Result<Metadata, CodeObjectError> {
    let root = msgpack::read(bytes, base)?;
    if !matches!(root, Value::Map(_)) {
        return Err(wrong("(root)", "not a map"));
    }
    let version = match root.get("amdhsa.version") {
        None => None,
        Some(Value::Array(items)) if items.len() == 2 => {
            let part = |v: &Value<'_>| {
                v.as_u64()
                    .and_then(|v| u32::try_from(v).ok())
                    .ok_or_else(|| wrong("amdhsa.version", "not two unsigned 32-bit integers"))
            };
            Some([part(&items[0])?, part(&items[1])?])
        }
        Some(_) => return Err(wrong("amdhsa.version", "not a sequence of two integers")),
    };
    let target = match root.get("amdhsa.target") {
        None => None,
        Some(v) => Some(
            v.as_str()
                .ok_or_else(|| wrong("amdhsa.target", "not a UTF-8 string"))?
                .to_string(),
        ),
    };
    let kernels = match root.get("amdhsa.kernels") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, k)| kernel(k, i))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(wrong("amdhsa.kernels", "not a sequence")),
    };
    Ok(Metadata {
        version,
        target,
        kernels,
    })
}

/// A metadata error at `path`.
fn wrong(path: impl Into<String>, reason: &'static str) -> CodeObjectError {
    CodeObjectError::Metadata {
        path: path.into(),
        reason,
    }
}

/// Reads the keys of one map, naming it `path` in errors.
struct Keys<'m, 'a> {
    map: &'m Value<'a>,
    path: &'m dyn Fn() -> String,
}

impl Keys<'_, '_> {
    /// The error for `key` of this map (the keys start with a dot).
    fn error(&self, key: &str, reason: &'static str) -> CodeObjectError {
        wrong(format!("{}{key}", (self.path)()), reason)
    }

    /// A required unsigned 32-bit integer.
    fn u32(&self, key: &str) -> Result<u32, CodeObjectError> {
        let v = self
            .map
            .get(key)
            .ok_or_else(|| self.error(key, "missing"))?;
        let v = v
            .as_u64()
            .ok_or_else(|| self.error(key, "not an unsigned integer"))?;
        u32::try_from(v).map_err(|_| self.error(key, "out of range (more than 32 bits)"))
    }

    /// An optional string.
    fn opt_str(&self, key: &str) -> Result<Option<String>, CodeObjectError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_str()
                .map(|s| Some(s.to_string()))
                .ok_or_else(|| self.error(key, "not a UTF-8 string")),
        }
    }

    /// A required string.
    fn str(&self, key: &str) -> Result<String, CodeObjectError> {
        self.opt_str(key)?.ok_or_else(|| self.error(key, "missing"))
    }
}

/// Kernel `index` of `amdhsa.kernels`.
fn kernel(value: &Value<'_>, index: usize) -> Result<KernelMeta, CodeObjectError> {
    let path = || format!("amdhsa.kernels[{index}]");
    if !matches!(value, Value::Map(_)) {
        return Err(wrong(path(), "not a map"));
    }
    let keys = Keys {
        map: value,
        path: &path,
    };
    let args = match value.get(".args") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, a)| arg(a, index, i))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(keys.error(".args", "not a sequence")),
    };
    Ok(KernelMeta {
        name: keys.str(".name")?,
        symbol: keys.str(".symbol")?,
        kernarg_segment_size: keys.u32(".kernarg_segment_size")?,
        kernarg_segment_align: keys.u32(".kernarg_segment_align")?,
        group_segment_fixed_size: keys.u32(".group_segment_fixed_size")?,
        private_segment_fixed_size: keys.u32(".private_segment_fixed_size")?,
        args,
        descriptor: None,
    })
}

/// Argument `index` of kernel `kernel`.
fn arg(value: &Value<'_>, kernel: usize, index: usize) -> Result<KernelArgMeta, CodeObjectError> {
    let path = || format!("amdhsa.kernels[{kernel}].args[{index}]");
    if !matches!(value, Value::Map(_)) {
        return Err(wrong(path(), "not a map"));
    }
    let keys = Keys {
        map: value,
        path: &path,
    };
    Ok(KernelArgMeta {
        offset: keys.u32(".offset")?,
        size: keys.u32(".size")?,
        value_kind: keys.str(".value_kind")?,
        name: keys.opt_str(".name")?,
    })
}
