use super::install;

/// `--device-hashing` is refused before the program runs, saying why,
/// with the raw format or `--reachable`; in the store format it is had.
#[test]
fn device_hashing_is_refused_only_where_it_cannot_work() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        a: super::RecordArgs,
    }
    let args = |extra: &[&str]| {
        let mut v = vec!["reprise"];
        v.extend_from_slice(extra);
        v.extend_from_slice(&["--", "true"]);
        Cli::parse_from(v).a
    };
    if std::env::var_os("REPRISE_RECORD_FORMAT").is_none()
        && std::env::var_os("REPRISE_RECORD_REACHABLE").is_none()
    {
        assert_eq!(
            super::device_hashing_refusal(&args(&["--device-hashing"])),
            None
        );
    }
    let reach = args(&["--device-hashing", "--reachable"]);
    let why = super::device_hashing_refusal(&reach).unwrap();
    assert!(why.contains("use one or the other"), "{why}");
    let raw = args(&["--device-hashing", "--format", "raw"]);
    let why = super::device_hashing_refusal(&raw).unwrap();
    assert!(why.contains("raw format keeps no store"), "{why}");
    if std::env::var_os("REPRISE_RECORD_DEVICE_HASHING").is_none() {
        assert!(super::device_hashing_refusal(&args(&[])).is_none());
    }
}

/// Processes writing the interposer at once each rename a whole file:
/// every one gets the file with all its bytes, mode 0755, and no
/// temporary file is left.
#[test]
fn concurrent_first_uses_each_get_the_whole_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("reprise");
    let bytes: Vec<u8> = (0..1_000_000u32).map(|i| i as u8).collect();
    let paths: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| s.spawn(|| install(&cache, &bytes, "0123").unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for p in &paths {
        assert_eq!(p, &cache.join("libreprise_interposer-0123.so"));
    }
    assert_eq!(std::fs::read(&paths[0]).unwrap(), bytes);
    let mode = std::fs::metadata(&paths[0]).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 1);
    // A damaged copy is written again.
    std::fs::write(&paths[0], b"damaged").unwrap();
    assert_eq!(
        std::fs::read(install(&cache, &bytes, "0123").unwrap()).unwrap(),
        bytes
    );
}
