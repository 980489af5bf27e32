//! Memory beyond the region that a recorded launch may reach (managed,
//! page-locked and registered host memory): its bytes are copied on the
//! launch's stream right before the kernel and right after it, and handed
//! to the capture's writer once a synchronize covered the copies.
//!
//! The copies are queued only for a launch the recorder snapshots (its
//! schedule reads the region first), not for one it lets pass
//! unrecorded.

use std::ffi::c_void;

use reprise_core::record::{ExtraRange, extra_len};
use reprise_std::store::{ExtraParts, peek_launch_seq, stage_extra, unstage_extra};

use super::DriverError;
use super::error::{check, driver};
use crate::real::Handle;

/// Where the launch being recorded stands with its extra ranges.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Nothing to copy.
    #[default]
    Idle,
    /// Ranges are planned; the recorder has not read the region yet.
    Planned,
    /// The recorder reads the region: the launch is being recorded.
    Recording,
    /// The copies around the kernel are queued.
    Queued,
}

/// The extra ranges of the launch being recorded, shared by the executor
/// and its queues.
#[derive(Debug, Default)]
pub struct ExtraJob {
    step: Step,
    ranges: Vec<ExtraRange>,
    input: Vec<u8>,
    output: Vec<u8>,
    save_output: bool,
    /// The launch sequence number the parts were staged for.
    staged: Option<u64>,
}

impl ExtraJob {
    /// Plans `ranges` for the next launch (none: nothing is copied);
    /// `save_output`: the recording keeps the output.
    pub fn plan(&mut self, ranges: Vec<ExtraRange>, save_output: bool) {
        self.step = if ranges.is_empty() {
            Step::Idle
        } else {
            Step::Planned
        };
        self.ranges = ranges;
        self.save_output = save_output;
        self.staged = None;
    }

    /// The launch is over: parts staged for another launch than `seq`
    /// (the one that drew the capture, if any) are taken back.
    pub fn done(&mut self, seq: Option<u64>) {
        if let Some(staged) = self.staged.take()
            && Some(staged) != seq
        {
            unstage_extra(staged);
        }
        let job = std::mem::take(self);
        if matches!(job.step, Step::Recording | Step::Queued) {
            // A recording that failed on its way: copies may still be
            // queued into the buffers, which are left to the process
            // rather than freed under them.
            std::mem::forget(job.input);
            std::mem::forget(job.output);
        }
    }

    /// The recorder reads the region: this launch is recorded, and its
    /// buffers are made (a launch that is not recorded makes none).
    pub(super) fn recording(&mut self) {
        if self.step == Step::Planned {
            let len = extra_len(&self.ranges) as usize;
            self.input = vec![0; len];
            self.output = if self.save_output {
                vec![0; len]
            } else {
                Vec::new()
            };
            self.step = Step::Recording;
        }
    }

    /// Queues the copies of every range into `buf` on `stream`.
    fn copy(ranges: &[ExtraRange], buf: &mut [u8], stream: Handle) -> Result<(), DriverError> {
        let r = driver()?;
        let mut at = 0usize;
        for range in ranges {
            let len = range.size as usize;
            // SAFETY: `buf` holds every range's bytes in order (sized by
            // `plan`); it lives in the job until the synchronize that
            // covers the copy (the job is only reset after it).
            check("cuMemcpyDtoHAsync", unsafe {
                (r.cuMemcpyDtoHAsync_v2)(
                    buf[at..].as_mut_ptr() as *mut c_void,
                    range.addr,
                    len,
                    stream,
                )
            })?;
            at += len;
        }
        Ok(())
    }

    /// Before the program's kernel is queued on `stream`: the bytes it
    /// will find.
    pub(super) fn before(&mut self, stream: Handle) -> Result<(), DriverError> {
        if self.step != Step::Recording {
            return Ok(());
        }
        Self::copy(&self.ranges, &mut self.input, stream)
    }

    /// After the program's kernel was queued on `stream`: the bytes it
    /// leaves.
    pub(super) fn after(&mut self, stream: Handle) -> Result<(), DriverError> {
        if self.step != Step::Recording {
            return Ok(());
        }
        if self.save_output {
            Self::copy(&self.ranges, &mut self.output, stream)?;
        }
        self.step = Step::Queued;
        Ok(())
    }

    /// A synchronize covered the copies: the parts go to the writer of
    /// the capture of the launch about to draw its sequence number.
    pub(super) fn synchronized(&mut self) {
        if self.step != Step::Queued {
            return;
        }
        let seq = peek_launch_seq();
        stage_extra(
            seq,
            ExtraParts {
                ranges: std::mem::take(&mut self.ranges),
                input: std::mem::take(&mut self.input),
                output: self.save_output.then(|| std::mem::take(&mut self.output)),
            },
        );
        self.staged = Some(seq);
        self.step = Step::Idle;
    }
}
