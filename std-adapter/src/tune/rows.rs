//! A sweep's results as rows: one [`Row`] per configuration (and compile
//! setting), what a results file or a shard's rows file holds a line of,
//! after a [`Header`]; the keys that tell configurations apart, and the
//! ranking of rows measured here, resumed or merged from shards.

use std::time::Duration;

use reprise_core::exec::LaunchConfig;
use serde::{Deserialize, Serialize};

use super::{Measured, Status};

/// One configuration's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The grid.
    pub grid: [u32; 3],
    /// The block.
    pub block: [u32; 3],
    /// Dynamic shared memory (bytes).
    pub shared_mem: u32,
    /// Whether it is the recorded configuration.
    pub recorded: bool,
    /// `verified`, `unverified`, `differs`, `refused`, `failed`.
    pub status: String,
    /// Why it differs, was refused or failed.
    pub detail: Option<String>,
    /// Each timed run (nanoseconds).
    pub times_ns: Vec<u64>,
    /// The PTX JIT options it was loaded with (`MAX_REGISTERS=32,...`),
    /// in a sweep of JIT options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jit: Option<String>,
    /// Registers a thread uses (`CU_FUNC_ATTRIBUTE_NUM_REGS`), where the
    /// JIT compiled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registers: Option<u32>,
    /// Spill stores and loads in bytes, from the JIT's verbose info log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spills: Option<(u64, u64)>,
    /// The optimisation level its image was compiled at from IR (`2` for
    /// O2), in a search over optimisation levels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opt_level: Option<u8>,
}

impl Row {
    /// The failed row of the recorded configuration `config`, `detail`
    /// saying why.
    pub fn failed(config: LaunchConfig, detail: Option<String>) -> Row {
        Row {
            grid: config.grid,
            block: config.block,
            shared_mem: config.shared_mem,
            recorded: true,
            status: "failed".into(),
            detail,
            times_ns: Vec::new(),
            jit: None,
            registers: None,
            spills: None,
            opt_level: None,
        }
    }

    /// The row of what a sweep measured.
    pub fn of(m: &Measured) -> Row {
        let (status, detail) = match &m.status {
            Status::Verified => ("verified", None),
            Status::Unverified => ("unverified", None),
            Status::Differs(v) => ("differs", Some(v.to_string())),
            Status::Refused(w) => ("refused", Some(w.to_string())),
            Status::Failed(w) => ("failed", Some(w.to_string())),
        };
        Row {
            status: status.into(),
            detail,
            recorded: m.recorded,
            times_ns: m
                .times
                .iter()
                .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
                .collect(),
            ..Row::failed(m.config, None)
        }
    }

    /// Its compile setting (`MAX_REGISTERS=32`, `O2`), where it has one:
    /// rows that differ only in it are different configurations.
    pub fn compile(&self) -> Option<String> {
        compile_label(self.opt_level, self.jit.as_deref())
    }

    /// Its geometry.
    pub fn config(&self) -> LaunchConfig {
        LaunchConfig {
            grid: self.grid,
            block: self.block,
            shared_mem: self.shared_mem,
        }
    }

    /// What tells it from another row: its [`compiled_key`].
    pub fn key(&self) -> String {
        compiled_key(&self.config(), self.compile().as_deref())
    }

    /// Whether its output is usable.
    pub fn good(&self) -> bool {
        self.status == "verified" || self.status == "unverified"
    }

    /// The median (the lower middle one for an even count, as
    /// [`Measured::median`]).
    pub fn median(&self) -> Option<Duration> {
        super::median(&self.times_ns).map(Duration::from_nanos)
    }

    /// The shortest time.
    pub fn min(&self) -> Option<Duration> {
        Some(Duration::from_nanos(*self.times_ns.iter().min()?))
    }

    /// The longest time.
    pub fn max(&self) -> Option<Duration> {
        Some(Duration::from_nanos(*self.times_ns.iter().max()?))
    }

    /// Whether it is ranked: usable and timed.
    pub fn ranked(&self) -> bool {
        self.good() && self.median().is_some()
    }

    /// How many times faster than the recorded configuration of `rows` it
    /// is (median against median); none for a row whose output is not
    /// usable.
    pub fn speedup(&self, rows: &[Row]) -> Option<f64> {
        let base = rows.iter().find(|r| r.recorded)?.median()?.as_secs_f64();
        let t = self.median()?.as_secs_f64();
        (self.good() && t > 0.0).then(|| base / t)
    }
}

/// The first line of a results or rows file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    /// `K/N`, the shard whose rows the file holds.
    pub tune_shard: String,
    /// The kernel swept.
    pub kernel: String,
    /// The capture's descriptor.
    pub capture: String,
    /// How many configurations the shard holds (its rows, when whole).
    pub configs: usize,
    /// Whether the times are the device's own.
    pub device_times: bool,
    /// Why the shard's sweep stopped early, if it did.
    pub stopped: Option<String>,
}

/// The name of a compile setting in rows and keys: `O2`,
/// `MAX_REGISTERS=32`, both as `O2,MAX_REGISTERS=32`; none for the
/// recorded image.
pub fn compile_label(opt_level: Option<u8>, jit: Option<&str>) -> Option<String> {
    match (opt_level, jit) {
        (None, None) => None,
        (Some(l), None) => Some(format!("O{l}")),
        (None, Some(j)) => Some(j.to_string()),
        (Some(l), Some(j)) => Some(format!("O{l},{j}")),
    }
}

/// What shards a configuration: its geometry, spelt out.
pub fn key(c: &LaunchConfig) -> String {
    format!("{:?}/{:?}/{}", c.grid, c.block, c.shared_mem)
}

/// What tells one measured configuration from another: its geometry and,
/// in a sweep of compile options, its compile setting (`MAX_REGISTERS=32`,
/// `O2`); without one, its geometry alone.
pub fn compiled_key(c: &LaunchConfig, compile: Option<&str>) -> String {
    match compile {
        Some(s) => format!("{}#{s}", key(c)),
        None => key(c),
    }
}

/// 0 ranked, 1 differs, 2 the rest: the table's order.
fn class(r: &Row) -> u8 {
    match r.status.as_str() {
        _ if r.ranked() => 0,
        "differs" => 1,
        _ => 2,
    }
}

/// The rows in table order: ranked by median, then those that differ (by
/// median), then refused and failed ones, each class in the sweep's
/// `order` of geometries where medians tie.
pub fn ranking(rows: &[Row], order: &[LaunchConfig]) -> Vec<Row> {
    let at = |r: &Row| {
        order
            .iter()
            .position(|c| *c == r.config())
            .unwrap_or(usize::MAX)
    };
    let mut v = rows.to_vec();
    v.sort_by_key(|r| {
        let class = class(r);
        let t = if class == 2 { None } else { r.median() };
        (class, t, at(r))
    });
    v
}
