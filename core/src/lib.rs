#![doc = include_str!("../README.md")]
#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;

pub mod chunk_hash;
pub mod compare;
pub mod completion;
pub mod exec;
pub mod globals;
pub mod image;
pub mod offload;
pub mod record;
pub mod region;
pub mod schedule;

pub use completion::{Completion, block_on};
pub use exec::{
    DeviceRegion, ErrorKind, ErrorType, ExecError, Executor, GeometryError, GlobalInfo, HostBuffer,
    KernelArgs, Launch, LaunchConfig, LaunchLimits, Ledger, MapFile, Queue, RegionRequest, Segment,
    SegmentOutOfBounds, Ticket,
};
pub use globals::Layout;
pub use record::{BackendKind, Generation, KernelRecord};
pub use region::BumpRegion;
pub use schedule::{
    Buffers, Download, LaunchPlan, Mode, RecordPlan, ReplayPlan, Restore, ScheduleError,
    SnapshotStep, Upload,
};

#[cfg(feature = "alloc")]
impl record::KernelRecord {
    /// The descriptor as a `String` in `generation`'s key set.
    pub fn to_json_string(
        &self,
        generation: record::Generation,
    ) -> Result<alloc::string::String, record::RecordError> {
        let mut buf = alloc::vec![0u8; record::MAX_JSON_LEN];
        let n = self.to_json(generation, &mut buf)?;
        buf.truncate(n);
        // The serializer writes UTF-8 only.
        alloc::string::String::from_utf8(buf).map_err(|_| record::RecordError::BufferTooSmall)
    }
}
