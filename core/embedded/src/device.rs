//! The device: memory of its own at [`BASE`], a list of commands the
//! queue appends, and [`service`], the body of its interrupt handler.
//!
//! The queue appends commands in thread mode and rings the doorbell (a
//! function the executor is given: pending an interrupt on a Cortex-M, or
//! calling [`service`] directly where nothing else is wired). The handler
//! runs every command in order, then raises the completion mark to the
//! last synchronize point it passed and wakes the waiting task: the only
//! thing done from interrupt context besides the copies and the kernel.
//! The command list and the memory sit behind a critical section, so
//! thread mode never sees a half-run command.

use core::cell::RefCell;

use critical_section::Mutex;
use heapless::{Deque, Vec};
use reprise_core::Completion;
use reprise_core::exec::{Segment, Ticket};

/// A host staging buffer.
#[derive(Debug)]
pub enum McuBuffer {
    /// Carved from the executor's static arena (never given back to it:
    /// a runtime reuses its few buffers from launch to launch).
    Static(&'static mut [u8]),
    /// From the heap.
    #[cfg(feature = "alloc")]
    Heap(alloc::vec::Vec<u8>),
}

impl AsRef<[u8]> for McuBuffer {
    fn as_ref(&self) -> &[u8] {
        match self {
            McuBuffer::Static(b) => b,
            #[cfg(feature = "alloc")]
            McuBuffer::Heap(b) => b,
        }
    }
}

impl AsMut<[u8]> for McuBuffer {
    fn as_mut(&mut self) -> &mut [u8] {
        match self {
            McuBuffer::Static(b) => b,
            #[cfg(feature = "alloc")]
            McuBuffer::Heap(b) => b,
        }
    }
}

/// Device address of the device's memory.
pub const BASE: u64 = 0x6000_0000;
/// Bytes of device memory: the region, then the globals.
pub const MEMORY: usize = 1024;
/// Bytes of the region (the allocations a recording snapshots).
pub const REGION: usize = 768;
/// Device address of the globals (after the region).
pub const GLOBALS: u64 = BASE + REGION as u64;

/// Most segments one copy may have.
pub const MAX_SEGMENTS: usize = 4;
/// Most arguments a launch may have.
pub const MAX_ARGS: usize = 8;
/// Most commands (and buffers awaiting reclaim) in flight.
pub const DEPTH: usize = 12;

/// A kernel: a function over the device's memory (indexed from [`BASE`])
/// and its arguments' values.
pub type KernelFn = fn(&mut [u8; MEMORY], &[u64]);

pub(crate) enum Command {
    Upload(Ticket, McuBuffer, Vec<Segment, MAX_SEGMENTS>),
    Download(Ticket, McuBuffer, Vec<Segment, MAX_SEGMENTS>),
    Launch(KernelFn, Vec<u64, MAX_ARGS>),
    /// Raise the completion mark to this.
    Sync(u64),
}

pub(crate) struct Device {
    pub(crate) memory: [u8; MEMORY],
    pub(crate) commands: Deque<Command, DEPTH>,
    pub(crate) done: Deque<(Ticket, McuBuffer), DEPTH>,
    /// Copies whose device range fell outside the memory (checked at
    /// enqueue too: never expected).
    pub(crate) faults: u32,
}

pub(crate) static DEVICE: Mutex<RefCell<Device>> = Mutex::new(RefCell::new(Device {
    memory: [0; MEMORY],
    commands: Deque::new(),
    done: Deque::new(),
    faults: 0,
}));

/// The device's completion: the mark of the last synchronize point it ran.
pub static COMPLETION: Completion = Completion::new();

/// Where `s` lies in the device's memory, if it does.
pub(crate) fn range(s: &Segment) -> Option<core::ops::Range<usize>> {
    let at = usize::try_from(s.device.checked_sub(BASE)?).ok()?;
    let end = at.checked_add(s.len)?;
    (end <= MEMORY).then_some(at..end)
}

fn copy(memory: &mut [u8; MEMORY], buffer: &mut McuBuffer, segs: &[Segment], up: bool) -> bool {
    let host = buffer.as_mut();
    for s in segs {
        let (Some(dev), Some(h)) = (range(s), host.get_mut(s.host_offset..s.host_offset + s.len))
        else {
            return false;
        };
        if up {
            memory[dev].copy_from_slice(h);
        } else {
            h.copy_from_slice(&memory[dev]);
        }
    }
    true
}

/// Runs every command the queue has appended, then signals the highest
/// synchronize point it passed. Called from the device's interrupt handler
/// (or directly, as a polled device).
pub fn service() {
    let mark = critical_section::with(|cs| {
        let mut d = DEVICE.borrow_ref_mut(cs);
        let d = &mut *d;
        let mut mark = None;
        while let Some(cmd) = d.commands.pop_front() {
            match cmd {
                Command::Upload(t, mut b, segs) => {
                    if !copy(&mut d.memory, &mut b, &segs, true) {
                        d.faults += 1;
                    }
                    // The queue never lets more buffers be in flight than
                    // `done` holds.
                    let _ = d.done.push_back((t, b));
                }
                Command::Download(t, mut b, segs) => {
                    if !copy(&mut d.memory, &mut b, &segs, false) {
                        d.faults += 1;
                    }
                    let _ = d.done.push_back((t, b));
                }
                Command::Launch(kernel, args) => kernel(&mut d.memory, &args),
                Command::Sync(m) => mark = Some(m),
            }
        }
        mark
    });
    if let Some(m) = mark {
        COMPLETION.signal(m);
    }
}
