//! Grid, block and the team and thread counts: agreement, zero dimensions,
//! and LLVM's 0 for a count it did not record.

extern crate std;

use super::*;

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
    let r =
        KernelRecord::from_json(reprise_with(r#","Grid":[8,3,2],"Block":[128,2,1]"#).as_bytes())
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
