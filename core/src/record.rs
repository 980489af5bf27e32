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
//!   `DeviceMemorySize` (snapshot length), `LaunchSeq` and `Checksums`.
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

use core::cell::Cell;
use core::fmt;

use heapless::{String, Vec};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Deserializer, Serialize};

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
}

impl BackendKind {
    /// The name used in descriptors and on the command line.
    pub const fn as_str(self) -> &'static str {
        match self {
            BackendKind::Host => "host",
            BackendKind::Cuda => "cuda",
            BackendKind::Amdgpu => "amdgpu",
        }
    }

    /// Parses a name written by [`BackendKind::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "host" => Some(BackendKind::Host),
            "cuda" => Some(BackendKind::Cuda),
            "amdgpu" => Some(BackendKind::Amdgpu),
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
}

impl Checksums {
    fn is_empty(&self) -> bool {
        self.input.is_none()
            && self.output.is_none()
            && self.globals.is_none()
            && self.image.is_none()
    }
}

/// What is wrong with one `ArgSizes` entry ([`RecordError::BadArgSize`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgSizeProblem {
    /// The size is 0.
    Zero,
    /// The size is larger than any by-value argument can be.
    TooLarge {
        /// The largest by-value argument, in bytes ([`MAX_ARG_DATA`]).
        max: usize,
    },
    /// The argument's bytes (at `ArgData` offset `ArgPtrs[index]`) are not
    /// all inside `ArgData`.
    OutsideArgData {
        /// The offset, as written in `ArgPtrs`.
        offset: i64,
        /// Bytes in `ArgData` (0 when the key is absent).
        data_len: usize,
    },
}

/// Why a descriptor could not be read or written.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordError {
    /// The text is not a descriptor at all: not a JSON object, or an object
    /// with none of the descriptor's keys (then `error` is `None`).
    NotADescriptor {
        /// What the JSON parser reported, if it failed.
        error: Option<serde_json_core::de::Error>,
    },
    /// The descriptor is malformed JSON; `key` is the key whose value was
    /// being read, if any.
    Json {
        /// The key being read when the error struck.
        key: Option<&'static str>,
        /// What the JSON parser reported.
        error: serde_json_core::de::Error,
    },
    /// A required key is absent.
    MissingKey(&'static str),
    /// A value is outside the range its key allows.
    OutOfRange(&'static str),
    /// A value is malformed (bad hex, unknown backend, wrong array length).
    BadValue(&'static str),
    /// `NumArgs` disagrees with the lengths of `ArgPtrs`/`ArgOffsets`
    /// (or `ArgSizes`).
    ArgCountMismatch {
        /// `NumArgs` as written.
        num_args: u64,
        /// Entries in `ArgPtrs`.
        ptrs: usize,
        /// Entries in `ArgOffsets`.
        offsets: usize,
    },
    /// More arguments than [`MAX_ARGS`].
    TooManyArgs {
        /// Arguments in the descriptor.
        count: u64,
        /// The supported maximum.
        max: usize,
    },
    /// A kernel name longer than [`MAX_NAME_LEN`].
    NameTooLong {
        /// The name's length in bytes.
        len: usize,
        /// The supported maximum.
        max: usize,
    },
    /// More large-argument bytes than [`MAX_ARG_DATA`].
    ArgDataTooLong {
        /// Bytes in the descriptor.
        len: usize,
        /// The supported maximum.
        max: usize,
    },
    /// The output buffer is too small for the JSON text.
    BufferTooSmall,
    /// `RepriseFormat` is a version newer than this crate reads.
    FormatTooNew {
        /// The version in the descriptor.
        version: u64,
        /// The newest version this crate reads ([`FORMAT_VERSION`]).
        max: u32,
    },
    /// A count that must be at least 1 is 0 (`NumTeams` and `NumThreads`
    /// in reprise's own format, `RepriseFormat`). LLVM's formats may hold 0
    /// counts: see the module docs.
    Zero(&'static str),
    /// A dimension of `Grid` or `Block` is 0.
    ZeroDimension {
        /// `Grid` or `Block`.
        key: &'static str,
        /// The three dimensions as written.
        value: [u32; 3],
    },
    /// `Grid` or `Block` disagrees with `NumTeams` or `NumThreads`: the
    /// first (x) dimension must equal the count, as the writer emits them.
    GeometryMismatch {
        /// `Grid` or `Block`.
        key: &'static str,
        /// The three dimensions as written.
        value: [u32; 3],
        /// `NumTeams` or `NumThreads`.
        count_key: &'static str,
        /// The count as written.
        count: u32,
    },
    /// `ArgSizes` has a different number of entries than `NumArgs`.
    ArgSizesCount {
        /// `NumArgs` as written.
        num_args: u64,
        /// Entries in `ArgSizes`.
        sizes: u64,
    },
    /// One `ArgSizes` entry cannot be right.
    BadArgSize {
        /// The entry's index (the argument's).
        index: usize,
        /// The size as written.
        size: u32,
        /// Why it cannot be right.
        problem: ArgSizeProblem,
    },
    /// The region base (`VAllocAddr`, `BumpAllocVAStart`) is 0.
    NullRegionBase(&'static str),
    /// `VAllocSize` is larger than [`MAX_REGION_SIZE`].
    RegionTooLarge {
        /// `VAllocSize` as written.
        size: u64,
        /// The largest accepted.
        max: u64,
    },
    /// The region `[base, base + size)` runs past the end of the 64-bit
    /// address space.
    RegionWraps {
        /// The base as written.
        base: u64,
        /// `VAllocSize` as written.
        size: u64,
    },
    /// `DeviceMemorySize` (the snapshot) is larger than `VAllocSize` (the
    /// region it was taken from).
    SnapshotExceedsRegion {
        /// `DeviceMemorySize` as written.
        snapshot: u64,
        /// `VAllocSize` as written.
        region: u64,
    },
    /// [`KernelRecord::to_json`]: the record lacks a value that `generation`'s
    /// key set requires (so a descriptor written without it could not be
    /// read back): `VAllocAddr` when `region_base` is `None` (an LLVM legacy
    /// capture recorded without `BumpAllocVAStart`), `DeviceMemorySize` for
    /// LLVM legacy when `memory_size` is `None`, `NumTeams`/`NumThreads`
    /// for reprise's format when the count is 0 (not recorded by LLVM).
    CannotWrite {
        /// The generation asked for.
        generation: Generation,
        /// The key that would have no value.
        key: &'static str,
    },
}

/// Writes `[x,y,z]`.
struct Dims([u32; 3]);

impl fmt::Display for Dims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [x, y, z] = self.0;
        write!(f, "[{x},{y},{z}]")
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RecordError::Json {
                key: Some(k),
                error,
            } => {
                write!(f, "invalid descriptor JSON in key \"{k}\": {error}")
            }
            RecordError::Json { key: None, error } => write!(f, "invalid descriptor JSON: {error}"),
            RecordError::NotADescriptor { error } => {
                f.write_str(
                    "not a capture descriptor: expected a JSON object with the keys Name, NumArgs, \
                     ArgPtrs, ArgOffsets, NumTeams and NumThreads (LLVM legacy: NumTeamsClause \
                     and ThreadLimitClause)",
                )?;
                match error {
                    Some(e) => write!(f, " (JSON error: {e})"),
                    None => f.write_str(" (this object has none of them)"),
                }
            }
            RecordError::MissingKey(k) => write!(f, "descriptor lacks the required key \"{k}\""),
            RecordError::OutOfRange(k) => write!(f, "descriptor key \"{k}\" is out of range"),
            RecordError::BadValue(k) => write!(f, "descriptor key \"{k}\" has a malformed value"),
            RecordError::ArgCountMismatch {
                num_args,
                ptrs,
                offsets,
            } => write!(
                f,
                "NumArgs is {num_args} but ArgPtrs has {ptrs} entries and ArgOffsets {offsets}"
            ),
            RecordError::TooManyArgs { count, max } => {
                write!(f, "{count} kernel arguments, more than the supported {max}")
            }
            RecordError::NameTooLong { len, max } => {
                write!(
                    f,
                    "kernel name of {len} bytes, longer than the supported {max}"
                )
            }
            RecordError::ArgDataTooLong { len, max } => {
                write!(
                    f,
                    "{len} bytes of by-value arguments, more than the supported {max}"
                )
            }
            RecordError::BufferTooSmall => f.write_str("descriptor does not fit the output buffer"),
            RecordError::FormatTooNew { version, max } => write!(
                f,
                "RepriseFormat {version} is newer than this reprise reads (up to {max}); upgrade reprise"
            ),
            RecordError::Zero(k) => write!(f, "{k} 0: must be at least 1"),
            RecordError::ZeroDimension { key, value } => write!(
                f,
                "{key} {}: every dimension must be at least 1",
                Dims(value)
            ),
            RecordError::GeometryMismatch {
                key,
                value,
                count_key,
                count,
            } => write!(
                f,
                "{key} {} disagrees with {count_key} {count}: the first (x) dimension of {key} \
                 must equal {count_key}",
                Dims(value)
            ),
            RecordError::ArgSizesCount { num_args, sizes } => {
                write!(f, "NumArgs is {num_args} but ArgSizes has {sizes} entries")
            }
            RecordError::BadArgSize {
                index,
                size,
                problem,
            } => match problem {
                ArgSizeProblem::Zero => write!(
                    f,
                    "ArgSizes[{index}] is 0: every argument has at least 1 byte"
                ),
                ArgSizeProblem::TooLarge { max } => write!(
                    f,
                    "ArgSizes[{index}] is {size}, larger than the largest by-value argument \
                     ({max} bytes, the kernel parameter space)"
                ),
                ArgSizeProblem::OutsideArgData {
                    offset,
                    data_len: 0,
                } => write!(
                    f,
                    "ArgSizes[{index}] is {size} (more than 8 bytes, so its bytes are in ArgData \
                     at offset ArgPtrs[{index}] = {offset}) but the descriptor has no ArgData"
                ),
                ArgSizeProblem::OutsideArgData { offset, data_len } => write!(
                    f,
                    "ArgSizes[{index}] is {size} at ArgData offset ArgPtrs[{index}] = {offset}, \
                     which is not inside ArgData ({data_len} bytes)"
                ),
            },
            RecordError::NullRegionBase(k) => write!(
                f,
                "{k} 0: the region has no address, so the pointers into it cannot be placed"
            ),
            RecordError::RegionTooLarge { size, max } => write!(
                f,
                "VAllocSize {size} is larger than any address space reprise replays into \
                 ({max} bytes at most)"
            ),
            RecordError::RegionWraps { base, size } => write!(
                f,
                "the region at {base:#x} of VAllocSize {size} bytes runs past the end of the \
                 address space"
            ),
            RecordError::SnapshotExceedsRegion { snapshot, region } => write!(
                f,
                "DeviceMemorySize {snapshot} is larger than VAllocSize {region}: a snapshot \
                 cannot be larger than the region it was taken from"
            ),
            RecordError::CannotWrite { generation, key } => {
                write!(
                    f,
                    "cannot write the record in the {generation} format: it has no value for \
                     {key}, which that format requires"
                )?;
                f.write_str(match key {
                    "VAllocAddr" => {
                        " (the region's address; an LLVM legacy capture recorded without \
                         BumpAllocVAStart has none)"
                    }
                    "DeviceMemorySize" => " (the memory snapshot's length)",
                    "NumTeams" => {
                        " (the team count is 0: LLVM recorded no num_teams clause; set the count)"
                    }
                    "NumThreads" => {
                        " (the threads per team are 0: LLVM recorded no thread_limit clause; set \
                         the count)"
                    }
                    _ => "",
                })
            }
        }
    }
}

impl core::error::Error for RecordError {}

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
        let key = Cell::new(None);
        let mut raw = Raw::default();
        let mut unescape = [0u8; MAX_NAME_LEN * 2];
        let mut de = serde_json_core::de::Deserializer::new(json, Some(&mut unescape));
        let parsed = RawSeed {
            raw: &mut raw,
            key: &key,
        }
        .deserialize(&mut de);
        if let Err(error) = parsed {
            // Not even the start of an object: not a descriptor at all.
            if !raw.in_object {
                return Err(RecordError::NotADescriptor { error: Some(error) });
            }
            return Err(RecordError::Json {
                key: key.get(),
                error,
            });
        }
        de.end()
            .map_err(|error| RecordError::Json { key: None, error })?;
        if raw.known_keys == 0 {
            return Err(RecordError::NotADescriptor { error: None });
        }
        raw.into_record()
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
        serde_json_core::to_slice(
            &JsonView {
                rec: self,
                generation,
            },
            buf,
        )
        .map_err(|_| RecordError::BufferTooSmall)
    }

    /// The checks [`Raw::into_record`] makes, on the values `generation`'s
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

/// What a region's keys must satisfy, reading or writing: a base other
/// than 0, a size of at most [`MAX_REGION_SIZE`] that does not run past the
/// end of the address space from the base, and no smaller than the snapshot.
fn check_region(
    base: Option<u64>,
    base_key: &'static str,
    size: Option<u64>,
    snapshot: Option<u64>,
) -> Result<(), RecordError> {
    use RecordError::*;
    if base == Some(0) {
        return Err(NullRegionBase(base_key));
    }
    if let Some(size) = size {
        if size > MAX_REGION_SIZE {
            return Err(RegionTooLarge {
                size,
                max: MAX_REGION_SIZE,
            });
        }
        if let Some(base) = base
            && base.checked_add(size).is_none()
        {
            return Err(RegionWraps { base, size });
        }
        if let Some(snapshot) = snapshot
            && snapshot > size
        {
            return Err(SnapshotExceedsRegion {
                snapshot,
                region: size,
            });
        }
    }
    Ok(())
}

/// Each `ArgSizes` entry must be at least 1 byte, at most [`MAX_ARG_DATA`],
/// and, above 8 bytes, name a slice of `ArgData` (at offset `ArgPtrs[i]`).
fn check_arg_sizes(sizes: &[u32], ptrs: &[i64], data_len: usize) -> Result<(), RecordError> {
    for (index, &size) in sizes.iter().enumerate() {
        let bad = |problem| RecordError::BadArgSize {
            index,
            size,
            problem,
        };
        if size == 0 {
            return Err(bad(ArgSizeProblem::Zero));
        }
        if size as usize > MAX_ARG_DATA {
            return Err(bad(ArgSizeProblem::TooLarge { max: MAX_ARG_DATA }));
        }
        if size > 8 {
            let at = ptrs[index];
            let fits = at >= 0
                && (at as u64)
                    .checked_add(size as u64)
                    .is_some_and(|end| end <= data_len as u64);
            if !fits {
                return Err(bad(ArgSizeProblem::OutsideArgData {
                    offset: at,
                    data_len,
                }));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Reading

/// A JSON string kept up to `N` bytes, with its true length.
#[derive(Default)]
struct CappedStr<const N: usize> {
    s: String<N>,
    len: usize,
}

impl<'de, const N: usize> Deserialize<'de> for CappedStr<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const N: usize>;
        impl<const N: usize> Visitor<'_> for V<N> {
            type Value = CappedStr<N>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                let mut s = String::new();
                let _ = s.push_str(v);
                Ok(CappedStr { s, len: v.len() })
            }
        }
        d.deserialize_str(V::<N>)
    }
}

/// A JSON array kept up to `N` elements, with its true length.
struct CappedVec<T, const N: usize> {
    v: Vec<T, N>,
    len: u64,
}

impl<T, const N: usize> Default for CappedVec<T, N> {
    fn default() -> Self {
        CappedVec {
            v: Vec::new(),
            len: 0,
        }
    }
}

impl<'de, T: Deserialize<'de>, const N: usize> Deserialize<'de> for CappedVec<T, N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T, const N: usize>(core::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>, const N: usize> Visitor<'de> for V<T, N> {
            type Value = CappedVec<T, N>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = CappedVec::default();
                while let Some(x) = seq.next_element::<T>()? {
                    let _ = out.v.push(x);
                    out.len += 1;
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V::<T, N>(core::marker::PhantomData))
    }
}

/// A JSON string of hex digits, decoded into at most `N` bytes.
#[derive(Default)]
struct HexBytes<const N: usize> {
    v: Vec<u8, N>,
    len: usize,
    bad: bool,
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl<'de, const N: usize> Deserialize<'de> for HexBytes<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const N: usize>;
        impl<const N: usize> Visitor<'_> for V<N> {
            type Value = HexBytes<N>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a hex string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                let mut out = HexBytes::<N>::default();
                let b = s.as_bytes();
                out.bad = !b.len().is_multiple_of(2);
                out.len = b.len() / 2;
                for pair in b.chunks_exact(2) {
                    match (hex_val(pair[0]), hex_val(pair[1])) {
                        (Some(h), Some(l)) => {
                            let _ = out.v.push(h << 4 | l);
                        }
                        _ => out.bad = true,
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_str(V::<N>)
    }
}

fn hex_u64(h: &HexBytes<8>) -> Option<u64> {
    if h.bad || h.len != 8 {
        return None;
    }
    let mut a = [0u8; 8];
    a.copy_from_slice(&h.v);
    Some(u64::from_be_bytes(a))
}

#[derive(Default)]
struct RawChecksums {
    input: Option<u64>,
    output: Option<u64>,
    globals: Option<u64>,
    image: Option<u64>,
    bad: bool,
}

impl<'de> Deserialize<'de> for RawChecksums {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawChecksums;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of checksums")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawChecksums, A::Error> {
                let mut out = RawChecksums::default();
                while let Some(k) = map.next_key::<CappedStr<16>>()? {
                    let slot = match k.s.as_str() {
                        "input" => &mut out.input,
                        "output" => &mut out.output,
                        "globals" => &mut out.globals,
                        "image" => &mut out.image,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    let h = map.next_value::<HexBytes<8>>()?;
                    match hex_u64(&h) {
                        Some(v) => *slot = Some(v),
                        None => out.bad = true,
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

/// Every key any generation may hold, as read.
#[derive(Default)]
struct Raw {
    name: Option<CappedStr<MAX_NAME_LEN>>,
    num_args: Option<u64>,
    arg_ptrs: Option<CappedVec<i64, MAX_ARGS>>,
    arg_offsets: Option<CappedVec<i64, MAX_ARGS>>,
    arg_sizes: Option<CappedVec<u32, MAX_ARGS>>,
    arg_data: Option<HexBytes<MAX_ARG_DATA>>,
    num_teams_clause: Option<u64>,
    thread_limit_clause: Option<u64>,
    num_teams: Option<u64>,
    num_threads: Option<u64>,
    grid: Option<CappedVec<u32, 3>>,
    block: Option<CappedVec<u32, 3>>,
    shared_mem: Option<u64>,
    loop_trip_count: Option<u64>,
    device_id: Option<i64>,
    bump_alloc_va_start: Option<u64>,
    valloc_addr: Option<u64>,
    valloc_size: Option<u64>,
    memory_size: Option<u64>,
    teams_limits: Option<CappedVec<u32, 2>>,
    threads_limits: Option<CappedVec<u32, 2>>,
    backend: Option<CappedStr<16>>,
    format_version: Option<u64>,
    launch_seq: Option<u64>,
    checksums: Option<RawChecksums>,
    /// Whether the top-level value was an object.
    in_object: bool,
    /// How many descriptor keys it held.
    known_keys: u32,
}

struct RawSeed<'s> {
    raw: &'s mut Raw,
    key: &'s Cell<Option<&'static str>>,
}

impl<'de> DeserializeSeed<'de> for RawSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// Known keys, in the order they are matched.
const KEYS: &[&str] = &[
    "Name",
    "NumArgs",
    "ArgPtrs",
    "ArgOffsets",
    "ArgSizes",
    "ArgData",
    "NumTeamsClause",
    "ThreadLimitClause",
    "NumTeams",
    "NumThreads",
    "Grid",
    "Block",
    "SharedMemorySize",
    "LoopTripCount",
    "DeviceId",
    "BumpAllocVAStart",
    "VAllocAddr",
    "VAllocSize",
    "DeviceMemorySize",
    "TeamsLimits",
    "ThreadsLimits",
    "Backend",
    "RepriseFormat",
    "LaunchSeq",
    "Checksums",
];

impl<'de> Visitor<'de> for RawSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a kernel descriptor object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let r = self.raw;
        r.in_object = true;
        while let Some(k) = map.next_key::<CappedStr<24>>()? {
            let Some(&key) = KEYS
                .iter()
                .find(|&&known| known == k.s.as_str() && k.len == known.len())
            else {
                self.key.set(None);
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            self.key.set(Some(key));
            r.known_keys = r.known_keys.saturating_add(1);
            match key {
                "Name" => r.name = Some(map.next_value()?),
                "NumArgs" => r.num_args = Some(map.next_value()?),
                "ArgPtrs" => r.arg_ptrs = Some(map.next_value()?),
                "ArgOffsets" => r.arg_offsets = Some(map.next_value()?),
                "ArgSizes" => r.arg_sizes = Some(map.next_value()?),
                "ArgData" => r.arg_data = Some(map.next_value()?),
                "NumTeamsClause" => r.num_teams_clause = Some(map.next_value()?),
                "ThreadLimitClause" => r.thread_limit_clause = Some(map.next_value()?),
                "NumTeams" => r.num_teams = Some(map.next_value()?),
                "NumThreads" => r.num_threads = Some(map.next_value()?),
                "Grid" => r.grid = Some(map.next_value()?),
                "Block" => r.block = Some(map.next_value()?),
                "SharedMemorySize" => r.shared_mem = Some(map.next_value()?),
                "LoopTripCount" => r.loop_trip_count = Some(map.next_value()?),
                "DeviceId" => r.device_id = Some(map.next_value()?),
                "BumpAllocVAStart" => r.bump_alloc_va_start = Some(map.next_value()?),
                "VAllocAddr" => r.valloc_addr = Some(map.next_value()?),
                "VAllocSize" => r.valloc_size = Some(map.next_value()?),
                "DeviceMemorySize" => r.memory_size = Some(map.next_value()?),
                "TeamsLimits" => r.teams_limits = Some(map.next_value()?),
                "ThreadsLimits" => r.threads_limits = Some(map.next_value()?),
                "Backend" => r.backend = Some(map.next_value()?),
                "RepriseFormat" => r.format_version = Some(map.next_value()?),
                "LaunchSeq" => r.launch_seq = Some(map.next_value()?),
                _ => r.checksums = Some(map.next_value()?),
            }
        }
        Ok(())
    }
}

fn to_u32(v: u64, key: &'static str) -> Result<u32, RecordError> {
    u32::try_from(v).map_err(|_| RecordError::OutOfRange(key))
}

fn triple(
    v: Option<CappedVec<u32, 3>>,
    key: &'static str,
) -> Result<Option<[u32; 3]>, RecordError> {
    match v {
        None => Ok(None),
        Some(c) if c.len == 3 => Ok(Some([c.v[0], c.v[1], c.v[2]])),
        Some(_) => Err(RecordError::BadValue(key)),
    }
}

/// The 3-D geometry from `Grid`/`Block` (when present) and the count the
/// LLVM keys give its x dimension: no dimension may be 0, and the two must
/// agree. With `unknown_ok` (LLVM's formats), a count of 0 without
/// `Grid`/`Block` is "not recorded" and gives `[0, 1, 1]`.
fn geometry(
    dims: Option<[u32; 3]>,
    key: &'static str,
    count: u32,
    count_key: &'static str,
    unknown_ok: bool,
) -> Result<[u32; 3], RecordError> {
    match dims {
        Some(value) if value.contains(&0) => Err(RecordError::ZeroDimension { key, value }),
        None if count == 0 && unknown_ok => Ok([0, 1, 1]),
        _ if count == 0 && !unknown_ok => Err(RecordError::Zero(count_key)),
        Some(value) if value[0] != count => Err(RecordError::GeometryMismatch {
            key,
            value,
            count_key,
            count,
        }),
        Some(value) => Ok(value),
        None => Ok([count, 1, 1]),
    }
}

fn pair(v: Option<CappedVec<u32, 2>>, key: &'static str) -> Result<Option<[u32; 2]>, RecordError> {
    match v {
        None => Ok(None),
        Some(c) if c.len == 2 => Ok(Some([c.v[0], c.v[1]])),
        Some(_) => Err(RecordError::BadValue(key)),
    }
}

impl Raw {
    fn into_record(self) -> Result<KernelRecord, RecordError> {
        use RecordError::*;
        // A newer format may mean anything by its keys: refuse it first.
        match self.format_version {
            Some(0) => return Err(Zero("RepriseFormat")),
            Some(version) if version > u64::from(FORMAT_VERSION) => {
                return Err(FormatTooNew {
                    version,
                    max: FORMAT_VERSION,
                });
            }
            _ => {}
        }
        let generation = if self.format_version.is_some() {
            Generation::Reprise
        } else if self.num_teams.is_some() || self.valloc_addr.is_some() {
            Generation::LlvmCurrent
        } else if self.num_teams_clause.is_some() || self.thread_limit_clause.is_some() {
            Generation::LlvmLegacy
        } else {
            return Err(MissingKey("NumTeams"));
        };
        let legacy = generation == Generation::LlvmLegacy;

        let name = self.name.ok_or(MissingKey("Name"))?;
        if name.len > MAX_NAME_LEN {
            return Err(NameTooLong {
                len: name.len,
                max: MAX_NAME_LEN,
            });
        }
        let num_args = self.num_args.ok_or(MissingKey("NumArgs"))?;
        let ptrs = self.arg_ptrs.ok_or(MissingKey("ArgPtrs"))?;
        let offsets = self.arg_offsets.ok_or(MissingKey("ArgOffsets"))?;
        for count in [num_args, ptrs.len, offsets.len] {
            if count > MAX_ARGS as u64 {
                return Err(TooManyArgs {
                    count,
                    max: MAX_ARGS,
                });
            }
        }
        if ptrs.len != num_args || offsets.len != num_args {
            return Err(ArgCountMismatch {
                num_args,
                ptrs: ptrs.len as usize,
                offsets: offsets.len as usize,
            });
        }
        let arg_sizes = match self.arg_sizes {
            None => Vec::new(),
            Some(s) if s.len == num_args => s.v,
            Some(s) => {
                return Err(ArgSizesCount {
                    num_args,
                    sizes: s.len,
                });
            }
        };
        let arg_data = match self.arg_data {
            None => Vec::new(),
            Some(d) if d.len > MAX_ARG_DATA => {
                return Err(ArgDataTooLong {
                    len: d.len,
                    max: MAX_ARG_DATA,
                });
            }
            Some(d) if d.bad => return Err(BadValue("ArgData")),
            Some(d) => d.v,
        };
        check_arg_sizes(&arg_sizes, &ptrs.v, arg_data.len())?;

        let (teams, threads) = if legacy {
            (
                self.num_teams_clause.ok_or(MissingKey("NumTeamsClause"))?,
                self.thread_limit_clause
                    .ok_or(MissingKey("ThreadLimitClause"))?,
            )
        } else {
            (
                self.num_teams.ok_or(MissingKey("NumTeams"))?,
                self.num_threads.ok_or(MissingKey("NumThreads"))?,
            )
        };
        let teams_key = generation.teams_key();
        let threads_key = generation.threads_key();
        let teams = to_u32(teams, teams_key)?;
        let threads = to_u32(threads, threads_key)?;
        // reprise writes Grid and Block in full and their x dimensions again
        // as NumTeams and NumThreads (the keys LLVM reads): the two must agree.
        // LLVM's 0 means "not recorded" (see the module docs).
        let unknown_ok = generation.allows_unknown_counts();
        let grid = geometry(
            triple(self.grid, "Grid")?,
            "Grid",
            teams,
            teams_key,
            unknown_ok,
        )?;
        let block = geometry(
            triple(self.block, "Block")?,
            "Block",
            threads,
            threads_key,
            unknown_ok,
        )?;

        let (region_base, base_key) = if legacy {
            (self.bump_alloc_va_start, "BumpAllocVAStart")
        } else {
            (
                Some(self.valloc_addr.ok_or(MissingKey("VAllocAddr"))?),
                "VAllocAddr",
            )
        };
        let memory_size = if legacy {
            Some(self.memory_size.ok_or(MissingKey("DeviceMemorySize"))?)
        } else {
            self.memory_size
        };
        check_region(region_base, base_key, self.valloc_size, memory_size)?;
        let device_id = match self.device_id {
            None => 0,
            Some(d) => i32::try_from(d).map_err(|_| OutOfRange("DeviceId"))?,
        };
        let backend = match self.backend {
            None => None,
            Some(b) => Some(
                BackendKind::parse(b.s.as_str())
                    .filter(|_| b.len <= 16)
                    .ok_or(BadValue("Backend"))?,
            ),
        };
        let checksums = match self.checksums {
            None => Checksums::default(),
            Some(c) if c.bad => return Err(BadValue("Checksums")),
            Some(c) => Checksums {
                input: c.input,
                output: c.output,
                globals: c.globals,
                image: c.image,
            },
        };
        Ok(KernelRecord {
            generation,
            name: name.s,
            arg_ptrs: ptrs.v,
            arg_offsets: offsets.v,
            arg_sizes,
            arg_data,
            grid,
            block,
            shared_mem: to_u32(self.shared_mem.unwrap_or(0), "SharedMemorySize")?,
            loop_trip_count: self.loop_trip_count.unwrap_or(0),
            device_id,
            region_base,
            region_size: self.valloc_size,
            memory_size,
            teams_limits: pair(self.teams_limits, "TeamsLimits")?,
            threads_limits: pair(self.threads_limits, "ThreadsLimits")?,
            backend,
            format_version: self
                .format_version
                .map(|v| to_u32(v, "RepriseFormat"))
                .transpose()?,
            launch_seq: self.launch_seq,
            checksums,
        })
    }
}

// ---------------------------------------------------------------------------
// Writing

struct JsonView<'a> {
    rec: &'a KernelRecord,
    generation: Generation,
}

/// Lower-case hex of a byte slice, written through `collect_str`.
struct Hex<'a>(&'a [u8]);

impl fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

struct HexU64(u64);

impl Serialize for HexU64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&Hex(&self.0.to_be_bytes()))
    }
}

struct HexSlice<'a>(&'a [u8]);

impl Serialize for HexSlice<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&Hex(self.0))
    }
}

impl Serialize for Checksums {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for (k, v) in [
            ("globals", self.globals),
            ("image", self.image),
            ("input", self.input),
            ("output", self.output),
        ] {
            if let Some(v) = v {
                m.serialize_entry(k, &HexU64(v))?;
            }
        }
        m.end()
    }
}

impl Serialize for JsonView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.rec;
        let g = self.generation;
        let reprise = g == Generation::Reprise;
        let legacy = g == Generation::LlvmLegacy;
        let mut m = s.serialize_map(None)?;
        // Keys in ASCII order, as LLVM's JSON writer emits them.
        if reprise && !r.arg_data.is_empty() {
            m.serialize_entry("ArgData", &HexSlice(&r.arg_data))?;
        }
        m.serialize_entry("ArgOffsets", r.arg_offsets.as_slice())?;
        m.serialize_entry("ArgPtrs", r.arg_ptrs.as_slice())?;
        if reprise && !r.arg_sizes.is_empty() {
            m.serialize_entry("ArgSizes", r.arg_sizes.as_slice())?;
        }
        if reprise {
            if let Some(b) = r.backend {
                m.serialize_entry("Backend", b.as_str())?;
            }
            m.serialize_entry("Block", &r.block)?;
        }
        if legacy && let Some(base) = r.region_base {
            m.serialize_entry("BumpAllocVAStart", &base)?;
        }
        if reprise && !r.checksums.is_empty() {
            m.serialize_entry("Checksums", &r.checksums)?;
        }
        m.serialize_entry("DeviceId", &r.device_id)?;
        if (legacy || reprise)
            && let Some(size) = r.memory_size
        {
            m.serialize_entry("DeviceMemorySize", &size)?;
        }
        if reprise {
            m.serialize_entry("Grid", &r.grid)?;
            if let Some(seq) = r.launch_seq {
                m.serialize_entry("LaunchSeq", &seq)?;
            }
        }
        m.serialize_entry("LoopTripCount", &r.loop_trip_count)?;
        m.serialize_entry("Name", r.name.as_str())?;
        m.serialize_entry("NumArgs", &(r.num_args() as u32))?;
        if legacy {
            m.serialize_entry("NumTeamsClause", &(r.grid[0] as u64))?;
        } else {
            m.serialize_entry("NumTeams", &r.grid[0])?;
            m.serialize_entry("NumThreads", &r.block[0])?;
        }
        if reprise {
            m.serialize_entry("RepriseFormat", &r.format_version.unwrap_or(FORMAT_VERSION))?;
        }
        if !legacy {
            m.serialize_entry("SharedMemorySize", &r.shared_mem)?;
            if let Some(l) = r.teams_limits {
                m.serialize_entry("TeamsLimits", &l)?;
            }
        }
        if legacy {
            m.serialize_entry("ThreadLimitClause", &r.block[0])?;
        } else {
            if let Some(l) = r.threads_limits {
                m.serialize_entry("ThreadsLimits", &l)?;
            }
            // Always present: to_json refuses a record without it.
            if let Some(base) = r.region_base {
                m.serialize_entry("VAllocAddr", &base)?;
            }
            if let Some(size) = r.region_size {
                m.serialize_entry("VAllocSize", &size)?;
            }
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exactly what LLVM 19's recorder writes (compact, sorted keys).
    const LEGACY: &[u8] = br#"{"ArgOffsets":[0,0,0],"ArgPtrs":[140737353891840,140737353891856,1024],"BumpAllocVAStart":140737353891840,"DeviceId":0,"DeviceMemorySize":8224,"LoopTripCount":1024,"Name":"__omp_offloading_fd00_2b5b6e0_main_l12","NumArgs":3,"NumTeamsClause":8,"ThreadLimitClause":128}"#;

    /// Exactly what LLVM's current recorder writes.
    const CURRENT: &[u8] = br#"{"ArgOffsets":[0,0],"ArgPtrs":[23335839465472,-1],"DeviceId":1,"LoopTripCount":0,"Name":"_Z6kernelPi","NumArgs":2,"NumTeams":120,"NumThreads":256,"SharedMemorySize":64,"TeamsLimits":[0,0],"ThreadsLimits":[1,1024],"VAllocAddr":23335839465472,"VAllocSize":68719476736}"#;

    fn write(rec: &KernelRecord, g: Generation) -> std::string::String {
        extern crate std;
        let mut buf = [0u8; MAX_JSON_LEN];
        let n = rec.to_json(g, &mut buf).unwrap();
        std::string::String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    extern crate std;

    #[test]
    fn legacy_golden() {
        let r = KernelRecord::from_json(LEGACY).unwrap();
        assert_eq!(r.generation, Generation::LlvmLegacy);
        assert_eq!(r.name.as_str(), "__omp_offloading_fd00_2b5b6e0_main_l12");
        assert_eq!(r.grid, [8, 1, 1]);
        assert_eq!(r.block, [128, 1, 1]);
        assert_eq!(r.memory_size, Some(8224));
        assert_eq!(r.region_base, Some(140737353891840));
        assert_eq!(r.loop_trip_count, 1024);
        assert_eq!(r.arg_value(2), 1024);
        // Written back in the legacy key set, byte for byte.
        assert_eq!(write(&r, Generation::LlvmLegacy).as_bytes(), LEGACY);
    }

    #[test]
    fn current_golden() {
        let r = KernelRecord::from_json(CURRENT).unwrap();
        assert_eq!(r.generation, Generation::LlvmCurrent);
        assert_eq!(r.device_id, 1);
        assert_eq!(r.arg_ptrs.as_slice(), &[23335839465472, -1]);
        assert_eq!(r.arg_value(1), u64::MAX);
        assert_eq!(r.shared_mem, 64);
        assert_eq!(r.threads_limits, Some([1, 1024]));
        assert_eq!(r.region_size, Some(68719476736));
        assert_eq!(r.memory_size, None);
        assert_eq!(write(&r, Generation::LlvmCurrent).as_bytes(), CURRENT);
    }

    #[test]
    fn reprise_round_trip_with_every_field() {
        let mut r = KernelRecord::new("_Z5mixedifS_").unwrap();
        r.push_arg(0x7e00_0000_0010).unwrap();
        r.push_arg_bytes(&7i32.to_le_bytes()).unwrap();
        r.push_arg_bytes(&1.5f32.to_le_bytes()).unwrap();
        r.push_arg_bytes(&[0xAB; 24]).unwrap();
        r.grid = [4, 2, 1];
        r.block = [32, 8, 2];
        r.shared_mem = 1024;
        r.region_base = Some(0x7e00_0000_0000);
        r.region_size = Some(1 << 30);
        r.memory_size = Some(4096);
        r.backend = Some(BackendKind::Cuda);
        r.launch_seq = Some(3);
        r.checksums.input = Some(0x0123_4567_89ab_cdef);
        r.checksums.image = Some(u64::MAX);
        let text = write(&r, Generation::Reprise);
        assert!(text.starts_with(r#"{"ArgData":"abababab"#), "{text}");
        assert!(text.contains(r#""ArgSizes":[8,4,4,24]"#), "{text}");
        assert!(
            text.contains(r#""Checksums":{"image":"ffffffffffffffff","input":"0123456789abcdef"}"#),
            "{text}"
        );
        let back = KernelRecord::from_json(text.as_bytes()).unwrap();
        assert_eq!(back, r);
        let mut scratch = [0u8; 8];
        assert_eq!(back.arg_bytes(1, &mut scratch), &7i32.to_le_bytes());
        assert_eq!(back.arg_bytes(3, &mut scratch), &[0xAB; 24]);
    }

    #[test]
    fn keys_are_sorted_in_reprise_output() {
        let mut r = KernelRecord::from_json(CURRENT).unwrap();
        r.memory_size = Some(10);
        r.launch_seq = Some(1);
        r.backend = Some(BackendKind::Host);
        let text = write(&r, Generation::Reprise);
        let mut keys = std::vec::Vec::new();
        let mut depth = 0;
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'{' | b'[' => depth += 1,
                b'}' | b']' => depth -= 1,
                b'"' => {
                    let end = i + 1 + b[i + 1..].iter().position(|&c| c == b'"').unwrap();
                    if depth == 1 && b[end + 1] == b':' {
                        keys.push(&text[i + 1..end]);
                    }
                    i = end;
                }
                _ => {}
            }
            i += 1;
        }
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert!(keys.contains(&"RepriseFormat"));
    }

    #[test]
    fn unknown_keys_are_ignored() {
        let json = br#"{"Extra":{"a":[1,{"b":"c"}]},"ArgOffsets":[],"ArgPtrs":[],"Name":"k","NumArgs":0,"NumTeams":1,"NumThreads":1,"VAllocAddr":4096,"Zed":true}"#;
        let r = KernelRecord::from_json(json).unwrap();
        assert_eq!(r.name.as_str(), "k");
        assert_eq!(r.num_args(), 0);
    }

    #[test]
    fn missing_keys_are_named() {
        let no_name = br#"{"ArgOffsets":[],"ArgPtrs":[],"NumArgs":0,"NumTeams":1,"NumThreads":1,"VAllocAddr":4096}"#;
        assert_eq!(
            KernelRecord::from_json(no_name),
            Err(RecordError::MissingKey("Name"))
        );
        let no_threads =
            br#"{"ArgOffsets":[],"ArgPtrs":[],"Name":"k","NumArgs":0,"NumTeams":1,"VAllocAddr":4096}"#;
        assert_eq!(
            KernelRecord::from_json(no_threads),
            Err(RecordError::MissingKey("NumThreads"))
        );
        let legacy_no_size = br#"{"ArgOffsets":[],"ArgPtrs":[],"Name":"k","NumArgs":0,"NumTeamsClause":1,"ThreadLimitClause":1}"#;
        assert_eq!(
            KernelRecord::from_json(legacy_no_size),
            Err(RecordError::MissingKey("DeviceMemorySize"))
        );
        assert_eq!(
            KernelRecord::from_json(br#"{"Name":"k","NumArgs":0}"#),
            Err(RecordError::MissingKey("NumTeams"))
        );
    }

    #[test]
    fn arg_count_and_capacity_errors() {
        let mismatch = br#"{"ArgOffsets":[0],"ArgPtrs":[1,2],"Name":"k","NumArgs":2,"NumTeams":1,"NumThreads":1,"VAllocAddr":4096}"#;
        assert_eq!(
            KernelRecord::from_json(mismatch),
            Err(RecordError::ArgCountMismatch {
                num_args: 2,
                ptrs: 2,
                offsets: 1
            })
        );
        let mut many = std::string::String::from(r#"{"ArgOffsets":["#);
        let zeros: std::vec::Vec<&str> = (0..MAX_ARGS + 1).map(|_| "0").collect();
        many.push_str(&zeros.join(","));
        many.push_str(r#"],"ArgPtrs":["#);
        many.push_str(&zeros.join(","));
        many.push_str(&std::format!(
            r#"],"Name":"k","NumArgs":{},"NumTeams":1,"NumThreads":1,"VAllocAddr":4096}}"#,
            MAX_ARGS + 1
        ));
        assert_eq!(
            KernelRecord::from_json(many.as_bytes()),
            Err(RecordError::TooManyArgs {
                count: MAX_ARGS as u64 + 1,
                max: MAX_ARGS
            })
        );
        let long = std::format!(
            r#"{{"ArgOffsets":[],"ArgPtrs":[],"Name":"{}","NumArgs":0,"NumTeams":1,"NumThreads":1,"VAllocAddr":4096}}"#,
            "x".repeat(MAX_NAME_LEN + 1)
        );
        assert_eq!(
            KernelRecord::from_json(long.as_bytes()),
            Err(RecordError::NameTooLong {
                len: MAX_NAME_LEN + 1,
                max: MAX_NAME_LEN
            })
        );
    }

    #[test]
    fn bad_values_name_their_key() {
        let big_teams = br#"{"ArgOffsets":[],"ArgPtrs":[],"Name":"k","NumArgs":0,"NumTeams":4294967296,"NumThreads":1,"VAllocAddr":4096}"#;
        assert_eq!(
            KernelRecord::from_json(big_teams),
            Err(RecordError::OutOfRange("NumTeams"))
        );
        let text_in_ptrs = br#"{"ArgOffsets":[0],"ArgPtrs":["x"],"Name":"k","NumArgs":1,"NumTeams":1,"NumThreads":1,"VAllocAddr":4096}"#;
        assert!(matches!(
            KernelRecord::from_json(text_in_ptrs),
            Err(RecordError::Json {
                key: Some("ArgPtrs"),
                ..
            })
        ));
        let bad_grid = br#"{"ArgOffsets":[],"ArgPtrs":[],"Grid":[1,2],"Name":"k","NumArgs":0,"NumTeams":1,"NumThreads":1,"RepriseFormat":1,"VAllocAddr":4096}"#;
        assert_eq!(
            KernelRecord::from_json(bad_grid),
            Err(RecordError::BadValue("Grid"))
        );
        let bad_sum = br#"{"ArgOffsets":[],"ArgPtrs":[],"Checksums":{"input":"xyz"},"Name":"k","NumArgs":0,"NumTeams":1,"NumThreads":1,"RepriseFormat":1,"VAllocAddr":4096}"#;
        assert_eq!(
            KernelRecord::from_json(bad_sum),
            Err(RecordError::BadValue("Checksums"))
        );
        let data_oob = br#"{"ArgData":"00","ArgOffsets":[0],"ArgPtrs":[0],"ArgSizes":[16],"Name":"k","NumArgs":1,"NumTeams":1,"NumThreads":1,"RepriseFormat":1,"VAllocAddr":4096}"#;
        assert_eq!(
            KernelRecord::from_json(data_oob),
            Err(RecordError::BadArgSize {
                index: 0,
                size: 16,
                problem: ArgSizeProblem::OutsideArgData {
                    offset: 0,
                    data_len: 1
                }
            })
        );
        assert!(matches!(
            KernelRecord::from_json(br#"{"Name":"k""#),
            Err(RecordError::Json { .. })
        ));
        assert!(matches!(
            KernelRecord::from_json(b"{} trailing"),
            Err(RecordError::Json { key: None, .. })
        ));
    }

    #[test]
    fn escaped_names_are_unescaped() {
        let json = br#"{"ArgOffsets":[],"ArgPtrs":[],"Name":"a\"b","NumArgs":0,"NumTeams":1,"NumThreads":1,"VAllocAddr":4096}"#;
        assert_eq!(KernelRecord::from_json(json).unwrap().name.as_str(), "a\"b");
    }

    #[test]
    fn small_buffer_is_an_error() {
        let r = KernelRecord::from_json(CURRENT).unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(
            r.to_json(Generation::Reprise, &mut buf),
            Err(RecordError::BufferTooSmall)
        );
    }

    /// A reprise descriptor with `extra` keys spliced in (later keys win).
    fn reprise_with(extra: &str) -> std::string::String {
        std::format!(
            r#"{{"ArgOffsets":[0],"ArgPtrs":[1],"Block":[128,1,1],"Grid":[8,1,1],"Name":"k","NumArgs":1,"NumTeams":8,"NumThreads":128,"RepriseFormat":1,"VAllocAddr":4096,"VAllocSize":65536{extra}}}"#
        )
    }

    fn error_text(json: &str) -> std::string::String {
        let e = KernelRecord::from_json(json.as_bytes()).unwrap_err();
        std::format!("{e}")
    }

    #[test]
    fn newer_format_versions_are_refused() {
        assert!(KernelRecord::from_json(reprise_with("").as_bytes()).is_ok());
        let json = reprise_with(r#","RepriseFormat":99"#);
        assert_eq!(
            KernelRecord::from_json(json.as_bytes()),
            Err(RecordError::FormatTooNew {
                version: 99,
                max: FORMAT_VERSION
            })
        );
        assert_eq!(
            error_text(&json),
            "RepriseFormat 99 is newer than this reprise reads (up to 1); upgrade reprise"
        );
        // Even when the rest would not parse as this version's keys.
        assert_eq!(
            KernelRecord::from_json(br#"{"RepriseFormat":2,"Launch":{}}"#),
            Err(RecordError::FormatTooNew {
                version: 2,
                max: FORMAT_VERSION
            })
        );
        assert_eq!(
            KernelRecord::from_json(reprise_with(r#","RepriseFormat":0"#).as_bytes()),
            Err(RecordError::Zero("RepriseFormat"))
        );
    }

    #[test]
    fn grid_and_block_must_agree_with_teams_and_threads() {
        let json = reprise_with(r#","Grid":[7,1,1],"NumTeams":2048"#);
        assert_eq!(
            error_text(&json),
            "Grid [7,1,1] disagrees with NumTeams 2048: the first (x) dimension of Grid must \
             equal NumTeams"
        );
        let json = reprise_with(r#","Block":[64,2,1]"#);
        assert_eq!(
            KernelRecord::from_json(json.as_bytes()),
            Err(RecordError::GeometryMismatch {
                key: "Block",
                value: [64, 2, 1],
                count_key: "NumThreads",
                count: 128
            })
        );
        // Agreeing 3-D geometry is kept whole.
        let r = KernelRecord::from_json(
            reprise_with(r#","Grid":[8,3,2],"Block":[128,2,1]"#).as_bytes(),
        )
        .unwrap();
        assert_eq!((r.grid, r.block), ([8, 3, 2], [128, 2, 1]));
    }

    #[test]
    fn zero_geometry_is_refused() {
        assert_eq!(
            error_text(&reprise_with(r#","Grid":[0,1,1]"#)),
            "Grid [0,1,1]: every dimension must be at least 1"
        );
        assert_eq!(
            KernelRecord::from_json(reprise_with(r#","Block":[128,1,0]"#).as_bytes()),
            Err(RecordError::ZeroDimension {
                key: "Block",
                value: [128, 1, 0]
            })
        );
        // reprise's own format always records the counts.
        assert_eq!(
            error_text(&reprise_with(r#","NumTeams":0,"Grid":[0,1,1]"#)),
            "Grid [0,1,1]: every dimension must be at least 1"
        );
        let no_threads = reprise_with(r#","NumThreads":0"#).replace(r#""Block":[128,1,1],"#, "");
        assert_eq!(error_text(&no_threads), "NumThreads 0: must be at least 1");
    }

    #[test]
    fn llvm_zero_counts_are_not_recorded_counts() {
        // LLVM 16/17 saved the clauses: 0 when the construct had none.
        let legacy = br#"{"ArgOffsets":[],"ArgPtrs":[],"BumpAllocVAStart":4096,"DeviceId":0,"DeviceMemorySize":0,"LoopTripCount":0,"Name":"k","NumArgs":0,"NumTeamsClause":0,"ThreadLimitClause":0}"#;
        let r = KernelRecord::from_json(legacy).unwrap();
        assert_eq!(r.generation, Generation::LlvmLegacy);
        assert_eq!((r.grid, r.block), ([0, 1, 1], [0, 1, 1]));
        assert_eq!((r.num_teams(), r.num_threads()), (0, 0));
        // Written back as it was, and in LLVM's current key set too.
        assert_eq!(write(&r, Generation::LlvmLegacy).as_bytes(), legacy);
        let current = write(&r, Generation::LlvmCurrent);
        assert!(
            current.contains(r#""NumTeams":0,"NumThreads":0"#),
            "{current}"
        );
        let again = KernelRecord::from_json(current.as_bytes()).unwrap();
        assert_eq!(again.generation, Generation::LlvmCurrent);
        assert_eq!((again.grid, again.block), ([0, 1, 1], [0, 1, 1]));

        // Only one of them missing.
        let one = br#"{"ArgOffsets":[],"ArgPtrs":[],"DeviceMemorySize":0,"Name":"k","NumArgs":0,"NumTeamsClause":1,"ThreadLimitClause":0}"#;
        let r = KernelRecord::from_json(one).unwrap();
        assert_eq!((r.grid, r.block), ([1, 1, 1], [0, 1, 1]));
        let current = br#"{"ArgOffsets":[],"ArgPtrs":[],"Name":"k","NumArgs":0,"NumTeams":0,"NumThreads":64,"VAllocAddr":4096}"#;
        let r = KernelRecord::from_json(current).unwrap();
        assert_eq!((r.grid, r.block), ([0, 1, 1], [64, 1, 1]));

        // A Grid that names a count still has to agree with the 0.
        let grid = br#"{"ArgOffsets":[],"ArgPtrs":[],"Grid":[8,1,1],"Name":"k","NumArgs":0,"NumTeams":0,"NumThreads":1,"VAllocAddr":4096}"#;
        assert_eq!(
            KernelRecord::from_json(grid),
            Err(RecordError::GeometryMismatch {
                key: "Grid",
                value: [8, 1, 1],
                count_key: "NumTeams",
                count: 0
            })
        );
    }

    #[test]
    fn unknown_counts_cannot_be_written_as_reprise() {
        let legacy = br#"{"ArgOffsets":[],"ArgPtrs":[],"BumpAllocVAStart":4096,"DeviceMemorySize":0,"Name":"k","NumArgs":0,"NumTeamsClause":0,"ThreadLimitClause":32}"#;
        let mut r = KernelRecord::from_json(legacy).unwrap();
        let mut buf = [0u8; 1024];
        let e = r.to_json(Generation::Reprise, &mut buf).unwrap_err();
        assert_eq!(
            e,
            RecordError::CannotWrite {
                generation: Generation::Reprise,
                key: "NumTeams"
            }
        );
        assert_eq!(
            std::format!("{e}"),
            "cannot write the record in the reprise format: it has no value for NumTeams, which \
             that format requires (the team count is 0: LLVM recorded no num_teams clause; set \
             the count)"
        );
        // With the count given, it is written and read back.
        r.grid[0] = 4;
        let again = KernelRecord::from_json(write(&r, Generation::Reprise).as_bytes()).unwrap();
        assert_eq!((again.grid, again.block), ([4, 1, 1], [32, 1, 1]));
    }

    #[test]
    fn a_record_without_region_base_is_not_written_where_one_is_required() {
        // The earliest legacy recorders wrote no BumpAllocVAStart.
        let legacy = br#"{"ArgOffsets":[0],"ArgPtrs":[7],"DeviceId":0,"DeviceMemorySize":16,"LoopTripCount":0,"Name":"k","NumArgs":1,"NumTeamsClause":2,"ThreadLimitClause":32}"#;
        let r = KernelRecord::from_json(legacy).unwrap();
        assert_eq!(r.region_base, None);
        // Its own key set does without it...
        assert_eq!(write(&r, Generation::LlvmLegacy).as_bytes(), legacy);
        // ... the others require VAllocAddr and are refused rather than
        // written with a VAllocAddr of 0 that no reader accepts.
        let mut buf = [0u8; 1024];
        for g in [Generation::LlvmCurrent, Generation::Reprise] {
            let e = r.to_json(g, &mut buf).unwrap_err();
            assert_eq!(
                e,
                RecordError::CannotWrite {
                    generation: g,
                    key: "VAllocAddr"
                }
            );
            let shown = std::format!("{e}");
            assert!(
                shown.starts_with(&std::format!(
                    "cannot write the record in the {g} format: it has no value for VAllocAddr"
                )) && shown.contains("without BumpAllocVAStart"),
                "{shown}"
            );
        }
        // A base of 0 is refused in every key set that would carry it.
        let mut zero = r.clone();
        zero.region_base = Some(0);
        for (g, key) in [
            (Generation::LlvmLegacy, "BumpAllocVAStart"),
            (Generation::LlvmCurrent, "VAllocAddr"),
            (Generation::Reprise, "VAllocAddr"),
        ] {
            assert_eq!(
                zero.to_json(g, &mut buf),
                Err(RecordError::NullRegionBase(key))
            );
        }
        let mut no_size = r.clone();
        no_size.region_base = Some(4096);
        no_size.memory_size = None;
        assert_eq!(
            no_size.to_json(Generation::LlvmLegacy, &mut buf),
            Err(RecordError::CannotWrite {
                generation: Generation::LlvmLegacy,
                key: "DeviceMemorySize"
            })
        );
    }

    #[test]
    fn whatever_is_written_reads_back() {
        let mut base = KernelRecord::from_json(CURRENT).unwrap();
        base.memory_size = Some(64);
        let mut cases = std::vec::Vec::new();
        let mut edit = |f: &dyn Fn(&mut KernelRecord)| {
            let mut r = base.clone();
            f(&mut r);
            cases.push(r);
        };
        edit(&|_| {});
        edit(&|r| r.region_base = None);
        edit(&|r| r.region_base = Some(0));
        edit(&|r| r.region_size = Some(MAX_REGION_SIZE + 1));
        edit(&|r| r.region_base = Some(u64::MAX - 4095));
        edit(&|r| r.memory_size = Some(u64::MAX));
        edit(&|r| r.memory_size = None);
        edit(&|r| r.grid = [0, 1, 1]);
        edit(&|r| r.block = [0, 1, 1]);
        edit(&|r| r.grid = [4, 0, 1]);
        edit(&|r| r.block = [32, 1, 0]);
        edit(&|r| r.format_version = Some(0));
        edit(&|r| r.format_version = Some(FORMAT_VERSION + 1));
        edit(&|r| {
            r.arg_offsets.pop();
        });
        edit(&|r| {
            let _ = r.arg_sizes.push(8);
        });
        edit(&|r| r.arg_sizes = [8, 0].iter().copied().collect());
        edit(&|r| r.arg_sizes = [8, 16].iter().copied().collect());
        edit(&|r| r.arg_sizes = [8, 100_000].iter().copied().collect());
        let mut written = 0;
        for r in &cases {
            for g in [
                Generation::LlvmLegacy,
                Generation::LlvmCurrent,
                Generation::Reprise,
            ] {
                let mut buf = [0u8; MAX_JSON_LEN];
                let Ok(n) = r.to_json(g, &mut buf) else {
                    continue;
                };
                written += 1;
                let text = core::str::from_utf8(&buf[..n]).unwrap();
                let back = KernelRecord::from_json(&buf[..n]);
                assert!(back.is_ok(), "{g} wrote {text}, read back as {back:?}");
            }
        }
        // Not everything was refused.
        assert!(written > cases.len(), "{written}");
    }

    #[test]
    fn arg_size_errors_name_the_entry() {
        let json = br#"{"ArgOffsets":[0,0,0],"ArgPtrs":[1,2,0],"ArgSizes":[8,8,100000],"Name":"k","NumArgs":3,"NumTeams":1,"NumThreads":1,"RepriseFormat":1,"VAllocAddr":4096}"#;
        let text = error_text(core::str::from_utf8(json).unwrap());
        assert_eq!(
            text,
            "ArgSizes[2] is 100000, larger than the largest by-value argument (4096 bytes, the \
             kernel parameter space)"
        );
        let json = br#"{"ArgOffsets":[0,0],"ArgPtrs":[1,0],"ArgSizes":[8,0],"Name":"k","NumArgs":2,"NumTeams":1,"NumThreads":1,"RepriseFormat":1,"VAllocAddr":4096}"#;
        assert_eq!(
            error_text(core::str::from_utf8(json).unwrap()),
            "ArgSizes[1] is 0: every argument has at least 1 byte"
        );
        let json = br#"{"ArgOffsets":[0],"ArgPtrs":[0],"ArgSizes":[16],"Name":"k","NumArgs":1,"NumTeams":1,"NumThreads":1,"RepriseFormat":1,"VAllocAddr":4096}"#;
        let text = error_text(core::str::from_utf8(json).unwrap());
        assert!(
            text.starts_with("ArgSizes[0] is 16") && text.ends_with("has no ArgData"),
            "{text}"
        );
        let json = br#"{"ArgOffsets":[0],"ArgPtrs":[0],"ArgSizes":[8,8],"Name":"k","NumArgs":1,"NumTeams":1,"NumThreads":1,"RepriseFormat":1,"VAllocAddr":4096}"#;
        assert_eq!(
            error_text(core::str::from_utf8(json).unwrap()),
            "NumArgs is 1 but ArgSizes has 2 entries"
        );
    }

    #[test]
    fn region_fields_are_checked() {
        assert_eq!(
            error_text(&reprise_with(r#","VAllocAddr":0"#)),
            "VAllocAddr 0: the region has no address, so the pointers into it cannot be placed"
        );
        let legacy = br#"{"ArgOffsets":[],"ArgPtrs":[],"BumpAllocVAStart":0,"DeviceMemorySize":0,"Name":"k","NumArgs":0,"NumTeamsClause":1,"ThreadLimitClause":1}"#;
        assert_eq!(
            KernelRecord::from_json(legacy),
            Err(RecordError::NullRegionBase("BumpAllocVAStart"))
        );
        assert_eq!(
            KernelRecord::from_json(
                reprise_with(r#","VAllocSize":4611686018427387904"#).as_bytes()
            ),
            Err(RecordError::RegionTooLarge {
                size: 1 << 62,
                max: MAX_REGION_SIZE
            })
        );
        assert_eq!(
            KernelRecord::from_json(
                reprise_with(r#","VAllocAddr":18446744073709486080,"VAllocSize":1048576"#)
                    .as_bytes()
            ),
            Err(RecordError::RegionWraps {
                base: 0xffff_ffff_ffff_0000,
                size: 1 << 20
            })
        );
        assert_eq!(
            error_text(&reprise_with(
                r#","DeviceMemorySize":4194304,"VAllocSize":4096"#
            )),
            "DeviceMemorySize 4194304 is larger than VAllocSize 4096: a snapshot cannot be larger \
             than the region it was taken from"
        );
        // LLVM's default reservation, and the cap itself, are fine.
        for size in [64u64 << 30, MAX_REGION_SIZE] {
            let json = reprise_with(&std::format!(r#","VAllocSize":{size}"#));
            assert_eq!(
                KernelRecord::from_json(json.as_bytes())
                    .unwrap()
                    .region_size,
                Some(size)
            );
        }
    }

    #[test]
    fn non_descriptors_say_what_was_expected() {
        for text in ["[1,2,3]", "hello", "", "42", r#""Name""#] {
            let e = KernelRecord::from_json(text.as_bytes()).unwrap_err();
            assert!(
                matches!(e, RecordError::NotADescriptor { error: Some(_) }),
                "{text}: {e:?}"
            );
            let shown = std::format!("{e}");
            assert!(
                shown.starts_with(
                    "not a capture descriptor: expected a JSON object with the keys Name, NumArgs,"
                ) && shown.contains("(JSON error: "),
                "{shown}"
            );
        }
        for text in ["{}", r#"{"foo":1,"bar":[2]}"#] {
            assert_eq!(
                KernelRecord::from_json(text.as_bytes()),
                Err(RecordError::NotADescriptor { error: None })
            );
        }
        // Broken JSON inside a descriptor still names the key.
        assert!(matches!(
            KernelRecord::from_json(br#"{"Name":"k","NumArgs":"#),
            Err(RecordError::Json {
                key: Some("NumArgs"),
                ..
            })
        ));
    }
}
