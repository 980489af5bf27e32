use super::super::results::Status;
use super::*;

fn timed(path: &str, name: &str, kernel: &[u64]) -> CaptureResult {
    CaptureResult {
        path: path.into(),
        name: name.into(),
        kernel: Some("k".into()),
        backend: None,
        status: Status::Passed,
        exit_code: Some(0),
        signal: None,
        kernel_ns: median(kernel),
        kernel_times_ns: kernel.to_vec(),
        replay_ns: None,
        replay_times_ns: Vec::new(),
        wall_ns: 1,
        message: String::new(),
    }
}

#[test]
fn slower_than_allowed_is_flagged_with_its_noise() {
    let mut base = Read::default();
    for r in [
        timed("/old/a.json", "a.json", &[100, 101, 99]),
        timed("/old/b.json", "b.json", &[100]),
        timed("/old/c.json", "c.json", &[100, 100]),
    ] {
        base.results.insert(r.path.clone(), r);
    }
    let now = [
        timed("/new/a.json", "a.json", &[150, 151, 149]),
        timed("/new/b.json", "b.json", &[119]),
        timed("/new/c.json", "c.json", &[121, 121]),
        timed("/new/d.json", "d.json", &[1000]),
    ];
    let c = compare(&now, &base, 1.2);
    assert_eq!(c.compared, 3);
    assert_eq!(c.not_in_baseline, 1);
    let flagged: Vec<&str> = c.slower.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(flagged, ["/new/a.json", "/new/c.json"]);
    assert!(
        c.slower[0].noise_text().contains("beyond the noise"),
        "{}",
        c.slower[0].noise_text()
    );
    assert!((c.slower[0].ratio - 1.5).abs() < 1e-9);
    let one = compare(&[timed("/new/b.json", "b.json", &[200])], &base, 1.2);
    assert!(one.slower[0].noise_text().contains("not known"));
}
