//! What a recorder sees of the directory its captures go to: a
//! [`CaptureWriter`], handed each capture's parts, and for a recorder that
//! hashes its snapshots on the device, the [`KnownChunks`] the directory
//! holds already. Whether the parts become raw files or chunks and
//! manifests is the writer's business.

use std::path::{Path, PathBuf};

use reprise_core::record::KernelRecord;

use crate::chunks::{ChunkHash, ChunkRef, ChunkStore, Manifest, StoreOptions};
use crate::error::{Error, Result};

use super::{CaptureData, CaptureStore, DiskBudget, write_atomically};

/// What a recorder hands a capture's parts to: the descriptor (filled in
/// but for what writing adds), the snapshots, the globals, the image and
/// the LLVM IR the image came from. [`CaptureStore`] is the one there is;
/// it writes reprise's own format, crash-safely, as raw files or in the
/// directory's chunk store.
pub trait CaptureWriter: Send + Sync + std::fmt::Debug {
    /// The directory the captures go to.
    fn dir(&self) -> &Path;

    /// The recording's disk budget, when it has one.
    fn budget(&self) -> Option<&DiskBudget>;

    /// Writes one capture and returns its descriptor's path, filling in
    /// the record's checksums, snapshot length and generation. With a
    /// budget, the capture's reservation ([`CaptureData::estimate`]) is
    /// given back and what it wrote is charged, written or not.
    fn write(&self, record: &mut KernelRecord, data: CaptureData<'_>) -> Result<PathBuf>;

    /// Writes `ir`, the LLVM bitcode the image of the capture at
    /// `descriptor` came from, beside it.
    fn write_ir(&self, descriptor: &Path, ir: &[u8]) -> Result<()>;

    /// The chunks the directory holds already, for a recorder that hashes
    /// its snapshots on the device and copies only the chunks it lacks;
    /// `None` where the captures are plain files (there is nothing to look
    /// chunks up in).
    fn known_chunks(&self) -> Result<Option<KnownChunks>>;
}

impl CaptureWriter for CaptureStore {
    fn dir(&self) -> &Path {
        &self.dir
    }

    fn budget(&self) -> Option<&DiskBudget> {
        self.budget.as_ref()
    }

    fn write(&self, record: &mut KernelRecord, data: CaptureData<'_>) -> Result<PathBuf> {
        let mut bytes = 0u64;
        let r = self.write_counted(record, data, &mut bytes);
        if let Some(b) = &self.budget {
            b.settle(data.estimate(), if r.is_ok() { bytes } else { 0 });
        }
        r
    }

    fn write_ir(&self, descriptor: &Path, ir: &[u8]) -> Result<()> {
        write_atomically(&crate::capture::ir_path(descriptor), ir, false)
    }

    fn known_chunks(&self) -> Result<Option<KnownChunks>> {
        if self.format() != crate::CaptureFormat::Store {
            return Ok(None);
        }
        // A second handle on the store the captures go to, for looking
        // chunks up.
        let store = ChunkStore::create(self.dir(), StoreOptions::flushing(self.fsync))?;
        Ok(Some(KnownChunks { store }))
    }
}

/// The chunks a capture directory holds already: what a recorder that
/// hashes its snapshots on the device looks up, so that only the chunks
/// the directory lacks are copied from the device.
#[derive(Debug)]
pub struct KnownChunks {
    store: ChunkStore,
}

impl KnownChunks {
    /// The size snapshots are cut at, in bytes (every chunk but a
    /// snapshot's last is this long).
    pub fn chunk_size(&self) -> u32 {
        self.store.chunk_size()
    }

    /// Copies into `buf`, a snapshot of `len` bytes in chunks of `cs`
    /// whose hashes are `hashes`, the chunks among `wanted` (indices,
    /// ascending) that the directory holds. Returns the indices it did not
    /// copy (a chunk it cannot read back whole is left to the caller) and
    /// the bytes it copied.
    pub fn copy_known(
        &self,
        buf: &mut [u8],
        (len, cs): (usize, usize),
        hashes: &[ChunkHash],
        wanted: Vec<usize>,
    ) -> Result<(Vec<usize>, u64)> {
        if wanted.is_empty() {
            return Ok((wanted, 0));
        }
        let range = |i: usize| i * cs..((i + 1) * cs).min(len);
        // Chunks in order, the short last one last: a manifest of them.
        let manifest = |of: &[usize]| {
            let refs: Vec<ChunkRef> = of
                .iter()
                .map(|&i| ChunkRef {
                    hash: hashes[i],
                    len: range(i).len() as u32,
                })
                .collect();
            let total = refs.iter().map(|c| u64::from(c.len)).sum();
            Manifest::new(total, cs as u32, refs)
                .map_err(|_| Error::Internal("a manifest of a snapshot's chunks is malformed"))
        };
        let missing: std::collections::HashSet<ChunkHash> = self
            .store
            .missing(&manifest(&wanted)?)
            .into_iter()
            .map(|p| p.hash)
            .collect();
        let (stored, rest): (Vec<usize>, Vec<usize>) = wanted
            .into_iter()
            .partition(|&i| !missing.contains(&hashes[i]));
        if stored.is_empty() {
            return Ok((rest, 0));
        }
        let m = manifest(&stored)?;
        let mut bytes = vec![0u8; m.len() as usize];
        if let Err(e) = self.store.read_into(&m, &mut bytes) {
            // Damaged, or removed by a gc meanwhile: the device has them.
            log::debug!("device hashing: copying from the device what the store did not give: {e}");
            let mut all: Vec<usize> = stored.into_iter().chain(rest).collect();
            all.sort_unstable();
            return Ok((all, 0));
        }
        let mut at = 0;
        for &i in &stored {
            let r = range(i);
            buf[r.clone()].copy_from_slice(&bytes[at..at + r.len()]);
            at += r.len();
        }
        Ok((rest, at as u64))
    }
}
