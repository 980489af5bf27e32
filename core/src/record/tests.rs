use super::*;

/// LLVM 18's key set (compact, sorted keys), with illustrative values.
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
        KernelRecord::from_json(reprise_with(r#","VAllocSize":4611686018427387904"#).as_bytes()),
        Err(RecordError::RegionTooLarge {
            size: 1 << 62,
            max: MAX_REGION_SIZE
        })
    );
    assert_eq!(
        KernelRecord::from_json(
            reprise_with(r#","VAllocAddr":18446744073709486080,"VAllocSize":1048576"#).as_bytes()
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

#[test]
fn nesting_deeper_than_any_descriptor_is_refused_before_parsing() {
    const GOOD: &str = r#""ArgOffsets":[],"ArgPtrs":[],"DeviceMemorySize":0,"Name":"k","NumArgs":0,"NumTeamsClause":1,"ThreadLimitClause":1"#;
    let nested = |depth: usize, inside: &str| {
        let mut s = std::string::String::from("{");
        s.push_str(GOOD);
        s.push_str(",\"X\":");
        s.push_str(&"[".repeat(depth));
        s.push_str(inside);
        s.push_str(&"]".repeat(depth));
        s.push('}');
        s
    };
    // 150,000 levels (300 KB, under the 1 MiB descriptor limit) used to run
    // the parser out of stack.
    let deep = nested(150_000, "");
    assert_eq!(
        KernelRecord::from_json(deep.as_bytes()),
        Err(RecordError::TooDeep {
            offset: GOOD.len() + 5 + MAX_DEPTH,
            max: MAX_DEPTH
        })
    );
    // The object is one level: an unknown key may nest 31 more.
    assert!(KernelRecord::from_json(nested(MAX_DEPTH - 1, "1").as_bytes()).is_ok());
    assert!(matches!(
        KernelRecord::from_json(nested(MAX_DEPTH, "1").as_bytes()),
        Err(RecordError::TooDeep { .. })
    ));
    // Brackets in strings (escaped quotes included) are not nesting.
    let brackets = std::format!(
        r#"{{{GOOD},"X":"{}\"{}"}}"#,
        "[".repeat(100),
        "{".repeat(100)
    );
    assert!(KernelRecord::from_json(brackets.as_bytes()).is_ok());
    let shown = std::format!("{}", KernelRecord::from_json(deep.as_bytes()).unwrap_err());
    assert!(shown.contains("more than 32 levels deep"), "{shown}");
}

/// One LLVM release's descriptor as its `saveKernelDescr` writes it: an
/// `llvm::json::Object`, which `llvm::json` prints compactly with its keys
/// sorted.
struct Release {
    llvm: &'static str,
    /// Where the keys are written.
    source: &'static str,
    json: &'static [u8],
    base: Option<u64>,
    grid: u32,
    block: u32,
    args: usize,
}

/// Every release reprise reads, keys quoted from their sources (LLVM 20 was
/// not read: 19.1.7 and 21.1.8 agree line for line in `RecordReplayTy`).
const RELEASES: &[Release] = &[
    Release {
        llvm: "16.0.6",
        // The committed LLVM 16 capture's descriptor, as the runtime wrote it.
        source: "openmp/libomptarget/plugins-nextgen/common/PluginInterface/PluginInterface.cpp:143-159",
        json: br#"{"ArgOffsets":[0,0,0],"ArgPtrs":[1024,140674876997648,140674877001744],"DeviceId":0,"DeviceMemorySize":8192,"LoopTripCount":1024,"Name":"__omp_offloading_fe00_65c005_main_l17","NumArgs":3,"NumTeamsClause":0,"ThreadLimitClause":0}"#,
        base: None,
        grid: 0,
        block: 0,
        args: 3,
    },
    Release {
        llvm: "17.0.6",
        source: "openmp/libomptarget/plugins-nextgen/common/PluginInterface/PluginInterface.cpp:149-165",
        json: br#"{"ArgOffsets":[0,0],"ArgPtrs":[140674876997648,1024],"DeviceId":0,"DeviceMemorySize":68719476736,"LoopTripCount":1024,"Name":"__omp_offloading_fe00_65c005_main_l17","NumArgs":2,"NumTeamsClause":8,"ThreadLimitClause":64}"#,
        base: None,
        grid: 8,
        block: 64,
        args: 2,
    },
    Release {
        llvm: "18.1.8",
        // BumpAllocVAStart at line 283; the environment (~0) first.
        source: "openmp/libomptarget/plugins-nextgen/common/src/PluginInterface.cpp:276-293",
        json: br#"{"ArgOffsets":[0,0,0],"ArgPtrs":[-1,1024,139637976727552],"BumpAllocVAStart":139637976727552,"DeviceId":0,"DeviceMemorySize":8192,"LoopTripCount":1024,"Name":"__omp_offloading_fe00_65c005_main_l17","NumArgs":3,"NumTeamsClause":8,"ThreadLimitClause":128}"#,
        base: Some(139637976727552),
        grid: 8,
        block: 128,
        args: 3,
    },
    Release {
        llvm: "19.1.7",
        // ArgPtrs are &Args[I]: refused when opened (launch_env.rs).
        source: "offload/plugins-nextgen/common/src/PluginInterface.cpp:275-292",
        json: br#"{"ArgOffsets":[0,0,0],"ArgPtrs":[140727211834560,140727211834568,140727211834576],"BumpAllocVAStart":139637976727552,"DeviceId":0,"DeviceMemorySize":8192,"LoopTripCount":1024,"Name":"__omp_offloading_fe00_65c005_main_l17","NumArgs":3,"NumTeamsClause":8,"ThreadLimitClause":128}"#,
        base: Some(139637976727552),
        grid: 8,
        block: 128,
        args: 3,
    },
    Release {
        llvm: "21.1.8",
        source: "offload/plugins-nextgen/common/src/PluginInterface.cpp:284-301",
        json: br#"{"ArgOffsets":[0,0],"ArgPtrs":[140727211834560,140727211834568],"BumpAllocVAStart":139637976727552,"DeviceId":1,"DeviceMemorySize":8192,"LoopTripCount":0,"Name":"__omp_offloading_fe00_65c005_main_l17","NumArgs":2,"NumTeamsClause":104,"ThreadLimitClause":256}"#,
        base: Some(139637976727552),
        grid: 104,
        block: 256,
        args: 2,
    },
    Release {
        llvm: "22.1.8",
        source: "offload/plugins-nextgen/common/src/PluginInterface.cpp:289-306",
        json: br#"{"ArgOffsets":[0,0],"ArgPtrs":[140727211834560,140727211834568],"BumpAllocVAStart":139637976727552,"DeviceId":0,"DeviceMemorySize":8192,"LoopTripCount":0,"Name":"__omp_offloading_fe00_65c005_main_l17","NumArgs":2,"NumTeamsClause":104,"ThreadLimitClause":256}"#,
        base: Some(139637976727552),
        grid: 104,
        block: 256,
        args: 2,
    },
    Release {
        llvm: "main after 22.1",
        // NativeRecordReplayTy::recordDescImpl (not a release).
        source: "offload/plugins-nextgen/common/src/RecordReplay.cpp",
        json: CURRENT,
        base: Some(23335839465472),
        grid: 120,
        block: 256,
        args: 2,
    },
];

#[test]
fn every_llvm_release_descriptor_reads_with_its_own_meaning() {
    for r in RELEASES {
        let what = std::format!("LLVM {} ({})", r.llvm, r.source);
        let rec = KernelRecord::from_json(r.json).unwrap_or_else(|e| panic!("{what}: {e}"));
        let current = r.llvm.starts_with("main");
        let generation = if current {
            Generation::LlvmCurrent
        } else {
            Generation::LlvmLegacy
        };
        assert_eq!(rec.generation, generation, "{what}");
        assert_eq!(rec.region_base, r.base, "{what}");
        assert_eq!([rec.grid[0], rec.block[0]], [r.grid, r.block], "{what}");
        assert_eq!(rec.arg_ptrs.len(), r.args, "{what}");
        assert!(
            rec.backend.is_none() && rec.format_version.is_none(),
            "{what}"
        );
        // Written back in its own key set, byte for byte: nothing read is
        // lost, nothing is added.
        assert_eq!(write(&rec, generation).as_bytes(), r.json, "{what}");
    }
}
