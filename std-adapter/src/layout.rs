//! How copies lie in host buffers: the globals of an image in one buffer
//! (the layout the recorder downloads them with and the replayer uploads
//! them with), and a single copy from a buffer's start.

use reprise_core::exec::Segment;

use crate::error::{Error, Result};

/// Globals as copy segments into one buffer, and that buffer's length.
pub fn globals_segments<'a>(
    globals: impl Iterator<Item = (u64, u64)> + 'a,
) -> Result<(Vec<Segment>, usize)> {
    let mut segs = Vec::new();
    let mut total = 0usize;
    for (addr, size) in globals {
        let len = usize::try_from(size).map_err(|_| Error::TooLarge {
            what: "a global",
            bytes: size,
        })?;
        segs.push(Segment {
            device: addr,
            host_offset: total,
            len,
        });
        total = total.checked_add(len).ok_or(Error::TooLarge {
            what: "the globals together",
            bytes: (total as u64).saturating_add(size),
        })?;
    }
    Ok((segs, total))
}

/// The copy of `len` bytes between `device` and the start of a host buffer.
pub(crate) fn from_start(device: u64, len: usize) -> Segment {
    Segment {
        device,
        host_offset: 0,
        len,
    }
}
