//! The recording region and its allocator.
//!
//! A recording reserves one device range `[base, base + capacity)` up front.
//! Every allocation the recorded application makes is carved from it by a bump
//! pointer, so the bytes the kernel can reach are exactly the used prefix
//! `[base, base + used)`; that prefix is what a snapshot copies.
//!
//! Freed blocks are handed out again, as the driver would: a program that
//! allocates and frees a temporary every iteration keeps a bounded
//! footprint. A block freed at the top of the used prefix gives its bytes
//! back to the bump pointer (the prefix shrinks); one freed below stays a
//! hole in the prefix (snapshots hold it, the store deduplicates it) until
//! a later allocation that fits takes it.
//!
//! Compared with LLVM's allocator this one honours requested alignments above
//! 16 bytes, is safe to call from many threads at once (the bump path takes
//! no lock; reusing a freed block takes a short one), defines zero-size
//! allocations, reuses freed memory, and reports how much was asked and how
//! much was left when it runs out.

use core::fmt;
use core::sync::atomic::Ordering;

// 64-bit atomics: native where the target has them (the lock-free fast
// path), emulated on 32-bit microcontrollers that lack them.
use portable_atomic::{AtomicBool, AtomicU64, AtomicUsize};

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
    /// A block given back with [`BumpRegion::free`] is not one the region
    /// handed out: it lies outside the used prefix, is not aligned as every
    /// allocation is, or overlaps a block freed already (freed twice).
    NotAllocated {
        /// The block's address.
        addr: u64,
        /// Its size.
        size: u64,
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
            AllocError::NotAllocated { addr, size } => write!(
                f,
                "{size} bytes at {addr:#x} are not an allocation of the recording region \
                 (or were freed already)"
            ),
        }
    }
}

impl core::error::Error for AllocError {}

/// How many freed blocks a region remembers for reuse. Adjacent freed
/// blocks are merged into one; when every slot is taken, the smallest
/// block is forgotten (its bytes stay part of the used prefix, as before
/// reuse existed).
pub const FREE_SLOTS: usize = 32;

/// The freed blocks a region may hand out again: a short spin lock over
/// fixed slots, so that the core needs neither `alloc` nor `unsafe`. The
/// slots are atomics only so that they can be written through `&self`;
/// they are read and written with the lock held.
#[derive(Debug)]
struct FreeList {
    lock: AtomicBool,
    /// Slots in use: read without the lock, so that the bump path skips
    /// the list when it is empty.
    count: AtomicUsize,
    /// Bytes in the freed blocks.
    bytes: AtomicU64,
    /// Each slot's block as (offset from the base, length); length 0: empty.
    start: [AtomicU64; FREE_SLOTS],
    len: [AtomicU64; FREE_SLOTS],
}

/// The free list, locked; unlocked when dropped.
struct Locked<'a>(&'a FreeList);

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.0.lock.store(false, Ordering::Release);
    }
}

impl FreeList {
    const fn new() -> Self {
        FreeList {
            lock: AtomicBool::new(false),
            count: AtomicUsize::new(0),
            bytes: AtomicU64::new(0),
            start: [const { AtomicU64::new(0) }; FREE_SLOTS],
            len: [const { AtomicU64::new(0) }; FREE_SLOTS],
        }
    }

    fn lock(&self) -> Locked<'_> {
        while self
            .lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            core::hint::spin_loop();
        }
        Locked(self)
    }
}

impl Locked<'_> {
    fn get(&self, i: usize) -> (u64, u64) {
        (
            self.0.start[i].load(Ordering::Relaxed),
            self.0.len[i].load(Ordering::Relaxed),
        )
    }

    fn blocks(&self) -> impl Iterator<Item = (usize, u64, u64)> + '_ {
        (0..FREE_SLOTS)
            .map(|i| (i, self.get(i)))
            .filter(|&(_, (_, len))| len != 0)
            .map(|(i, (start, len))| (i, start, len))
    }

    /// Replaces slot `i`'s block with `[start, start + len)` (len 0: none).
    fn set(&self, i: usize, start: u64, len: u64) {
        let (_, old) = self.get(i);
        self.0.start[i].store(start, Ordering::Relaxed);
        self.0.len[i].store(len, Ordering::Relaxed);
        match (old != 0, len != 0) {
            (false, true) => {
                self.0.count.fetch_add(1, Ordering::Relaxed);
            }
            (true, false) => {
                self.0.count.fetch_sub(1, Ordering::Relaxed);
            }
            _ => {}
        }
        let bytes = self.0.bytes.load(Ordering::Relaxed);
        self.0.bytes.store(bytes - old + len, Ordering::Relaxed);
    }

    /// Remembers `[start, start + len)`: in an empty slot, else in place of
    /// the smallest block when that is smaller (the other is forgotten).
    fn insert(&self, start: u64, len: u64) {
        let mut smallest: Option<(usize, u64)> = None;
        for i in 0..FREE_SLOTS {
            let (_, l) = self.get(i);
            if l == 0 {
                self.set(i, start, len);
                return;
            }
            if smallest.is_none_or(|(_, s)| l < s) {
                smallest = Some((i, l));
            }
        }
        if let Some((i, l)) = smallest
            && l < len
        {
            self.set(i, start, len);
        }
    }

    fn clear(&self) {
        for i in 0..FREE_SLOTS {
            self.set(i, 0, 0);
        }
    }
}

/// A device address range with an allocator over it: a lock-free bump
/// pointer, and the blocks freed with [`BumpRegion::free`] handed out again.
///
/// `used()` is the length of the snapshot.
///
/// ```
/// use reprise_core::region::BumpRegion;
/// let region = BumpRegion::new(0x1000, 4096);
/// let a = region.alloc(10, 1).unwrap();
/// let b = region.alloc(1, 64).unwrap();
/// assert_eq!(a, 0x1000);
/// assert_eq!(b % 64, 0);
/// assert_eq!(region.used(), b - 0x1000 + 16);
/// // A freed block is handed out again; one at the top shrinks `used()`.
/// region.free(a, 10).unwrap();
/// assert_eq!(region.alloc(16, 16).unwrap(), a);
/// region.free(b, 1).unwrap();
/// assert_eq!(region.used(), b - 0x1000);
/// ```
#[derive(Debug)]
pub struct BumpRegion {
    base: u64,
    capacity: u64,
    /// Offset of the first free byte from `base`.
    next: AtomicU64,
    freed: FreeList,
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
            freed: FreeList::new(),
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

    /// Bytes used so far: the snapshot covers `[base, base + used)`, freed
    /// blocks below the top included.
    pub fn used(&self) -> u64 {
        self.next.load(Ordering::Acquire)
    }

    /// Bytes still free at the end of the region.
    pub fn available(&self) -> u64 {
        self.capacity - self.used()
    }

    /// Bytes of the used prefix in freed blocks that later allocations may
    /// take again.
    pub fn freed(&self) -> u64 {
        self.freed.bytes.load(Ordering::Acquire)
    }

    /// Allocates `size` bytes aligned to `max(align, 16)` and returns the
    /// device address: a freed block that fits (the smallest), else fresh
    /// bytes from the bump pointer.
    ///
    /// The size is rounded up to a multiple of 16 bytes. `align` must be a
    /// power of two (0 is taken as 1).
    ///
    /// A zero-size allocation consumes nothing: it returns the next free
    /// (aligned) address, which may equal the address of the next allocation
    /// or the end of the region, and must not be dereferenced. It never
    /// changes `used()`.
    ///
    /// Safe to call from any number of threads: with no freed block to
    /// reuse, the path is one compare-and-swap on the bump offset, with no
    /// lock; reuse takes the free list's short lock.
    pub fn alloc(&self, size: u64, align: u64) -> Result<u64, AllocError> {
        let align = if align == 0 { 1 } else { align };
        if !align.is_power_of_two() {
            return Err(AllocError::BadAlignment { align });
        }
        let align = if align < MIN_ALIGN { MIN_ALIGN } else { align };
        if size != 0
            && self.freed.count.load(Ordering::Acquire) != 0
            && let Some(at) = align_up(size, MIN_ALIGN).and_then(|r| self.reuse(r, align))
        {
            return Ok(at);
        }
        self.bump(size, align)
    }

    /// Takes `rounded` bytes aligned to `align` from the smallest freed
    /// block that holds them; what is left of the block stays free.
    fn reuse(&self, rounded: u64, align: u64) -> Option<u64> {
        let list = self.freed.lock();
        let fits = |start: u64, len: u64| {
            let at = align_up(self.base + start, align)? - self.base;
            (at.checked_add(rounded)? <= start + len).then_some(at)
        };
        let (i, start, len, at) = list
            .blocks()
            .filter_map(|(i, start, len)| Some((i, start, len, fits(start, len)?)))
            .min_by_key(|&(_, _, len, _)| len)?;
        let (head, tail) = (at - start, start + len - (at + rounded));
        if head > 0 {
            list.set(i, start, head);
            if tail > 0 {
                list.insert(at + rounded, tail);
            }
        } else {
            list.set(i, at + rounded, tail);
        }
        Some(self.base + at)
    }

    /// The bump path: fresh bytes past the used prefix.
    fn bump(&self, size: u64, align: u64) -> Result<u64, AllocError> {
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

    /// Gives back the `size`-byte block at `addr` that [`BumpRegion::alloc`]
    /// (or a [`LocalBump`]) handed out, for later allocations to take again.
    /// The caller promises that nothing uses it any more (on a GPU: no work
    /// still queued reads or writes it), as with the driver's own free.
    ///
    /// A block that ends the used prefix shrinks it (with the freed blocks
    /// below it that it then ends); others are merged with freed neighbours
    /// and kept for reuse. Freeing size 0 does nothing. A block that cannot
    /// be one the region handed out (outside the used prefix, not aligned
    /// to 16 bytes, overlapping a freed block) is
    /// [`AllocError::NotAllocated`], and nothing changes.
    ///
    /// Takes the free list's short lock (a spin lock): on a single core,
    /// an interrupt handler must not free, nor allocate while freed blocks
    /// exist, when the code it interrupts may be doing either.
    pub fn free(&self, addr: u64, size: u64) -> Result<(), AllocError> {
        if size == 0 {
            return Ok(());
        }
        let refused = AllocError::NotAllocated { addr, size };
        let mut start = addr.checked_sub(self.base).ok_or(refused)?;
        let rounded = align_up(size, MIN_ALIGN).ok_or(refused)?;
        let mut end = start.checked_add(rounded).ok_or(refused)?;
        if !addr.is_multiple_of(MIN_ALIGN) || end > self.used() {
            return Err(refused);
        }
        let list = self.freed.lock();
        if list.blocks().any(|(_, s, l)| start < s + l && s < end) {
            return Err(refused);
        }
        // Merged with the freed blocks it touches.
        for (i, s, l) in list.blocks() {
            if s + l == start {
                start = s;
                list.set(i, 0, 0);
            } else if s == end {
                end = s + l;
                list.set(i, 0, 0);
            }
        }
        // At the top: the prefix shrinks, as long as a freed block ends it.
        // (A concurrent bump allocation makes the exchange fail; the block
        // is then kept for reuse.)
        if self
            .next
            .compare_exchange(end, start, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            list.insert(start, end - start);
        }
        Ok(())
    }

    /// Marks the first `used` bytes as allocated, as when a replay restores a
    /// recorded snapshot of that length, and forgets every freed block.
    /// Fails if it does not fit.
    pub fn set_used(&self, used: u64) -> Result<(), AllocError> {
        if used > self.capacity {
            return Err(AllocError::OutOfSpace {
                requested: used,
                align: MIN_ALIGN,
                available: self.capacity,
            });
        }
        let list = self.freed.lock();
        list.clear();
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
#[path = "region_tests.rs"]
mod tests;
