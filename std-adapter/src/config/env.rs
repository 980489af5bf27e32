//! Reading a [`RecordConfig`] from the `REPRISE_RECORD*` variables.

use std::ffi::OsString;
use std::path::PathBuf;

use reprise_core::schedule::Mode;

use super::parse::{bad, parse_bool, parse_count, parse_size};
use super::record::MemsizeOrigin;
use super::{CaptureFormat, RecordConfig, WriterKind};
use crate::error::Result;

/// Every variable [`RecordConfig::from_env`] reads.
pub const VARIABLES: &[&str] = &[
    "REPRISE_RECORD",
    "REPRISE_RECORD_DIR",
    "REPRISE_RECORD_OUTPUT",
    "REPRISE_RECORD_MEMSIZE",
    "REPRISE_RECORD_FILTER",
    "REPRISE_RECORD_SKIP",
    "REPRISE_RECORD_MAX",
    "REPRISE_RECORD_MODE",
    "REPRISE_RECORD_WRITER",
    "REPRISE_RECORD_FSYNC",
    "REPRISE_RECORD_FORMAT",
    "REPRISE_RECORD_DEDUP",
    "REPRISE_RECORD_REPORT",
    "REPRISE_RECORD_REACHABLE",
    "REPRISE_RECORD_MAX_DISK",
    "REPRISE_RECORD_DEVICE_HASHING",
    "REPRISE_RECORD_SUMMARY",
];

/// The prefix of the variables reprise reads; any other variable with this
/// prefix draws a warning from [`RecordConfig::from_env`].
pub const VARIABLE_PREFIX: &str = "REPRISE_RECORD_";

/// The warning for the variable `name` when it has [`VARIABLE_PREFIX`] but
/// is none of [`VARIABLES`] (a misspelling, say); `None` otherwise.
pub fn unknown_warning(name: &std::ffi::OsStr) -> Option<String> {
    let name = name.to_string_lossy();
    (name.starts_with(VARIABLE_PREFIX) && !VARIABLES.contains(&name.as_ref())).then(|| {
        format!(
            "ignoring {name}: reprise does not know this variable; the recording variables \
             are {}",
            VARIABLES.join(", ")
        )
    })
}

/// The warnings for the variables of the process environment that
/// [`unknown_warning`] finds.
pub fn unknown_variables() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(name, _)| unknown_warning(&name))
        .collect()
}

impl RecordConfig {
    /// The configuration the `REPRISE_RECORD*` variables of the process
    /// environment describe (see [`RecordConfig::from_os_vars`]).
    pub fn from_env() -> Result<Self> {
        Self::from_os_vars(std::env::vars_os())
    }

    /// The configuration the `REPRISE_RECORD*` variables among `vars`
    /// (name, value pairs, as [`std::env::vars_os`] yields them) describe.
    ///
    /// A value of one of [`VARIABLES`] that is not valid UTF-8 is an
    /// [`Error::Config`](crate::Error::Config) naming the variable; any
    /// other variable is ignored, with a warning ([`unknown_warning`]) for
    /// one whose name starts with [`VARIABLE_PREFIX`].
    pub fn from_os_vars(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Result<Self> {
        let mut known: Vec<(&'static str, String)> = Vec::new();
        for (name, value) in vars {
            let Some(var) = VARIABLES.iter().copied().find(|v| name == **v) else {
                if let Some(w) = unknown_warning(&name) {
                    log::warn!("{w}");
                }
                continue;
            };
            let value = value
                .into_string()
                .map_err(|v| bad(var, &v.to_string_lossy(), "the value is not valid UTF-8"))?;
            known.retain(|(k, _)| *k != var);
            known.push((var, value));
        }
        Self::from_vars(|k| {
            known
                .iter()
                .find(|(v, _)| *v == k)
                .map(|(_, value)| value.clone())
        })
    }

    /// The configuration described by `get`, a lookup of variables by name.
    /// An empty value (`VAR=`, spaces only) is as if the variable were
    /// unset: the default holds.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let flag = |k: &'static str| get(k).map(|v| parse_bool(k, &v)).transpose();
        let number = |k: &'static str, parse: fn(&'static str, &str) -> Result<u64>| {
            get(k).map(|v| parse(k, &v)).transpose()
        };
        let mut c = RecordConfig::default();
        c.enabled = flag("REPRISE_RECORD")?.unwrap_or(c.enabled);
        c.dir = get("REPRISE_RECORD_DIR").map_or(c.dir, PathBuf::from);
        c.save_output = flag("REPRISE_RECORD_OUTPUT")?.unwrap_or(c.save_output);
        if let Some(v) = get("REPRISE_RECORD_MEMSIZE") {
            c.region_size = parse_size("REPRISE_RECORD_MEMSIZE", &v)?;
            if c.region_size == 0 {
                return Err(bad(
                    "REPRISE_RECORD_MEMSIZE",
                    &v,
                    "the region cannot be empty",
                ));
            }
            c.memsize_var = MemsizeOrigin(Some((c.region_size, v)));
            c.region_chosen = true;
        }
        c.filter = get("REPRISE_RECORD_FILTER");
        c.skip = number("REPRISE_RECORD_SKIP", parse_count)?.unwrap_or(c.skip);
        c.max = number("REPRISE_RECORD_MAX", parse_count)?;
        if let Some(v) = get("REPRISE_RECORD_MODE") {
            c.mode = match v.trim().to_ascii_lowercase().as_str() {
                "async" => Mode::Async,
                "sync" => Mode::Sync,
                _ => return Err(bad("REPRISE_RECORD_MODE", &v, "expected async or sync")),
            };
        }
        if let Some(v) = get("REPRISE_RECORD_WRITER") {
            c.writer = match v.trim().to_ascii_lowercase().as_str() {
                "background" => WriterKind::BACKGROUND,
                "inline" => WriterKind::Inline,
                _ => {
                    return Err(bad(
                        "REPRISE_RECORD_WRITER",
                        &v,
                        "expected background or inline",
                    ));
                }
            };
        }
        c.fsync = flag("REPRISE_RECORD_FSYNC")?.unwrap_or(c.fsync);
        if let Some(v) = get("REPRISE_RECORD_FORMAT") {
            c.format = CaptureFormat::parse(&v)
                .ok_or_else(|| bad("REPRISE_RECORD_FORMAT", &v, "expected raw or store"))?;
        }
        c.dedup = flag("REPRISE_RECORD_DEDUP")?.unwrap_or(c.dedup);
        c.report = flag("REPRISE_RECORD_REPORT")?;
        c.max_disk = number("REPRISE_RECORD_MAX_DISK", parse_size)?;
        c.reachable = flag("REPRISE_RECORD_REACHABLE")?.unwrap_or(c.reachable);
        c.device_hashing = flag("REPRISE_RECORD_DEVICE_HASHING")?.unwrap_or(c.device_hashing);
        Ok(c)
    }
}

#[cfg(test)]
mod tests;
