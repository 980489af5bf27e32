use super::*;

#[test]
fn shard_files_are_named_as_shards() {
    for n in ["shard-0-of-1.jsonl", "shard-12-of-16.jsonl"] {
        assert!(is_shard_file(n.as_ref()), "{n}");
    }
    for n in [
        "precious.jsonl",
        "shard-0-of-1.json",
        "shard--of-1.jsonl",
        "shard-0-of-.jsonl",
        "shard-a-of-1.jsonl",
        "shard-0-of-1.jsonl.x",
        "xshard-0-of-1.jsonl",
        "job.json",
    ] {
        assert!(!is_shard_file(n.as_ref()), "{n}");
    }
}

#[test]
fn a_fresh_run_removes_only_the_shards_files() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("r.slurm");
    let elsewhere = t.path().join("elsewhere");
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    std::fs::create_dir(&elsewhere).unwrap();
    for f in ["shard-0-of-2.jsonl", "shard-1-of-2.jsonl", "precious.jsonl"] {
        std::fs::write(dir.join(f), "x").unwrap();
    }
    std::fs::write(elsewhere.join("target.jsonl"), "x").unwrap();
    std::fs::create_dir(dir.join("shard-3-of-4.jsonl")).unwrap();
    std::os::unix::fs::symlink(
        elsewhere.join("target.jsonl"),
        dir.join("shard-2-of-4.jsonl"),
    )
    .unwrap();
    prepare(&dir, true).unwrap();
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "logs",
            "precious.jsonl",
            "shard-2-of-4.jsonl",
            "shard-3-of-4.jsonl"
        ]
    );
    assert!(elsewhere.join("target.jsonl").is_file());
    // Without `fresh` nothing goes; a new directory is made whole.
    std::fs::write(dir.join("shard-0-of-2.jsonl"), "x").unwrap();
    prepare(&dir, false).unwrap();
    assert!(dir.join("shard-0-of-2.jsonl").is_file());
    let new = t.path().join("a/b/new.slurm");
    prepare(&new, true).unwrap();
    assert!(new.join("logs").is_dir());
}

#[test]
fn a_job_directory_or_logs_planted_as_a_link_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let target = t.path().join("target");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("precious.jsonl"), "x").unwrap();
    std::fs::write(target.join("shard-0-of-1.jsonl"), "x").unwrap();
    let dir = t.path().join("r.slurm");
    std::os::unix::fs::symlink(&target, &dir).unwrap();
    for fresh in [true, false] {
        let e = prepare(&dir, fresh).unwrap_err().to_string();
        assert!(e.contains("is a symbolic link"), "{e}");
    }
    assert!(target.join("precious.jsonl").is_file());
    assert!(target.join("shard-0-of-1.jsonl").is_file());
    assert!(!target.join("logs").exists());
    // A dangling link too.
    let dangling = t.path().join("d.slurm");
    std::os::unix::fs::symlink(t.path().join("none"), &dangling).unwrap();
    assert!(prepare(&dangling, true).is_err());
    assert!(!t.path().join("none").exists());
    // logs/ as a link.
    let dir = t.path().join("l.slurm");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&target, dir.join("logs")).unwrap();
    let e = prepare(&dir, true).unwrap_err().to_string();
    assert!(e.contains("logs: not a directory"), "{e}");
}
