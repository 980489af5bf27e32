//! Records refused when written: a buffer too small, a region base a key
//! set requires and the record lacks.

extern crate std;

use super::*;

#[test]
fn small_buffer_is_an_error() {
    let r = KernelRecord::from_json(CURRENT).unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(
        r.to_json(Generation::Reprise, &mut buf),
        Err(RecordError::BufferTooSmall)
    );
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
