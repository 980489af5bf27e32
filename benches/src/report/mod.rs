//! What `reprise bench` prints of its measurements: Markdown tables, one
//! JSON object, an SVG plot. The command line prints these strings.

pub mod interposer;
pub mod store;

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;

use crate::interposer::Outcome;
use crate::{AllocResult, SizeResult, human};

/// Appends a line to a report (writing to a `String` cannot fail).
macro_rules! line {
    ($o:expr) => {
        let _ = writeln!($o);
    };
    ($o:expr, $($t:tt)*) => {
        let _ = writeln!($o, $($t)*);
    };
}
use line;

/// A time with a unit that suits it.
pub fn ms(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

/// A byte count with a binary unit and one decimal.
pub fn bytes(n: u64) -> String {
    let units = [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")];
    match units.into_iter().find(|&(shift, _)| n >= 1u64 << shift) {
        Some((shift, unit)) => format!("{:.1} {unit}", n as f64 / (1u64 << shift) as f64),
        None => format!("{n} B"),
    }
}

/// The results as one JSON object (sizes in bytes, times in seconds).
pub fn to_json(
    results: &[SizeResult],
    alloc: &AllocResult,
    interposer: Option<&Outcome>,
    quick: bool,
    backend: reprise::BackendKind,
) -> serde_json::Value {
    let mut v = json!({
        "backend": backend.as_str(),
        "quick": quick,
        "sizes": results.iter().map(|r| json!({
            "size_bytes": r.size,
            "plain_launch_s": r.plain,
            "sync_inline_s": r.sync_inline,
            "async_inline_s": r.async_inline,
            "async_background_s": r.async_background,
            "copy_lower_bound_s": r.copy_bound,
            "memcpy_bytes_per_s": r.memcpy_bandwidth,
            "background_vs_sync": r.background_vs_sync(),
            "async_inline_vs_sync": r.async_inline_vs_sync(),
            "background_vs_bound": r.background_vs_bound(),
            "sync_inline_vs_bound": r.sync_inline / r.copy_bound,
            "replay_s": r.replay,
            "read_files_s": r.read_files,
            "replay_vs_read": r.replay_vs_read(),
            "repetition_overhead_s": r.repetition_overhead,
            "restore_bound_s": r.restore_bound,
            "repetition_vs_copy": r.repetition_vs_copy(),
            "async_background_staged_s": r.staged,
            "staged_vs_background": r.staged_vs_background(),
        })).collect::<Vec<_>>(),
        "allocator": {
            "lock_free_1_thread_per_s": alloc.lock_free_1,
            "lock_free_2_threads_per_s": alloc.lock_free_2,
            "local_chunks_1_thread_per_s": alloc.local_1,
            "local_chunks_2_threads_per_s": alloc.local_2,
            "ratio_local_chunks_2_threads": alloc.local_2 / alloc.mutex_2,
            "mutex_1_thread_per_s": alloc.mutex_1,
            "mutex_2_threads_per_s": alloc.mutex_2,
            "ratio_1_thread": alloc.lock_free_1 / alloc.mutex_1,
            "ratio_2_threads": alloc.lock_free_2 / alloc.mutex_2,
        },
    });
    if let Some(o) = interposer {
        v["interposer"] = interposer::to_json(o);
    }
    v
}

/// The tables, as Markdown.
pub fn table(results: &[SizeResult], alloc: &AllocResult, backend: reprise::BackendKind) -> String {
    let mut o = String::new();
    line!(
        o,
        "recording cost on the {backend} executor (launching thread; medians)"
    );
    line!(
        o,
        "  plain launch: a whole launch and synchronize, unrecorded;"
    );
    line!(
        o,
        "  the three schedules: what recording adds to it (recorded minus plain);"
    );
    line!(
        o,
        "  copy bound: both snapshots memcpy'd once on the host, a yardstick (a schedule that\n  \
         hands copies to other threads can beat it)\n"
    );
    line!(
        o,
        "| size | plain launch | sync + inline (LLVM) | async + inline | async + background (reprise) | copy bound | reprise / LLVM | async inline / LLVM | reprise / bound |"
    );
    line!(
        o,
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for r in results {
        line!(
            o,
            "| {} | {} | {} | {} | {} | {} | {:.3} | {:.3} | {:.2} |",
            human(r.size),
            ms(r.plain),
            ms(r.sync_inline),
            ms(r.async_inline),
            ms(r.async_background),
            ms(r.copy_bound),
            r.background_vs_sync(),
            r.async_inline_vs_sync(),
            r.background_vs_bound()
        );
    }
    if results.iter().any(|r| r.staged.is_some()) {
        line!(
            o,
            "\ndevice-side staging of the snapshot before the kernel\n"
        );
        line!(
            o,
            "| size | async + background | same, staged on the device | staged / not |"
        );
        line!(o, "| ---: | ---: | ---: | ---: |");
        for r in results {
            if let Some(t) = r.staged {
                let ratio = r
                    .staged_vs_background()
                    .map_or_else(|| "-".into(), |x| format!("{x:.3}"));
                line!(
                    o,
                    "| {} | {} | {} | {ratio} |",
                    human(r.size),
                    ms(r.async_background),
                    ms(t),
                );
            }
        }
    }
    line!(
        o,
        "\nreplay from a warm page cache (open, verify checksums, map, launch)\n"
    );
    line!(o, "| size | replay | read its files | replay / read |");
    line!(o, "| ---: | ---: | ---: | ---: |");
    for r in results {
        line!(
            o,
            "| {} | {} | {} | {:.2} |",
            human(r.size),
            ms(r.replay),
            ms(r.read_files),
            r.replay_vs_read()
        );
    }
    let yardstick = if !reprise::executors::capabilities(backend).device_memory {
        "one memcpy of the snapshot"
    } else {
        "one copy of the snapshot on the device"
    };
    line!(
        o,
        "\nrepeated replay: what one more repetition costs beyond its kernel (restore region \
         and globals, launch, wait) against {yardstick}\n"
    );
    line!(o, "| size | per repetition | {yardstick} | ratio |");
    line!(o, "| ---: | ---: | ---: | ---: |");
    for r in results {
        line!(
            o,
            "| {} | {} | {} | {:.2} |",
            human(r.size),
            ms(r.repetition_overhead),
            ms(r.restore_bound),
            r.repetition_vs_copy()
        );
    }
    line!(
        o,
        "\nmemcpy between warm buffers: {:.1} GB/s",
        results
            .last()
            .map(|r| r.memcpy_bandwidth / 1e9)
            .unwrap_or(0.0)
    );
    line!(
        o,
        "allocator (24-byte allocations, per second): shared lock-free pointer {:.1} M (1 thread), {:.1} M (2 threads); \
         per-thread chunks {:.1} M, {:.1} M; mutex {:.1} M, {:.1} M",
        alloc.lock_free_1 / 1e6,
        alloc.lock_free_2 / 1e6,
        alloc.local_1 / 1e6,
        alloc.local_2 / 1e6,
        alloc.mutex_1 / 1e6,
        alloc.mutex_2 / 1e6
    );
    line!(
        o,
        "allocator vs mutex, two threads: shared pointer {:.2}x, per-thread chunks {:.2}x (one thread: {:.2}x, {:.2}x)",
        alloc.lock_free_2 / alloc.mutex_2,
        alloc.local_2 / alloc.mutex_2,
        alloc.lock_free_1 / alloc.mutex_1,
        alloc.local_1 / alloc.mutex_1
    );
    o
}

/// Draws recording time against region size for each schedule, as SVG,
/// to `path`; the error says what failed.
pub fn plot(path: &Path, results: &[SizeResult]) -> Result<(), String> {
    use plotters::prelude::*;
    let err = |e: String| format!("drawing the plot failed: {e}");
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    type Series = (&'static str, RGBColor, fn(&SizeResult) -> f64);
    let series: [Series; 4] = [
        ("sync + inline (LLVM)", RED, |r| r.sync_inline),
        ("async + inline", BLUE, |r| r.async_inline),
        ("async + background (reprise)", GREEN, |r| {
            r.async_background
        }),
        ("copy bound", BLACK, |r| r.copy_bound),
    ];
    let xs = results.iter().map(|r| r.size as f64);
    let (xmin, xmax) = (xs.clone().fold(f64::MAX, f64::min), xs.fold(0.0, f64::max));
    let ys = results
        .iter()
        .flat_map(|r| series.iter().map(move |s| (s.2)(r)))
        .filter(|v| *v > 0.0);
    let (ymin, ymax) = (ys.clone().fold(f64::MAX, f64::min), ys.fold(0.0, f64::max));
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "recording time on the launching thread vs region size",
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (xmin * 0.8..xmax * 1.25).log_scale(),
            (ymin * 0.5..ymax * 2.0).log_scale(),
        )
        .map_err(|e| err(e.to_string()))?;
    chart
        .configure_mesh()
        .x_desc("region size (bytes)")
        .y_desc("seconds")
        .x_label_formatter(&|v| human(*v as u64))
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .draw()
        .map_err(|e| err(e.to_string()))?;
    for (name, color, f) in series {
        let pts: Vec<(f64, f64)> = results
            .iter()
            .map(|r| (r.size as f64, f(r).max(ymin * 0.5)))
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(|e| err(e.to_string()))?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))
            .map_err(|e| err(e.to_string()))?;
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| err(e.to_string()))?;
    root.present().map_err(|e| err(e.to_string()))?;
    Ok(())
}

#[cfg(test)]
mod tests;
