//! Host staging buffers: heap memory, or mappings (large buffers, and
//! snapshot files mapped on replay).

use crate::error::{HostError, OsContext, OsError};

/// Buffers of at least this many bytes are mapped with huge pages.
const HUGE_BUFFER: usize = 4 << 20;

/// A host staging buffer: heap memory, or a private copy-on-write mapping of
/// a file (replays read snapshots this way, without copying them).
#[derive(Debug)]
pub enum HostBuffer {
    /// Heap memory.
    Heap(Vec<u8>),
    /// A private mapping of a file, or an anonymous mapping (large buffers).
    Mapped(memmap2::MmapMut),
}

impl AsRef<[u8]> for HostBuffer {
    fn as_ref(&self) -> &[u8] {
        match self {
            HostBuffer::Heap(v) => v,
            HostBuffer::Mapped(m) => m,
        }
    }
}

impl AsMut<[u8]> for HostBuffer {
    fn as_mut(&mut self) -> &mut [u8] {
        match self {
            HostBuffer::Heap(v) => v,
            HostBuffer::Mapped(m) => m,
        }
    }
}

impl HostBuffer {
    /// A zeroed buffer of `len` bytes.
    pub(crate) fn new(len: usize) -> Result<HostBuffer, HostError> {
        if len < HUGE_BUFFER {
            return Ok(HostBuffer::Heap(vec![0; len]));
        }
        // Large snapshot buffers: an anonymous mapping backed by huge pages
        // where the kernel allows it (fewer page faults when first touched,
        // fewer TLB misses when copied).
        let map = memmap2::MmapMut::map_anon(len)
            .map_err(|e| HostError::os("mmap", OsError::from(&e), OsContext::None))?;
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        Ok(HostBuffer::Mapped(map))
    }
}
