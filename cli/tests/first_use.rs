//! What a new user meets first: mistakes named before any work is done,
//! and printed commands that work as printed.

mod common;

use std::time::{Duration, Instant};

use common::*;

#[test]
fn a_plot_that_cannot_be_written_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    for (plot, want) in [
        (dir.path().join("missing/plot.svg"), "does not exist"),
        (dir.path().join("plot.png"), "must end in .svg"),
    ] {
        let t = Instant::now();
        let out = reprise(&["bench", "--quick", "--plot", s(&plot)]);
        assert_error(&out, &[want]);
        assert!(!text(&out).1.contains("measuring"), "{}", text(&out).1);
        assert!(t.elapsed() < Duration::from_secs(10));
    }
}

#[test]
fn a_data_file_given_for_a_descriptor_names_the_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    let config = reprise::RecordConfig::default()
        .enabled(true)
        .dir(dir.path());
    let descriptor = record_axpy(config, 64, 1).remove(0);
    let stem = descriptor.to_str().unwrap().strip_suffix(".json").unwrap();
    for (ext, role) in [
        ("record_input", "memory snapshot"),
        ("record_output", "recorded output"),
        ("image", "device image"),
    ] {
        let data = format!("{stem}.{ext}");
        for cmd in ["replay", "inspect"] {
            let out = reprise(&[cmd, &data]);
            assert_error(
                &out,
                &[
                    &format!("{data}: is a capture's {role}, not its descriptor"),
                    &format!("pass its descriptor, {}", descriptor.display()),
                ],
            );
        }
    }
}

#[test]
fn an_executor_that_cannot_run_the_image_is_refused_before_it_is_opened() {
    let dir = tempfile::tempdir().unwrap();
    let config = reprise::RecordConfig::default()
        .enabled(true)
        .dir(dir.path());
    let descriptor = record_axpy(config, 64, 1).remove(0);
    // A CUDA driver that has no device would say so if it were opened.
    let mut env = vec![("REPRISE_SIM_CUDA_DEVICES", "0")];
    let lib = sim::library_dir().ok();
    if let Some(l) = &lib {
        env.push(("LD_LIBRARY_PATH", l.to_str().unwrap()));
    }
    let out = reprise_env(&["replay", "--backend", "cuda", s(&descriptor)], &env);
    assert_error(
        &out,
        &[
            "the image is ELF x86-64 shared object, which runs on the host executor, not on \
             the cuda executor that --backend asks for",
        ],
    );
    assert!(!text(&out).1.contains("device"), "{}", text(&out).1);
}

#[test]
fn the_demo_prints_commands_that_work_as_printed_and_says_what_takes_long() {
    let dir = tempfile::tempdir().unwrap();
    let out = reprise(&["demo", "--dir", s(dir.path()), "--size", "64M"]);
    assert_exit(&out, 0);
    let (stdout, stderr) = text(&out);
    assert!(stderr.contains("filling 32.0 MiB of input"), "{stderr}");
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("replay it yourself:"))
        .unwrap_or_else(|| panic!("{stdout}"))
        .trim();
    let words: Vec<&str> = line.split(' ').collect();
    // Run as printed: the program, then its arguments.
    let run = std::process::Command::new(words[0])
        .args(&words[1..])
        .output()
        .unwrap_or_else(|e| panic!("{line}: {e}"));
    assert_exit(&run, 0);
    assert!(
        text(&run).0.contains("verification: PASS"),
        "{}",
        text(&run).0
    );
    if words[0] != "reprise" {
        assert!(stdout.contains("cargo install --path cli"), "{stdout}");
    }
}

/// One install is all it takes: a `reprise` copied where no repository is
/// (nor the interposer next to it, nor `REPRISE_INTERPOSER`) records an
/// unmodified program with the interposer it carries, written once to the
/// cache directory, and its hint replays as printed.
#[test]
fn a_copied_reprise_records_with_the_interposer_it_carries() {
    use common::programs::*;
    let Some(Target::Simulated) = setup() else {
        return;
    };
    let program = build_program("linked");
    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let me = bin.join("reprise");
    std::fs::copy(reprise_bin(), &me).unwrap();
    let cache = home.path().join("cache");
    let (k, v) = sim_env();
    let work = home.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let run = |args: &[&std::ffi::OsStr]| {
        let mut cmd = std::process::Command::new(&me);
        cmd.args(args)
            .current_dir(&work)
            .env_remove("REPRISE_INTERPOSER")
            .env("XDG_CACHE_HOME", &cache)
            .env(k, &v)
            .env("RUST_BACKTRACE", "0");
        output_within(&mut cmd, RUN_LIMIT)
    };
    let ptx = saxpy_ptx();
    for round in 0..2 {
        let out = run(&[
            "record".as_ref(),
            "--".as_ref(),
            program.as_os_str(),
            ptx.as_os_str(),
        ]);
        let (stdout, stderr) = text(&out);
        assert_exit(&out, 0);
        assert_eq!(stdout.lines().collect::<Vec<_>>(), [expected_result()]);
        let cached: Vec<_> = std::fs::read_dir(cache.join("reprise"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(cached.len(), 1, "one file, no temporary left: {cached:?}");
        let name = cached[0].file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("libreprise_interposer-") && name.ends_with(".so"),
            "{name}"
        );
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::symlink_metadata(&cached[0]).unwrap();
        assert!(meta.is_file(), "round {round}: {name} is {meta:?}");
        assert_eq!(meta.permissions().mode() & 0o777, 0o755, "{name}");
        // One summary line, with a command that works as printed (here:
        // the copy's full path, as it is not on PATH).
        assert_eq!(stderr.matches("recorded").count(), 1, "{stderr}");
        let hint = stderr
            .lines()
            .find_map(|l| l.split_once("(replay one: ")?.1.strip_suffix(')'))
            .unwrap_or_else(|| panic!("round {round}: {stderr}"));
        let words: Vec<&str> = hint.split(' ').collect();
        assert_eq!(std::path::Path::new(words[0]), me.canonicalize().unwrap());
        let replay = run(&words[1..]
            .iter()
            .map(std::ffi::OsStr::new)
            .collect::<Vec<_>>());
        assert_exit(&replay, 0);
        assert!(
            text(&replay).0.contains("verification: PASS"),
            "{hint}: {}",
            text(&replay).0
        );
        // A FIFO where the interposer was neither hangs the next record
        // (which would wait to read it) nor stays: it is replaced.
        if round == 0 {
            std::fs::remove_file(&cached[0]).unwrap();
            let made = std::process::Command::new("mkfifo")
                .arg(&cached[0])
                .status()
                .unwrap();
            assert!(made.success());
        }
    }
}

#[test]
fn a_size_that_does_not_parse_is_refused_by_the_option_before_the_program_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = reprise(&[
        "record",
        "--dir",
        s(dir.path()),
        "--region-size",
        "10Q",
        "--",
        "/bin/true",
    ]);
    assert_error(&out, &["--region-size", "10Q", "K, M, G or T"]);
    assert!(
        !text(&out).1.contains("REPRISE_RECORD_MEMSIZE"),
        "{}",
        text(&out).1
    );
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn a_missing_file_is_worded_alike_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("gone.json");
    let m = s(&missing);
    for args in [
        &["replay", m][..],
        &["inspect", m],
        &["list", m],
        &["du", m],
        &["extract", "--list", m],
    ] {
        let out = reprise(args);
        let (_, stderr) = text(&out);
        assert_error(&out, &[&format!("error: {m}: no such file\n")]);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
}

#[test]
fn list_names_its_columns() {
    let dir = tempfile::tempdir().unwrap();
    let config = reprise::RecordConfig::default()
        .enabled(true)
        .dir(dir.path());
    record_axpy(config, 64, 1);
    let out = reprise(&["list", s(dir.path())]);
    assert_exit(&out, 0);
    let stdout = text(&out).0;
    let mut lines = stdout.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "KERNEL",
            "FORMAT",
            "EXEC",
            "TEAMS",
            "x",
            "THRDS",
            "SNAPSHOT",
            "DESCRIPTOR"
        ],
        "{stdout}"
    );
    let row = lines.next().unwrap();
    assert!(row.starts_with("axpy"), "{stdout}");
    // Teams and threads apart, not `4x64` (read as hexadecimal).
    assert!(row.contains(" 4 x 64 "), "{stdout}");
}

#[test]
fn inspect_prints_dimensions_that_do_not_read_as_hexadecimal() {
    let dir = tempfile::tempdir().unwrap();
    let config = reprise::RecordConfig::default()
        .enabled(true)
        .dir(dir.path());
    let descriptor = record_axpy(config, 64, 1).remove(0);
    let out = reprise(&["inspect", s(&descriptor)]);
    assert_exit(&out, 0);
    let stdout = text(&out).0;
    let geometry = stdout
        .lines()
        .find(|l| l.starts_with("geometry"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(geometry.contains("grid 4 x 1 x 1 (teams 4)"), "{geometry}");
    assert!(!geometry.contains("4x1"), "{geometry}");
}

#[test]
fn the_help_says_what_the_options_accept() {
    let out = reprise(&["replay", "--help"]);
    let help = text(&out)
        .0
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let max = reprise::compare::MAX_LISTED;
    assert!(help.contains(&format!("0 to {max}")), "{help}");
    let out = reprise(&["replay", "--mismatches", "100", "x.json"]);
    assert_error(&out, &[&format!("0..={max}")]);
    let out = reprise(&["demo", "--help"]);
    let help = text(&out).0;
    for backend in ["host", "cuda", "amdgpu"] {
        assert!(help.contains(backend), "{help}");
    }
}

#[test]
fn extract_tells_a_pie_executable_from_a_shared_object() {
    use reprise::core::offload::{self, ImageFormat};
    let dir = tempfile::tempdir().unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let src = dir.path().join("main.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let pie = dir.path().join("main");
    let built = std::process::Command::new(&cc)
        .args(["-fPIE", "-pie", "-o"])
        .arg(&pie)
        .arg(&src)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        common::skip(&format!("{cc} cannot build a PIE executable"), Some("gcc"));
        return;
    }
    for (image, kind) in [
        (std::fs::read(&pie).unwrap(), "ELF x86-64 PIE executable"),
        (AXPY.to_vec(), "ELF x86-64 shared object"),
    ] {
        let bin = dir.path().join("app.offload");
        let bytes = offload::write_one(ImageFormat::Object, "x86_64-pc-linux-gnu", "", &image);
        std::fs::write(&bin, bytes).unwrap();
        let out = reprise(&["extract", "--list", s(&bin)]);
        assert_exit(&out, 0);
        assert!(text(&out).0.contains(kind), "{kind}: {}", text(&out).0);
    }
}

#[test]
fn the_demo_output_directory_is_ignored_by_git() {
    let ignore = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.gitignore"),
    )
    .unwrap();
    for dir in ["reprise-demo/", "reprise-captures/"] {
        assert!(
            ignore
                .lines()
                .any(|l| l.trim().trim_start_matches('/') == dir),
            "{dir}: {ignore}"
        );
    }
}

#[test]
fn rust_log_info_tells_the_steps_of_a_replay() {
    let dir = tempfile::tempdir().unwrap();
    let config = reprise::RecordConfig::default()
        .enabled(true)
        .dir(dir.path());
    let descriptor = record_axpy(config, 64, 1).remove(0);
    let out = reprise_env(
        &["replay", "--verify", s(&descriptor)],
        &[("RUST_LOG", "info")],
    );
    assert_exit(&out, 0);
    let stderr = text(&out).1;
    for step in [
        "replaying axpy of ",
        "region placed at 0x",
        "image loaded: ",
        "kernel axpy launched and done",
        "verification against ",
    ] {
        assert!(stderr.contains(step), "{step}: {stderr}");
    }
}
