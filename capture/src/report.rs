//! How often each kernel launched, and which launches were recorded: what
//! deduplication (`RecordConfig::dedup`) needs, and the record
//! report a recorder writes beside its captures (as LLVM's
//! `LIBOMPTARGET_RECORD_REPORT_FILENAME` does), in text and in JSON.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use reprise_core::exec::LaunchConfig;

use crate::error::Result;
use crate::store::write_atomically;

/// The JSON report's file name ends so: `reprise list` reads such files for
/// the counts and never takes one for a capture.
pub const REPORT_SUFFIX: &str = ".report.json";

/// The text report's file name ends so.
pub const TEXT_REPORT_SUFFIX: &str = ".report.txt";

/// One (kernel, geometry, shared memory) and its launches.
#[derive(Debug, Clone)]
struct Occurrence {
    kernel: String,
    config: LaunchConfig,
    /// Matching launches (the recording filter's).
    launches: u64,
    /// Launch sequence numbers of the recorded ones.
    recorded: Vec<u64>,
}

/// The launches of one recorder, in the order each key first launched.
#[derive(Debug, Default)]
pub struct Occurrences {
    list: Vec<Occurrence>,
    /// Descriptor file names by launch sequence number, filled in by the
    /// writer as captures are written.
    names: Arc<Mutex<HashMap<u64, String>>>,
    /// Whether anything changed since the report was last written.
    dirty: bool,
}

impl Occurrences {
    fn find(&mut self, kernel: &str, config: &LaunchConfig) -> &mut Occurrence {
        let at = self
            .list
            .iter()
            .position(|o| o.kernel == kernel && o.config == *config);
        let at = at.unwrap_or_else(|| {
            self.list.push(Occurrence {
                kernel: kernel.to_string(),
                config: *config,
                launches: 0,
                recorded: Vec::new(),
            });
            self.list.len() - 1
        });
        &mut self.list[at]
    }

    /// Whether a launch of `kernel` with `config` was recorded before.
    pub fn seen(&mut self, kernel: &str, config: &LaunchConfig) -> bool {
        !self.find(kernel, config).recorded.is_empty()
    }

    /// Counts a matching launch, recorded as launch `seq` when it was.
    pub fn count(&mut self, kernel: &str, config: &LaunchConfig, seq: Option<u64>) {
        let o = self.find(kernel, config);
        o.launches += 1;
        o.recorded.extend(seq);
        self.dirty = true;
    }

    /// Where the writer notes the descriptor of launch `seq`.
    pub fn names(&self) -> Arc<Mutex<HashMap<u64, String>>> {
        self.names.clone()
    }

    /// Writes the report as `STEM.report.json` and `STEM.report.txt` in
    /// `dir` (whole files, renamed into place), when something changed.
    pub fn write(&mut self, dir: &Path, stem: &str) -> Result<()> {
        if !self.dirty {
            return Ok(());
        }
        let names = crate::threads::lock(&self.names).clone();
        let name_of = |seq: &u64| names.get(seq).cloned();
        let mut json = String::from("{\"reprise_record_report\":1,\"kernels\":[");
        let mut text = String::new();
        let launches: u64 = self.list.iter().map(|o| o.launches).sum();
        let recorded: usize = self.list.iter().map(|o| o.recorded.len()).sum();
        text.push_str(&format!(
            "reprise record report: {} kernel configurations, {launches} launches, {recorded} \
             recorded (in the order they first launched)\n",
            self.list.len()
        ));
        for (i, o) in self.list.iter().enumerate() {
            let ([gx, gy, gz], [bx, by, bz]) = (o.config.grid, o.config.block);
            let (shared, launches, recorded) = (o.config.shared_mem, o.launches, o.recorded.len());
            let captures: Vec<String> = o.recorded.iter().filter_map(name_of).collect();
            if i > 0 {
                json.push(',');
            }
            let quoted_captures: Vec<String> = captures.iter().map(|c| quoted(c)).collect();
            json.push_str(&format!(
                "{{\"kernel\":{},\"grid\":[{gx},{gy},{gz}],\"block\":[{bx},{by},{bz}],\
                 \"shared_mem\":{shared},\"launches\":{launches},\"recorded\":{recorded},\
                 \"captures\":[{}]}}",
                quoted(&o.kernel),
                quoted_captures.join(",")
            ));
            let listed = if captures.is_empty() {
                String::new()
            } else {
                format!("  {}", captures.join(" "))
            };
            text.push_str(&format!(
                "{:>4}  {}  grid {gx}x{gy}x{gz}  block {bx}x{by}x{bz}  shared {shared}  launches \
                 {launches}  recorded {recorded}{listed}\n",
                i + 1,
                o.kernel,
            ));
        }
        json.push_str("]}\n");
        for (suffix, report) in [(REPORT_SUFFIX, json), (TEXT_REPORT_SUFFIX, text)] {
            let path = dir.join(format!("{stem}{suffix}"));
            write_atomically(&path, report.as_bytes(), false)?;
        }
        self.dirty = false;
        Ok(())
    }
}

/// `s` as a JSON string.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The counts a directory's record reports give its captures: descriptor
/// file name -> (launches of its kernel and geometry, how many of them were
/// recorded). Reports that cannot be read are skipped (with a log line).
pub fn counts_in(dir: &Path) -> HashMap<String, (u64, u64)> {
    let mut out = HashMap::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.ends_with(REPORT_SUFFIX) {
            continue;
        }
        let path: PathBuf = e.path();
        match read_report(&path) {
            Some(entries) => {
                for (captures, launches, recorded) in entries {
                    for c in captures {
                        out.insert(c, (launches, recorded));
                    }
                }
            }
            None => log::warn!("{}: not a record report reprise can read", path.display()),
        }
    }
    out
}

/// The entries of one JSON report: (captures, launches, recorded).
fn read_report(path: &Path) -> Option<Vec<(Vec<String>, u64, u64)>> {
    let bytes = crate::capture::head(path, 16 << 20)?;
    let text = std::str::from_utf8(&bytes).ok()?;
    // The writer's own format, one object per kernel configuration: read
    // with a small scanner rather than a JSON library.
    let mut out = Vec::new();
    for entry in text.split("{\"kernel\":").skip(1) {
        let number = |key: &str| -> Option<u64> {
            let at = entry.find(&format!("\"{key}\":"))? + key.len() + 3;
            let digits: String = entry[at..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        };
        let launches = number("launches")?;
        let recorded = number("recorded")?;
        let list = entry.split("\"captures\":[").nth(1)?;
        let list = &list[..list.find(']')?];
        let captures = list
            .split(',')
            .map(|c| c.trim().trim_matches('"').to_string())
            .filter(|c| !c.is_empty())
            .collect();
        out.push((captures, launches, recorded));
    }
    Some(out)
}
