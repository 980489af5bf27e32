//! `ExtraRanges` entries as read, and their checks.

use core::fmt;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::capped::CappedStr;
use crate::record::RecordError;
use crate::record::extra::{ExtraRange, MAX_EXTRA_RANGES, MemoryClass};

/// An `ExtraRanges` entry as read, checked by [`check`].
#[derive(Default)]
pub(super) struct RawExtra {
    addr: Option<u64>,
    class: Option<CappedStr<16>>,
    size: Option<u64>,
}

impl<'de> Deserialize<'de> for RawExtra {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawExtra;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an extra range object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawExtra, A::Error> {
                let mut out = RawExtra::default();
                while let Some(k) = map.next_key::<CappedStr<16>>()? {
                    match k.s.as_str() {
                        "Addr" => out.addr = Some(map.next_value()?),
                        "Class" => out.class = Some(map.next_value()?),
                        "Size" => out.size = Some(map.next_value()?),
                        // Keys a later version may add.
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

/// The ranges `raw` describes: each with a known class, a size other than
/// 0, not wrapping past the end of the address space, and none
/// overlapping another.
pub(super) fn check(
    raw: &[RawExtra],
    count: u64,
) -> Result<heapless::Vec<ExtraRange, MAX_EXTRA_RANGES>, RecordError> {
    const KEY: &str = "ExtraRanges";
    if count > MAX_EXTRA_RANGES as u64 {
        return Err(RecordError::OutOfRange(KEY));
    }
    let mut out = heapless::Vec::new();
    for r in raw {
        let class = r
            .class
            .as_ref()
            .filter(|c| c.len <= 16)
            .and_then(|c| MemoryClass::parse(c.s.as_str()))
            .ok_or(RecordError::BadValue(KEY))?;
        let (Some(addr), Some(size)) = (r.addr, r.size) else {
            return Err(RecordError::BadValue(KEY));
        };
        if size == 0 || addr.checked_add(size).is_none() {
            return Err(RecordError::BadValue(KEY));
        }
        let range = ExtraRange { class, addr, size };
        if out
            .iter()
            .any(|o: &ExtraRange| o.addr < range.end() && range.addr < o.end())
        {
            return Err(RecordError::BadValue(KEY));
        }
        // Fits: at most MAX_EXTRA_RANGES entries, checked above.
        let _ = out.push(range);
    }
    Ok(out)
}
