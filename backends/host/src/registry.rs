//! The registry of live memory: the regions and image globals a copy may
//! touch, and pins that keep them mapped while a copy or kernel uses them.

use std::ffi::c_void;
use std::sync::{Arc, Weak};

use crate::error::HostError;
use crate::fault::FaultPlace;
use crate::image::Library;

/// An `mmap`ed region; unmapped when the last reference goes.
#[derive(Debug)]
pub(crate) struct Mapping {
    pub(crate) base: u64,
    pub(crate) len: u64,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base..base+len` was mapped by this process for this value
        // alone, and no reference to it remains (this is the last `Arc`).
        unsafe {
            libc::munmap(self.base as *mut c_void, self.len as usize);
        }
        crate::guard::forget_files(self.base, self.len);
    }
}

/// What keeps a registered range mapped, held weakly: a region's mapping or
/// the image a global belongs to.
#[derive(Clone)]
pub(crate) enum Owner {
    Map(Weak<Mapping>),
    Lib(Weak<Library>),
}

/// Something that keeps a range of memory alive while it is used.
#[allow(dead_code)] // held for its Drop, never read
pub(crate) enum Pin {
    Map(Arc<Mapping>),
    Lib(Arc<Library>),
}

/// The live ranges (regions and image globals) with their owners.
#[derive(Default)]
pub(crate) struct Registry {
    ranges: Vec<(u64, u64, Owner)>,
}

impl Registry {
    /// Registers `[start, start + len)`, forgetting ranges whose owner is gone.
    pub(crate) fn add(&mut self, start: u64, len: u64, owner: Owner) {
        self.ranges.retain(|(_, _, o)| match o {
            Owner::Map(w) => w.strong_count() > 0,
            Owner::Lib(w) => w.strong_count() > 0,
        });
        self.ranges.push((start, len, owner));
    }

    /// Pins the live range holding `[addr, addr + len)`.
    pub(crate) fn pin(&self, addr: u64, len: usize) -> Result<Pin, HostError> {
        let end = addr
            .checked_add(len as u64)
            .ok_or(HostError::OutOfBounds { addr, len })?;
        for (start, size, owner) in &self.ranges {
            if addr >= *start && end <= start + size {
                let pin = match owner {
                    Owner::Map(w) => w.upgrade().map(Pin::Map),
                    Owner::Lib(w) => w.upgrade().map(Pin::Lib),
                };
                if let Some(p) = pin {
                    return Ok(p);
                }
            }
        }
        Err(HostError::OutOfBounds { addr, len })
    }

    /// Where `addr` lies: in a live region, in a live global, or outside
    /// them all (with the live regions listed).
    pub(crate) fn place(&self, addr: u64) -> FaultPlace {
        let mut regions = Vec::new();
        let mut global = None;
        for (start, size, owner) in &self.ranges {
            let end = start.saturating_add(*size);
            match owner {
                Owner::Map(w) if w.strong_count() > 0 => {
                    if (*start..end).contains(&addr) {
                        return FaultPlace::Region { base: *start, end };
                    }
                    regions.push((*start, end));
                }
                Owner::Lib(w) if w.strong_count() > 0 && (*start..end).contains(&addr) => {
                    global = Some(FaultPlace::Global { start: *start, end });
                }
                _ => {}
            }
        }
        global.unwrap_or(FaultPlace::Outside { regions })
    }

    /// Pins every live range (for the duration of a kernel).
    pub(crate) fn pin_all(&self) -> Vec<Pin> {
        self.ranges
            .iter()
            .filter_map(|(_, _, o)| match o {
                Owner::Map(w) => w.upgrade().map(Pin::Map),
                Owner::Lib(w) => w.upgrade().map(Pin::Lib),
            })
            .collect()
    }
}
