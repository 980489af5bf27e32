//! Tuning a kernel's launch geometry in isolation: sweep thread counts over
//! one capture with `reprise::tune` and report the fastest configuration
//! whose output matches the recorded one.
//!
//! Run: `cargo run --release --example tuning_sweep -- path/to/capture.json`
//! (a GPU capture: `reprise demo --backend cuda` makes one). The host
//! executor's kernels take no geometry, so there the sweep is refused, with
//! the reason.

use reprise::{Capture, LaunchConfig};

fn main() -> reprise::Result<()> {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: tuning_sweep CAPTURE.json   (try `reprise demo --backend cuda` for one)");
        std::process::exit(2);
    };
    let capture = Capture::open(&path)?;
    let r = &capture.record;
    // The same total number of threads, shaped differently.
    let total = u64::from(r.num_teams()) * u64::from(r.num_threads());
    let configs = [32u32, 64, 128, 256, 512, 1024].map(|threads| LaunchConfig {
        grid: [(total.div_ceil(u64::from(threads))).max(1) as u32, 1, 1],
        block: [threads, 1, 1],
        shared_mem: r.shared_mem,
    });
    let report = reprise::block_on(std::future::IntoFuture::into_future(
        reprise::tune(&capture).configs(configs),
    ))?;
    for m in &report.measured {
        println!(
            "{:>5} threads: {:?} median, {:?}",
            m.config.block[0],
            m.median(),
            m.status
        );
    }
    if let Some(best) = report.best() {
        println!(
            "fastest: {} threads ({:?}); {:.2}x the recorded configuration",
            best.config.block[0],
            best.median(),
            report.speedup(best).unwrap_or(1.0)
        );
    }
    Ok(())
}
