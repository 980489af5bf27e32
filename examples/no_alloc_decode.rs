//! Decoding a kernel record and a globals blob held in static byte arrays,
//! with stack buffers only: what a constrained runtime without an allocator
//! does with reprise-core. (The `println!`s are this example's only use of
//! std; the decoding itself allocates nothing.)
//!
//! Run: `cargo run --example no_alloc_decode`

use reprise_core::globals::{self, Layout};
use reprise_core::record::KernelRecord;

/// A descriptor exactly as LLVM's current recorder writes it.
static DESCRIPTOR: &[u8] = br#"{"ArgOffsets":[0,0,0],"ArgPtrs":[23335839465472,23335839469568,1024],"DeviceId":0,"LoopTripCount":1024,"Name":"__omp_offloading_10302_5e4e2a_saxpy_l8","NumArgs":3,"NumTeams":8,"NumThreads":128,"SharedMemorySize":0,"TeamsLimits":[0,0],"ThreadsLimits":[1,1024],"VAllocAddr":23335839465472,"VAllocSize":68719476736}"#;

/// Two globals in LLVM's current layout: `scale` (f32 2.0) and `hits` (u64 7).
static GLOBALS: &[u8] = &[
    2, 0, 0, 0, // count
    6, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, b's', b'c', b'a', b'l', b'e', 0, 0, 0, 0, 64, // scale
    5, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, b'h', b'i', b't', b's', 0, 7, 0, 0, 0, 0, 0, 0,
    0, // hits
];

fn main() {
    // The record lives on the stack (heapless strings and vectors inside).
    let record = KernelRecord::from_json(DESCRIPTOR).expect("a valid descriptor");
    println!(
        "kernel {} ({}): {} teams x {} threads, {} arguments, region at {:#x}",
        record.name,
        record.generation,
        record.num_teams(),
        record.num_threads(),
        record.num_args(),
        record.region_base.unwrap_or(0)
    );
    for i in 0..record.num_args() {
        println!("  arg {i}: {:#x}", record.arg_value(i));
    }

    // Globals borrow the static array: no copy, no allocation.
    for g in globals::decode(Layout::Current, GLOBALS).expect("a count header") {
        let g = g.expect("a well-formed global");
        println!(
            "  global {} = {:?} ({} bytes at offset {})",
            g.name,
            g.bytes,
            g.bytes.len(),
            g.offset
        );
    }

    // And back out again, into a stack buffer.
    let mut out = [0u8; 1024];
    let n = record
        .to_json(record.generation, &mut out)
        .expect("fits in 1 KiB");
    assert_eq!(&out[..n], DESCRIPTOR, "round trip is byte-exact");
    println!("re-encoded descriptor: {n} bytes, identical to the input");
}
