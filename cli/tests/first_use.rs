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
