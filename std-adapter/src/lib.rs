//! The std adapter of reprise: capture files (read all three generations,
//! write reprise's own crash-safely), recording configuration from code or
//! the environment, a buffer pool, a background writer, a parking
//! `block_on`, and the generic drivers that record on and replay with any
//! executor.

pub mod background;
pub use reprise_capture::{capture, error, layout, list, store, transfer};
pub mod compile;
pub mod config;
pub mod exec;
pub mod executors;
pub mod pool;
pub mod recorder;
pub mod replayer;
pub mod summary;
pub mod tune;

pub use capture::{Capture, CapturePaths, OpenOptions, offload};
pub use config::{CaptureFormat, RecordConfig, WriterKind};
pub use error::{
    BoxError, CaptureProblem, ChecksumMapProblem, CopyKind, Error, Handle, Names, Result, Setting,
    UnknownGeometry,
};
pub use exec::block_on;
pub use recorder::{Args, ImageId, Kernel, LaunchReport, Recorder};
pub use replayer::{CompareSpec, Outcome, OutputRange, ReplayOptions, Verification, replay_on};
pub use store::{CaptureData, CaptureStore};
