//! Quickstart: record one launch of a kernel from a Rust program, then replay
//! it and check the output — what `reprise demo` does, in code.
//!
//! Run: `cargo run --example quickstart`
//!
//! The capture goes to a temporary directory that is removed at the end;
//! set `REPRISE_RECORD_DIR` to keep it there instead (and replay it again
//! with `cargo run -- replay --verify PATH`). The other `REPRISE_RECORD_*`
//! variables apply too: a filter that excludes `demo_stencil`, say, leaves
//! nothing to replay, which the example reports.

use std::path::{Path, PathBuf};

use reprise::{Args, Capture, HostExecutor, LaunchConfig, RecordConfig, Recorder};

fn main() -> std::process::ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    // Captures go where REPRISE_RECORD_DIR says and stay there; without it,
    // into a temporary directory this example removes.
    let keep = std::env::var_os("REPRISE_RECORD_DIR").map(PathBuf::from);
    let temporary = keep.is_none();
    let dir = keep.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("reprise-quickstart-{}", std::process::id()))
    });
    let result = run(&dir, temporary);
    if temporary {
        std::fs::remove_dir_all(&dir).ok();
    }
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(dir: &Path, temporary: bool) -> reprise::Result<()> {
    // 1. Record: allocate in the recording region, copy in, load, launch.
    let exec = HostExecutor::new().map_err(|e| reprise::Error::executor("host executor", e))?;
    let config = RecordConfig::from_env()?
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20);
    let mut rec = Recorder::new(exec, 0, config)?;
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
    let Some(descriptor) = written.first() else {
        println!(
            "nothing was recorded: the REPRISE_RECORD_FILTER, REPRISE_RECORD_SKIP or \
             REPRISE_RECORD_MAX set in the environment excluded the launch of `demo_stencil`; \
             unset them to record it"
        );
        return Ok(());
    };
    if temporary {
        println!(
            "recorded: {} (a temporary capture, removed when the example ends; \
             set REPRISE_RECORD_DIR to keep it)",
            descriptor.display()
        );
    } else {
        println!("recorded: {}", descriptor.display());
    }

    // 2. Replay and verify.
    let capture = Capture::open(descriptor)?;
    let outcome = reprise::block_on(std::future::IntoFuture::into_future(
        reprise::replay(&capture).verify(true),
    ))?;
    if let Some(v) = &outcome.verification {
        println!("replayed in {:?}: {v}", outcome.times[0]);
    }
    Ok(())
}
