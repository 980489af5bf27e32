//! `reprise bench --backend cuda`: what the interposer adds to one launch
//! (measured by [`reprise_bench::interposer`]), printed. The launcher is
//! this executable, whose hidden `__launch-loop` subcommand launches the
//! benchmark's saxpy.

use std::path::Path;

use reprise_bench::interposer::Way;
pub use reprise_bench::interposer::{Outcome, elements_for};
use serde_json::json;

/// Measures the rows with the interposer built into this executable (or
/// `REPRISE_INTERPOSER`); skipped, saying why, without one.
pub fn measure(
    quick: bool,
    elements: u32,
    scratch: &Path,
    progress: &mut dyn FnMut(&str),
) -> Outcome {
    let lib = match crate::record::interposer() {
        Ok(p) => p,
        Err(e) => return Outcome::Skipped(e.to_string()),
    };
    match std::env::current_exe() {
        Ok(exe) => {
            reprise_bench::interposer::measure(&exe, &lib, quick, elements, scratch, progress)
        }
        Err(e) => Outcome::Failed(format!("locating this executable: {e}")),
    }
}

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

/// Prints the table (or the line saying why there is none).
pub fn print(o: &Outcome) {
    let m = match o {
        Outcome::Measured(m) => m,
        Outcome::Skipped(why) => {
            out!();
            out!("interposer (per launch, same run): skipped: {why}");
            return;
        }
        Outcome::Failed(why) => {
            out!();
            out!("interposer (per launch, same run): failed: {why}");
            return;
        }
    };
    out_text!(
        "\ninterposer (per launch, same run): saxpy over {} elements launched and synchronized \
         through libcuda.so.1 (dlopen + dlsym); medians\n",
        m.elements
    );
    out!("| launch | launches | median | min | vs plain |");
    out!("| :--- | ---: | ---: | ---: | ---: |");
    let row = |name: &str, w: &Way, ratio: Option<f64>| {
        out!(
            "| {name} | {} | {} | {} | {} |",
            w.launches,
            super::ms(w.median),
            super::ms(w.min),
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
    out_text!(
        "\ncapture per recorded launch: {} ({} captures)",
        crate::ui::human_bytes(m.capture_bytes),
        m.captures
    );
}
