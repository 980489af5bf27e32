//! A recording region that grows to the device and reuses what is freed:
//! a CUDA program that allocates and frees a 2 MiB temporary every
//! iteration keeps its snapshots the same size from its first iteration to
//! its three-thousandth; a program allocating more than 1 GiB is recorded
//! without `--region-size`; and a library recorder's `free` hands memory
//! out again, on the host and on the (simulated) GPU, whose region maps
//! memory as allocations reach it; a device-sized region the system will
//! not reserve falls back to 1 GiB.

mod common;

use std::path::{Path, PathBuf};

use common::programs::*;
use common::*;
use reprise::{Args, HostExecutor, RecordConfig, Recorder};

/// The simulator and the interposer are there (else the test skips, after
/// saying why).
fn ready() -> bool {
    matches!(setup(), Some(Target::Simulated)) && interposer().is_some()
}

fn inspect_region(capture: &Path) -> serde_json::Value {
    let out = reprise(&["inspect", "--json", s(capture)]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{}: {e}: {}", capture.display(), text(&out).1));
    v["region"].clone()
}

/// Every capture replays and verifies.
fn all_verify(captures: &[PathBuf]) {
    let (k, v) = sim_env();
    for c in captures {
        let out = reprise_env(&["replay", "--verify", s(c)], &[(k, v.to_str().unwrap())]);
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {stdout}{stderr}",
            c.display()
        );
        assert!(stdout.contains("verification: PASS"), "{stdout}");
    }
}

/// `reprise record` of `churn` with `options`, which must exit 0 with
/// `want` captures and no mark: the captures.
fn churn(dir: &Path, options: &[&str], args: &[&str], want: usize) -> Vec<PathBuf> {
    let program = build_program("churn");
    let out = record(&program, dir, options, args);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.starts_with("result "), "{stdout}");
    assert!(!stderr.contains("with a mark"), "{stderr}");
    assert!(!stderr.contains("recording stopped"), "{stderr}");
    let captures = descriptors(dir);
    assert_eq!(captures.len(), want, "{stderr}");
    captures
}

/// 3000 iterations of allocate 2 MiB, launch, free: the first launches'
/// snapshots and the last ones' are the same size, a little over the
/// temporary (a region that never reused memory would hold 3000 of them,
/// past the old 1 GiB default after 500), and every capture verifies.
#[test]
fn an_allocate_free_loop_keeps_its_footprint() {
    if !ready() {
        return;
    }
    let early = tempfile::tempdir().unwrap();
    let late = tempfile::tempdir().unwrap();
    let first = churn(early.path(), &["--max", "2"], &["loop", "3000"], 2);
    let last = churn(late.path(), &["--skip", "2997"], &["loop", "3000"], 3);
    let sizes: Vec<u64> = first
        .iter()
        .chain(&last)
        .map(|c| inspect_region(c)["snapshot_bytes"].as_u64().unwrap())
        .collect();
    assert!(
        sizes.iter().all(|&n| n == sizes[0]),
        "snapshots grew: {sizes:?}"
    );
    assert!(
        sizes[0] >= 2 << 20 && sizes[0] < 3 << 20,
        "the temporary and y: {sizes:?}"
    );
    all_verify(&first);
    all_verify(&last);
}

/// Three 448 MiB buffers, recorded with no `--region-size`: the region is
/// as large as the device's memory (the simulator's 80 GiB), both launches
/// are in it, and both captures verify.
#[test]
fn a_program_past_one_gib_records_without_a_region_size() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let captures = churn(dir.path(), &[], &["big"], 2);
    for c in &captures {
        let region = inspect_region(c);
        assert_eq!(region["reserved"], 80u64 << 30, "{region}");
        let snapshot = region["snapshot_bytes"].as_u64().unwrap();
        assert!(snapshot > 3 * (448 << 20), "{region}");
    }
    all_verify(&captures);
    // `--region-size` is a cap: the same program under 1 GiB has its last
    // buffer outside the region, and says so.
    let capped = tempfile::tempdir().unwrap();
    let program = build_program("churn");
    let out = record(&program, capped.path(), &["--region-size", "1G"], &["big"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stderr.contains("with a mark"), "{stderr}");
}

fn host_config(dir: &Path) -> RecordConfig {
    RecordConfig::default().enabled(true).dir(dir).fsync(false)
}

/// A library recorder's `free`: the block is handed out again, a loop of
/// allocate and free stays where it began, a hole below the top stays in
/// the snapshot and the capture verifies, and freeing what is not an
/// allocation is an error.
#[test]
fn free_on_the_recording_allocator_reuses_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Recorder::new(HostExecutor::new().unwrap(), 0, host_config(dir.path())).unwrap();
    let region = rec.region();
    assert!(
        region.capacity() > 1 << 30,
        "the host's region is its memory's size: {}",
        region.capacity()
    );
    let n = 16u64;
    let x = rec.alloc(n * 4, 64).unwrap();
    let tmp = rec.alloc(1 << 20, 64).unwrap();
    let y = rec.alloc(n * 4, 64).unwrap();
    let calls = rec.alloc(8, 8).unwrap();
    let used = rec.region().used();
    let mut ends = Vec::new();
    for _ in 0..10_000 {
        let t = rec.alloc(2 << 20, 256).unwrap();
        rec.free(t).unwrap();
        ends.push(rec.region().used());
    }
    assert!(
        ends.iter().all(|&e| e == ends[0]) && ends[0] < used + 256,
        "the loop's blocks were reused: {} then {}",
        ends[0],
        ends[ends.len() - 1]
    );
    // A hole below the top: the next allocation that fits takes it.
    rec.free(tmp).unwrap();
    assert_eq!(rec.region().freed(), 1 << 20);
    assert!(rec.free(tmp).is_err(), "freed twice");
    assert!(rec.free(x + 4).is_err(), "not an allocation");
    assert_eq!(rec.alloc(4096, 64).unwrap(), tmp);
    rec.upload(x, &[0u8; 64]).unwrap();
    rec.upload(y, &[0u8; 64]).unwrap();
    rec.upload(calls, &[0u8; 8]).unwrap();
    let image = rec.load_image(AXPY).unwrap();
    let kernel = rec.kernel(image, "axpy").unwrap();
    let args = Args::new().ptr(x).ptr(y).scalar(n).ptr(calls);
    let written = reprise::block_on(async {
        rec.launch(&kernel, geometry(1, 1), &args).await.unwrap();
        rec.finish().await.unwrap()
    });
    let captures: Vec<PathBuf> = written
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(captures.len(), 1);
    let region = inspect_region(&captures[0]);
    assert_eq!(region["snapshot_bytes"], ends[0], "{region}");
    let out = reprise(&["replay", "--verify", s(&captures[0])]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("verification: PASS"), "{stdout}");
}

/// On a GPU (the simulated one here), a library recorder's region has
/// memory behind its first allocations only, and more is mapped as they
/// reach past it: buffers more than 1 GiB in are usable, and freeing one
/// hands its memory to the next.
#[test]
fn a_cuda_recorder_maps_memory_as_allocations_reach_it() {
    let Some(gpu) = gpu() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Recorder::new(gpu, 0, host_config(dir.path()).enabled(false)).unwrap();
    let reserved = rec.region().capacity();
    assert!(reserved > 1 << 30, "the device's memory: {reserved}");
    let bufs: Vec<u64> = (0..3).map(|_| rec.alloc(448 << 20, 256).unwrap()).collect();
    let last = bufs[2] + (448 << 20) - 4096;
    let pattern: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
    rec.upload(last, &pattern).unwrap();
    let back = reprise::block_on(rec.download(last, 4096)).unwrap();
    assert_eq!(back, pattern, "memory 1.3 GiB into the region");
    rec.free(bufs[1]).unwrap();
    assert_eq!(rec.alloc(100 << 20, 256).unwrap(), bufs[1]);
}

/// A region larger than the device (chosen): an allocation the device
/// has no memory for is the executor's error, naming the growth, and
/// takes nothing from the region; smaller ones go on working.
#[test]
fn an_allocation_the_device_cannot_back_takes_nothing() {
    let Some(gpu) = gpu() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = host_config(dir.path()).enabled(false).region_size(1 << 40);
    let rec = Recorder::new(gpu, 0, config).unwrap();
    let small = rec.alloc(4096, 256).unwrap();
    let used = rec.region().used();
    let err = rec
        .alloc(900 << 30, 256)
        .expect_err("more than the device has");
    assert!(
        err.to_string().contains("growing the recording region"),
        "{err}"
    );
    assert_eq!(rec.region().used(), used, "nothing was taken");
    assert_eq!(rec.alloc(4096, 256).unwrap(), small + 4096);
}

/// A host executor on a system that gives no more than 4 GiB of address
/// space to one reservation (strict overcommit, an address-space limit)
/// and reports a much larger memory.
struct Strict(HostExecutor);

impl reprise::core::exec::ErrorType for Strict {
    type Error = reprise_host::HostError;
}

impl reprise::core::Executor for Strict {
    const KIND: reprise::BackendKind = HostExecutor::KIND;
    const CAPABILITIES: reprise::core::exec::Capabilities = HostExecutor::CAPABILITIES;
    type Region = reprise_host::HostRegion;
    type Image = reprise_host::HostImage;
    type Kernel = reprise_host::HostKernel;
    type Buffer = reprise_host::HostBuffer;
    type Queue = reprise_host::HostQueue;

    fn memory_size(&self) -> Option<u64> {
        Some(1 << 40)
    }
    fn reserve(
        &self,
        request: reprise::core::exec::RegionRequest,
    ) -> Result<Self::Region, Self::Error> {
        if request.capacity > 4 << 30 {
            return Err(reprise_host::HostError::TooLarge {
                what: reprise_host::TooLarge::Region(request.capacity),
            });
        }
        self.0.reserve(request)
    }
    fn load_image(&self, image: &[u8]) -> Result<Self::Image, Self::Error> {
        self.0.load_image(image)
    }
    fn kernel(&self, image: &Self::Image, name: &str) -> Result<Self::Kernel, Self::Error> {
        self.0.kernel(image, name)
    }
    fn global<'n>(
        &self,
        image: &Self::Image,
        name: &'n str,
    ) -> Result<Option<reprise::core::exec::GlobalInfo<'n>>, Self::Error> {
        self.0.global(image, name)
    }
    fn for_each_global(
        &self,
        image: &Self::Image,
        f: &mut dyn FnMut(reprise::core::exec::GlobalInfo<'_>),
    ) -> Result<(), Self::Error> {
        self.0.for_each_global(image, f)
    }
    fn buffer(&self, len: usize) -> Result<Self::Buffer, Self::Error> {
        self.0.buffer(len)
    }
    fn queue(&self) -> Result<Self::Queue, Self::Error> {
        self.0.queue()
    }
}

/// A default region as large as the device that the system will not
/// reserve falls back to 1 GiB; a chosen size that cannot be reserved is
/// an error naming it.
#[test]
fn a_device_sized_region_the_system_refuses_falls_back_to_one_gib() {
    let dir = tempfile::tempdir().unwrap();
    let config = host_config(dir.path()).enabled(false);
    let rec = Recorder::new(Strict(HostExecutor::new().unwrap()), 0, config.clone()).unwrap();
    assert_eq!(rec.region().capacity(), 1 << 30);
    let err = Recorder::new(
        Strict(HostExecutor::new().unwrap()),
        0,
        config.region_size(8 << 30),
    )
    .err()
    .expect("8 GiB is refused");
    assert!(err.to_string().contains("8 GiB"), "{err}");
}
