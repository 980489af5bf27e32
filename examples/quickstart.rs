//! Quickstart: record one launch of a kernel from a Rust program, then replay
//! it and check the output — what `reprise demo` does, in code.
//!
//! Run: `cargo run --example quickstart`

use reprise::{Args, BackendKind, Capture, HostExecutor, LaunchConfig, RecordConfig, Recorder};

fn main() -> reprise::Result<()> {
    let dir = std::env::temp_dir().join(format!("reprise-quickstart-{}", std::process::id()));

    // 1. Record: allocate in the recording region, copy in, load, launch.
    let exec = HostExecutor::new().map_err(|e| reprise::Error::executor("host executor", e))?;
    let config = RecordConfig::from_env()?
        .enabled(true)
        .dir(&dir)
        .region_size(64 << 20);
    let mut rec = Recorder::new(exec, BackendKind::Host, 0, config)?;
    let n = 4096u64;
    let input = rec.alloc(n * 4, 64)?;
    let output = rec.alloc(n * 4, 64)?;
    let data: Vec<u8> = (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect();
    rec.upload(input, &data)?;
    let image = rec.load_image(reprise::DEMO_IMAGE)?;
    let kernel = rec.kernel(image, "demo_stencil")?;
    let geometry = LaunchConfig {
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared_mem: 0,
    };
    let written = reprise::block_on(async {
        rec.launch(
            &kernel,
            geometry,
            &Args::new().ptr(input).ptr(output).scalar(n),
        )
        .await?;
        rec.finish().await
    })?;
    drop(rec); // releases the region's address for the replay below
    println!("recorded: {}", written[0].display());

    // 2. Replay and verify.
    let capture = Capture::open(&written[0])?;
    let outcome = reprise::block_on(std::future::IntoFuture::into_future(
        reprise::replay(&capture).verify(true),
    ))?;
    println!(
        "replayed in {:?}: {:?}",
        outcome.times[0], outcome.verification
    );
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
