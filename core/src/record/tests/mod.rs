//! The kernel record's JSON: the descriptors the tests share, and the tests
//! by subject.

extern crate std;

use super::*;

mod geometry;
mod refused;
mod releases;
mod round_trip;
mod writing;

/// LLVM 18's key set (compact, sorted keys), with illustrative values.
const LEGACY: &[u8] = br#"{"ArgOffsets":[0,0,0],"ArgPtrs":[140737353891840,140737353891856,1024],"BumpAllocVAStart":140737353891840,"DeviceId":0,"DeviceMemorySize":8224,"LoopTripCount":1024,"Name":"__omp_offloading_fd00_2b5b6e0_main_l12","NumArgs":3,"NumTeamsClause":8,"ThreadLimitClause":128}"#;

/// Exactly what LLVM's current recorder writes.
const CURRENT: &[u8] = br#"{"ArgOffsets":[0,0],"ArgPtrs":[23335839465472,-1],"DeviceId":1,"LoopTripCount":0,"Name":"_Z6kernelPi","NumArgs":2,"NumTeams":120,"NumThreads":256,"SharedMemorySize":64,"TeamsLimits":[0,0],"ThreadsLimits":[1,1024],"VAllocAddr":23335839465472,"VAllocSize":68719476736}"#;

fn write(rec: &KernelRecord, g: Generation) -> std::string::String {
    extern crate std;
    let mut buf = [0u8; MAX_JSON_LEN];
    let n = rec.to_json(g, &mut buf).unwrap();
    std::string::String::from_utf8(buf[..n].to_vec()).unwrap()
}

/// A reprise descriptor with `extra` keys spliced in (later keys win).
fn reprise_with(extra: &str) -> std::string::String {
    std::format!(
        r#"{{"ArgOffsets":[0],"ArgPtrs":[1],"Block":[128,1,1],"Grid":[8,1,1],"Name":"k","NumArgs":1,"NumTeams":8,"NumThreads":128,"RepriseFormat":1,"VAllocAddr":4096,"VAllocSize":65536{extra}}}"#
    )
}

fn error_text(json: &str) -> std::string::String {
    let e = KernelRecord::from_json(json.as_bytes()).unwrap_err();
    std::format!("{e}")
}
