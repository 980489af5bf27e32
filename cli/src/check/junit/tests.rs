use super::*;
use quick_xml::{Reader, XmlVersion};

/// A character XML 1.0 holds.
fn xml_char(c: char) -> bool {
    c >= ' ' && !matches!(c, '\u{fffe}' | '\u{ffff}') || matches!(c, '\t' | '\n' | '\r')
}

fn result(path: &str, status: Status, message: &str) -> CaptureResult {
    CaptureResult {
        path: path.into(),
        name: path.into(),
        kernel: Some("k".into()),
        backend: None,
        status,
        exit_code: Some(0),
        signal: None,
        kernel_ns: None,
        kernel_times_ns: Vec::new(),
        replay_ns: None,
        replay_times_ns: Vec::new(),
        wall_ns: 1_500_000,
        message: message.into(),
    }
}

#[test]
fn hostile_names_and_messages_stay_well_formed() {
    let all = [
        result(
            "d/<a&b>\"'.json",
            Status::Differs,
            "x < y & \"z\"\n]]> \u{1b}[2J \u{0}",
        ),
        result(
            "d/\u{fffe}x\u{ffff}.json",
            Status::Failed,
            "no\u{fffe}n\u{ffff}",
        ),
        result("d/ok.json", Status::Passed, "fine"),
        result("e/f.json", Status::Refused, "no <driver>"),
        result("e/g.json", Status::Timeout, "slow"),
    ];
    let s = Summary {
        results: all.iter().collect(),
        wall: None,
        ran: 0,
        baseline: None,
        source: "x".into(),
    };
    let xml = String::from_utf8(document(&s).unwrap()).unwrap();
    assert!(!xml.contains('\u{1b}') && !xml.contains('\u{0}'), "{xml}");
    assert!(!xml.contains(['\u{fffe}', '\u{ffff}']), "{xml}");
    assert!(xml.contains("\\ufffex\\uffff"), "{xml}");
    let mut reader = Reader::from_str(&xml);
    let mut names = Vec::new();
    loop {
        match reader.read_event().unwrap() {
            Event::Eof => break,
            Event::Start(e) | Event::Empty(e) => {
                names.push(e.name().as_ref().to_string());
                for a in e.attributes() {
                    let v = a
                        .unwrap()
                        .normalized_value(XmlVersion::Explicit1_0)
                        .unwrap();
                    assert!(v.chars().all(xml_char), "{v:?}");
                }
            }
            Event::Text(t) => assert!(t.xml10_content().chars().all(xml_char), "{xml}"),
            Event::GeneralRef(r) => match r.resolve_char_ref().unwrap() {
                Some(c) => assert!(xml_char(c), "{c:?}"),
                None => {
                    assert!(["lt", "gt", "amp", "apos", "quot"].contains(&&*r.xml10_content()))
                }
            },
            _ => {}
        }
    }
    let count = |n: &str| names.iter().filter(|x| *x == n).count();
    assert_eq!(count("testcase"), 5);
    assert_eq!(count("failure"), 1);
    assert_eq!(count("error"), 2);
    assert_eq!(count("skipped"), 1);
    assert!(
        xml.contains("name=\"&lt;a&amp;b&gt;&quot;&apos;\""),
        "{xml}"
    );
}
