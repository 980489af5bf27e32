//! The geometry a replay launches with: the recorded one, or overrides
//! checked against the recorded limits.

use reprise_core::exec::LaunchConfig;
use reprise_core::record::KernelRecord;

use crate::error::{Error, Result, Setting, UnknownGeometry};

use super::ReplayOptions;

/// The launch geometry a replay uses: the recorded one, with overrides
/// checked against the recorded limits (rejected when the lower limit is
/// above zero and the value falls outside, as LLVM's replay tool does).
/// A count the record leaves unknown (0) must be given by an override
/// ([`Error::UnknownGeometry`] says which otherwise).
pub fn launch_config(record: &KernelRecord, options: &ReplayOptions) -> Result<LaunchConfig> {
    if let Some(geometry) = UnknownGeometry::of(record, options.num_teams, options.num_threads) {
        return Err(Error::UnknownGeometry {
            path: None,
            geometry,
        });
    }
    let mut grid = record.grid;
    let mut block = record.block;
    let check = |setting: Setting, v: u32, limits: Option<[u32; 2]>| -> Result<()> {
        if v == 0 {
            return Err(Error::BadOption {
                setting,
                value: v.to_string(),
                problem: "must be at least 1".into(),
            });
        }
        if let Some([lo, hi]) = limits
            && lo > 0
            && (v < lo || v > hi)
        {
            return Err(Error::OutsideLimits {
                path: None,
                setting,
                value: v,
                limits: [lo, hi],
            });
        }
        Ok(())
    };
    if let Some(t) = options.num_teams {
        check(Setting::NumTeams, t, record.teams_limits)?;
        grid[0] = t;
    }
    if let Some(t) = options.num_threads {
        check(Setting::NumThreads, t, record.threads_limits)?;
        block[0] = t;
    }
    Ok(LaunchConfig {
        grid,
        block,
        shared_mem: record.shared_mem,
    })
}

/// The geometry for an executor whose launches take none (the host's):
/// counts the record leaves unknown (0) are launched as 1.
pub fn launch_config_for(
    uses_geometry: bool,
    record: &KernelRecord,
    options: &ReplayOptions,
) -> Result<LaunchConfig> {
    if uses_geometry {
        return launch_config(record, options);
    }
    let mut known = record.clone();
    for d in known.grid.iter_mut().chain(known.block.iter_mut()) {
        *d = (*d).max(1);
    }
    launch_config(&known, options)
}

#[cfg(test)]
mod tests {
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
            err.to_string().ends_with(
                "are unknown; set ReplayOptions::num_teams and ReplayOptions::num_threads"
            ),
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
}
