//! `reprise tune --plot`: the median time of each configuration measured,
//! with bars from its shortest to its longest time, fastest first; the
//! recorded configuration in another colour. Drawn from the table's rows,
//! so a sweep, a search and a merge of shards plot alike; a compile
//! setting (JIT options, optimisation level) is part of its bar's name.

use std::path::Path;

use reprise::LaunchConfig;
use reprise::tune::rows::Row;

use crate::error::{CliError, Result};

/// Draws the plot of `rows` (in the table's order) of the kernel `kernel`
/// as SVG to `path`.
pub fn draw(path: &Path, kernel: &str, rows: &[Row]) -> Result<()> {
    use plotters::prelude::*;
    let err = |e: String| CliError::file(path, format!("drawing the plot failed: {e}"));
    let shown: Vec<&Row> = rows.iter().filter(|m| m.median().is_some()).collect();
    if shown.is_empty() {
        return Err(CliError::file(
            path,
            "nothing to plot: no configuration was timed",
        ));
    }
    let slowest = shown
        .iter()
        .filter_map(|m| m.max())
        .max()
        .unwrap_or_default()
        .as_secs_f64();
    // Microseconds or milliseconds, whichever reads better.
    let (unit, scale) = if slowest >= 2e-3 {
        ("ms", 1e3)
    } else {
        ("us", 1e6)
    };
    let labels: Vec<String> = shown
        .iter()
        .map(|m| match m.compile() {
            Some(c) => format!("{} {c}", label(&m.config())),
            None => label(&m.config()),
        })
        .collect();
    let n = shown.len();
    let width = (160 + 72 * n as u32).clamp(640, 4000);
    // Drawn into memory, then written as every side file is (never
    // through a link planted at the name).
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let caption = format!("{kernel}: median kernel time per configuration (bars: min to max)");
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 18))
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..slowest * scale * 1.15)
            .map_err(|e| err(e.to_string()))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                    labels[i as usize].clone()
                } else {
                    String::new()
                }
            })
            .x_label_style(("sans-serif", 11))
            .max_light_lines(1)
            .x_desc("configuration (grid x by block x)")
            .y_desc(format!("kernel time ({unit})"))
            .draw()
            .map_err(|e| err(e.to_string()))?;
        // The recorded configuration red, usable ones blue, those whose output
        // differs grey (timed, but no candidates).
        let kind = |m: &Row| match (m.status.as_str(), m.recorded) {
            ("differs", _) => 2,
            (_, true) => 0,
            _ => 1,
        };
        for (name, which, c) in [
            ("recorded", 0, RED),
            ("output verified (or not checked)", 1, BLUE),
            ("output differs", 2, RGBColor(150, 150, 150)),
        ] {
            let pick = |m: &Row| kind(m) == which;
            if !shown.iter().any(|m| pick(m)) {
                continue;
            }
            chart
                .draw_series(
                    shown
                        .iter()
                        .enumerate()
                        .filter(|(_, m)| pick(m))
                        .map(|(i, m)| {
                            let (lo, mid, hi) = (
                                m.min().unwrap_or_default().as_secs_f64() * scale,
                                m.median().unwrap_or_default().as_secs_f64() * scale,
                                m.max().unwrap_or_default().as_secs_f64() * scale,
                            );
                            ErrorBar::new_vertical(i as f64, lo, mid, hi, c.filled(), 10)
                        }),
                )
                .map_err(|e| err(e.to_string()))?
                .label(name)
                .legend(move |(x, y)| Circle::new((x + 10, y), 4, c.filled()));
        }
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| err(e.to_string()))?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    crate::side_files::write(path, svg.as_bytes())?;
    Ok(())
}

/// A bar's label: `128x256` (grid x by block x), with the other
/// dimensions and the shared memory where they are not trivial.
fn label(c: &LaunchConfig) -> String {
    let d = |v: [u32; 3]| match v {
        [x, 1, 1] => x.to_string(),
        [x, y, 1] => format!("{x}.{y}"),
        [x, y, z] => format!("{x}.{y}.{z}"),
    };
    let mut t = format!("{}x{}", d(c.grid), d(c.block));
    if c.shared_mem > 0 {
        t.push_str(&format!("+{}B", c.shared_mem));
    }
    t
}
