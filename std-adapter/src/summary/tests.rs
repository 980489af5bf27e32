use super::*;

#[test]
fn lines_of_several_processes_add_up() {
    let mut a = Summary {
        recorded: 2,
        ..Summary::default()
    };
    a.set_skipped(Skipped::Capture, 1);
    let mut b = Summary {
        recorded: 3,
        ..Summary::default()
    };
    b.set_skipped(Skipped::Graph, 2);
    b.set_skipped(Skipped::Unknown, 1);
    let sum = Summary::parse(&format!(
        "{}{}garbage line\nrecorded x\n",
        a.line(),
        b.line()
    ));
    assert_eq!(sum.recorded, 5);
    assert_eq!(sum.skipped(Skipped::Capture), 1);
    assert_eq!(sum.skipped(Skipped::Graph), 2);
    assert_eq!(
        sum.skipped_text().unwrap(),
        "not recorded: 1 during stream capture, 2 graph launches, 1 of kernels whose image or parameter sizes were unknown"
    );
    assert_eq!(Summary::parse("").skipped_text(), None);
}

#[test]
fn each_process_names_the_captures_it_wrote() {
    let a = Summary {
        recorded: 2,
        ..Summary::default()
    };
    let names = [
        std::path::PathBuf::from("/d/saxpy-1.json"),
        std::path::PathBuf::from("/d/k name\u{e9}.json"),
    ];
    let text = format!("{}{}", a.line_with(&names), a.line_with(&[]));
    // Counted as before: `wrote` is no count.
    assert_eq!(Summary::parse(&text).recorded, 4);
    assert_eq!(
        written(&text),
        ["saxpy-1.json", "k name\u{e9}.json"].map(std::ffi::OsString::from)
    );
    // Not a file name: odd, not hex, or a path.
    assert!(written("wrote 6 wrote zz wrote 2f61 wrote").is_empty());
}

#[test]
fn marked_and_refused_launches_are_counted_and_said() {
    let mut a = Summary {
        recorded: 1,
        ..Summary::default()
    };
    assert_eq!(a.recorded_text(), "1 launch");
    a.marked = 1;
    a.set_skipped(Skipped::Refused, 2);
    let sum = Summary::parse(&format!("{}{}", a.line(), a.line()));
    assert_eq!((sum.recorded, sum.marked), (2, 2));
    assert!(
        sum.recorded_text().starts_with("2 launches (2 marked: "),
        "{}",
        sum.recorded_text()
    );
    assert_eq!(
        sum.skipped_text().unwrap(),
        "not recorded: 4 refused by the driver"
    );
    assert_eq!(launches(0), "0 launches");
}
