//! Every LLVM release's descriptor, keys quoted from its source, read with
//! its own meaning and written back byte for byte.

extern crate std;

use super::*;

/// One LLVM release's descriptor as its `saveKernelDescr` writes it: an
/// `llvm::json::Object`, which `llvm::json` prints compactly with its keys
/// sorted.
struct Release {
    llvm: &'static str,
    /// Where the keys are written.
    source: &'static str,
    json: &'static [u8],
    base: Option<u64>,
    grid: u32,
    block: u32,
    args: usize,
}

/// Every release reprise reads, keys quoted from their sources (LLVM 20 was
/// not read: 19.1.7 and 21.1.8 agree line for line in `RecordReplayTy`).
const RELEASES: &[Release] = &[
    Release {
        llvm: "16.0.6",
        // The committed LLVM 16 capture's descriptor, as the runtime wrote it.
        source: "openmp/libomptarget/plugins-nextgen/common/PluginInterface/PluginInterface.cpp:143-159",
        json: br#"{"ArgOffsets":[0,0,0],"ArgPtrs":[1024,140674876997648,140674877001744],"DeviceId":0,"DeviceMemorySize":8192,"LoopTripCount":1024,"Name":"__omp_offloading_fe00_65c005_main_l17","NumArgs":3,"NumTeamsClause":0,"ThreadLimitClause":0}"#,
        base: None,
        grid: 0,
        block: 0,
        args: 3,
    },
    Release {
        llvm: "17.0.6",
        source: "openmp/libomptarget/plugins-nextgen/common/PluginInterface/PluginInterface.cpp:149-165",
        json: br#"{"ArgOffsets":[0,0],"ArgPtrs":[140674876997648,1024],"DeviceId":0,"DeviceMemorySize":68719476736,"LoopTripCount":1024,"Name":"__omp_offloading_fe00_65c005_main_l17","NumArgs":2,"NumTeamsClause":8,"ThreadLimitClause":64}"#,
        base: None,
        grid: 8,
        block: 64,
        args: 2,
    },
    Release {
        llvm: "18.1.8",
        // BumpAllocVAStart at line 283; the environment (~0) first.
        source: "openmp/libomptarget/plugins-nextgen/common/src/PluginInterface.cpp:276-293",
        json: br#"{"ArgOffsets":[0,0,0],"ArgPtrs":[-1,1024,139637976727552],"BumpAllocVAStart":139637976727552,"DeviceId":0,"DeviceMemorySize":8192,"LoopTripCount":1024,"Name":"__omp_offloading_fe00_65c005_main_l17","NumArgs":3,"NumTeamsClause":8,"ThreadLimitClause":128}"#,
        base: Some(139637976727552),
        grid: 8,
        block: 128,
        args: 3,
    },
    Release {
        llvm: "19.1.7",
        // ArgPtrs are &Args[I]: refused when opened (launch_env.rs).
        source: "offload/plugins-nextgen/common/src/PluginInterface.cpp:275-292",
        json: br#"{"ArgOffsets":[0,0,0],"ArgPtrs":[140727211834560,140727211834568,140727211834576],"BumpAllocVAStart":139637976727552,"DeviceId":0,"DeviceMemorySize":8192,"LoopTripCount":1024,"Name":"__omp_offloading_fe00_65c005_main_l17","NumArgs":3,"NumTeamsClause":8,"ThreadLimitClause":128}"#,
        base: Some(139637976727552),
        grid: 8,
        block: 128,
        args: 3,
    },
    Release {
        llvm: "21.1.8",
        source: "offload/plugins-nextgen/common/src/PluginInterface.cpp:284-301",
        json: br#"{"ArgOffsets":[0,0],"ArgPtrs":[140727211834560,140727211834568],"BumpAllocVAStart":139637976727552,"DeviceId":1,"DeviceMemorySize":8192,"LoopTripCount":0,"Name":"__omp_offloading_fe00_65c005_main_l17","NumArgs":2,"NumTeamsClause":104,"ThreadLimitClause":256}"#,
        base: Some(139637976727552),
        grid: 104,
        block: 256,
        args: 2,
    },
    Release {
        llvm: "22.1.8",
        source: "offload/plugins-nextgen/common/src/PluginInterface.cpp:289-306",
        json: br#"{"ArgOffsets":[0,0],"ArgPtrs":[140727211834560,140727211834568],"BumpAllocVAStart":139637976727552,"DeviceId":0,"DeviceMemorySize":8192,"LoopTripCount":0,"Name":"__omp_offloading_fe00_65c005_main_l17","NumArgs":2,"NumTeamsClause":104,"ThreadLimitClause":256}"#,
        base: Some(139637976727552),
        grid: 104,
        block: 256,
        args: 2,
    },
    Release {
        llvm: "main after 22.1",
        // NativeRecordReplayTy::recordDescImpl (not a release).
        source: "offload/plugins-nextgen/common/src/RecordReplay.cpp",
        json: CURRENT,
        base: Some(23335839465472),
        grid: 120,
        block: 256,
        args: 2,
    },
];

#[test]
fn every_llvm_release_descriptor_reads_with_its_own_meaning() {
    for r in RELEASES {
        let what = std::format!("LLVM {} ({})", r.llvm, r.source);
        let rec = KernelRecord::from_json(r.json).unwrap_or_else(|e| panic!("{what}: {e}"));
        let current = r.llvm.starts_with("main");
        let generation = if current {
            Generation::LlvmCurrent
        } else {
            Generation::LlvmLegacy
        };
        assert_eq!(rec.generation, generation, "{what}");
        assert_eq!(rec.region_base, r.base, "{what}");
        assert_eq!([rec.grid[0], rec.block[0]], [r.grid, r.block], "{what}");
        assert_eq!(rec.arg_ptrs.len(), r.args, "{what}");
        assert!(
            rec.backend.is_none() && rec.format_version.is_none(),
            "{what}"
        );
        // Written back in its own key set, byte for byte: nothing read is
        // lost, nothing is added.
        assert_eq!(write(&rec, generation).as_bytes(), r.json, "{what}");
    }
}
