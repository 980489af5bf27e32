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
