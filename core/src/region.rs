//! The recording region and its lock-free bump allocator.
//!
//! A recording reserves one device range `[base, base + capacity)` up front.
//! Every allocation the recorded application makes is carved from it by a bump
//! pointer, so the bytes the kernel can reach are exactly the used prefix
//! `[base, base + used)`; that prefix is what a snapshot copies.
//!
//! Compared with LLVM's allocator this one honours requested alignments above
//! 16 bytes, is safe to call from many threads at once without a lock, defines
//! zero-size allocations, and reports how much was asked and how much was left
//! when it runs out.

use core::fmt;
use core::sync::atomic::Ordering;

// 64-bit atomics: native where the target has them (the lock-free fast
// path), emulated on 32-bit microcontrollers that lack them.
use portable_atomic::AtomicU64;

/// Every allocation is rounded up to a multiple of this many bytes and aligned
/// to at least this boundary (LLVM's `ALIGN`).
pub const MIN_ALIGN: u64 = 16;

/// A fresh recording's base is aligned to this boundary (2 GiB), the seed's
/// trick to make a replay's addresses line up with the recording's.
pub const RECORDING_BASE_ALIGN: u64 = 2 << 30;

/// Rounds `addr` up to the next multiple of [`RECORDING_BASE_ALIGN`].
///
/// Returns `None` when the rounded address does not fit in 64 bits.
///
/// ```
/// use reprise_core::region::{align_recording_base, RECORDING_BASE_ALIGN};
/// assert_eq!(align_recording_base(1), Some(RECORDING_BASE_ALIGN));
/// assert_eq!(align_recording_base(RECORDING_BASE_ALIGN), Some(RECORDING_BASE_ALIGN));
/// assert_eq!(align_recording_base(u64::MAX), None);
/// ```
pub const fn align_recording_base(addr: u64) -> Option<u64> {
    align_up(addr, RECORDING_BASE_ALIGN)
}

/// Rounds `value` up to a multiple of `align` (a power of two).
const fn align_up(value: u64, align: u64) -> Option<u64> {
    match value.checked_add(align - 1) {
        Some(v) => Some(v & !(align - 1)),
        None => None,
    }
}

/// Why an allocation failed.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocError {
    /// The region has too little space left.
    OutOfSpace {
        /// Bytes asked for (before rounding).
        requested: u64,
        /// Alignment asked for.
        align: u64,
        /// Bytes still free at the end of the region.
        available: u64,
    },
    /// The requested alignment is not a power of two.
    BadAlignment {
        /// The alignment asked for.
        align: u64,
    },
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AllocError::OutOfSpace {
                requested,
                align,
                available,
            } => write!(
                f,
                "recording region exhausted: asked for {requested} bytes (alignment {align}), \
                 {available} bytes left; raise the region size"
            ),
            AllocError::BadAlignment { align } => {
                write!(f, "alignment {align} is not a power of two")
            }
        }
    }
}

impl core::error::Error for AllocError {}

/// A device address range with a lock-free bump allocator over it.
///
/// Allocations are never freed. `used()` is the length of the snapshot.
///
/// ```
/// use reprise_core::region::BumpRegion;
/// let region = BumpRegion::new(0x1000, 4096);
/// let a = region.alloc(10, 1).unwrap();
/// let b = region.alloc(1, 64).unwrap();
/// assert_eq!(a, 0x1000);
/// assert_eq!(b % 64, 0);
/// assert_eq!(region.used(), b - 0x1000 + 16);
/// ```
#[derive(Debug)]
pub struct BumpRegion {
    base: u64,
    capacity: u64,
    /// Offset of the first free byte from `base`.
    next: AtomicU64,
}

impl BumpRegion {
    /// A region `[base, base + capacity)` with nothing allocated yet.
    ///
    /// `capacity` is clamped so that the range does not wrap past `u64::MAX`.
    pub const fn new(base: u64, capacity: u64) -> Self {
        let room = u64::MAX - base;
        let capacity = if capacity > room { room } else { capacity };
        BumpRegion {
            base,
            capacity,
            next: AtomicU64::new(0),
        }
    }

    /// First address of the region.
    pub const fn base(&self) -> u64 {
        self.base
    }

    /// Size of the region in bytes.
    pub const fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes used so far: the snapshot covers `[base, base + used)`.
    pub fn used(&self) -> u64 {
        self.next.load(Ordering::Acquire)
    }

    /// Bytes still free at the end of the region.
    pub fn available(&self) -> u64 {
        self.capacity - self.used()
    }

    /// Allocates `size` bytes aligned to `max(align, 16)` and returns the
    /// device address.
    ///
    /// The size is rounded up to a multiple of 16 bytes. `align` must be a
    /// power of two (0 is taken as 1).
    ///
    /// A zero-size allocation consumes nothing: it returns the next free
    /// (aligned) address, which may equal the address of the next allocation
    /// or the end of the region, and must not be dereferenced. It never
    /// changes `used()`.
    ///
    /// Safe to call from any number of threads: the fast path is one
    /// compare-and-swap on the bump offset, with no lock.
    pub fn alloc(&self, size: u64, align: u64) -> Result<u64, AllocError> {
        let align = if align == 0 { 1 } else { align };
        if !align.is_power_of_two() {
            return Err(AllocError::BadAlignment { align });
        }
        let align = if align < MIN_ALIGN { MIN_ALIGN } else { align };
        let mut cur = self.next.load(Ordering::Relaxed);
        loop {
            let out_of_space = AllocError::OutOfSpace {
                requested: size,
                align,
                available: self.capacity - cur,
            };
            // `base + cur` cannot overflow: `cur <= capacity <= u64::MAX - base`.
            let start = align_up(self.base + cur, align).ok_or(out_of_space)? - self.base;
            if size == 0 {
                return Ok(self.base + start.min(self.capacity));
            }
            let rounded = align_up(size, MIN_ALIGN).ok_or(out_of_space)?;
            let end = start.checked_add(rounded).ok_or(out_of_space)?;
            if end > self.capacity {
                return Err(out_of_space);
            }
            match self
                .next
                .compare_exchange_weak(cur, end, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return Ok(self.base + start),
                Err(now) => cur = now,
            }
        }
    }

    /// Marks the first `used` bytes as allocated, as when a replay restores a
    /// recorded snapshot of that length. Fails if it does not fit.
    pub fn set_used(&self, used: u64) -> Result<(), AllocError> {
        if used > self.capacity {
            return Err(AllocError::OutOfSpace {
                requested: used,
                align: MIN_ALIGN,
                available: self.capacity,
            });
        }
        self.next.store(used, Ordering::Release);
        Ok(())
    }

    /// Whether `addr` lies inside the used prefix of the region.
    pub fn contains_used(&self, addr: u64) -> bool {
        addr >= self.base && addr - self.base < self.used()
    }
}

/// A thread's private slice of a [`BumpRegion`]: allocations come from a
/// chunk the thread took from the region, with no atomic operation at all,
/// and only a new chunk (or an allocation larger than half a chunk) touches
/// the shared bump pointer. Many recording threads then scale like one.
///
/// The price: the unused tail of each thread's current chunk is part of the
/// region's used prefix, so a snapshot may be up to one chunk per thread
/// larger than the bytes allocated. Rounding, alignment and zero-size rules
/// are those of [`BumpRegion::alloc`].
///
/// ```
/// use reprise_core::region::BumpRegion;
/// let region = BumpRegion::new(0x10_0000, 1 << 20);
/// let mut mine = region.local(4096);
/// let a = mine.alloc(24, 8).unwrap();
/// let b = mine.alloc(8, 64).unwrap();
/// assert_eq!((a, b), (0x10_0000, 0x10_0040));
/// assert_eq!(region.used(), 4096, "one chunk taken from the region");
/// ```
#[derive(Debug)]
pub struct LocalBump<'r> {
    region: &'r BumpRegion,
    chunk: u64,
    next: u64,
    end: u64,
}

impl BumpRegion {
    /// A thread-private allocator taking `chunk`-byte chunks (rounded up to
    /// 16 bytes) from this region. See [`LocalBump`].
    pub fn local(&self, chunk: u64) -> LocalBump<'_> {
        LocalBump {
            region: self,
            chunk: align_up(chunk.max(MIN_ALIGN), MIN_ALIGN).unwrap_or(MIN_ALIGN),
            next: 0,
            end: 0,
        }
    }
}

impl LocalBump<'_> {
    /// Allocates as [`BumpRegion::alloc`] does, from this thread's chunk.
    pub fn alloc(&mut self, size: u64, align: u64) -> Result<u64, AllocError> {
        let align = if align == 0 { 1 } else { align };
        if !align.is_power_of_two() {
            return Err(AllocError::BadAlignment { align });
        }
        let align = align.max(MIN_ALIGN);
        let rounded = align_up(size, MIN_ALIGN);
        if let (Some(start), Some(rounded)) = (align_up(self.next, align), rounded)
            && self.end != 0
            && start.checked_add(rounded).is_some_and(|e| e <= self.end)
        {
            self.next = start + rounded;
            return Ok(start);
        }
        // Too large for a chunk: straight from the region.
        if rounded.is_none_or(|r| r.saturating_add(align) > self.chunk / 2) || size == 0 {
            return self.region.alloc(size, align);
        }
        match self.region.alloc(self.chunk, MIN_ALIGN) {
            Ok(c) => {
                self.next = c;
                self.end = c + self.chunk;
                self.alloc(size, align)
            }
            // Less than a chunk left: use what there is.
            Err(_) => self.region.alloc(size, align),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_to_sixteen_and_honours_larger_alignment() {
        let r = BumpRegion::new(0x10_0000, 1 << 20);
        assert_eq!(r.alloc(1, 1).unwrap(), 0x10_0000);
        assert_eq!(r.used(), 16);
        let b = r.alloc(17, 8).unwrap();
        assert_eq!(b, 0x10_0010);
        assert_eq!(r.used(), 48);
        let c = r.alloc(8, 4096).unwrap();
        assert_eq!(c, 0x10_1000);
        assert_eq!(r.used(), 0x1000 + 16);
    }

    #[test]
    fn out_of_space_reports_request_and_room() {
        let r = BumpRegion::new(0, 64);
        r.alloc(48, 16).unwrap();
        let e = r.alloc(32, 16).unwrap_err();
        assert_eq!(
            e,
            AllocError::OutOfSpace {
                requested: 32,
                align: 16,
                available: 16
            }
        );
        // The failed allocation consumed nothing.
        assert_eq!(r.used(), 48);
        assert_eq!(r.alloc(16, 1).unwrap(), 48);
    }

    #[test]
    fn zero_size_consumes_nothing() {
        let r = BumpRegion::new(0x1000, 64);
        assert_eq!(r.alloc(0, 1).unwrap(), 0x1000);
        assert_eq!(r.used(), 0);
        r.alloc(64, 1).unwrap();
        // Full region: zero-size still succeeds, pointing at the end.
        assert_eq!(r.alloc(0, 1).unwrap(), 0x1040);
        assert_eq!(r.used(), 64);
    }

    #[test]
    fn bad_alignment_and_overflow_are_errors() {
        let r = BumpRegion::new(0, 1024);
        assert_eq!(
            r.alloc(1, 3).unwrap_err(),
            AllocError::BadAlignment { align: 3 }
        );
        assert!(matches!(
            r.alloc(u64::MAX, 1).unwrap_err(),
            AllocError::OutOfSpace { .. }
        ));
        let top = BumpRegion::new(u64::MAX - 32, 1 << 40);
        assert_eq!(top.capacity(), 32);
        assert!(top.alloc(1, 1 << 62).is_err());
    }

    #[test]
    fn base_alignment_helper() {
        assert_eq!(align_recording_base(0), Some(0));
        assert_eq!(
            align_recording_base(0x7f00_0000_1234),
            Some(0x7f00_8000_0000)
        );
    }

    #[test]
    fn set_used_and_contains() {
        let r = BumpRegion::new(0x1000, 256);
        r.set_used(32).unwrap();
        assert!(r.contains_used(0x1000));
        assert!(r.contains_used(0x101f));
        assert!(!r.contains_used(0x1020));
        assert!(r.set_used(257).is_err());
        assert_eq!(r.alloc(1, 1).unwrap(), 0x1020);
    }

    #[test]
    fn local_chunks_allocate_privately_and_fall_back() {
        let r = BumpRegion::new(0x1000, 4096 + 256);
        let mut a = r.local(1024);
        let mut b = r.local(1024);
        let x = a.alloc(10, 1).unwrap();
        let y = b.alloc(10, 1).unwrap();
        assert_eq!((x, y), (0x1000, 0x1400), "each thread has its own chunk");
        assert_eq!(a.alloc(1, 256).unwrap(), 0x1100);
        assert_eq!(r.used(), 2048);
        // What fits the current chunk comes from it, whatever its size...
        assert_eq!(a.alloc(600, 16).unwrap(), 0x1110);
        // ...and what does not, if larger than half a chunk, comes from the
        // region itself without a new chunk.
        assert_eq!(a.alloc(700, 16).unwrap(), 0x1800);
        assert_eq!(r.used(), 2048 + 704);
        // Zero-size consumes nothing.
        let used = r.used();
        a.alloc(0, 1).unwrap();
        assert_eq!(r.used(), used);
        // Near the end, less than a chunk remains: allocations still succeed
        // from what is left, then fail with the region's error.
        let mut c = r.local(1024);
        assert!(c.alloc(16, 16).is_ok());
        assert_eq!(r.available(), 576);
        assert!(c.alloc(1000, 16).is_ok(), "the chunk's rest is usable");
        assert!(matches!(
            c.alloc(600, 16),
            Err(AllocError::OutOfSpace { available: 576, .. })
        ));
        // A new chunk no longer fits: a small allocation takes what is left.
        assert!(c.alloc(64, 16).is_ok());
        assert_eq!(r.available(), 512);
        assert_eq!(
            c.alloc(4, 3).unwrap_err(),
            AllocError::BadAlignment { align: 3 }
        );
    }

    #[test]
    fn local_allocations_never_overlap_across_threads() {
        extern crate std;
        let r = BumpRegion::new(0, 1 << 24);
        let all = std::sync::Mutex::new(std::vec::Vec::new());
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (r, all) = (&r, &all);
                s.spawn(move || {
                    let mut l = r.local(4096);
                    let mut mine = std::vec::Vec::new();
                    for i in 0..2000u64 {
                        let size = 1 + (i * 7 + t) % 100;
                        mine.push((l.alloc(size, 1 << (i % 6)).unwrap(), size));
                    }
                    all.lock().unwrap().extend(mine);
                });
            }
        });
        let mut v = all.into_inner().unwrap();
        v.sort();
        for w in v.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "overlap: {w:?}");
        }
        assert!(v.iter().all(|&(a, s)| a + s <= r.used()));
    }
}
