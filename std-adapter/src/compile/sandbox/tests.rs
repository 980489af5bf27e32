use super::*;

fn bounds<'a>(work: &'a WorkDir, limits: &'a CompileLimits) -> Bounds<'a> {
    Bounds {
        work: work.path(),
        limits,
        deadline: Instant::now() + limits.time,
        ir: Some(Path::new("k.bc")),
    }
}

fn sh(script: &str) -> Command {
    let mut c = Command::new("/bin/sh");
    c.args(["-c", script]);
    c
}

#[test]
fn the_work_directory_is_private_and_goes_with_what_is_in_it() {
    use std::os::unix::fs::PermissionsExt;
    let w = WorkDir::new().unwrap();
    let p = w.path().to_path_buf();
    let mode = std::fs::metadata(&p).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    std::fs::create_dir(p.join("sub")).unwrap();
    std::fs::write(p.join("sub/f"), b"x").unwrap();
    drop(w);
    assert!(!p.exists());
}

#[test]
fn a_tool_runs_in_the_private_directory_which_is_its_tmpdir() {
    let w = WorkDir::new().unwrap();
    let limits = CompileLimits::default();
    let out = run(
        Path::new("sh"),
        sh("pwd; echo \"$TMPDIR $TMP $TEMP\""),
        &bounds(&w, &limits),
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    let dir = w.path().display().to_string();
    assert_eq!(text, format!("{dir}\n{dir} {dir} {dir}\n"));
}

#[test]
fn a_tool_past_the_time_limit_is_killed_with_its_subprocesses() {
    let w = WorkDir::new().unwrap();
    let limits = CompileLimits {
        time: Duration::from_millis(300),
        ..Default::default()
    };
    let started = Instant::now();
    // The `sleep` holds the pipes: only killing the group ends it.
    let e = run(
        Path::new("sh"),
        sh("sleep 30; echo done"),
        &bounds(&w, &limits),
    )
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    let text = e.to_string();
    assert!(
        text.contains("compile time limit of 0.300 s (--compile-timeout)") && text.contains("k.bc"),
        "{text}"
    );
}

#[test]
fn a_file_past_the_output_limit_fails_the_write_and_is_named() {
    let w = WorkDir::new().unwrap();
    let limits = CompileLimits {
        output: 4096,
        ..Default::default()
    };
    let e = run(
        Path::new("sh"),
        sh("head -c 100000 /dev/zero > big"),
        &bounds(&w, &limits),
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("compile output limit of 4 KiB (--compile-output)"),
        "{text}"
    );
    let len = std::fs::metadata(w.path().join("big")).unwrap().len();
    assert!(len <= 4097, "{len}");
}

#[test]
fn a_tool_that_fails_silently_after_a_cut_write_is_named_at_the_output_limit() {
    let w = WorkDir::new().unwrap();
    // The IR is the compile's, not a tool's: larger than the limit, it
    // is no sign of one.
    std::fs::write(w.path().join(INPUT), vec![0u8; 10_000]).unwrap();
    let limits = CompileLimits {
        output: 4096,
        ..Default::default()
    };
    let plain = run(Path::new("sh"), sh("exit 1"), &bounds(&w, &limits)).unwrap_err();
    assert!(matches!(plain, CompileError::Tool { .. }), "{plain}");
    let e = run(
        Path::new("sh"),
        sh("mkdir -p sub; head -c 100000 /dev/zero > sub/big 2>/dev/null; exit 1"),
        &bounds(&w, &limits),
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            CompileError::LimitHit {
                limit: Limit::Output(4096),
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn the_memory_limit_applies_to_the_tool() {
    let w = WorkDir::new().unwrap();
    let limits = CompileLimits {
        memory: 64 << 20,
        ..Default::default()
    };
    // The limits the tool sees.
    let out = run(
        Path::new("sh"),
        sh("ulimit -v; ulimit -f; ulimit -c"),
        &bounds(&w, &limits),
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "65536", "{text}");
    // 1 GiB + 1 byte, in the shell's blocks (512 or 1024 bytes).
    assert!(
        [(1u64 << 30) / 512, (1u64 << 30) / 1024]
            .map(|n| n.to_string())
            .contains(&lines[1].to_string()),
        "{text}"
    );
    assert_eq!(lines[2], "0", "{text}");
}

#[test]
fn a_failure_shows_the_end_of_what_the_tool_said_escaped() {
    let w = WorkDir::new().unwrap();
    let limits = CompileLimits::default();
    let e = run(
        Path::new("sh"),
        sh("printf 'bad \\033[31m thing\\n' >&2; exit 3"),
        &bounds(&w, &limits),
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("bad \\u{1b}[31m thing") && !text.contains('\u{1b}'),
        "{text}"
    );
}
