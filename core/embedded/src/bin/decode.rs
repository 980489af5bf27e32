//! reprise-core on a microcontroller: decodes a kernel record (LLVM's
//! legacy key set, as LLVM 16 writes it) and a globals blob in both layouts,
//! on the stack, with no allocator, and bump-allocates in a region. It
//! reports what it found over semihosting and exits (0 when every value is
//! what it should be), so that QEMU's Cortex-M4 machine can run it:
//! `scripts/embedded-check.sh`.

#![no_std]
#![no_main]

use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};
use panic_halt as _;
// Its critical section (and, with `alloc`, its heap) for the core.
use reprise_core::globals::{self, Layout};
use reprise_core::record::KernelRecord;
use reprise_core::region::BumpRegion;
use reprise_core_embedded as _;

/// A descriptor LLVM 16's runtime wrote for an OpenMP target region.
const DESCRIPTOR: &[u8] = br#"{"ArgOffsets":[0,0,0],"ArgPtrs":[1024,140224684101648,140224684105744],"BumpAllocVAStart":140224684101648,"DeviceId":0,"DeviceMemorySize":8192,"LoopTripCount":1024,"Name":"__omp_offloading_fe00_990012_main_l13","NumArgs":3,"NumTeamsClause":0,"ThreadLimitClause":0}"#;

/// Two globals in the seed layout: `alpha` (a float) and `calls` (a long).
const SEED_GLOBALS: &[u8] = b"alpha\0\x04\0\0\0\0\0\x40\x40calls\0\x08\0\0\0\x29\0\0\0\0\0\0\0";

fn run() -> Option<[u32; 3]> {
    let record = KernelRecord::from_json(DESCRIPTOR).ok()?;
    let mut bytes = 0u32;
    for g in globals::decode(Layout::Seed, SEED_GLOBALS).ok()? {
        bytes += g.ok()?.bytes.len() as u32;
    }
    // Re-encode them in the current layout into a stack buffer and read
    // that back: both layouts, no allocator.
    let mut buf = [0u8; 128];
    let items = [
        ("alpha", &3.0f32.to_le_bytes()[..]),
        ("calls", &41i64.to_le_bytes()[..]),
    ];
    let n = globals::encode_into(Layout::Current, items, &mut buf).ok()?;
    for g in globals::decode(Layout::Current, &buf[..n]).ok()? {
        bytes += g.ok()?.bytes.len() as u32;
    }
    // The recording allocator, as a runtime would use it for its region.
    let region = BumpRegion::new(0x2000_0000, 64 << 10);
    let _ = region.alloc(10, 1).ok()?;
    let at = region.alloc(100, 64).ok()?;
    Some([record.num_args() as u32, bytes, (at - 0x2000_0000) as u32])
}

#[entry]
fn main() -> ! {
    // Arguments, bytes of globals in both layouts (4 + 8, twice), and the
    // second allocation's offset (10 bytes rounded to 16, then aligned to 64).
    const EXPECTED: [u32; 3] = [3, 24, 64];
    let found = run();
    hprintln!(
        "reprise-core on a Cortex-M4F: found {:?}, expected {:?}",
        found,
        EXPECTED
    );
    debug::exit(if found == Some(EXPECTED) {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    loop {
        core::hint::spin_loop();
    }
}
