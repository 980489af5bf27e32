//! The std adapter of reprise: recording configuration from code or the
//! environment, a buffer pool, a background writer, a parking `block_on`,
//! and the generic drivers that record on and replay with any executor.
//! Capture files are the `reprise-capture` crate's (its `capture`, `store`
//! and `error` modules are re-exported here): a recorder hands a capture's
//! parts to a [`store::CaptureWriter`], a replay reads snapshots through a
//! [`capture::SnapshotSource`].

pub use reprise_capture::{capture, error, store};

pub mod background;
pub mod compile;
pub mod config;
pub mod exec;
pub mod executors;
pub mod layout;
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
