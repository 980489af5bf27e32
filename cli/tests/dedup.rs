//! Deduplicated recording: only the first launch of each (kernel, grid,
//! block, shared memory) is recorded; the record report counts them all,
//! and `reprise list` shows the counts.

mod common;

use common::*;
use reprise::{Args, HostExecutor, RecordConfig, Recorder};

/// 10 launches of axpy, 6 with one geometry and 4 with another, recorded
/// with `config`; returns the descriptors.
fn record(config: RecordConfig) -> Vec<std::path::PathBuf> {
    let exec = HostExecutor::new().unwrap();
    let mut rec = Recorder::new(exec, 0, config).unwrap();
    let n = 256usize;
    let x = rec.alloc((n * 4) as u64, 64).unwrap();
    let y = rec.alloc((n * 4) as u64, 64).unwrap();
    let calls = rec.alloc(8, 8).unwrap();
    rec.upload(x, &floats(&vec![1.0; n])).unwrap();
    rec.upload(y, &floats(&vec![2.0; n])).unwrap();
    let image = rec.load_image(AXPY).unwrap();
    let k = rec.kernel(image, "axpy").unwrap();
    let args = Args::new().ptr(x).ptr(y).scalar(n as u64).ptr(calls);
    reprise::block_on(async {
        for i in 0..10 {
            let g = if i % 5 < 3 {
                geometry(4, 64)
            } else {
                geometry(8, 32)
            };
            rec.launch(&k, g, &args).await.unwrap();
        }
        rec.finish().await.unwrap()
    })
}

#[test]
fn only_first_launches_are_recorded_and_the_report_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let config = RecordConfig::default()
        .enabled(true)
        .dir(dir.path())
        .fsync(false)
        .dedup(true);
    let written = record(config);
    assert_eq!(written.len(), 2, "{written:?}");
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let report = names
        .iter()
        .find(|n| n.ends_with(".report.json"))
        .unwrap_or_else(|| panic!("{names:?}"));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join(report)).unwrap()).unwrap();
    let kernels = json["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 2);
    // In the order they first launched, with every launch counted.
    assert_eq!(kernels[0]["grid"], serde_json::json!([4, 1, 1]));
    assert_eq!(kernels[0]["launches"], 6);
    assert_eq!(kernels[1]["block"], serde_json::json!([32, 1, 1]));
    assert_eq!(kernels[1]["launches"], 4);
    for (k, w) in kernels.iter().zip(&written) {
        assert_eq!(k["recorded"], 1);
        let name = w.file_name().unwrap().to_string_lossy();
        assert_eq!(k["captures"], serde_json::json!([name]));
    }
    let text = std::fs::read_to_string(dir.path().join(report.replace(".json", ".txt"))).unwrap();
    assert!(
        text.contains("2 kernel configurations, 10 launches, 2 recorded"),
        "{text}"
    );
    // list shows the counts, and takes the report for no capture.
    let out = reprise(&["list", s(dir.path())]);
    assert_exit(&out, 0);
    let stdout = text_of(&out);
    assert!(stdout.contains("[6 launches, 1 recorded]"), "{stdout}");
    assert!(stdout.contains("[4 launches, 1 recorded]"), "{stdout}");
    assert!(
        stdout.contains("2 capture(s) (0 incomplete), 0 unreadable, 0 orphaned"),
        "{stdout}"
    );
    assert!(!stdout.contains("other JSON"), "{stdout}");
    // Each capture replays.
    for w in &written {
        assert_exit(&reprise(&["replay", "--verify", s(w)]), 0);
    }
}

fn text_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn without_dedup_every_launch_is_recorded_and_a_report_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let config = RecordConfig::default()
        .enabled(true)
        .dir(dir.path())
        .fsync(false);
    assert_eq!(record(config.clone()).len(), 10);
    let reports = |d: &std::path::Path| {
        std::fs::read_dir(d)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".report.")
            })
            .count()
    };
    assert_eq!(reports(dir.path()), 0);
    let other = tempfile::tempdir().unwrap();
    assert_eq!(record(config.dir(other.path()).report(true)).len(), 10);
    assert_eq!(reports(other.path()), 2);
    let out = reprise(&["list", s(other.path())]);
    assert!(
        text_of(&out).contains("[6 launches, 6 recorded]"),
        "{}",
        text_of(&out)
    );
    // The variables say the same.
    let c = RecordConfig::from_vars(|k| match k {
        "REPRISE_RECORD_DEDUP" => Some("1".into()),
        _ => None,
    })
    .unwrap();
    assert!(c.dedup && c.report.is_none());
    let bad = RecordConfig::from_vars(|k| (k == "REPRISE_RECORD_REPORT").then(|| "maybe".into()));
    assert!(
        bad.unwrap_err()
            .to_string()
            .contains("REPRISE_RECORD_REPORT")
    );
}
