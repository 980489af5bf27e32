//! Descriptors edited as a person would: a newer format, geometry that
//! disagrees with the team and thread counts (and counts of 0 given as
//! options), a backend the image contradicts, things that are no descriptor,
//! and argument sizes that do not fit.

use reprise::core::record::FORMAT_VERSION;
use serde_json::json;

use crate::common::*;
use crate::{current, error_line, legacy, set_keys, sibling};

#[test]
fn newer_format_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    // This build's own version, in a reprise descriptor, replays.
    set_keys(&f.descriptor, json!({ "RepriseFormat": FORMAT_VERSION }));
    assert_exit(&reprise(&["replay", "--verify", s(&f.descriptor)]), 0);

    set_keys(&f.descriptor, json!({ "RepriseFormat": 99 }));
    let want = format!(
        "{}: RepriseFormat 99 is newer than this reprise reads (up to {FORMAT_VERSION}); \
         upgrade reprise",
        f.descriptor.display()
    );
    for cmd in ["replay", "inspect"] {
        assert_error(&reprise(&[cmd, s(&f.descriptor)]), &[&want]);
    }
}

#[test]
fn grid_and_block_must_agree_with_teams_and_threads() {
    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    let reprise_keys = json!({
        "RepriseFormat": 1,
        "Grid": [8, 1, 1],
        "Block": [128, 1, 1],
        "NumTeams": 8,
        "NumThreads": 128,
    });
    set_keys(&f.descriptor, reprise_keys.clone());
    assert_exit(&reprise(&["replay", "--verify", s(&f.descriptor)]), 0);

    let name = f.descriptor.display().to_string();
    for (keys, needle) in [
        (
            json!({ "Grid": [7, 1, 1], "NumTeams": 2048 }),
            "Grid [7,1,1] disagrees with NumTeams 2048",
        ),
        (
            json!({ "Block": [64, 1, 1] }),
            "Block [64,1,1] disagrees with NumThreads 128",
        ),
        (
            json!({ "Grid": [0, 1, 1] }),
            "Grid [0,1,1]: every dimension must be at least 1",
        ),
        (
            json!({ "Block": [128, 0, 1] }),
            "Block [128,0,1]: every dimension must be at least 1",
        ),
        (
            json!({ "NumThreads": 0, "Block": null }),
            "NumThreads 0: must be at least 1",
        ),
    ] {
        set_keys(&f.descriptor, reprise_keys.clone());
        set_keys(&f.descriptor, keys);
        for cmd in ["replay", "inspect"] {
            assert_error(
                &reprise(&[cmd, s(&f.descriptor)]),
                &[&format!("{name}: {needle}")],
            );
        }
    }

    // In LLVM's formats 0 is a count LLVM did not record (no num_teams
    // clause): readable, and the host (whose kernels get no geometry)
    // replays it as it is; GPU executors ask for the count
    // (gpu_cuda/commands.rs).
    let dir = tempfile::tempdir().unwrap();
    let f = legacy(dir.path());
    set_keys(&f.descriptor, json!({ "NumTeamsClause": 0 }));
    assert_exit(&reprise(&["replay", "--verify", s(&f.descriptor)]), 0);
    assert_exit(&reprise(&["inspect", s(&f.descriptor)]), 0);
    assert_exit(
        &reprise(&["replay", "--verify", "--num-teams=2", s(&f.descriptor)]),
        0,
    );
}

#[test]
fn zero_teams_or_threads_overrides_are_option_errors() {
    let dir = tempfile::tempdir().unwrap();
    let f = legacy(dir.path());
    for (option, name) in [
        ("--num-teams=0", "--num-teams"),
        ("--num-threads=0", "--num-threads"),
    ] {
        // The command line refuses them when parsed...
        let out = reprise(&["replay", option, s(&f.descriptor)]);
        assert_exit(&out, 2);
        let line = error_line(&out);
        assert!(line.contains(name) && line.contains('0'), "{line}");
        assert!(!line.contains("axpy.json"), "{line}");
    }
    // ... and the library when replaying, as a problem of the option, not
    // of the capture's file, named as the library names it.
    let capture = reprise::Capture::open(&f.descriptor).unwrap();
    for (builder, want) in [
        (
            reprise::replay(&capture).num_teams(0),
            "ReplayOptions::num_teams 0: must be at least 1",
        ),
        (
            reprise::replay(&capture).num_threads(0),
            "ReplayOptions::num_threads 0: must be at least 1",
        ),
    ] {
        let err = reprise::block_on(std::future::IntoFuture::into_future(builder)).unwrap_err();
        assert_eq!(err.to_string(), want);
    }
}

#[test]
fn backend_that_contradicts_the_image_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    set_keys(
        &f.descriptor,
        json!({ "RepriseFormat": 1, "Backend": "host" }),
    );
    assert_exit(&reprise(&["replay", "--verify", s(&f.descriptor)]), 0);

    set_keys(&f.descriptor, json!({ "Backend": "cuda" }));
    let image = sibling(&f.descriptor, "image");
    for backend in ["auto", "host", "cuda"] {
        assert_error(
            &reprise(&["replay", "--backend", backend, s(&f.descriptor)]),
            &[
                &format!("{}: Backend is \"cuda\"", f.descriptor.display()),
                &format!(
                    "the image {} is ELF x86-64 shared object, which runs on the host executor",
                    image.display()
                ),
            ],
        );
    }
}

#[test]
fn things_that_are_not_descriptors_say_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    let f = legacy(dir.path());
    for text in [
        &b"[1,2,3]"[..],
        b"\x7fELF\x02\x01garbage",
        b"",
        b"{\"foo\": 1}",
    ] {
        std::fs::write(&f.descriptor, text).unwrap();
        for cmd in ["replay", "inspect"] {
            let out = reprise(&[cmd, s(&f.descriptor)]);
            assert_error(
                &out,
                &[&format!(
                    "{}: not a capture descriptor: expected a JSON object with the keys Name, \
                     NumArgs,",
                    f.descriptor.display()
                )],
            );
            let line = error_line(&out);
            if text.starts_with(b"{") {
                assert!(line.ends_with("(this object has none of them)"), "{line}");
            } else {
                assert!(line.contains("(JSON error: "), "{line}");
            }
        }
    }
}

#[test]
fn bad_arg_sizes_name_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let f = current(dir.path());
    set_keys(
        &f.descriptor,
        json!({ "RepriseFormat": 1, "ArgSizes": [8, 8, 100000, 8] }),
    );
    let out = reprise(&["replay", s(&f.descriptor)]);
    assert_error(
        &out,
        &[&format!(
            "{}: ArgSizes[2] is 100000, larger than the largest by-value argument (4096 bytes",
            f.descriptor.display()
        )],
    );
    assert!(!error_line(&out).contains("ArgData"));

    set_keys(&f.descriptor, json!({ "ArgSizes": [8, 8, 16, 8] }));
    assert_error(
        &reprise(&["replay", s(&f.descriptor)]),
        &["ArgSizes[2] is 16", "the descriptor has no ArgData"],
    );
    set_keys(&f.descriptor, json!({ "ArgSizes": [8, 8, 8] }));
    assert_error(
        &reprise(&["replay", s(&f.descriptor)]),
        &["NumArgs is 4 but ArgSizes has 3 entries"],
    );
}
