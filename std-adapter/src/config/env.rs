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
    /// [`Error::Config`](crate::Error::Config) naming the variable; any other variable whose name
    /// starts with [`VARIABLE_PREFIX`] is logged as a warning that lists the
    /// known ones, and otherwise ignored. Other variables are ignored.
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

    /// The configuration described by `get` (a lookup of variables by name;
    /// used by `from_env` and by tests). An empty value (`VAR=`, spaces
    /// only) is as if the variable were unset, for every variable: the
    /// default holds.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let mut c = RecordConfig::default();
        if let Some(v) = get("REPRISE_RECORD") {
            c.enabled = parse_bool("REPRISE_RECORD", &v)?;
        }
        if let Some(v) = get("REPRISE_RECORD_DIR") {
            c.dir = PathBuf::from(v);
        }
        if let Some(v) = get("REPRISE_RECORD_OUTPUT") {
            c.save_output = parse_bool("REPRISE_RECORD_OUTPUT", &v)?;
        }
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
        if let Some(v) = get("REPRISE_RECORD_FILTER") {
            c.filter = (!v.is_empty()).then_some(v);
        }
        if let Some(v) = get("REPRISE_RECORD_SKIP") {
            c.skip = parse_count("REPRISE_RECORD_SKIP", &v)?;
        }
        if let Some(v) = get("REPRISE_RECORD_MAX") {
            c.max = Some(parse_count("REPRISE_RECORD_MAX", &v)?);
        }
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
        if let Some(v) = get("REPRISE_RECORD_FSYNC") {
            c.fsync = parse_bool("REPRISE_RECORD_FSYNC", &v)?;
        }
        if let Some(v) = get("REPRISE_RECORD_FORMAT") {
            c.format = CaptureFormat::parse(&v)
                .ok_or_else(|| bad("REPRISE_RECORD_FORMAT", &v, "expected raw or store"))?;
        }
        if let Some(v) = get("REPRISE_RECORD_DEDUP") {
            c.dedup = parse_bool("REPRISE_RECORD_DEDUP", &v)?;
        }
        if let Some(v) = get("REPRISE_RECORD_REPORT") {
            c.report = Some(parse_bool("REPRISE_RECORD_REPORT", &v)?);
        }
        if let Some(v) = get("REPRISE_RECORD_MAX_DISK") {
            c.max_disk = Some(parse_size("REPRISE_RECORD_MAX_DISK", &v)?);
        }
        if let Some(v) = get("REPRISE_RECORD_REACHABLE") {
            c.reachable = parse_bool("REPRISE_RECORD_REACHABLE", &v)?;
        }
        if let Some(v) = get("REPRISE_RECORD_DEVICE_HASHING") {
            c.device_hashing = parse_bool("REPRISE_RECORD_DEVICE_HASHING", &v)?;
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn vars(pairs: &[(&str, &str)]) -> Result<RecordConfig> {
        let map: std::collections::HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        RecordConfig::from_vars(|k| map.get(k).cloned())
    }

    #[test]
    fn an_empty_value_is_the_default_for_every_variable() {
        let defaults = RecordConfig::default();
        for var in VARIABLES {
            let c = vars(&[(var, ""), ("REPRISE_RECORD", "1")]).unwrap();
            assert_eq!(c.save_output, defaults.save_output, "{var}");
            assert_eq!(c.mode, defaults.mode, "{var}");
            assert_eq!(c.dir, defaults.dir, "{var}");
            assert_eq!(c.region_size, defaults.region_size, "{var}");
            let c = vars(&[(var, "  ")]).unwrap();
            assert!(!c.enabled, "{var}");
        }
    }

    #[test]
    fn misspelled_variables_are_named_and_known_ones_are_not() {
        let w = unknown_warning(std::ffi::OsStr::new("REPRISE_RECORD_OUTPT")).unwrap();
        assert!(
            w.contains("REPRISE_RECORD_OUTPT") && w.contains("REPRISE_RECORD_OUTPUT"),
            "{w}"
        );
        for known in VARIABLES {
            assert_eq!(unknown_warning(std::ffi::OsStr::new(known)), None);
        }
        assert_eq!(unknown_warning(std::ffi::OsStr::new("HOME")), None);
    }

    #[test]
    fn defaults() {
        let c = vars(&[]).unwrap();
        assert!(!c.enabled);
        assert!(c.save_output);
        assert_eq!(c.region_size, 1 << 30);
        assert_eq!(c.mode, Mode::Async);
    }

    #[test]
    fn every_variable_is_read() {
        let c = vars(&[
            ("REPRISE_RECORD", "1"),
            ("REPRISE_RECORD_DIR", "/tmp/x"),
            ("REPRISE_RECORD_OUTPUT", "off"),
            ("REPRISE_RECORD_MEMSIZE", "64M"),
            ("REPRISE_RECORD_FILTER", "*saxpy*"),
            ("REPRISE_RECORD_SKIP", "2"),
            ("REPRISE_RECORD_MAX", "3"),
            ("REPRISE_RECORD_MODE", "sync"),
            ("REPRISE_RECORD_WRITER", "inline"),
            ("REPRISE_RECORD_FSYNC", "0"),
            ("REPRISE_RECORD_FORMAT", "Store"),
        ])
        .unwrap();
        assert!(c.enabled && !c.save_output && !c.fsync);
        assert_eq!(c.format, CaptureFormat::Store);
        assert_eq!(vars(&[]).unwrap().format, CaptureFormat::Store);
        assert!(matches!(
            vars(&[("REPRISE_RECORD_FORMAT", "zip")]),
            Err(Error::Config {
                var: "REPRISE_RECORD_FORMAT",
                ..
            })
        ));
        assert_eq!(c.dir, PathBuf::from("/tmp/x"));
        assert_eq!(c.region_size, 64 << 20);
        assert_eq!(c.filter.as_deref(), Some("*saxpy*"));
        assert_eq!((c.skip, c.max), (2, Some(3)));
        assert_eq!(c.mode, Mode::Sync);
        assert_eq!(c.writer, WriterKind::Inline);
        assert!(!c.reachable);
        let c = vars(&[("REPRISE_RECORD_REACHABLE", "1")]).unwrap();
        assert!(c.reachable);
        assert!(matches!(
            vars(&[("REPRISE_RECORD_REACHABLE", "some")]),
            Err(Error::Config {
                var: "REPRISE_RECORD_REACHABLE",
                ..
            })
        ));
        assert!(!c.device_hashing);
        let c = vars(&[("REPRISE_RECORD_DEVICE_HASHING", "1")]).unwrap();
        assert!(c.device_hashing);
        assert!(matches!(
            vars(&[("REPRISE_RECORD_DEVICE_HASHING", "gpu")]),
            Err(Error::Config {
                var: "REPRISE_RECORD_DEVICE_HASHING",
                ..
            })
        ));
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (var, value) in [
            ("REPRISE_RECORD", "maybe"),
            ("REPRISE_RECORD_MEMSIZE", "12Q"),
            ("REPRISE_RECORD_MEMSIZE", "0"),
            ("REPRISE_RECORD_MEMSIZE", "99999999999T"),
            ("REPRISE_RECORD_SKIP", "-1"),
            ("REPRISE_RECORD_MAX", "lots"),
            ("REPRISE_RECORD_MODE", "fast"),
            ("REPRISE_RECORD_WRITER", "later"),
        ] {
            let e = vars(&[(var, value)]).unwrap_err();
            let text = e.to_string();
            assert!(text.starts_with(var), "{text}");
            assert!(matches!(e, Error::Config { var: v, .. } if v == var));
        }
    }

    #[test]
    fn a_value_that_is_not_utf8_is_an_error_naming_the_variable() {
        use std::os::unix::ffi::OsStringExt;
        for var in VARIABLES {
            let e = RecordConfig::from_os_vars([(
                OsString::from(*var),
                OsString::from_vec(b"/tmp/\xff".to_vec()),
            )])
            .unwrap_err();
            assert!(
                matches!(e, Error::Config { var: v, .. } if v == *var),
                "{e}"
            );
            let text = e.to_string();
            assert!(text.starts_with(var), "{text}");
            assert!(text.contains("is not valid UTF-8"), "{text}");
        }
        // Variables reprise does not read may hold anything.
        let c = RecordConfig::from_os_vars([
            (OsString::from("PATH"), OsString::from_vec(b"\xff".to_vec())),
            (
                OsString::from("REPRISE_RECORD_MEM_SIZE"),
                OsString::from_vec(b"\xff".to_vec()),
            ),
            (OsString::from("REPRISE_RECORD"), OsString::from("1")),
        ])
        .unwrap();
        assert!(c.enabled);
    }

    #[test]
    fn the_region_size_remembers_its_variable() {
        let c = vars(&[("REPRISE_RECORD_MEMSIZE", "200T")]).unwrap();
        assert_eq!(c.region_size, 200 << 40);
        assert_eq!(c.region_size_var(), Some("200T"));
        assert_eq!(c.clone().region_size(1 << 20).region_size_var(), None);
        let mut d = c.clone();
        d.region_size = 4096;
        assert_eq!(d.region_size_var(), None);
        assert_eq!(RecordConfig::default().region_size_var(), None);
        // Where a size came from does not make configurations differ.
        assert_eq!(c, RecordConfig::default().region_size(200 << 40));
    }

    #[test]
    fn the_disk_budget_is_a_size() {
        assert_eq!(vars(&[]).unwrap().max_disk, None);
        let c = vars(&[("REPRISE_RECORD_MAX_DISK", "500M")]).unwrap();
        assert_eq!(c.max_disk, Some(500 << 20));
        assert_eq!(
            vars(&[("REPRISE_RECORD_MAX_DISK", "10G")])
                .unwrap()
                .max_disk,
            Some(10 << 30)
        );
        let e = vars(&[("REPRISE_RECORD_MAX_DISK", "lots")]).unwrap_err();
        assert!(matches!(
            e,
            Error::Config {
                var: "REPRISE_RECORD_MAX_DISK",
                ..
            }
        ));
    }
}
