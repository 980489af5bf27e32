//! `--junit F.xml`: one testcase per capture, for CI systems (the JUnit
//! layout Ant, Jenkins and GitLab read): classname the capture's
//! directory, name its stem; a difference is a `failure`, a capture that
//! failed or timed out an `error`, a refused one `skipped`, and one slower
//! than the baseline allows a `failure` of type `slower`. Written with
//! quick-xml, which escapes markup; characters XML cannot hold at all
//! (most controls) are written as escapes first.

use std::collections::HashMap;
use std::path::Path;

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};

use super::results::{CaptureResult, Status};
use super::summary::Summary;

/// The document for `s`.
pub fn document(s: &Summary<'_>) -> std::io::Result<Vec<u8>> {
    let slower: HashMap<&str, String> = s
        .baseline
        .iter()
        .flat_map(|b| &b.slower)
        .map(|x| {
            (
                x.path.as_str(),
                format!(
                    "{:.2}x slower than the baseline ({} time); {}",
                    x.ratio,
                    x.measure,
                    x.noise_text()
                ),
            )
        })
        .collect();
    let secs = |ns: u64| format!("{:.6}", ns as f64 / 1e9);
    let total: u64 = s.results.iter().map(|r| r.wall_ns).sum();
    let tests = s.results.len().to_string();
    let failures = (s.count(Status::Differs)
        + s.results
            .iter()
            .filter(|r| slower.contains_key(r.path.as_str()) && r.status != Status::Differs)
            .count())
    .to_string();
    let errors = (s.count(Status::Failed) + s.count(Status::Timeout)).to_string();
    let skipped = s.count(Status::Refused).to_string();
    let time = s
        .wall
        .map(|w| format!("{:.6}", w.as_secs_f64()))
        .unwrap_or_else(|| secs(total));
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    let counts = [
        ("tests", tests.as_str()),
        ("failures", failures.as_str()),
        ("errors", errors.as_str()),
        ("skipped", skipped.as_str()),
        ("time", time.as_str()),
    ];
    // The testsuites element has no `skipped` in the JUnit schema.
    w.create_element("testsuites")
        .with_attribute(("name", "reprise check"))
        .with_attributes(counts.iter().copied().filter(|(k, _)| *k != "skipped"))
        .write_inner_content(|w| {
            w.create_element("testsuite")
                .with_attribute(("name", "reprise check"))
                .with_attributes(counts)
                .write_inner_content(|w| {
                    for r in &s.results {
                        testcase(w, r, slower.get(r.path.as_str()), &secs(r.wall_ns))?;
                    }
                    Ok(())
                })?;
            Ok(())
        })?;
    let mut out = w.into_inner();
    out.push(b'\n');
    Ok(out)
}

fn testcase(
    w: &mut Writer<Vec<u8>>,
    r: &CaptureResult,
    slower: Option<&String>,
    time: &str,
) -> std::io::Result<()> {
    let path = Path::new(&r.path);
    let classname = text(
        &path
            .parent()
            .map(|p| p.display().to_string())
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| ".".into()),
    );
    let name = text(
        &path
            .file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| r.path.clone()),
    );
    let message = text(&r.message);
    // A capture that passed but is slower: the slow-down is its message.
    let first = match (r.status, slower) {
        (Status::Passed, Some(s)) => text(s),
        _ => text(r.message.lines().next().unwrap_or("")),
    };
    let case = w.create_element("testcase").with_attributes([
        ("classname", classname.as_str()),
        ("name", name.as_str()),
        ("time", time),
    ]);
    let (element, kind) = match r.status {
        Status::Passed if slower.is_none() => return case.write_empty().map(|_| ()),
        Status::Passed => ("failure", "slower"),
        Status::Differs => ("failure", "differs"),
        Status::Failed => ("error", "failed"),
        Status::Timeout => ("error", "timeout"),
        Status::Refused => ("skipped", "refused"),
    };
    case.write_inner_content(|w| {
        let e = w
            .create_element(element)
            .with_attribute(("message", first.as_str()));
        // `skipped` takes a message only, in the JUnit schema.
        if r.status == Status::Refused {
            e.write_empty()?;
            w.create_element("system-out")
                .write_text_content(BytesText::new(&message))?;
        } else {
            e.with_attribute(("type", kind))
                .write_text_content(BytesText::new(&message))?;
        }
        if let (Status::Differs, Some(s)) = (r.status, slower) {
            w.create_element("system-out")
                .write_text_content(BytesText::new(&text(s)))?;
        }
        Ok(())
    })?;
    Ok(())
}

/// `s` with every character XML 1.0 cannot hold, and every control a
/// terminal acts on, escaped as reprise prints them (line breaks kept):
/// controls by [`crate::ui::shown_text`], and the two non-characters XML's
/// `Char` production leaves out (U+FFFE, U+FFFF), which no character
/// reference can write either, here.
fn text(s: &str) -> String {
    crate::ui::shown_text(s)
        .replace('\u{fffe}', "\\ufffe")
        .replace('\u{ffff}', "\\uffff")
}

#[cfg(test)]
mod tests;
