//! Writing descriptors: the serializer for each generation's key set.

use core::fmt;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use super::{Checksums, FORMAT_VERSION, Generation, KernelRecord, RecordError};

/// [`KernelRecord::to_json`] once the record is known to be writable:
/// `generation`'s key set into `buf`, returning its length.
pub(super) fn to_slice(
    rec: &KernelRecord,
    generation: Generation,
    buf: &mut [u8],
) -> Result<usize, RecordError> {
    serde_json_core::to_slice(&JsonView { rec, generation }, buf)
        .map_err(|_| RecordError::BufferTooSmall)
}

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
            ("extra_input", self.extra_input),
            ("extra_output", self.extra_output),
            ("globals", self.globals),
            ("image", self.image),
            ("input", self.input),
            ("ir", self.ir),
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
        if reprise && !r.arg_allocations.is_empty() {
            m.serialize_entry("ArgAllocations", r.arg_allocations.as_slice())?;
        }
        m.serialize_entry("ArgOffsets", r.arg_offsets.as_slice())?;
        m.serialize_entry("ArgPtrs", r.arg_ptrs.as_slice())?;
        if reprise && !r.arg_sizes.is_empty() {
            m.serialize_entry("ArgSizes", r.arg_sizes.as_slice())?;
        }
        if reprise && !r.args_in_globals.is_empty() {
            m.serialize_entry("ArgsInGlobals", r.args_in_globals.as_slice())?;
        }
        if reprise && !r.args_outside.is_empty() {
            m.serialize_entry("ArgsOutside", r.args_outside.as_slice())?;
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
        if reprise && !r.extra_ranges.is_empty() {
            m.serialize_entry("ExtraRanges", r.extra_ranges.as_slice())?;
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
        if reprise && let Some(ranges) = &r.reachable {
            m.serialize_entry("Reachable", ranges.as_slice())?;
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
