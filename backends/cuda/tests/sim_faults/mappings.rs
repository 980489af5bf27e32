//! The simulator's access check follows the driver's documentation: a copy
//! may span adjacent mappings of one reservation, each mapped and made
//! accessible by calls of its own (the recording region grows so), and
//! fails only where a byte of it is not mapped and accessible.

use crate::common::sim;
use crate::{INVALID_VALUE, MIB, simulated};

type Init = unsafe extern "C" fn(u32) -> i32;
type Retain = unsafe extern "C" fn(*mut usize, i32) -> i32;
type SetCurrent = unsafe extern "C" fn(usize) -> i32;
type Reserve = unsafe extern "C" fn(*mut u64, usize, usize, u64, u64) -> i32;
type AddressFree = unsafe extern "C" fn(u64, usize) -> i32;
type Create = unsafe extern "C" fn(*mut u64, usize, *const Prop, u64) -> i32;
type Release = unsafe extern "C" fn(u64) -> i32;
type Map = unsafe extern "C" fn(u64, usize, usize, u64, u64) -> i32;
type Unmap = unsafe extern "C" fn(u64, usize) -> i32;
type SetAccess = unsafe extern "C" fn(u64, usize, *const Access, usize) -> i32;
type HtoD = unsafe extern "C" fn(u64, *const u8, usize) -> i32;
type DtoH = unsafe extern "C" fn(*mut u8, u64, usize) -> i32;

/// `CUmemAllocationProp` (32 bytes): pinned device memory of device 0.
#[repr(C)]
struct Prop {
    kind: u32,
    handle_types: u32,
    location: [i32; 2],
    win32: usize,
    flags: [u8; 8],
}

/// `CUmemAccessDesc`: read-write for device 0.
#[repr(C)]
struct Access {
    location: [i32; 2],
    flags: u32,
}

/// The driver entry points the test calls, from the simulator.
struct Driver {
    reserve: Reserve,
    address_free: AddressFree,
    create: Create,
    release: Release,
    map: Map,
    unmap: Unmap,
    set_access: SetAccess,
    htod: HtoD,
    dtoh: DtoH,
}

fn driver() -> Driver {
    // SAFETY: each name with its type as cuda.h declares it.
    unsafe {
        let init: Init = sim::symbol("cuInit").unwrap();
        let retain: Retain = sim::symbol("cuDevicePrimaryCtxRetain").unwrap();
        let set_current: SetCurrent = sim::symbol("cuCtxSetCurrent").unwrap();
        assert_eq!(init(0), 0);
        let mut ctx = 0usize;
        assert_eq!(retain(&mut ctx, 0), 0);
        assert_eq!(set_current(ctx), 0);
        Driver {
            reserve: sim::symbol("cuMemAddressReserve").unwrap(),
            address_free: sim::symbol("cuMemAddressFree").unwrap(),
            create: sim::symbol("cuMemCreate").unwrap(),
            release: sim::symbol("cuMemRelease").unwrap(),
            map: sim::symbol("cuMemMap").unwrap(),
            unmap: sim::symbol("cuMemUnmap").unwrap(),
            set_access: sim::symbol("cuMemSetAccess").unwrap(),
            htod: sim::symbol("cuMemcpyHtoD_v2").unwrap(),
            dtoh: sim::symbol("cuMemcpyDtoH_v2").unwrap(),
        }
    }
}

const PROP: Prop = Prop {
    kind: 1,
    handle_types: 0,
    location: [1, 0],
    win32: 0,
    flags: [0; 8],
};
const ACCESS: Access = Access {
    location: [1, 0],
    flags: 3,
};

/// Maps `chunks` (MiB each, multiples of 2) one after the other from
/// `base`, each with a cuMemSetAccess of its own when `per_chunk`, else
/// one over them all: the handles.
fn map_chunks(d: &Driver, base: u64, chunks: &[u64], per_chunk: bool) -> Vec<u64> {
    let mut at = base;
    let mut handles = Vec::new();
    for &mib in chunks {
        let len = (mib * MIB) as usize;
        let mut h = 0;
        // SAFETY: valid out-pointer and properties; the range is reserved.
        unsafe {
            assert_eq!((d.create)(&mut h, len, &PROP, 0), 0);
            assert_eq!((d.map)(at, len, 0, h, 0), 0, "cuMemMap at {at:#x}");
            if per_chunk {
                assert_eq!((d.set_access)(at, len, &ACCESS, 1), 0);
            }
        }
        handles.push(h);
        at += mib * MIB;
    }
    if !per_chunk {
        let len = (at - base) as usize;
        // SAFETY: one descriptor over the fully mapped range.
        assert_eq!(unsafe { (d.set_access)(base, len, &ACCESS, 1) }, 0);
    }
    handles
}

/// Copies `len` bytes of a pattern to `at` and back: the two results.
fn round_trip(d: &Driver, at: u64, len: usize) -> (i32, i32, bool) {
    let data: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
    let mut back = vec![0u8; len];
    // SAFETY: host buffers of `len` bytes; the simulator checks the device
    // range.
    let (up, down) = unsafe {
        (
            (d.htod)(at, data.as_ptr(), len),
            (d.dtoh)(back.as_mut_ptr(), at, len),
        )
    };
    (up, down, back == data)
}

#[test]
fn a_copy_may_span_adjacent_mappings_each_made_accessible_on_its_own() {
    let Some((_lock, _exec)) = simulated() else {
        return;
    };
    let d = driver();
    let mut base = 0;
    let size = (16 * MIB) as usize;
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { (d.reserve)(&mut base, size, 0, 0, 0) }, 0);
    for per_chunk in [true, false] {
        // 2 + 4 + 2 MiB, the last 8 MiB of the reservation left unmapped.
        let handles = map_chunks(&d, base, &[2, 4, 2], per_chunk);
        // Across the first boundary, across both, and the whole mapped
        // range: as one buffer, whichever calls mapped it.
        for (from, len) in [
            (base + MIB, 2 * MIB),
            (base + MIB, 6 * MIB),
            (base, 8 * MIB),
        ] {
            let (up, down, same) = round_trip(&d, from, len as usize);
            assert_eq!(
                (up, down, same),
                (0, 0, true),
                "per_chunk {per_chunk}: {len} bytes at base + {:#x}",
                from - base
            );
        }
        // One byte past what is mapped is not accessible.
        let (up, down, _) = round_trip(&d, base + 7 * MIB, (MIB + 1) as usize);
        assert_eq!((up, down), (INVALID_VALUE as i32, INVALID_VALUE as i32));
        // Unmapping the middle chunk takes its access away, and only its.
        // SAFETY: the middle mapping, as mapped.
        assert_eq!(unsafe { (d.unmap)(base + 2 * MIB, (4 * MIB) as usize) }, 0);
        let (up, _, _) = round_trip(&d, base + MIB, (2 * MIB) as usize);
        assert_eq!(up, INVALID_VALUE as i32, "per_chunk {per_chunk}");
        assert_eq!(round_trip(&d, base, (2 * MIB) as usize), (0, 0, true));
        assert_eq!(
            round_trip(&d, base + 6 * MIB, (2 * MIB) as usize),
            (0, 0, true)
        );
        // SAFETY: the other two mappings, then the handles.
        unsafe {
            assert_eq!((d.unmap)(base, (2 * MIB) as usize), 0);
            assert_eq!((d.unmap)(base + 6 * MIB, (2 * MIB) as usize), 0);
            for h in handles {
                assert_eq!((d.release)(h), 0);
            }
        }
        assert_eq!(round_trip(&d, base, 1).0, INVALID_VALUE as i32);
    }
    // SAFETY: the reservation, nothing mapped in it.
    assert_eq!(unsafe { (d.address_free)(base, size) }, 0);
}
