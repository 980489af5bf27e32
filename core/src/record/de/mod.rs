//! Reading descriptors: serde visitors for every key any generation may
//! hold, and the checks that turn them into a [`KernelRecord`].

use core::cell::Cell;
use core::fmt;

use heapless::Vec;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

mod capped;
mod extra;

use super::reachable::{self, MAX_REACHABLE_RANGES, Ranges};
use super::{
    BackendKind, Checksums, EntryName, FORMAT_VERSION, Generation, KernelRecord, MAX_ARG_DATA,
    MAX_ARGS, MAX_DEPTH, MAX_NAME_LEN, RecordError, check::check_arg_sizes, check::check_region,
};
use capped::{CappedStr, CappedVec, HexBytes, hex_u64};
use extra::RawExtra;

use super::extra::MAX_EXTRA_RANGES;

/// Whether a value of `key` in `json` is a number, or an array of them,
/// with a fraction or an exponent: the integer parser stops at its `.` or
/// `e`, and says only that a comma was expected.
fn fractional(json: &[u8], key: &str) -> bool {
    let quoted_len = key.len() + 2;
    let mut at = 0;
    while at + quoted_len <= json.len() {
        let here = &json[at..];
        if here[0] == b'"'
            && here.get(1..=key.len()) == Some(key.as_bytes())
            && here.get(quoted_len - 1) == Some(&b'"')
        {
            let value = here[quoted_len..]
                .iter()
                .skip_while(|c| c.is_ascii_whitespace() || **c == b':');
            let mut in_array = false;
            for &c in value {
                match c {
                    b'[' if !in_array => in_array = true,
                    b'.' | b'e' | b'E' => return true,
                    b']' | b'}' => break,
                    b',' if !in_array => break,
                    b'0'..=b'9' | b'-' | b'+' | b',' => {}
                    c if c.is_ascii_whitespace() => {}
                    _ => break,
                }
            }
        }
        at += 1;
    }
    false
}

/// [`KernelRecord::from_json`]: parses a descriptor of any generation.
pub(super) fn from_json(json: &[u8]) -> Result<KernelRecord, RecordError> {
    // The parser recurses once per level of nesting (unknown keys are
    // skipped by descending into them): bound the depth before parsing, so
    // that no input can run it out of stack.
    check_depth(json)?;
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
        return Err(match key.get() {
            Some(k) if fractional(json, k) => RecordError::NotAnInteger(k),
            k => RecordError::Json { key: k, error },
        });
    }
    de.end()
        .map_err(|error| RecordError::Json { key: None, error })?;
    if raw.known_keys == 0 {
        return Err(RecordError::NotADescriptor { error: None });
    }
    raw.into_record()
}

/// [`RecordError::TooDeep`] when arrays and objects in `json` nest deeper
/// than [`MAX_DEPTH`] (counted outside strings; what is not JSON is left to
/// the parser).
fn check_depth(json: &[u8]) -> Result<(), RecordError> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (at, &b) in json.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(RecordError::TooDeep {
                        offset: at,
                        max: MAX_DEPTH,
                    });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

#[derive(Default)]
struct RawChecksums {
    input: Option<u64>,
    output: Option<u64>,
    globals: Option<u64>,
    image: Option<u64>,
    ir: Option<u64>,
    extra_input: Option<u64>,
    extra_output: Option<u64>,
    unknown: Option<EntryName>,
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
                        "ir" => &mut out.ir,
                        "extra_input" => &mut out.extra_input,
                        "extra_output" => &mut out.extra_output,
                        other => {
                            out.unknown.get_or_insert(EntryName::new(other));
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
    args_outside: Option<CappedVec<u64, MAX_ARGS>>,
    args_in_globals: Option<CappedVec<u64, MAX_ARGS>>,
    reachable: Option<CappedVec<CappedVec<u64, 2>, MAX_REACHABLE_RANGES>>,
    arg_allocations: Option<CappedVec<CappedVec<u64, 3>, MAX_ARGS>>,
    extra_ranges: Option<CappedVec<RawExtra, MAX_EXTRA_RANGES>>,
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
    "ArgsOutside",
    "ArgsInGlobals",
    "Reachable",
    "ArgAllocations",
    "ExtraRanges",
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
                "ArgsOutside" => r.args_outside = Some(map.next_value()?),
                "ArgsInGlobals" => r.args_in_globals = Some(map.next_value()?),
                "Reachable" => r.reachable = Some(map.next_value()?),
                "ArgAllocations" => r.arg_allocations = Some(map.next_value()?),
                "ExtraRanges" => r.extra_ranges = Some(map.next_value()?),
                _ => r.checksums = Some(map.next_value()?),
            }
        }
        Ok(())
    }
}

/// A list of argument indices (`ArgsOutside`, `ArgsInGlobals`): each must
/// name one of the `num_args` arguments.
fn arg_indices(
    v: Option<CappedVec<u64, MAX_ARGS>>,
    key: &'static str,
    num_args: u64,
) -> Result<Vec<u8, MAX_ARGS>, RecordError> {
    let Some(c) = v else {
        return Ok(Vec::new());
    };
    if c.len > MAX_ARGS as u64 {
        return Err(RecordError::TooManyArgs {
            count: c.len,
            max: MAX_ARGS,
        });
    }
    let mut out = Vec::new();
    for &index in &c.v {
        if index >= num_args {
            return Err(RecordError::BadArgIndex {
                key,
                index,
                num_args,
            });
        }
        // Both fit: `index < num_args <= MAX_ARGS`, one entry per slot.
        out.push(index as u8)
            .map_err(|_| RecordError::OutOfRange(key))?;
    }
    Ok(out)
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
                ir: c.ir,
                extra_input: c.extra_input,
                extra_output: c.extra_output,
                unknown: c.unknown,
            },
        };
        let reachable = match self.reachable {
            None => None,
            Some(c) if c.len > MAX_REACHABLE_RANGES as u64 => {
                return Err(TooManyRanges {
                    count: c.len,
                    max: MAX_REACHABLE_RANGES,
                });
            }
            Some(c) => {
                let mut out = Ranges::new();
                for r in &c.v {
                    if r.len != 2 {
                        return Err(BadValue("Reachable"));
                    }
                    // Fits: at most MAX_REACHABLE_RANGES entries were kept.
                    let _ = out.push([r.v[0], r.v[1]]);
                }
                reachable::check_ranges(&out, memory_size)?;
                Some(out)
            }
        };
        let arg_allocations = match self.arg_allocations {
            None => Vec::new(),
            Some(c) if c.len > MAX_ARGS as u64 => {
                return Err(TooManyArgs {
                    count: c.len,
                    max: MAX_ARGS,
                });
            }
            Some(c) => {
                let mut out = Vec::new();
                for a in &c.v {
                    if a.len != 3 {
                        return Err(BadValue("ArgAllocations"));
                    }
                    // Fits: at most MAX_ARGS entries were kept.
                    let _ = out.push([a.v[0], a.v[1], a.v[2]]);
                }
                out
            }
        };
        let extra_ranges = match &self.extra_ranges {
            None => heapless::Vec::new(),
            Some(c) => extra::check(&c.v, c.len)?,
        };
        let record = KernelRecord {
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
            args_outside: arg_indices(self.args_outside, "ArgsOutside", num_args)?,
            args_in_globals: arg_indices(self.args_in_globals, "ArgsInGlobals", num_args)?,
            reachable,
            arg_allocations,
            extra_ranges,
        };
        super::check::check_arg_allocations(&record)?;
        Ok(record)
    }
}
