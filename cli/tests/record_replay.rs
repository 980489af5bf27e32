//! Record through the library, write files, replay in a separate process.

mod common;

use common::*;
use reprise::core::schedule::Mode;
use reprise::{CaptureFormat, RecordConfig};
use reprise_std::WriterKind;

fn config(dir: &std::path::Path) -> RecordConfig {
    RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20)
        .fsync(false)
}

#[test]
fn recorded_launch_replays_and_verifies_in_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let written = record_axpy(config(dir.path()), 10_000, 1);
    assert_eq!(written.len(), 1);
    let out = reprise(&["replay", "--verify", s(&written[0])]);
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("verification: PASS"), "{stdout}");
}

#[test]
fn a_flipped_output_byte_fails_verification_with_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let written = record_axpy(config(dir.path()).format(CaptureFormat::Raw), 1000, 1);
    corrupt_output(&written[0], 1004);
    let out = reprise(&["replay", "--verify", s(&written[0])]);
    assert_exit(&out, 1);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("1 of"), "{stdout}");
    assert!(
        stdout.contains("first difference at offset 0x3ec"),
        "{stdout}"
    );
}

#[test]
fn every_launch_is_kept_and_filters_choose_which() {
    let dir = tempfile::tempdir().unwrap();
    let written = record_axpy(config(dir.path()).skip(1).max(2), 100, 5);
    assert_eq!(written.len(), 2, "skip 1, at most 2: launches 2 and 3");
    assert_ne!(written[0], written[1]);
    // Each capture is the state before its own launch: the second one saw
    // one more launch (axpy_calls) than the first.
    for w in &written {
        assert_exit(&reprise(&["replay", "--verify", s(w)]), 0);
    }
    let a = reprise_std::Capture::open(&written[0]).unwrap();
    let b = reprise_std::Capture::open(&written[1]).unwrap();
    // Launch numbers are per process, and other tests of this binary record
    // at the same time: later, not necessarily next.
    assert!(b.record.launch_seq.unwrap() > a.record.launch_seq.unwrap());
    let calls = |c: &reprise_std::Capture| {
        c.globals()
            .find(|g| g.name == "axpy_calls")
            .map(|g| i64::from_le_bytes(g.bytes.try_into().unwrap()))
    };
    assert_eq!((calls(&a), calls(&b)), (Some(1), Some(2)));

    let none = tempfile::tempdir().unwrap();
    let filtered = record_axpy(config(none.path()).filter("saxpy*"), 100, 2);
    assert!(filtered.is_empty(), "the name filter excludes axpy");
    let globbed = record_axpy(config(none.path()).filter("ax?y"), 100, 1);
    assert_eq!(globbed.len(), 1);
}

#[test]
fn environment_configuration_selects_launches() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let vars = [
        ("REPRISE_RECORD", "1"),
        ("REPRISE_RECORD_DIR", d.as_str()),
        ("REPRISE_RECORD_SKIP", "2"),
        ("REPRISE_RECORD_MAX", "1"),
        ("REPRISE_RECORD_OUTPUT", "0"),
        ("REPRISE_RECORD_MEMSIZE", "16M"),
        ("REPRISE_RECORD_FSYNC", "0"),
    ];
    let c = RecordConfig::from_vars(|k| {
        vars.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    })
    .unwrap();
    let written = record_axpy(c, 64, 4);
    assert_eq!(written.len(), 1);
    let capture = reprise_std::Capture::open(&written[0]).unwrap();
    assert!(
        capture.output.is_none(),
        "REPRISE_RECORD_OUTPUT=0 saves no output"
    );
    // Without a recorded output, --verify is an error, not a pass.
    let out = reprise(&["replay", "--verify", s(&written[0])]);
    assert_error(&out, &["record_output", "no recorded output"]);
    assert_exit(&reprise(&["replay", s(&written[0])]), 0);
}

#[test]
fn sync_inline_and_async_background_write_the_same_capture() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let sync = record_axpy(
        config(a.path()).mode(Mode::Sync).writer(WriterKind::Inline),
        500,
        1,
    );
    let asyn = record_axpy(config(b.path()).mode(Mode::Async), 500, 1);
    let (x, y) = (
        reprise_std::Capture::open(&sync[0]).unwrap(),
        reprise_std::Capture::open(&asyn[0]).unwrap(),
    );
    assert_eq!(x.record.checksums.input, y.record.checksums.input);
    assert_eq!(x.record.checksums.output, y.record.checksums.output);
    assert_eq!(x.record.checksums.globals, y.record.checksums.globals);
    assert_exit(&reprise(&["replay", "--verify", s(&sync[0])]), 0);
}

#[test]
fn twenty_three_arguments_arrive_in_order() {
    use reprise::{Args, HostExecutor, Recorder};
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Recorder::new(HostExecutor::new().unwrap(), 0, config(dir.path())).unwrap();
    let out = rec.alloc(24 * 8, 16).unwrap();
    let image = rec.load_image(MANY_ARGS).unwrap();
    let k = rec.kernel(image, "many_args").unwrap();
    let mut args = Args::new().ptr(out);
    for i in 1..=23u64 {
        args = args.scalar(i * 1000 + i);
    }
    let written = reprise::block_on(async {
        rec.launch(&k, geometry(1, 1), &args).await.unwrap();
        let bytes = rec.download(out, 24 * 8).await.unwrap();
        let vals: Vec<i64> = bytes
            .chunks(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let expected: i64 = (1..=23i64).map(|i| i * (i * 1000 + i)).sum();
        assert_eq!(vals[0], expected);
        assert_eq!(vals[23], 23 * 1001);
        rec.finish().await.unwrap()
    });
    let r = reprise_std::Capture::open(&written[0]).unwrap();
    assert_eq!(r.record.num_args(), 24);
    assert_exit(&reprise(&["replay", "--verify", s(&written[0])]), 0);
}

#[test]
fn save_output_writes_next_to_the_capture() {
    let dir = tempfile::tempdir().unwrap();
    // Raw: the recorded output is read as a file.
    let written = record_axpy(config(dir.path()).format(CaptureFormat::Raw), 300, 1);
    let out = reprise(&["replay", "--save-output", "--repetitions=3", s(&written[0])]);
    assert_exit(&out, 0);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("replay 3:"), "{stdout}");
    let c = reprise_std::Capture::open(&written[0]).unwrap();
    let saved = std::fs::read(&c.paths.replay_output).unwrap();
    assert!(
        c.paths
            .replay_output
            .to_string_lossy()
            .ends_with(".replay_output")
    );
    assert_eq!(saved, std::fs::read(&c.paths.output).unwrap());
}

#[test]
fn two_loads_of_one_image_never_share_globals() {
    use reprise::core::exec::Executor;
    let exec = reprise::HostExecutor::new().unwrap();
    let a = exec.load_image(AXPY).unwrap();
    let b = exec.load_image(AXPY).unwrap();
    let ga = exec.global(&a, "alpha").unwrap().unwrap();
    let gb = exec.global(&b, "alpha").unwrap().unwrap();
    assert_ne!(ga.addr, gb.addr, "each load has its own globals");
    // Read-only data is not a global a recording saves.
    assert!(exec.global(&a, "axpy_version").unwrap().is_none());
    drop(a);
    let c = exec.load_image(AXPY).unwrap();
    let gc = exec.global(&c, "alpha").unwrap().unwrap();
    assert_ne!(
        gc.addr, gb.addr,
        "a new load after an unload is not the live one"
    );
}
