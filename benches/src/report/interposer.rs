//! What the interposer adds to one launch (measured by
//! [`crate::interposer`]), as a table and JSON.

use std::fmt::Write as _;

use serde_json::json;

use super::{bytes, line, ms};
use crate::interposer::{Outcome, Way};

/// The rows as JSON.
pub fn to_json(o: &Outcome) -> serde_json::Value {
    let way = |w: &Way| {
        json!({
            "launches": w.launches,
            "median_s": w.median,
            "min_s": w.min,
        })
    };
    match o {
        Outcome::Measured(m) => json!({
            "elements": m.elements,
            "plain": way(&m.plain),
            "pass_through": way(&m.pass_through),
            "recorded": way(&m.recorded),
            "pass_through_vs_plain": m.pass_through_vs_plain(),
            "recorded_vs_plain": m.recorded_vs_plain(),
            "recorded_store": way(&m.recorded_store),
            "recorded_store_vs_plain": m.recorded_store_vs_plain(),
            "captures": m.captures,
            "capture_bytes": m.capture_bytes,
        }),
        Outcome::Skipped(why) => json!({ "skipped": why }),
        Outcome::Failed(why) => json!({ "error": why }),
    }
}

/// The table (or the line saying why there is none), as Markdown.
pub fn table(outcome: &Outcome) -> String {
    let mut o = String::new();
    let m = match outcome {
        Outcome::Measured(m) => m,
        Outcome::Skipped(why) => {
            line!(o);
            line!(o, "interposer (per launch, same run): skipped: {why}");
            return o;
        }
        Outcome::Failed(why) => {
            line!(o);
            line!(o, "interposer (per launch, same run): failed: {why}");
            return o;
        }
    };
    line!(
        o,
        "\ninterposer (per launch, same run): saxpy over {} elements launched and synchronized \
         through libcuda.so.1 (dlopen + dlsym); medians\n",
        m.elements
    );
    line!(o, "| launch | launches | median | min | vs plain |");
    line!(o, "| :--- | ---: | ---: | ---: | ---: |");
    let mut row = |name: &str, w: &Way, ratio: Option<f64>| {
        line!(
            o,
            "| {name} | {} | {} | {} | {} |",
            w.launches,
            ms(w.median),
            ms(w.min),
            ratio.map_or_else(|| "-".into(), |r| format!("{r:.2}"))
        );
    };
    row("plain", &m.plain, None);
    row(
        "interposer, not recorded",
        &m.pass_through,
        Some(m.pass_through_vs_plain()),
    );
    row(
        "interposer, recorded",
        &m.recorded,
        Some(m.recorded_vs_plain()),
    );
    row(
        "interposer, recorded into the store",
        &m.recorded_store,
        Some(m.recorded_store_vs_plain()),
    );
    line!(
        o,
        "\ncapture per recorded launch: {} ({} captures)",
        bytes(m.capture_bytes),
        m.captures
    );
    o
}
