//! An async application awaiting `reprise::replay(&capture)` under tokio.
//!
//! Run: `cargo run --example async_app -- path/to/capture.json`
//! (without an argument it records the demo kernel first, into a temporary
//! directory).

use reprise::{Args, Capture, HostExecutor, LaunchConfig, RecordConfig, Recorder};

async fn record_demo(dir: &std::path::Path) -> reprise::Result<std::path::PathBuf> {
    let exec = HostExecutor::new().map_err(|e| reprise::Error::executor("host executor", e))?;
    let config = RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20);
    let mut rec = Recorder::new(exec, 0, config)?;
    let n = 1 << 16;
    let input = rec.alloc(n * 4, 64)?;
    let output = rec.alloc(n * 4, 64)?;
    rec.upload(input, &vec![1u8; (n * 4) as usize])?;
    let image = rec.load_image(reprise::DEMO_IMAGE)?;
    let kernel = rec.kernel(image, "demo_stencil")?;
    let geometry = LaunchConfig {
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared_mem: 0,
    };
    rec.launch(
        &kernel,
        geometry,
        &Args::new().ptr(input).ptr(output).scalar(n),
    )
    .await?;
    let written = rec.finish().await?;
    Ok(written.into_iter().next().expect("one capture"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> reprise::Result<()> {
    let tmp = std::env::temp_dir().join(format!("reprise-async-app-{}", std::process::id()));
    let path = match std::env::args().nth(1) {
        Some(p) => p.into(),
        None => record_demo(&tmp).await?,
    };
    let capture = Capture::open(&path)?;
    let outcome = reprise::replay(&capture)
        .verify(true)
        .repetitions(3)
        .await?;
    if let Some(v) = &outcome.verification {
        println!("{}: {v}, times {:?}", path.display(), outcome.times);
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}
