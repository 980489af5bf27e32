//! Recording configuration, from code (a builder) or from the environment.
//!
//! | variable | meaning | default |
//! | --- | --- | --- |
//! | `REPRISE_RECORD` | record launches (`1`/`0`, `true`/`false`, `on`/`off`) | off |
//! | `REPRISE_RECORD_DIR` | directory for captures | `.` |
//! | `REPRISE_RECORD_OUTPUT` | also save the post-kernel snapshot | on |
//! | `REPRISE_RECORD_MEMSIZE` | recording region size (`64M`, `2G`, bytes) | `1G` |
//! | `REPRISE_RECORD_FILTER` | record only kernels whose name matches this glob (`*`, `?`) | all |
//! | `REPRISE_RECORD_SKIP` | skip the first N matching launches | 0 |
//! | `REPRISE_RECORD_MAX` | record at most M launches (failed launches do not count) | unlimited |
//! | `REPRISE_RECORD_MODE` | `async` (one synchronize) or `sync` (LLVM's) | `async` |
//! | `REPRISE_RECORD_WRITER` | `background` or `inline` file writes | `background` |
//! | `REPRISE_RECORD_FSYNC` | flush files to disk before renaming | on |
//! | `REPRISE_RECORD_FORMAT` | `raw` (one file per snapshot) or `store` (chunks in the directory's content-addressed, compressed store, see [`CaptureFormat`]) | `store` |
//! | `REPRISE_RECORD_DEDUP` | record only the first launch of each (kernel, grid, block, shared memory) and count the rest | off |
//! | `REPRISE_RECORD_REPORT` | write a record report (`reprise-PID-N.report.txt` and `.report.json`: kernels in recording order with their launch counts) | on with `DEDUP` |
//! | `REPRISE_RECORD_SUMMARY` | (the interposer's) file each process appends its summary line to | none |
//!
//! An empty value (`VAR=`) is as if the variable were unset: the default
//! holds, for every variable. A value that cannot be used (including one
//! that is not valid UTF-8) is an error naming the variable.
//! [`RecordConfig::from_env`] also logs a warning for every other
//! `REPRISE_RECORD_*` variable it finds (a misspelling such as
//! `REPRISE_RECORD_MEM_SIZE` would otherwise be ignored in silence), and
//! the interposer prints it on stderr ([`unknown_variables`]).

use std::ffi::OsString;
use std::path::PathBuf;

use reprise_core::schedule::Mode;

use crate::error::{Error, Result};

/// Default size of the recording region: 1 GiB.
pub const DEFAULT_REGION_SIZE: u64 = 1 << 30;

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

/// Who writes capture files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriterKind {
    /// The launching thread, before the launch call returns (LLVM's way).
    Inline,
    /// A background thread fed by a bounded queue of this depth; the
    /// launching thread blocks only when the queue is full.
    Background {
        /// Captures that may wait to be written.
        depth: usize,
    },
}

/// How a capture's data files (snapshots, globals, image) are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CaptureFormat {
    /// One plain file each, `STEM.record_input` and the like (what LLVM's
    /// replay tool reads).
    Raw,
    /// Chunks in the capture directory's content-addressed, compressed
    /// store (`D/.reprise-store`, see [`crate::chunks`]), and a manifest
    /// each in the directory, `STEM.record_input.chunks` and the like:
    /// chunks that earlier captures (or the same capture's input) hold
    /// already cost nothing. The default.
    #[default]
    Store,
}

impl CaptureFormat {
    /// Parses `raw` or `store` (any case); `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "raw" => Some(CaptureFormat::Raw),
            "store" => Some(CaptureFormat::Store),
            _ => None,
        }
    }

    /// Its name: `raw` or `store`.
    pub fn as_str(self) -> &'static str {
        match self {
            CaptureFormat::Raw => "raw",
            CaptureFormat::Store => "store",
        }
    }
}

impl std::fmt::Display for CaptureFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How launches are recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordConfig {
    /// Record at all.
    pub enabled: bool,
    /// Where captures go.
    pub dir: PathBuf,
    /// Save the post-kernel snapshot.
    pub save_output: bool,
    /// Bytes reserved for the recording region.
    pub region_size: u64,
    /// Glob over kernel names; `None` records every kernel.
    pub filter: Option<String>,
    /// Matching launches to skip before recording. A launch counts once it
    /// has been queued; one that fails before that does not. (An unrecorded
    /// launch is not waited for: a fault it causes surfaces at the next
    /// synchronize, after it has counted.)
    pub skip: u64,
    /// Most launches to record. Only launches whose snapshots were taken
    /// count: a launch that fails while being recorded does not.
    pub max: Option<u64>,
    /// One synchronize, or one per step.
    pub mode: Mode,
    /// Who writes the files.
    pub writer: WriterKind,
    /// Flush every file to disk before renaming it into place.
    pub fsync: bool,
    /// How the data files are written: plain files, or chunks in the
    /// directory's store.
    pub format: CaptureFormat,
    /// Record only the first launch of each (kernel, grid, block, shared
    /// memory); later ones are counted (in the record report), not
    /// recorded. Deduplicated launches count toward
    /// [`RecordConfig::skip`] like any other matching launch.
    pub dedup: bool,
    /// Write a record report beside the captures; `None`: when
    /// [`RecordConfig::dedup`] is on.
    pub report: Option<bool>,
    /// The `REPRISE_RECORD_MEMSIZE` value `region_size` was read from, so
    /// that a region that cannot be reserved is reported against it.
    memsize_var: MemsizeOrigin,
}

/// Where `region_size` came from: `Some((size, value))` when it was parsed
/// from `REPRISE_RECORD_MEMSIZE=value` (and is still `size`). Configurations
/// that differ only in it compare equal.
#[derive(Debug, Clone, Default, Eq)]
struct MemsizeOrigin(Option<(u64, String)>);

impl PartialEq for MemsizeOrigin {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Default for RecordConfig {
    fn default() -> Self {
        RecordConfig {
            enabled: false,
            dir: PathBuf::from("."),
            save_output: true,
            region_size: DEFAULT_REGION_SIZE,
            filter: None,
            skip: 0,
            max: None,
            mode: Mode::Async,
            writer: WriterKind::Background { depth: 4 },
            fsync: true,
            format: CaptureFormat::default(),
            dedup: false,
            report: None,
            memsize_var: MemsizeOrigin::default(),
        }
    }
}

fn bad(var: &'static str, value: &str, problem: impl Into<String>) -> Error {
    Error::Config {
        var,
        value: value.to_string(),
        problem: problem.into(),
    }
}

fn parse_bool(var: &'static str, v: &str) -> Result<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Ok(true),
        "0" | "false" | "off" | "no" | "" => Ok(false),
        _ => Err(bad(var, v, "expected 1/0, true/false, on/off or yes/no")),
    }
}

fn parse_count(var: &'static str, v: &str) -> Result<u64> {
    v.trim()
        .parse::<u64>()
        .map_err(|_| bad(var, v, "expected a non-negative whole number"))
}

/// Parses a byte size: a whole number with an optional `K`, `M`, `G` or `T`
/// suffix (powers of 1024; `KiB`, `MB` and the like are accepted too).
pub fn parse_size(var: &'static str, v: &str) -> Result<u64> {
    let t = v.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => {
            return Err(bad(
                var,
                v,
                "expected bytes with an optional K, M, G or T suffix",
            ));
        }
    };
    let n: u64 = num.parse().map_err(|_| {
        bad(
            var,
            v,
            "expected bytes with an optional K, M, G or T suffix",
        )
    })?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| bad(var, v, "size does not fit in 64 bits"))
}

/// Whether `name` matches the glob `pattern` (`*` any run, `?` one char).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
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
    /// [`Error::Config`] naming the variable; any other variable whose name
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
                "background" => WriterKind::Background { depth: 4 },
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
        Ok(c)
    }

    /// Turns recording on.
    pub fn enabled(mut self, on: bool) -> Self {
        self.enabled = on;
        self
    }
    /// Sets the capture directory.
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = dir.into();
        self
    }
    /// Saves (or not) the post-kernel snapshot.
    pub fn save_output(mut self, on: bool) -> Self {
        self.save_output = on;
        self
    }
    /// Sets the region size in bytes (more than 0: [`Recorder::new`]
    /// refuses an empty region).
    ///
    /// [`Recorder::new`]: crate::Recorder::new
    pub fn region_size(mut self, bytes: u64) -> Self {
        self.region_size = bytes;
        self
    }
    /// Records only kernels whose names match `glob`.
    pub fn filter(mut self, glob: impl Into<String>) -> Self {
        self.filter = Some(glob.into());
        self
    }
    /// Skips the first `n` matching launches.
    pub fn skip(mut self, n: u64) -> Self {
        self.skip = n;
        self
    }
    /// Records at most `m` launches.
    pub fn max(mut self, m: u64) -> Self {
        self.max = Some(m);
        self
    }
    /// Sets the schedule mode.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }
    /// Sets who writes the files.
    pub fn writer(mut self, writer: WriterKind) -> Self {
        self.writer = writer;
        self
    }
    /// Flushes files to disk (or not) before renaming them.
    pub fn fsync(mut self, on: bool) -> Self {
        self.fsync = on;
        self
    }
    /// Sets how the data files are written (see [`CaptureFormat`]).
    pub fn format(mut self, format: CaptureFormat) -> Self {
        self.format = format;
        self
    }
    /// Records only the first launch of each (kernel, grid, block, shared
    /// memory), and counts the rest.
    pub fn dedup(mut self, on: bool) -> Self {
        self.dedup = on;
        self
    }
    /// Writes (or not) a record report beside the captures.
    pub fn report(mut self, on: bool) -> Self {
        self.report = Some(on);
        self
    }
    /// Whether a record report is written.
    pub fn writes_report(&self) -> bool {
        self.enabled && self.report.unwrap_or(self.dedup)
    }

    /// The `REPRISE_RECORD_MEMSIZE` value the region size was read from,
    /// when it was (and has not been changed since).
    pub fn region_size_var(&self) -> Option<&str> {
        match &self.memsize_var.0 {
            Some((size, value)) if *size == self.region_size => Some(value),
            _ => None,
        }
    }

    /// Whether kernel `name` passes the name filter.
    pub fn matches(&self, name: &str) -> bool {
        self.filter.as_deref().is_none_or(|p| glob_match(p, name))
    }

    /// Whether the `index`-th matching launch (from 0), with `recorded`
    /// launches recorded so far, should be recorded.
    pub fn selects(&self, index: u64, recorded: u64) -> bool {
        self.enabled && index >= self.skip && self.max.is_none_or(|m| recorded < m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn sizes() {
        assert_eq!(parse_size("X", "4096").unwrap(), 4096);
        assert_eq!(parse_size("X", "2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("X", "3 KiB").unwrap(), 3072);
        assert!(parse_size("X", "G").is_err());
    }

    #[test]
    fn globs() {
        assert!(glob_match("*saxpy*", "__omp_offloading_saxpy_l12"));
        assert!(glob_match("k?", "k1"));
        assert!(!glob_match("k?", "k12"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("abc", "abd"));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("a*b*c", "axxbyy"));
    }

    #[test]
    fn selection_skips_then_caps() {
        let c = RecordConfig::default().enabled(true).skip(1).max(2);
        let picks: Vec<bool> = (0..5)
            .scan(0, |rec, i| {
                let s = c.selects(i, *rec);
                *rec += s as u64;
                Some(s)
            })
            .collect();
        assert_eq!(picks, [false, true, true, false, false]);
    }
}
