//! A pool of host staging buffers.
//!
//! Touching memory a process has never touched costs far more than a copy
//! between warm buffers, so snapshot and staging buffers are reused: a buffer
//! goes back to the pool once its capture is written, and the next launch of
//! a similar size takes it again, already faulted in.

use std::sync::Mutex;

use crate::exec::lock;

/// Buffers are made in multiples of this many bytes (above it), so that
/// snapshots that grow a little between launches still reuse them.
pub const GRANULE: usize = 1 << 20;

/// Rounds a requested length up to the size a pooled buffer is made with;
/// `None` when that size does not fit in `usize`.
pub fn rounded_len(len: usize) -> Option<usize> {
    if len <= GRANULE {
        Some(len.next_power_of_two().max(4096))
    } else {
        len.div_ceil(GRANULE).checked_mul(GRANULE)
    }
}

/// A pool of buffers of type `B`, thread-safe.
#[derive(Debug)]
pub struct BufferPool<B> {
    free: Mutex<Vec<B>>,
    keep: usize,
}

impl<B: AsRef<[u8]>> BufferPool<B> {
    /// A pool that keeps at most `keep` idle buffers.
    pub fn new(keep: usize) -> Self {
        BufferPool {
            free: Mutex::new(Vec::new()),
            keep,
        }
    }

    /// A buffer of at least `len` bytes (and at most twice the rounded
    /// length): an idle one when there is one, else a new one from `make`,
    /// which is asked for [`rounded_len`]`(len)` bytes — or for exactly
    /// `len` bytes when the rounded length does not fit in `usize` (callers
    /// refuse such lengths first: no buffer that large can be made).
    pub fn get<E>(&self, len: usize, make: impl FnOnce(usize) -> Result<B, E>) -> Result<B, E> {
        let want = rounded_len(len).unwrap_or(len);
        let fits = |l: usize| l >= len && l <= want.saturating_mul(2);
        let idle = take_smallest(&mut lock(&self.free), |b| b.as_ref().len(), fits);
        idle.map_or_else(|| make(want), Ok)
    }

    /// Returns a buffer for reuse (dropped when the pool is full; the
    /// smallest idle buffer gives way to a larger one).
    pub fn put(&self, buf: B) {
        let mut free = lock(&self.free);
        if free.len() < self.keep {
            free.push(buf);
        } else if let Some((i, _)) = free
            .iter()
            .enumerate()
            .min_by_key(|(_, b)| b.as_ref().len())
            .filter(|(_, b)| b.as_ref().len() < buf.as_ref().len())
        {
            free[i] = buf;
        }
    }

    /// Idle buffers held.
    pub fn idle(&self) -> usize {
        lock(&self.free).len()
    }
}

/// Takes the smallest of `items` (by `size`) whose size `fits`.
pub(crate) fn take_smallest<T, S: Ord + Copy>(
    items: &mut Vec<T>,
    size: impl Fn(&T) -> S,
    fits: impl Fn(S) -> bool,
) -> Option<T> {
    let (i, _) = items
        .iter()
        .enumerate()
        .filter(|(_, x)| fits(size(x)))
        .min_by_key(|(_, x)| size(x))?;
    Some(items.swap_remove(i))
}

#[cfg(test)]
mod tests;
