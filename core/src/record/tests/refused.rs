//! Descriptors refused when read, each error naming the key or entry at
//! fault: missing keys, bad values, argument tables, regions, newer formats,
//! non-descriptors and deep nesting.

extern crate std;

use super::*;

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
    // 150,000 levels (300 KB, under the 1 MiB descriptor limit) would run a
    // recursive parser out of stack.
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

#[test]
fn a_fraction_or_exponent_where_an_integer_belongs_is_named_as_such() {
    for (json, key) in [
        &br#"{"ArgOffsets":[0],"ArgPtrs":[7],"Name":"k","NumArgs":3.0,"NumTeams":1,"NumThreads":1,"VAllocAddr":4096}"#[..],
        br#"{"ArgOffsets":[0],"ArgPtrs":[7],"Name":"k","NumArgs":1,"NumTeams":1e2,"NumThreads":1,"VAllocAddr":4096}"#,
        br#"{"ArgOffsets":[0],"ArgPtrs":[7, 2.5],"Name":"k","NumArgs":2,"NumTeams":1,"NumThreads":1,"VAllocAddr":4096}"#,
    ]
    .into_iter()
    .zip(["NumArgs", "NumTeams", "ArgPtrs"])
    {
        let e = KernelRecord::from_json(json).unwrap_err();
        assert_eq!(e, RecordError::NotAnInteger(key));
        assert!(std::format!("{e}").contains("must be an integer"), "{e}");
    }
    // Other malformed JSON is still the parser's word.
    let broken = br#"{"ArgOffsets":[0],"ArgPtrs":[7],"Name":"k","NumArgs":1 1,"NumTeams":1,"NumThreads":1,"VAllocAddr":4096}"#;
    assert!(matches!(
        KernelRecord::from_json(broken),
        Err(RecordError::Json { .. })
    ));
}
