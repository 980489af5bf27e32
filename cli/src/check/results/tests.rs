use super::*;

fn result(path: &str, status: Status) -> CaptureResult {
    CaptureResult {
        path: path.into(),
        name: path.into(),
        kernel: Some("k\u{1b}[2J\u{202e}".into()),
        backend: Some("host".into()),
        status,
        exit_code: Some(0),
        signal: None,
        kernel_ns: Some(5),
        kernel_times_ns: vec![4, 5, 9],
        replay_ns: Some(7),
        replay_times_ns: vec![7, 7, 8],
        wall_ns: 1000,
        message: "line one\nline two".into(),
    }
}

#[test]
fn a_result_is_one_line_that_reads_back() {
    let r = result("a/b.json", Status::Differs);
    let line = r.line();
    assert_eq!(line.matches('\n').count(), 1, "{line}");
    assert!(
        !line.chars().any(|c| c == '\u{1b}' || c == '\u{202e}'),
        "{line}"
    );
    let mut read = Read::default();
    read.add_text(&format!("{line}{{\"path\": \"cut sh"));
    assert_eq!(read.results["a/b.json"], r);
    assert_eq!(read.bad_lines, 1);
}

#[test]
fn a_summary_reads_as_its_results() {
    let all = [
        result("x.json", Status::Passed),
        result("y.json", Status::Timeout),
    ];
    let summary = serde_json::json!({ "passed": 1, "results": all });
    let mut read = Read::default();
    read.add_text(&serde_json::to_string_pretty(&summary).unwrap());
    assert_eq!(read.results.len(), 2);
    assert_eq!(read.results["y.json"].status, Status::Timeout);
}

#[test]
fn the_file_keeps_whole_lines_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.jsonl");
    let mut f = ResultsFile::open(&path, false).unwrap();
    f.append(&result("one.json", Status::Passed)).unwrap();
    drop(f);
    let mut f = ResultsFile::open(&path, true).unwrap();
    f.append(&result("two.json", Status::Failed)).unwrap();
    drop(f);
    let (read, files) = read_dir(dir.path()).unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(read.results.len(), 2);
    // Without --resume, the file starts empty.
    ResultsFile::open(&path, false).unwrap();
    assert_eq!(std::fs::read(&path).unwrap().len(), 0);
}

#[test]
fn medians() {
    assert_eq!(median(&[]), None);
    assert_eq!(median(&[3, 1, 2]), Some(2));
    assert_eq!(median(&[4, 1, 3, 2]), Some(2));
    assert_eq!(median(&[u64::MAX, u64::MAX]), Some(u64::MAX));
}
