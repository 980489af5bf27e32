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
        if let Some(limits) = outside(v, limits) {
            return Err(Error::OutsideLimits {
                path: None,
                setting,
                value: v,
                limits,
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

/// The recorded `limits` that `value` lies outside of, if it does: limits
/// whose lower bound is 0 are no limits, as in LLVM's replay tool.
pub(crate) fn outside(value: u32, limits: Option<[u32; 2]>) -> Option<[u32; 2]> {
    limits.filter(|&[lo, hi]| lo > 0 && (value < lo || value > hi))
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
mod tests;
