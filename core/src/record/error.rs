//! Why a descriptor could not be read or written.

use core::fmt;

use super::Generation;
use super::reachable::RangeProblem;

/// What is wrong with one `ArgSizes` entry ([`RecordError::BadArgSize`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgSizeProblem {
    /// The size is 0.
    Zero,
    /// The size is larger than any by-value argument can be.
    TooLarge {
        /// The largest by-value argument, in bytes ([`MAX_ARG_DATA`](super::MAX_ARG_DATA)).
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
    /// Arrays and objects nest deeper than a descriptor's ever do (32
    /// levels): refused before parsing, which would recurse that deep.
    TooDeep {
        /// Offset of the bracket one level too deep.
        offset: usize,
        /// The deepest nesting accepted.
        max: usize,
    },
    /// The descriptor is malformed JSON; `key` is the key whose value was
    /// being read, if any.
    Json {
        /// The key being read when the error struck.
        key: Option<&'static str>,
        /// What the JSON parser reported.
        error: serde_json_core::de::Error,
    },
    /// A key that takes an integer holds a number with a fraction or an
    /// exponent (`3.0`, `1e3`): valid JSON, but no count or address.
    NotAnInteger(&'static str),
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
    /// More arguments than [`MAX_ARGS`](super::MAX_ARGS).
    TooManyArgs {
        /// Arguments in the descriptor.
        count: u64,
        /// The supported maximum.
        max: usize,
    },
    /// A kernel name longer than [`MAX_NAME_LEN`](super::MAX_NAME_LEN).
    NameTooLong {
        /// The name's length in bytes.
        len: usize,
        /// The supported maximum.
        max: usize,
    },
    /// More large-argument bytes than [`MAX_ARG_DATA`](super::MAX_ARG_DATA).
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
        /// The newest version this crate reads ([`FORMAT_VERSION`](super::FORMAT_VERSION)).
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
    /// An argument index list (`ArgsOutside`, `ArgsInGlobals`) names an
    /// argument the launch does not have.
    BadArgIndex {
        /// The key.
        key: &'static str,
        /// The index as written.
        index: u64,
        /// `NumArgs`.
        num_args: u64,
    },
    /// The region base (`VAllocAddr`, `BumpAllocVAStart`) is 0.
    NullRegionBase(&'static str),
    /// `VAllocSize` is larger than [`MAX_REGION_SIZE`](super::MAX_REGION_SIZE).
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
    /// [`KernelRecord::to_json`](super::KernelRecord::to_json): the record
    /// lacks a value that `generation`'s key set requires (so a descriptor
    /// written without it could not be read back): `VAllocAddr` when
    /// `region_base` is `None` (an LLVM legacy capture recorded without
    /// `BumpAllocVAStart`), `DeviceMemorySize` for LLVM legacy when
    /// `memory_size` is `None`, `NumTeams`/`NumThreads` for reprise's format
    /// when the count is 0 (not recorded by LLVM).
    CannotWrite {
        /// The generation asked for.
        generation: Generation,
        /// The key that would have no value.
        key: &'static str,
    },
    /// `Reachable` range `index` cannot be right.
    BadReachable {
        /// Which range.
        index: usize,
        /// What is wrong with it.
        problem: RangeProblem,
    },
    /// `Reachable` holds more ranges than a record can.
    TooManyRanges {
        /// How many the descriptor has.
        count: u64,
        /// [`MAX_REACHABLE_RANGES`](super::reachable::MAX_REACHABLE_RANGES).
        max: usize,
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
            RecordError::NotAnInteger(k) => write!(
                f,
                "key \"{k}\" must be an integer: it holds a number with a fraction or an exponent"
            ),
            RecordError::TooDeep { offset, max } => write!(
                f,
                "arrays and objects nest more than {max} levels deep (at byte {offset}): \
                 no descriptor does"
            ),
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
            RecordError::BadArgIndex {
                key,
                index,
                num_args,
            } => write!(
                f,
                "{key} names argument {index}, but the launch has {num_args} arguments"
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
            RecordError::BadReachable { index, problem } => {
                write!(f, "Reachable[{index}] ")?;
                match problem {
                    RangeProblem::Empty => f.write_str("has a length of 0"),
                    RangeProblem::Overlaps => {
                        f.write_str("starts before the range before it ends: ranges are sorted")
                    }
                    RangeProblem::Wraps => f.write_str("runs past the end of the address space"),
                    RangeProblem::PastSnapshot { snapshot } => {
                        write!(f, "ends past the snapshot (DeviceMemorySize {snapshot})")
                    }
                }
            }
            RecordError::TooManyRanges { count, max } => write!(
                f,
                "Reachable has {count} ranges, more than the supported {max}"
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
