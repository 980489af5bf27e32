//! Reading the configuration from environment variables: names reprise does
//! not know are warned about (a misspelling is otherwise silent).

use std::ffi::OsString;
use std::sync::Mutex;

use reprise_std::RecordConfig;
use reprise_std::config::VARIABLES;

/// Keeps every warning logged in this test binary.
struct Warnings(Mutex<Vec<String>>);

impl log::Log for Warnings {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn
    }
    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            self.0.lock().unwrap().push(record.args().to_string());
        }
    }
    fn flush(&self) {}
}

static WARNINGS: Warnings = Warnings(Mutex::new(Vec::new()));

fn os(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
    pairs
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect()
}

// The only test of this binary: the logger is process-wide.
#[test]
fn unknown_recording_variables_are_warned_about_naming_the_known_ones() {
    log::set_logger(&WARNINGS).unwrap();
    log::set_max_level(log::LevelFilter::Warn);

    let c = RecordConfig::from_os_vars(os(&[
        ("REPRISE_RECORD", "1"),
        ("REPRISE_RECORD_MEM_SIZE", "64M"),
        ("REPRISE_RECORD_MEMSIZE", "32M"),
        ("REPRISE_RECORDER", "x"),
        ("REPRISE_REPLAY", "x"),
        ("HOME", "/root"),
    ]))
    .unwrap();
    assert!(c.enabled);
    assert_eq!(c.region_size, 32 << 20);

    let warnings = WARNINGS.0.lock().unwrap().clone();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    let w = &warnings[0];
    assert!(w.contains("REPRISE_RECORD_MEM_SIZE"), "{w}");
    for known in VARIABLES {
        assert!(w.contains(known), "{w} does not list {known}");
    }

    // Known variables alone: no warning.
    RecordConfig::from_os_vars(os(&[
        ("REPRISE_RECORD_MODE", "sync"),
        ("REPRISE_RECORD_FILTER", "*"),
    ]))
    .unwrap();
    assert_eq!(WARNINGS.0.lock().unwrap().len(), 1);
}
