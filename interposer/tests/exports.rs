//! The interposer library the workspace builds exports the driver entry
//! points it hooks (and building this test makes cargo build the library,
//! which the `reprise record` tests preload).

use std::path::PathBuf;

/// The built library: next to this test's executable's directory.
fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    [
        deps.join("libreprise_interposer.so"),
        deps.join("../libreprise_interposer.so"),
    ]
    .into_iter()
    .find(|p| p.exists())
    .expect("cargo builds the interposer before its tests")
}

#[test]
fn the_library_exports_the_hooked_entry_points() {
    let out = std::process::Command::new("nm")
        .arg("-D")
        .arg("--defined-only")
        .arg(library())
        .output();
    let Ok(out) = out else {
        eprintln!("skipped: no nm");
        return;
    };
    let symbols = String::from_utf8_lossy(&out.stdout);
    // Every entry of the hook table in `src/resolve.rs`, and `dlsym`.
    for name in [
        "cuGetProcAddress_v2",
        "cuGetProcAddress",
        "cuInit",
        "cuCtxSetCurrent",
        "cuCtxPushCurrent_v2",
        "cuCtxCreate_v2",
        "cuMemAlloc_v2",
        "cuMemAllocPitch_v2",
        "cuMemFree_v2",
        "cuMemAllocAsync",
        "cuMemFreeAsync",
        "cuMemGetAddressRange_v2",
        "cuMemGetInfo_v2",
        "cuPointerGetAttribute",
        "cuPointerGetAttributes",
        "cuMemAllocManaged",
        "cuMemHostAlloc",
        "cuMemAllocHost_v2",
        "cuMemFreeHost",
        "cuModuleLoadData",
        "cuModuleLoadDataEx",
        "cuModuleLoadFatBinary",
        "cuModuleGetFunction",
        "cuModuleGetGlobal_v2",
        "cuLibraryLoadData",
        "cuLibraryGetKernel",
        "cuKernelGetFunction",
        "cuLaunchKernel",
        "cuLaunchKernel_ptsz",
        "cuLaunchKernelEx",
        "cuLaunchKernelEx_ptsz",
        "cuLaunchCooperativeKernel",
        "cuLaunchCooperativeKernel_ptsz",
        "cuGraphLaunch",
        "cuGraphLaunch_ptsz",
        "cuStreamBeginCapture_v2",
        "cuStreamBeginCapture_v2_ptsz",
        "cuStreamEndCapture",
        "cuStreamEndCapture_ptsz",
        "dlsym",
    ] {
        assert!(
            symbols.lines().any(|l| l.ends_with(&format!(" T {name}"))),
            "{name} is not exported:\n{symbols}"
        );
    }
}
