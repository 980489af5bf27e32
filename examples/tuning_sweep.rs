//! Tuning a kernel's launch geometry in isolation: replay one capture with
//! several thread counts and report the fastest.
//!
//! Run: `cargo run --release --example tuning_sweep -- path/to/capture.json`
//! On the host executor geometry does not change the work (host kernels get
//! no geometry); on GPU executors it is the point of the exercise.

use reprise::Capture;

fn main() -> reprise::Result<()> {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: tuning_sweep CAPTURE.json   (try `reprise demo` for one)");
        std::process::exit(2);
    };
    let capture = Capture::open(&path)?;
    let recorded = capture.record.num_threads();
    let mut best = None;
    for threads in [32, 64, 128, 256, 512, 1024] {
        let run = reprise::replay(&capture)
            .num_threads(threads)
            .repetitions(5)
            .verify(true);
        let outcome = match reprise::block_on(std::future::IntoFuture::into_future(run)) {
            Ok(o) => o,
            Err(e) => {
                println!("{threads:>5} threads: {e}");
                continue;
            }
        };
        let t = outcome
            .kernel_times
            .iter()
            .flatten()
            .min()
            .copied()
            .unwrap_or_else(|| outcome.times.iter().min().copied().unwrap_or_default());
        let ok = outcome.verification.is_some_and(|v| v.is_match());
        println!(
            "{threads:>5} threads: {t:?}{}",
            if ok { "" } else { "  (output differs!)" }
        );
        if ok && best.is_none_or(|(bt, _)| t < bt) {
            best = Some((t, threads));
        }
    }
    if let Some((t, threads)) = best {
        println!("fastest: {threads} threads ({t:?}); recorded with {recorded}");
    }
    Ok(())
}
