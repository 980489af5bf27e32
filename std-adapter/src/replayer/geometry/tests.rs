use super::*;
use crate::error::Names;
use crate::replayer::ReplayOptions;

fn record(json: &str) -> KernelRecord {
    KernelRecord::from_json(json.as_bytes()).unwrap()
}

/// Names as a command line gives them.
const FLAGS: Names = Names {
    verb: "pass",
    name: |s| match s {
        Setting::NumTeams => "--num-teams",
        Setting::NumThreads => "--num-threads",
        other => other.library_name(),
    },
    given: |s| match s {
        Setting::NumTeams => "--num-teams N",
        Setting::NumThreads => "--num-threads N",
        other => other.library_name(),
    },
};

fn unknown(record: &KernelRecord, options: &ReplayOptions) -> Option<UnknownGeometry> {
    UnknownGeometry::of(record, options.num_teams, options.num_threads)
}

#[test]
fn unknown_counts_need_overrides() {
    let legacy = record(
        r#"{"ArgOffsets":[],"ArgPtrs":[],"DeviceMemorySize":0,"Name":"k","NumArgs":0,"NumTeamsClause":0,"ThreadLimitClause":0}"#,
    );
    let none = ReplayOptions::default();
    let err = launch_config(&legacy, &none).unwrap_err();
    assert_eq!(
        err.named(FLAGS).to_string(),
        "NumTeamsClause is 0 and ThreadLimitClause is 0: LLVM recorded no num_teams or \
         thread_limit clause, so the launch's team count and threads per team are unknown; \
         pass --num-teams N and --num-threads N"
    );
    // The library names its own settings.
    assert!(
        err.to_string()
            .ends_with("are unknown; set ReplayOptions::num_teams and ReplayOptions::num_threads"),
        "{err}"
    );
    let teams_only = ReplayOptions {
        num_teams: Some(4),
        ..ReplayOptions::default()
    };
    assert_eq!(
        unknown(&legacy, &teams_only)
            .unwrap()
            .named(FLAGS)
            .to_string(),
        "ThreadLimitClause is 0: LLVM recorded no thread_limit clause, so the launch's \
         threads per team are unknown; pass --num-threads N"
    );
    let both = ReplayOptions {
        num_teams: Some(4),
        num_threads: Some(64),
        ..ReplayOptions::default()
    };
    let c = launch_config(&legacy, &both).unwrap();
    assert_eq!((c.grid, c.block), ([4, 1, 1], [64, 1, 1]));

    let current = record(
        r#"{"ArgOffsets":[],"ArgPtrs":[],"Name":"k","NumArgs":0,"NumTeams":0,"NumThreads":32,"VAllocAddr":4096}"#,
    );
    assert_eq!(
        unknown(&current, &none).unwrap().named(FLAGS).to_string(),
        "NumTeams is 0: LLVM recorded no value for it, so the launch's team count is \
         unknown; pass --num-teams N"
    );
    assert_eq!(unknown(&current, &teams_only), None);
    // A zero override is still the option's fault.
    let zero = ReplayOptions {
        num_teams: Some(0),
        ..ReplayOptions::default()
    };
    let err = launch_config(&current, &zero).unwrap_err();
    assert_eq!(
        err.named(FLAGS).to_string(),
        "--num-teams 0: must be at least 1"
    );
    assert_eq!(
        err.to_string(),
        "ReplayOptions::num_teams 0: must be at least 1"
    );
}
