//! `ArgsOutside` and `ArgsInGlobals`: the marks of arguments a replay may
//! not reproduce.

extern crate std;

use super::*;

fn write(rec: &KernelRecord, g: Generation) -> std::string::String {
    let mut buf = [0u8; MAX_JSON_LEN];
    let n = rec.to_json(g, &mut buf).unwrap();
    std::string::String::from_utf8(buf[..n].to_vec()).unwrap()
}

fn three_args() -> KernelRecord {
    let mut r = KernelRecord::new("k").unwrap();
    for a in [0x1000u64, 0x2000, 7] {
        r.push_arg(a).unwrap();
    }
    r.region_base = Some(0x1000);
    r.region_size = Some(1 << 20);
    r
}

#[test]
fn marks_round_trip_in_reprise_output_only() {
    let mut r = three_args();
    r.args_outside.push(1).unwrap();
    r.args_in_globals.push(0).unwrap();
    let text = write(&r, Generation::Reprise);
    assert!(
        text.contains(r#""ArgsInGlobals":[0],"ArgsOutside":[1],"#),
        "{text}"
    );
    assert_eq!(KernelRecord::from_json(text.as_bytes()).unwrap(), r);
    // LLVM's formats have no place for them.
    let llvm = write(&r, Generation::LlvmCurrent);
    assert!(!llvm.contains("ArgsOutside"), "{llvm}");
}

#[test]
fn unmarked_records_write_no_marks() {
    let text = write(&three_args(), Generation::Reprise);
    assert!(!text.contains("ArgsOutside") && !text.contains("ArgsInGlobals"));
}

#[test]
fn a_mark_naming_a_missing_argument_is_refused() {
    let text = write(&three_args(), Generation::Reprise);
    for (key, list) in [("ArgsOutside", "[3]"), ("ArgsInGlobals", "[0,99]")] {
        let bad = text.replacen(
            "\"Backend\"",
            &std::format!("\"{key}\":{list},\"Backend\""),
            1,
        );
        let bad = if bad == text {
            text.replacen("\"Block\"", &std::format!("\"{key}\":{list},\"Block\""), 1)
        } else {
            bad
        };
        let e = KernelRecord::from_json(bad.as_bytes()).unwrap_err();
        assert!(
            matches!(e, RecordError::BadArgIndex { key: k, num_args: 3, .. } if k == key),
            "{e:?}"
        );
        assert!(
            std::format!("{e}").contains("the launch has 3 arguments"),
            "{e}"
        );
    }
}

#[test]
fn a_mark_list_longer_than_any_launch_is_refused() {
    let text = write(&three_args(), Generation::Reprise);
    let long: std::vec::Vec<std::string::String> = (0..MAX_ARGS + 1).map(|_| "0".into()).collect();
    let bad = text.replacen(
        "\"Block\"",
        &std::format!("\"ArgsOutside\":[{}],\"Block\"", long.join(",")),
        1,
    );
    assert!(matches!(
        KernelRecord::from_json(bad.as_bytes()),
        Err(RecordError::TooManyArgs { .. })
    ));
}
