//! Shell completions and manual pages come from the command line's own
//! definition, so they know every command and option.

mod common;

use common::*;

#[test]
fn completions_know_every_command() {
    for shell in ["bash", "zsh", "fish"] {
        let out = reprise(&["completions", shell]);
        assert_exit(&out, 0);
        let script = text(&out).0;
        for word in ["replay", "tune", "diff", "num-threads", "dtype", "record"] {
            assert!(script.contains(word), "{shell} lacks {word}");
        }
        // Internal commands (bench's launch loop) are not offered.
        assert!(
            !script.contains("__launch-loop"),
            "{shell} offers __launch-loop"
        );
    }
    assert_exit(&reprise(&["completions", "tcsh"]), 2);
}

#[test]
fn manual_pages_render_and_are_written_per_command() {
    let out = reprise(&["man"]);
    assert_exit(&out, 0);
    let page = text(&out).0;
    assert!(page.contains(".TH reprise 1"), "{}", &page[..200]);
    assert!(page.contains("tune"), "the page lists the commands");
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("man1");
    assert_exit(&reprise(&["man", "--dir", s(&pages)]), 0);
    for name in [
        "reprise.1",
        "reprise-replay.1",
        "reprise-tune.1",
        "reprise-diff.1",
    ] {
        let text =
            std::fs::read_to_string(pages.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(text.starts_with(".ie"), "{name}");
    }
    let tune = std::fs::read_to_string(pages.join("reprise-tune.1")).unwrap();
    assert!(
        tune.contains("repetitions"),
        "the tune page documents its options"
    );
}

#[test]
fn completions_offer_no_internal_flag() {
    for shell in ["bash", "zsh", "fish"] {
        let out = reprise(&["completions", shell]);
        assert_exit(&out, 0);
        let script = text(&out).0;
        for hidden in ["worker-serve", "worker-plan", "worker-device"] {
            assert!(!script.contains(hidden), "{shell} offers --{hidden}");
        }
        // The visible option beside them still is.
        assert!(script.contains("workers"), "{shell} lacks --workers");
    }
}
