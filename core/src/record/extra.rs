//! `ExtraRanges` (reprise): memory beyond the recording region that the
//! kernel could reach and the capture holds, each range at its own
//! address: managed memory (`cuMemAllocManaged`), page-locked host memory
//! mapped for the device (`cuMemHostAlloc`, `cuMemAllocHost`) and host
//! memory registered for it (`cuMemHostRegister`). Their bytes, in the
//! order the descriptor lists them, are the capture's `STEM.extra_input`
//! (before the kernel) and `STEM.extra_output` (after it), checksummed as
//! `Checksums.extra_input` and `.extra_output`.
//!
//! ```
//! use reprise_core::record::{ExtraRange, KernelRecord, MemoryClass, Generation};
//! let mut r = KernelRecord::new("k").unwrap();
//! r.region_base = Some(0x7000_0000_0000);
//! r.region_size = Some(1 << 20);
//! r.memory_size = Some(0);
//! r.extra_ranges.push(ExtraRange { class: MemoryClass::Managed, addr: 0x5000, size: 64 }).unwrap();
//! let mut buf = [0u8; 2048];
//! let n = r.to_json(Generation::Reprise, &mut buf).unwrap();
//! let text = core::str::from_utf8(&buf[..n]).unwrap();
//! assert!(text.contains(r#""ExtraRanges":[{"Addr":20480,"Class":"managed","Size":64}]"#));
//! assert_eq!(KernelRecord::from_json(&buf[..n]).unwrap().extra_ranges, r.extra_ranges);
//! ```

use core::fmt;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// Most ranges beyond the region one capture holds.
pub const MAX_EXTRA_RANGES: usize = 64;

/// What kind of memory an extra range is: how the program got it, which
/// says how a replay can place it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryClass {
    /// `cuMemAllocManaged`.
    Managed,
    /// Page-locked host memory the driver allocated (`cuMemHostAlloc`,
    /// `cuMemAllocHost`), which the device reaches at its host address.
    Host,
    /// Host memory the program registered (`cuMemHostRegister`).
    Registered,
}

impl MemoryClass {
    /// The name descriptors use: `managed`, `host`, `registered`.
    pub const fn as_str(self) -> &'static str {
        match self {
            MemoryClass::Managed => "managed",
            MemoryClass::Host => "host",
            MemoryClass::Registered => "registered",
        }
    }

    /// Parses a name [`MemoryClass::as_str`] wrote.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "managed" => Some(MemoryClass::Managed),
            "host" => Some(MemoryClass::Host),
            "registered" => Some(MemoryClass::Registered),
            _ => None,
        }
    }

    /// How people call it: `managed memory`, `page-locked host memory`,
    /// `registered host memory`.
    pub const fn describe(self) -> &'static str {
        match self {
            MemoryClass::Managed => "managed memory",
            MemoryClass::Host => "page-locked host memory",
            MemoryClass::Registered => "registered host memory",
        }
    }
}

impl fmt::Display for MemoryClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One range beyond the region the capture holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtraRange {
    /// Its kind.
    pub class: MemoryClass,
    /// Its first address (device and, for host memory, host alike).
    pub addr: u64,
    /// Its length in bytes (never 0).
    pub size: u64,
}

impl ExtraRange {
    /// One past its last address.
    pub fn end(&self) -> u64 {
        self.addr.saturating_add(self.size)
    }
}

/// The bytes all of `ranges` take, in order, in `STEM.extra_input`.
pub fn extra_len(ranges: &[ExtraRange]) -> u64 {
    ranges.iter().map(|r| r.size).fold(0, u64::saturating_add)
}

impl Serialize for ExtraRange {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("Addr", &self.addr)?;
        m.serialize_entry("Class", self.class.as_str())?;
        m.serialize_entry("Size", &self.size)?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::super::{Generation, KernelRecord, RecordError};

    const HEAD: &str = r#"{"ArgOffsets":[],"ArgPtrs":[],"DeviceId":0,"DeviceMemorySize":0,"LoopTripCount":0,"Name":"k","NumArgs":0,"NumTeams":1,"NumThreads":1,"RepriseFormat":1,"SharedMemorySize":0,"VAllocAddr":4096,"VAllocSize":4096,"#;

    fn read(ranges: &str) -> Result<KernelRecord, RecordError> {
        let json = std::format!("{HEAD}\"ExtraRanges\":{ranges}}}");
        KernelRecord::from_json(json.as_bytes())
    }

    #[test]
    fn a_capture_without_the_key_reads_as_before() {
        let json = std::format!("{}\"Grid\":[1,1,1]}}", HEAD);
        let r = KernelRecord::from_json(json.as_bytes()).unwrap();
        assert!(r.extra_ranges.is_empty());
        let mut buf = [0u8; 4096];
        let n = r.to_json(Generation::Reprise, &mut buf).unwrap();
        assert!(!core::str::from_utf8(&buf[..n]).unwrap().contains("Extra"));
    }

    #[test]
    fn every_class_round_trips_and_unknown_keys_inside_are_skipped() {
        let r = read(
            r#"[{"Addr":8192,"Class":"managed","Size":16},{"Addr":65536,"Class":"host","Size":4096,"Later":[1]},{"Addr":1048576,"Class":"registered","Size":1}]"#,
        )
        .unwrap();
        let classes: std::vec::Vec<_> = r.extra_ranges.iter().map(|e| e.class.as_str()).collect();
        assert_eq!(classes, ["managed", "host", "registered"]);
        assert_eq!(super::extra_len(&r.extra_ranges), 16 + 4096 + 1);
        let mut buf = [0u8; 4096];
        let n = r.to_json(Generation::Reprise, &mut buf).unwrap();
        assert_eq!(KernelRecord::from_json(&buf[..n]).unwrap(), r);
        // LLVM's key sets leave it out.
        let n = r.to_json(Generation::LlvmCurrent, &mut buf).unwrap();
        assert!(!core::str::from_utf8(&buf[..n]).unwrap().contains("Extra"));
    }

    #[test]
    fn ranges_that_cannot_be_right_are_refused_by_key() {
        for bad in [
            r#"[{"Addr":8192,"Class":"device","Size":16}]"#,
            r#"[{"Addr":8192,"Class":"managed","Size":0}]"#,
            r#"[{"Addr":18446744073709551615,"Class":"managed","Size":2}]"#,
            r#"[{"Addr":8192,"Class":"managed"}]"#,
            r#"[{"Addr":8192,"Class":"managed","Size":16},{"Addr":8200,"Class":"host","Size":16}]"#,
        ] {
            let e = read(bad).unwrap_err();
            assert_eq!(e, RecordError::BadValue("ExtraRanges"), "{bad}");
        }
        let many: std::vec::Vec<_> = (0..65)
            .map(|i| {
                std::format!(
                    r#"{{"Addr":{},"Class":"managed","Size":1}}"#,
                    4096 * (i + 1)
                )
            })
            .collect();
        let e = read(&std::format!("[{}]", many.join(","))).unwrap_err();
        assert_eq!(e, RecordError::OutOfRange("ExtraRanges"));
    }
}
