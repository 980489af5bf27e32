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
    /// `len` bytes from `offset` of an anonymous mapping into which files
    /// are mapped privately ([`reprise_core::exec::Executor::buffer_mapped_parts`]):
    /// the offset puts the buffer's start on a 2 MiB boundary, as the
    /// parts' page-cache pages are mapped faster there.
    Parts {
        /// The whole mapping.
        map: memmap2::MmapMut,
        /// Where the buffer starts in it.
        offset: usize,
        /// The buffer's length.
        len: usize,
    },
}

impl AsRef<[u8]> for HostBuffer {
    fn as_ref(&self) -> &[u8] {
        match self {
            HostBuffer::Heap(v) => v,
            HostBuffer::Mapped(m) => m,
            HostBuffer::Parts { map, offset, len } => &map[*offset..*offset + *len],
        }
    }
}

impl AsMut<[u8]> for HostBuffer {
    fn as_mut(&mut self) -> &mut [u8] {
        match self {
            HostBuffer::Heap(v) => v,
            HostBuffer::Mapped(m) => m,
            HostBuffer::Parts { map, offset, len } => &mut map[*offset..*offset + *len],
        }
    }
}

/// A buffer mapped from files forgets them when it is unmapped (see
/// `guard::note_file`).
impl Drop for HostBuffer {
    fn drop(&mut self) {
        match self {
            HostBuffer::Heap(_) => {}
            HostBuffer::Mapped(m) => crate::guard::forget_files(m.as_ptr() as u64, m.len() as u64),
            HostBuffer::Parts { map, .. } => {
                crate::guard::forget_files(map.as_ptr() as u64, map.len() as u64)
            }
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
