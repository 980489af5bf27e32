//! A recorded launch on its way to disk: what the writer does with it, off
//! the launching thread, in named steps: the snapshots filled (with device
//! hashing, from what the host has already and the device copy), the
//! reachable selection, the capture written (and its IR beside it), its
//! name kept for the report, and its buffers given back.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use reprise_core::exec::{Executor, Segment};
use reprise_core::record::KernelRecord;
use reprise_core::schedule::Buffers;

use super::hashing::{Filled, Pending};
use super::reachable;
use crate::error::Result;
use crate::exec::lock;
use crate::pool::BufferPool;
use crate::store::{CaptureData, CaptureWriter, estimate};

/// What a reachable-only selection reads besides the snapshots.
pub(super) struct Reach {
    /// The live allocations, `(address, length)`, sorted.
    pub(super) allocations: Vec<(u64, u64)>,
    pub(super) base: u64,
    /// The globals' segments in the globals' snapshot.
    pub(super) globals: Vec<Segment>,
}

/// Everything the writer needs of one recorded launch.
pub(super) struct CaptureJob<E: Executor> {
    /// The descriptor, filled but for what writing it adds.
    pub(super) record: KernelRecord,
    /// The snapshots' length (the region's used bytes).
    pub(super) used: usize,
    /// The snapshot buffers (with device hashing, still to be filled).
    pub(super) out: Buffers<E::Buffer>,
    /// With device hashing: what fills the snapshots.
    pub(super) hashed: Option<Pending<E>>,
    /// Reachable-only: where the selection follows pointers from.
    pub(super) reach: Option<Reach>,
    /// The globals, encoded.
    pub(super) globals: Vec<u8>,
    pub(super) image: Arc<Vec<u8>>,
    /// The LLVM bitcode the image came from, written beside the capture.
    pub(super) ir: Option<Arc<Vec<u8>>>,
    pub(super) store: Arc<dyn CaptureWriter>,
    /// The launch's sequence number, and the report's names by it.
    pub(super) seq: u64,
    pub(super) names: Arc<Mutex<HashMap<u64, String>>>,
    pub(super) pool: Arc<BufferPool<E::Buffer>>,
}

impl<E: Executor> CaptureJob<E> {
    /// Writes the capture; its path.
    pub(super) fn run(self) -> Result<PathBuf> {
        let (mut job, filled) = self.fill()?;
        let written = job.select().and_then(|()| job.write());
        if let Ok(p) = &written {
            job.name(p);
        }
        job.give_back(filled);
        written
    }

    /// With device hashing, fills the snapshots; a capture that fails here
    /// gives its disk reservation back (a written one settles it in the
    /// store).
    fn fill(mut self) -> Result<(Self, Option<Filled<E>>)> {
        let Some(p) = self.hashed.take() else {
            return Ok((self, None));
        };
        let Buffers {
            input,
            globals,
            output,
        } = self.out;
        let saved = output.is_some();
        match p.fill(input, output) {
            Ok((input, output, filled)) => {
                self.out = Buffers {
                    input,
                    globals,
                    output,
                };
                Ok((self, Some(filled)))
            }
            Err(e) => {
                if let Some(b) = self.store.budget() {
                    let output = if saved { self.used as u64 } else { 0 };
                    let len = (self.globals.len() as u64, self.image.len() as u64);
                    b.settle(estimate(self.used as u64, output, len.0, len.1), 0);
                }
                Err(e)
            }
        }
    }

    /// Reachable-only: poisons what the launch cannot reach.
    fn select(&mut self) -> Result<()> {
        let Some(reach) = &self.reach else {
            return Ok(());
        };
        let used = self.used;
        reachable::select(
            &mut self.record,
            &reach.allocations,
            reach.base,
            (
                self.out.globals.as_ref().map_or(&[][..], |g| g.as_ref()),
                &reach.globals,
            ),
            &mut self.out.input.as_mut()[..used],
            self.out.output.as_mut().map(|o| &mut o.as_mut()[..used]),
        )
    }

    /// Writes the capture, and its IR beside it.
    fn write(&mut self) -> Result<PathBuf> {
        let used = self.used;
        let data = CaptureData {
            input: &self.out.input.as_ref()[..used],
            output: self.out.output.as_ref().map(|o| &o.as_ref()[..used]),
            globals: &self.globals,
            image: &self.image,
        };
        let path = self.store.write(&mut self.record, data)?;
        if let Some(ir) = &self.ir {
            self.store.write_ir(&path, ir)?;
        }
        Ok(path)
    }

    /// Keeps the capture's file name for the report.
    fn name(&self, path: &std::path::Path) {
        if let Some(n) = path.file_name() {
            lock(&self.names).insert(self.seq, n.to_string_lossy().into_owned());
        }
    }

    /// Gives the buffers back: to device hashing's reader the last snapshot
    /// (for the next capture's unchanged chunks), the rest to the pool.
    fn give_back(self, filled: Option<Filled<E>>) {
        let Buffers {
            input,
            globals,
            output,
        } = self.out;
        match filled {
            Some(f) => match output {
                Some(o) => f.keep(o, Some(input), &self.pool),
                None => f.keep(input, None, &self.pool),
            },
            None => {
                self.pool.put(input);
                output.into_iter().for_each(|b| self.pool.put(b));
            }
        }
        globals.into_iter().for_each(|b| self.pool.put(b));
    }
}
