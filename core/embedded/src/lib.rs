//! reprise-core on a microcontroller: an executor for a device driven from
//! an interrupt handler, and one kernel launch recorded on it through the
//! core's record schedule (H2D -> D2H info -> kernel -> D2H output -> one
//! synchronize), as a constrained runtime would reuse the core.
//!
//! - [`device`]: the device. Its memory, a command list the queue fills,
//!   and [`device::service`], which an interrupt handler calls: it runs
//!   the copies and the kernel (a plain function over the device's memory,
//!   standing in for an accelerator) and signals the core's
//!   [`Completion`](reprise_core::Completion) from interrupt context.
//! - [`exec`]: [`McuExecutor`] and [`McuQueue`], the core's executor
//!   contract, unchanged, over that device.
//! - [`launch`]: the launch recorded through `reprise_core::schedule::record`,
//!   under whatever executor polls it (embassy-executor or the core's
//!   `block_on`), and what it found.
//! - [`capture`]: the recorded launch as reprise's capture files
//!   (descriptor, snapshots, globals, the kernel's code as a 32-bit ELF
//!   object), written through a [`capture::Sink`] (semihosting on QEMU).
//!
//! With the `alloc` feature, host buffers come from a heap; without it,
//! from a static arena.

#![no_std]

#[cfg(feature = "alloc")]
extern crate alloc;

pub mod capture;
pub mod device;
pub mod exec;
pub mod launch;

pub use exec::{McuBuffer, McuError, McuExecutor, McuQueue};

/// The heap host buffers come from with `alloc`: 1 KiB of static memory
/// (as much as the static arena without it)
/// under embedded-alloc's linked-list allocator.
#[cfg(feature = "alloc")]
pub mod heap {
    use core::mem::MaybeUninit;

    use static_cell::StaticCell;

    #[global_allocator]
    static HEAP: embedded_alloc::LlffHeap = embedded_alloc::LlffHeap::empty();

    const SIZE: usize = 1024;
    static MEMORY: StaticCell<[MaybeUninit<u8>; SIZE]> = StaticCell::new();

    /// Gives the heap its memory; call once, before anything allocates
    /// (a second call panics).
    pub fn init() {
        let memory = MEMORY.init([MaybeUninit::uninit(); SIZE]);
        // SAFETY: the first and only call (the `StaticCell` panics on a
        // second), before any allocation, with memory that is the heap's
        // alone from now on.
        unsafe { HEAP.init(memory.as_mut_ptr() as usize, SIZE) }
    }
}

// The critical section the device's state (and the executor's) sits
// behind: interrupts masked on a single core.
#[cfg(target_arch = "arm")]
use cortex_m as _;
#[cfg(target_arch = "riscv32")]
use riscv as _;
