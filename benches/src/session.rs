//! A recorder made ready to launch one of the built-in kernels over a
//! region of a given size, and the ways its launches are recorded.

use std::path::{Path, PathBuf};
use std::time::Instant;

use reprise::executors::AnyExecutor;
use reprise::samples::BuiltinKernel;
use reprise::{Args, Error, LaunchConfig, Mode, RecordConfig, Recorder, Result, WriterKind};

use crate::{CaptureFormat, clear_dir, remove_capture};

/// How launches are made: plainly, or recorded one of three ways.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// No recording: launch and synchronize.
    Plain,
    /// LLVM's way: a synchronize after every step, files written on the
    /// launching thread (without `fsync`, as LLVM writes them).
    SyncInline,
    /// One synchronize, files still written on the launching thread.
    AsyncInline,
    /// reprise's way: one synchronize, files handed to the background writer
    /// (which flushes them to disk, off the launching thread).
    AsyncBackground,
}

impl Way {
    /// All four, in table order.
    pub const ALL: [Way; 4] = [
        Way::Plain,
        Way::SyncInline,
        Way::AsyncInline,
        Way::AsyncBackground,
    ];

    /// The recording configuration for this way, writing into `dir`.
    pub fn config(self, dir: &Path, size: u64) -> RecordConfig {
        // Raw files: the bench times writing and reading them, against
        // LLVM's way.
        let base = RecordConfig::default()
            .format(CaptureFormat::Raw)
            .dir(dir)
            .region_size(size.saturating_add(64 << 20))
            .save_output(true);
        match self {
            Way::Plain => base,
            Way::SyncInline => base
                .enabled(true)
                .mode(Mode::Sync)
                .writer(WriterKind::Inline)
                .fsync(false),
            Way::AsyncInline => base
                .enabled(true)
                .mode(Mode::Async)
                .writer(WriterKind::Inline)
                .fsync(false),
            Way::AsyncBackground => base
                .enabled(true)
                .mode(Mode::Async)
                .writer(WriterKind::BACKGROUND)
                .fsync(true),
        }
    }
}

/// A recorder set up to launch the benchmark kernel over a region holding
/// `size` bytes, one way. Each [`Session::launch`] returns the launching
/// thread's time; the writer is drained and the files removed afterwards,
/// outside that time.
pub struct Session<E: AnyExecutor> {
    rec: Recorder<E>,
    kernel: reprise::Kernel<E>,
    args: Args,
    geometry: LaunchConfig,
    way: Way,
    /// The last capture written (kept on disk).
    pub last: Option<PathBuf>,
}

impl<E: AnyExecutor> Session<E> {
    /// Reserves the region, fills `size` bytes, loads the kernel. `dir` is
    /// emptied first (made if missing): give it a scratch directory.
    pub fn new(exec: E, kernel: &BuiltinKernel, size: u64, way: Way, dir: &Path) -> Result<Self> {
        Self::with(exec, kernel, size, way, way.config(dir, size), None)
    }

    /// [`Session::new`] recording with `config` (its directory emptied
    /// first), the region's bytes after the kernel's counter from
    /// `contents` (cut or repeated to fit) instead of a constant.
    pub fn with(
        exec: E,
        kernel: &BuiltinKernel,
        size: u64,
        way: Way,
        config: RecordConfig,
        contents: Option<&[u8]>,
    ) -> Result<Self> {
        clear_dir(&config.dir)?;
        let mut rec = Recorder::new(exec, 0, config)?;
        let counter = rec.alloc(8, 16)?;
        let rest = size.saturating_sub(16);
        let mut data = 0;
        if rest > 0 {
            data = rec.alloc(rest, 16)?;
            let mut fill = Error::filled_buffer(rest, 7, "the benchmark's region contents")?;
            if let Some(c) = contents.filter(|c| !c.is_empty()) {
                for piece in fill.chunks_mut(c.len()) {
                    piece.copy_from_slice(&c[..piece.len()]);
                }
            }
            rec.upload(data, &fill)?;
        }
        rec.upload(counter, &[0u8; 8])?;
        let image = rec.load_image(kernel.image)?;
        let k = rec.kernel(image, kernel.name)?;
        Ok(Session {
            rec,
            kernel: k,
            args: (kernel.args)(counter, data, rest),
            geometry: (kernel.geometry)(rest),
            way,
            last: None,
        })
    }

    /// One launch; returns the launching thread's time.
    pub fn launch(&mut self) -> Result<std::time::Duration> {
        let Session {
            rec,
            kernel,
            args,
            geometry,
            way,
            last,
        } = self;
        reprise::block_on(async {
            let t = Instant::now();
            rec.launch(kernel, *geometry, args).await?;
            if *way == Way::Plain {
                rec.synchronize().await?;
            }
            let elapsed = t.elapsed();
            // Drain the writer and remove the previous files, untimed.
            let written = rec.finish().await?;
            if let Some(p) = written.last()
                && let Some(old) = last.replace(p.clone())
            {
                remove_capture(&old);
            }
            Ok(elapsed)
        })
    }
}

impl<E: AnyExecutor> Session<E> {
    /// One launch, the writer drained after it; every capture is kept.
    pub fn launch_keeping(&mut self) -> Result<()> {
        let Session {
            rec,
            kernel,
            args,
            geometry,
            ..
        } = self;
        reprise::block_on(async {
            rec.launch(kernel, *geometry, args).await?;
            rec.finish().await.map(drop)
        })
    }
}
