//! What the interposer did not record, and why: counted as the program
//! runs, said at exit on stderr and appended to the file
//! `REPRISE_RECORD_SUMMARY` names (see [`reprise_std::summary`]).

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

pub use reprise_std::summary::Skipped;
use reprise_std::summary::Summary;

static SKIPPED: [AtomicU64; Skipped::ALL.len()] = [const { AtomicU64::new(0) }; Skipped::ALL.len()];
static RECORDED: AtomicU64 = AtomicU64::new(0);
static MARKED: AtomicU64 = AtomicU64::new(0);

/// Counts one launch not recorded.
pub fn skipped(why: Skipped) {
    if let Some(i) = Skipped::ALL.iter().position(|&k| k == why) {
        SKIPPED[i].fetch_add(1, Ordering::Relaxed);
    }
}

/// Counts one recorded launch (`marked`: with arguments marked, outside
/// the region or in globals).
pub fn recorded(marked: bool) {
    RECORDED.fetch_add(1, Ordering::Relaxed);
    if marked {
        MARKED.fetch_add(1, Ordering::Relaxed);
    }
}

fn summary() -> Summary {
    let mut s = Summary::default();
    s.recorded = RECORDED.load(Ordering::Relaxed);
    s.marked = MARKED.load(Ordering::Relaxed);
    for (k, n) in Skipped::ALL.iter().zip(&SKIPPED) {
        s.set_skipped(*k, n.load(Ordering::Relaxed));
    }
    s
}

/// Says at exit what was recorded where, and what was not; under
/// `reprise record` (which sets `REPRISE_RECORD_SUMMARY`) appends the counts
/// and the captures this process `written` to that file instead, and
/// `reprise record` says it once for all the program's processes.
pub fn at_exit(dir: &std::path::Path, written: &[std::path::PathBuf]) {
    let s = summary();
    let Some(path) = std::env::var_os("REPRISE_RECORD_SUMMARY") else {
        say(&s, dir);
        return;
    };
    // One write of one line in append mode: processes of one program
    // (forks, ranks) add their lines without mixing them.
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
    {
        let _ = f.write_all(s.line_with(written).as_bytes());
    }
}

/// The line on stderr, when the interposer was preloaded by hand.
fn say(s: &Summary, dir: &std::path::Path) {
    let mut line = format!(
        "reprise: recorded {} to {}",
        s.recorded_text(),
        dir.display()
    );
    if let Some(t) = s.skipped_text() {
        line.push_str("; ");
        line.push_str(&t);
    }
    // stderr may be closed; the summary is not worth a panic at exit.
    let _ = writeln!(std::io::stderr(), "{line}");
}
