//! The record path alone, for its flash and static RAM on each target
//! (`scripts/embedded-check.sh` subtracts `baseline`): the recording
//! allocator, the record schedule under the core's `block_on` on the
//! interrupt-driven executor (its device serviced as a polled one here),
//! the globals codec and the descriptor serializer, with host buffers from
//! a static arena or, with `alloc`, a heap. Built, not run.

#![no_std]
#![no_main]

use panic_halt as _;
use reprise_core::record::{KernelRecord, MAX_JSON_LEN};
use reprise_core::schedule::Mode;
use reprise_core::{block_on, globals};
use reprise_core_embedded::launch::{self, Bufs};
use reprise_core_embedded::{McuExecutor, device};

/// Host buffers' memory: a static arena, or none with `alloc` (the heap).
fn arena() -> &'static mut [u8] {
    #[cfg(not(feature = "alloc"))]
    {
        static ARENA: static_cell::StaticCell<[u8; 1024]> = static_cell::StaticCell::new();
        ARENA.init([0; 1024])
    }
    #[cfg(feature = "alloc")]
    {
        &mut []
    }
}

fn record() -> Option<usize> {
    let exec = McuExecutor::new(arena(), &launch::KERNELS, &launch::GLOBALS, device::service);
    let at = launch::layout().ok()?;
    let mut bufs = Bufs::new(&exec, at.used).ok()?;
    block_on(launch::record(&exec, &at, &mut bufs, Mode::Async)).ok()?;
    let g = bufs.globals.as_ref()?.as_ref();
    let mut blob = [0u8; 64];
    let n = globals::encode_into(
        reprise_core::Layout::Current,
        [("factor", &g[..4]), ("calls", &g[4..12])],
        &mut blob,
    )
    .ok()?;
    let mut r = KernelRecord::new(launch::KERNEL).ok()?;
    r.push_arg(at.data).ok()?;
    r.region_base = Some(device::BASE);
    r.region_size = Some(device::REGION as u64);
    r.memory_size = Some(at.used as u64);
    let mut json = [0u8; 1024];
    let m = r
        .to_json(
            reprise_core::Generation::Reprise,
            &mut json[..MAX_JSON_LEN.min(1024)],
        )
        .ok()?;
    Some(n + m)
}

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    #[cfg(feature = "alloc")]
    reprise_core_embedded::heap::init();
    core::hint::black_box(record());
    loop {
        core::hint::spin_loop();
    }
}
