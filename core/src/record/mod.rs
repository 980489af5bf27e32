//! The kernel record: what was launched, with which arguments and geometry.
//!
//! A [`KernelRecord`] is read from the JSON descriptor of a capture and
//! written back into a caller's buffer, both through `serde-json-core`, with
//! no allocation. Three key sets are understood:
//!
//! - **LLVM legacy** (LLVM <= 21): `NumTeamsClause`, `ThreadLimitClause`,
//!   `DeviceMemorySize`, optional `BumpAllocVAStart`;
//! - **LLVM current**: `NumTeams`, `NumThreads`, `SharedMemorySize`,
//!   `VAllocAddr`, `VAllocSize`, `TeamsLimits`, `ThreadsLimits`;
//! - **reprise**: the current set plus `RepriseFormat` (format version),
//!   `Backend`, `Grid`, `Block` (3-D geometry), `ArgSizes`, `ArgData`,
//!   `DeviceMemorySize` (snapshot length), `LaunchSeq`, `Checksums`,
//!   `ArgsOutside`/`ArgsInGlobals` (arguments a replay may not reproduce),
//!   `Reachable` (a reachable-only capture: the `[offset, len]` ranges
//!   of the region its snapshots hold, the rest being poison; see
//!   [`reachable`]), and `ArgAllocations` (the allocation each pointer
//!   argument points into, `[index, offset, len]`).
//!
//! The generation is detected from the keys present; unknown keys are
//! ignored. Reading also checks what the descriptor alone can tell: a
//! `RepriseFormat` newer than [`FORMAT_VERSION`], `Grid`/`Block` that
//! disagree with `NumTeams`/`NumThreads` or have a dimension of 0, `ArgSizes`
//! entries that cannot be right, and a region at address 0, larger than
//! [`MAX_REGION_SIZE`], wrapping past the end of the address space, or
//! smaller than `DeviceMemorySize`. Each is an error that names the keys.
//! Capacities are fixed: at most [`MAX_ARGS`] arguments, names of at
//! most [`MAX_NAME_LEN`] bytes, [`MAX_ARG_DATA`] bytes of large by-value
//! arguments. Going past one is a clear error, not a truncation.
//!
//! In LLVM's formats a team or thread count of 0 means "not recorded":
//! LLVM 16 and 17 saved the launch's `num_teams`/`thread_limit` *clauses*,
//! 0 when the construct had none, and LLVM's replay tool passes the 0 on so
//! that the plugin picks its default. Such a count is read as 0 (see
//! [`KernelRecord::num_teams`]); a replay then needs the count given to it.
//! reprise's own format always records the counts, so there 0 is an error.
//!
//! Writing refuses what reading would refuse: whatever
//! [`KernelRecord::to_json`] writes, [`KernelRecord::from_json`] reads back.
//!
//! ```
//! use reprise_core::record::{Generation, KernelRecord};
//! let json = br#"{"ArgOffsets":[0,0],"ArgPtrs":[140737488355328,42],"DeviceId":0,
//!   "DeviceMemorySize":1024,"LoopTripCount":0,"Name":"saxpy","NumArgs":2,
//!   "NumTeamsClause":4,"ThreadLimitClause":128}"#;
//! let rec = KernelRecord::from_json(json).unwrap();
//! assert_eq!(rec.generation, Generation::LlvmLegacy);
//! assert_eq!((rec.name.as_str(), rec.grid[0], rec.block[0]), ("saxpy", 4, 128));
//!
//! // Written back as reprise's own format, and read again unchanged.
//! let mut rec = rec;
//! rec.region_base = Some(0x7e00_0000_0000);
//! let mut buf = [0u8; 1024];
//! let n = rec.to_json(Generation::Reprise, &mut buf).unwrap();
//! let again = KernelRecord::from_json(&buf[..n]).unwrap();
//! assert_eq!(again.generation, Generation::Reprise);
//! assert_eq!(again.arg_ptrs, rec.arg_ptrs);
//! assert_eq!(again.memory_size, Some(1024));
//! ```

use core::fmt;

use heapless::{String, Vec};

#[cfg(feature = "alloc")]
pub mod base;
mod check;
mod de;
mod error;
mod extra;
mod files;
#[cfg(test)]
mod marks_tests;
pub mod reachable;
mod ser;
#[cfg(test)]
mod tests;

use check::{check_arg_allocations, check_arg_sizes, check_region};
pub use error::{ArgSizeProblem, RecordError};
pub use extra::{ExtraRange, MAX_EXTRA_RANGES, MemoryClass, extra_len};
pub use files::{Checksummer, EXTRA_EXTENSIONS, FileNames, KNOWN_EXTENSIONS, checksum};

/// Most arguments a record can hold.
pub const MAX_ARGS: usize = 128;
/// Longest kernel name, in bytes.
pub const MAX_NAME_LEN: usize = 512;
/// Most bytes of by-value arguments larger than 8 bytes (CUDA's classic
/// 4 KiB parameter space).
pub const MAX_ARG_DATA: usize = 4096;
/// The reprise format version this crate writes.
pub const FORMAT_VERSION: u32 = 1;
/// A buffer of this size holds any record this crate writes.
pub const MAX_JSON_LEN: usize = 32 * 1024;
/// How deep arrays and objects may nest in a descriptor: its own values
/// nest three deep (the object, `Checksums`, a value's array); unknown keys
/// (which are skipped) may nest deeper, up to this many levels in all.
pub const MAX_DEPTH: usize = 32;
/// Largest region (`VAllocSize`) a descriptor may declare: 128 TiB, the
/// whole user half of x86-64's 48-bit address space, which is also as much
/// as CUDA's unified address space (shared with the host) can hold. LLVM
/// reserves 64 GiB by default; anything near this cap is a corrupt field.
pub const MAX_REGION_SIZE: u64 = 1 << 47;

/// Which tool and version wrote a descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Generation {
    /// LLVM's offloading runtime up to LLVM 21 (the seed).
    LlvmLegacy,
    /// LLVM's current (2026) record/replay.
    LlvmCurrent,
    /// reprise's own format (LLVM current keys plus extensions).
    Reprise,
}

impl Generation {
    /// The layout of the globals files this generation writes: the seed's
    /// (LLVM legacy) or LLVM's current one (LLVM current, reprise).
    pub const fn globals_layout(self) -> crate::globals::Layout {
        match self {
            Generation::LlvmLegacy => crate::globals::Layout::Seed,
            Generation::LlvmCurrent | Generation::Reprise => crate::globals::Layout::Current,
        }
    }

    /// A short lowercase name: `llvm-legacy`, `llvm-current`, `reprise`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Generation::LlvmLegacy => "llvm-legacy",
            Generation::LlvmCurrent => "llvm-current",
            Generation::Reprise => "reprise",
        }
    }
}

impl Generation {
    /// The key that holds the team count (grid x) in this generation's
    /// descriptors: `NumTeamsClause` (LLVM legacy) or `NumTeams`.
    pub const fn teams_key(self) -> &'static str {
        match self {
            Generation::LlvmLegacy => "NumTeamsClause",
            Generation::LlvmCurrent | Generation::Reprise => "NumTeams",
        }
    }

    /// The key that holds the threads per team (block x) in this
    /// generation's descriptors: `ThreadLimitClause` (LLVM legacy) or
    /// `NumThreads`.
    pub const fn threads_key(self) -> &'static str {
        match self {
            Generation::LlvmLegacy => "ThreadLimitClause",
            Generation::LlvmCurrent | Generation::Reprise => "NumThreads",
        }
    }

    /// Whether a team or thread count of 0 is read as "not recorded"
    /// rather than refused: true for LLVM's generations (see the module
    /// docs), false for reprise's own.
    pub const fn allows_unknown_counts(self) -> bool {
        !matches!(self, Generation::Reprise)
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kind of executor a capture was recorded on.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// The host CPU (ELF x86-64 shared objects).
    Host,
    /// NVIDIA GPUs through the CUDA driver.
    Cuda,
    /// AMD GPUs through the HSA runtime.
    Amdgpu,
    /// A device driven from a microcontroller by reprise-core alone, under
    /// an embedded executor (`core/embedded`): its image is the kernel's
    /// code as a 32-bit Arm or RISC-V ELF file. No executor of the std
    /// build runs it; its captures are read (`inspect`) on the host.
    Mcu,
}

impl BackendKind {
    /// The name used in descriptors and on the command line.
    pub const fn as_str(self) -> &'static str {
        match self {
            BackendKind::Host => "host",
            BackendKind::Cuda => "cuda",
            BackendKind::Amdgpu => "amdgpu",
            BackendKind::Mcu => "mcu",
        }
    }

    /// Parses a name written by [`BackendKind::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "host" => Some(BackendKind::Host),
            "cuda" => Some(BackendKind::Cuda),
            "amdgpu" => Some(BackendKind::Amdgpu),
            "mcu" => Some(BackendKind::Mcu),
            _ => None,
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// 64-bit checksums (xxh3) of a capture's files, where known.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checksums {
    /// The pre-kernel memory snapshot.
    pub input: Option<u64>,
    /// The post-kernel memory snapshot.
    pub output: Option<u64>,
    /// The globals file.
    pub globals: Option<u64>,
    /// The device image.
    pub image: Option<u64>,
    /// The LLVM IR the image was compiled from (`STEM.bc`, key `ir`):
    /// reprise's own key, written when the Recorder was given the IR.
    pub ir: Option<u64>,
    /// `STEM.extra_input`: the bytes of [`KernelRecord::extra_ranges`]
    /// before the kernel (key `extra_input`).
    pub extra_input: Option<u64>,
    /// `STEM.extra_output`: their bytes after it (key `extra_output`).
    pub extra_output: Option<u64>,
    /// The first entry of the descriptor's `Checksums` map that names no
    /// file of a capture (`"3input"`, say): a mangled map, whose checksum
    /// for some file is then missing. Never written.
    pub unknown: Option<EntryName>,
}

impl Checksums {
    /// Whether no file's checksum is known.
    pub fn is_empty(&self) -> bool {
        self.input.is_none()
            && self.output.is_none()
            && self.globals.is_none()
            && self.image.is_none()
    }
}

/// A short name as a descriptor wrote it (at most 16 bytes of it are kept).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct EntryName {
    bytes: [u8; 16],
    len: u8,
}

impl EntryName {
    /// The first 16 bytes of `name` (cut at a character boundary).
    pub fn new(name: &str) -> Self {
        let mut len = name.len().min(16);
        while !name.is_char_boundary(len) {
            len -= 1;
        }
        let mut bytes = [0u8; 16];
        bytes[..len].copy_from_slice(&name.as_bytes()[..len]);
        EntryName {
            bytes,
            len: len as u8,
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        // Built from a `&str` cut at a character boundary.
        core::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

impl fmt::Debug for EntryName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for EntryName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A recorded kernel launch.
///
/// Arguments follow LLVM's convention: argument `i` is the 64-bit value
/// `arg_ptrs[i] + arg_offsets[i]` (a device address, or a scalar passed in a
/// pointer slot). Native kernels may also carry `arg_sizes`: then an argument
/// of at most 8 bytes is the low bytes of that value, and one of more than 8
/// bytes is `arg_sizes[i]` bytes of `arg_data` starting at offset
/// `arg_ptrs[i]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelRecord {
    /// Which key set the descriptor used (or will use).
    pub generation: Generation,
    /// The kernel's symbol name.
    pub name: String<MAX_NAME_LEN>,
    /// `ArgPtrs`: argument values (signed 64-bit, as LLVM writes them).
    pub arg_ptrs: Vec<i64, MAX_ARGS>,
    /// `ArgOffsets`: added to `arg_ptrs`.
    pub arg_offsets: Vec<i64, MAX_ARGS>,
    /// `ArgSizes`: bytes per argument; empty means all are 8 bytes.
    pub arg_sizes: Vec<u32, MAX_ARGS>,
    /// `ArgData`: bytes of arguments larger than 8 bytes.
    pub arg_data: Vec<u8, MAX_ARG_DATA>,
    /// Grid (teams) in x, y, z; x is 0 when an LLVM descriptor did not
    /// record the team count.
    pub grid: [u32; 3],
    /// Block (threads per team) in x, y, z; x is 0 when an LLVM descriptor
    /// did not record the thread count.
    pub block: [u32; 3],
    /// Dynamic shared memory in bytes.
    pub shared_mem: u32,
    /// `LoopTripCount`.
    pub loop_trip_count: u64,
    /// `DeviceId`.
    pub device_id: i32,
    /// Region start (`VAllocAddr`, legacy `BumpAllocVAStart`).
    pub region_base: Option<u64>,
    /// Reserved region size (`VAllocSize`).
    pub region_size: Option<u64>,
    /// Snapshot length (`DeviceMemorySize`); LLVM current leaves it out and
    /// uses the input file's length.
    pub memory_size: Option<u64>,
    /// `TeamsLimits` `[lo, hi]`.
    pub teams_limits: Option<[u32; 2]>,
    /// `ThreadsLimits` `[lo, hi]`.
    pub threads_limits: Option<[u32; 2]>,
    /// `Backend` (reprise).
    pub backend: Option<BackendKind>,
    /// `RepriseFormat` (reprise).
    pub format_version: Option<u32>,
    /// `LaunchSeq`: which launch of the process this was (reprise).
    pub launch_seq: Option<u64>,
    /// `Checksums` (reprise).
    pub checksums: Checksums,
    /// `ArgsOutside` (reprise): arguments that held a device address outside
    /// the recording region, in memory the recorder could not place there
    /// (managed or host-mapped memory, or an allocation made when the region
    /// was full). The capture does not hold that memory: a replay passes
    /// the old address, so it may read other data or fault.
    pub args_outside: Vec<u8, MAX_ARGS>,
    /// `ArgsInGlobals` (reprise): arguments that held the address of a
    /// device global. A replay loads the image anew and its globals may land
    /// elsewhere, so the old address may not be the global's.
    pub args_in_globals: Vec<u8, MAX_ARGS>,
    /// `Reachable` (reprise): `Some` for a reachable-only capture, the
    /// ranges (`[offset, len]` from the region's base) of its snapshots that
    /// hold recorded memory, the allocations the launch could reach (see
    /// [`reachable`]); every other byte of both snapshots is
    /// [`reachable::POISON`]. `None`, the rest of reprise's captures and
    /// every LLVM one: the snapshots hold the whole region used.
    pub reachable: Option<reachable::Ranges>,
    /// `ArgAllocations` (reprise): for each argument that pointed into an
    /// allocation of the recording region, `[index, offset, len]`: the
    /// allocation it pointed into, `len` bytes from `offset` (from the
    /// region's base), as the recorder made it. In order of `index`, one
    /// entry per argument at most. Empty for LLVM's captures, and for
    /// reprise's recorded before the key was written: nothing says where
    /// an allocation ends then.
    pub arg_allocations: Vec<[u64; 3], MAX_ARGS>,
    /// `ExtraRanges` (reprise): memory beyond the region the kernel could
    /// reach (managed, page-locked or registered host memory), each range
    /// at its own address, whose bytes the capture holds in
    /// `STEM.extra_input` and `STEM.extra_output` (see [`ExtraRange`]).
    /// Empty for every capture without such memory, and LLVM's.
    pub extra_ranges: Vec<ExtraRange, MAX_EXTRA_RANGES>,
}

impl KernelRecord {
    /// An empty record for kernel `name` in reprise's format, launched with
    /// one team of one thread and no arguments.
    pub fn new(name: &str) -> Result<Self, RecordError> {
        let mut n = String::new();
        n.push_str(name).map_err(|_| RecordError::NameTooLong {
            len: name.len(),
            max: MAX_NAME_LEN,
        })?;
        Ok(KernelRecord {
            generation: Generation::Reprise,
            name: n,
            arg_ptrs: Vec::new(),
            arg_offsets: Vec::new(),
            arg_sizes: Vec::new(),
            arg_data: Vec::new(),
            grid: [1, 1, 1],
            block: [1, 1, 1],
            shared_mem: 0,
            loop_trip_count: 0,
            device_id: 0,
            region_base: None,
            region_size: None,
            memory_size: None,
            teams_limits: None,
            threads_limits: None,
            backend: None,
            format_version: Some(FORMAT_VERSION),
            launch_seq: None,
            checksums: Checksums::default(),
            args_outside: Vec::new(),
            args_in_globals: Vec::new(),
            reachable: None,
            arg_allocations: Vec::new(),
            extra_ranges: Vec::new(),
        })
    }

    /// Number of arguments.
    pub fn num_args(&self) -> usize {
        self.arg_ptrs.len()
    }

    /// Appends an 8-byte argument (a device address or a scalar in a pointer
    /// slot).
    pub fn push_arg(&mut self, value: u64) -> Result<(), RecordError> {
        self.push_sized(value as i64, 8)
    }

    /// Appends an argument of `bytes.len()` bytes (a native kernel's scalar or
    /// by-value struct).
    pub fn push_arg_bytes(&mut self, bytes: &[u8]) -> Result<(), RecordError> {
        if bytes.len() <= 8 {
            let mut v = [0u8; 8];
            v[..bytes.len()].copy_from_slice(bytes);
            return self.push_sized(i64::from_le_bytes(v), bytes.len() as u32);
        }
        let at = self.arg_data.len();
        self.arg_data
            .extend_from_slice(bytes)
            .map_err(|_| RecordError::ArgDataTooLong {
                len: at + bytes.len(),
                max: MAX_ARG_DATA,
            })?;
        self.push_sized(at as i64, bytes.len() as u32)
    }

    fn push_sized(&mut self, value: i64, size: u32) -> Result<(), RecordError> {
        let too_many = RecordError::TooManyArgs {
            count: self.arg_ptrs.len() as u64 + 1,
            max: MAX_ARGS,
        };
        if self.arg_ptrs.is_full() {
            return Err(too_many);
        }
        // Sizes are only written when some argument is not 8 bytes.
        if size != 8 && self.arg_sizes.is_empty() {
            for _ in 0..self.arg_ptrs.len() {
                let _ = self.arg_sizes.push(8);
            }
        }
        if !self.arg_sizes.is_empty() || size != 8 {
            let _ = self.arg_sizes.push(size);
        }
        let _ = self.arg_ptrs.push(value);
        let _ = self.arg_offsets.push(0);
        Ok(())
    }

    /// Size in bytes of argument `i` (8 unless `arg_sizes` says otherwise).
    pub fn arg_size(&self, i: usize) -> u32 {
        self.arg_sizes.get(i).copied().unwrap_or(8)
    }

    /// The 64-bit value of argument `i`: `arg_ptrs[i] + arg_offsets[i]`.
    pub fn arg_value(&self, i: usize) -> u64 {
        (self.arg_ptrs[i] as u64).wrapping_add(self.arg_offsets[i] as u64)
    }

    /// The allocation argument `i` pointed into, as `(offset, len)` from
    /// the region's base, when the record says (`ArgAllocations`) and the
    /// argument still points into it: an argument changed by hand since
    /// the recording has no allocation.
    pub fn arg_allocation(&self, i: usize) -> Option<(u64, u64)> {
        let &[_, offset, len] = self.arg_allocations.iter().find(|a| a[0] == i as u64)?;
        if let Some(base) = self.region_base {
            let at = self.arg_value(i).wrapping_sub(base);
            if at < offset || at - offset >= len {
                return None;
            }
        }
        Some((offset, len))
    }

    /// All argument values, as [`KernelRecord::arg_value`].
    pub fn arg_values(&self) -> Vec<u64, MAX_ARGS> {
        (0..self.num_args()).map(|i| self.arg_value(i)).collect()
    }

    /// The bytes of argument `i` in the kernel's layout: the low
    /// `arg_size(i)` bytes of its value, or its slice of `arg_data`.
    pub fn arg_bytes<'s>(&'s self, i: usize, scratch: &'s mut [u8; 8]) -> &'s [u8] {
        let size = self.arg_size(i) as usize;
        if size > 8 {
            let at = self.arg_ptrs[i] as usize;
            return &self.arg_data[at..at + size];
        }
        *scratch = self.arg_value(i).to_le_bytes();
        &scratch[..size]
    }

    /// Teams (grid x); 0 when an LLVM descriptor did not record the count
    /// (no `num_teams` clause), so that a replay must be told it.
    pub fn num_teams(&self) -> u32 {
        self.grid[0]
    }

    /// Threads per team (block x); 0 when an LLVM descriptor did not record
    /// the count (no `thread_limit` clause), so that a replay must be told it.
    pub fn num_threads(&self) -> u32 {
        self.block[0]
    }

    /// Parses a descriptor of any generation. See the module docs.
    pub fn from_json(json: &[u8]) -> Result<Self, RecordError> {
        de::from_json(json)
    }

    /// Writes the descriptor as `generation`'s key set into `buf` and returns
    /// its length. Keys are sorted and the JSON is compact, as LLVM writes it.
    ///
    /// `Reprise` writes every field; `LlvmCurrent` and `LlvmLegacy` write only
    /// their own keys (useful for producing LLVM-compatible fixtures).
    ///
    /// A record that would give a descriptor [`KernelRecord::from_json`]
    /// refuses is an error instead: a value the key set requires is absent
    /// ([`RecordError::CannotWrite`]: no region base for `LlvmCurrent` or
    /// `Reprise`, no snapshot length for `LlvmLegacy`, a team or thread count
    /// of 0 for `Reprise`), a region base of 0, a region too large, wrapping
    /// or smaller than the snapshot, a 0 `Grid`/`Block` dimension, or
    /// argument arrays and sizes that disagree.
    pub fn to_json(&self, generation: Generation, buf: &mut [u8]) -> Result<usize, RecordError> {
        self.check_writable(generation)?;
        ser::to_slice(self, generation, buf)
    }

    /// The checks [`de::Raw::into_record`] makes, on the values `generation`'s
    /// key set would carry.
    fn check_writable(&self, generation: Generation) -> Result<(), RecordError> {
        use RecordError::*;
        let cannot = |key| CannotWrite { generation, key };
        let legacy = generation == Generation::LlvmLegacy;
        let reprise = generation == Generation::Reprise;
        if self.arg_offsets.len() != self.arg_ptrs.len() {
            return Err(ArgCountMismatch {
                num_args: self.arg_ptrs.len() as u64,
                ptrs: self.arg_ptrs.len(),
                offsets: self.arg_offsets.len(),
            });
        }
        if reprise {
            if !self.arg_sizes.is_empty() && self.arg_sizes.len() != self.arg_ptrs.len() {
                return Err(ArgSizesCount {
                    num_args: self.arg_ptrs.len() as u64,
                    sizes: self.arg_sizes.len() as u64,
                });
            }
            check_arg_sizes(&self.arg_sizes, &self.arg_ptrs, self.arg_data.len())?;
            // LLVM's keys may say 0 (not recorded); reprise's may not.
            if self.grid[0] == 0 {
                return Err(cannot("NumTeams"));
            }
            if self.block[0] == 0 {
                return Err(cannot("NumThreads"));
            }
            for (key, value) in [("Grid", self.grid), ("Block", self.block)] {
                if value.contains(&0) {
                    return Err(ZeroDimension { key, value });
                }
            }
            if let Some(ranges) = &self.reachable {
                reachable::check_ranges(ranges, self.memory_size)?;
            }
            check_arg_allocations(self)?;
            match self.format_version {
                Some(0) => return Err(Zero("RepriseFormat")),
                Some(version) if version > FORMAT_VERSION => {
                    return Err(FormatTooNew {
                        version: u64::from(version),
                        max: FORMAT_VERSION,
                    });
                }
                _ => {}
            }
        }
        let base_key = if legacy {
            "BumpAllocVAStart"
        } else {
            "VAllocAddr"
        };
        if !legacy && self.region_base.is_none() {
            return Err(cannot("VAllocAddr"));
        }
        if legacy && self.memory_size.is_none() {
            return Err(cannot("DeviceMemorySize"));
        }
        // What the key set writes of the region: LLVM legacy has no
        // VAllocSize, LLVM current no DeviceMemorySize.
        let size = if legacy { None } else { self.region_size };
        let snapshot = if generation == Generation::LlvmCurrent {
            None
        } else {
            self.memory_size
        };
        check_region(self.region_base, base_key, size, snapshot)
    }
}
