//! Images: cubins and fat binaries loaded, a fat binary whose globals
//! cannot be listed, and images (and their modules) kept loaded while queued
//! work still uses them.

use reprise_core::exec::{
    DeviceRegion, Executor, KernelArgs, Launch, LaunchConfig, Queue, RegionRequest,
};

use crate::common::{
    self, buffer_with, f32_bytes, f32s, fixture, fixture_kernel, gpu, grid2d_launch, seg, sync,
};
use crate::{MIB, globals_of, read_device, simulated};

#[test]
fn loads_a_cubin_and_a_fat_binary() {
    let Some((_lock, exec)) = gpu() else { return };
    // Built from saxpy.ptx by ptxas and fatbinary (sm_90 code, plus PTX in
    // the fat binary).
    for file in ["saxpy.sm_90.fatbin", "saxpy.sm_90.cubin"] {
        let image = match exec.load_image(&fixture(file)) {
            Ok(image) => image,
            // A cubin runs only on its own architecture.
            Err(e) if file.ends_with(".cubin") && e.driver().is_some_and(|d| d.code == 209) => {
                println!("skipped {file}: {e}");
                continue;
            }
            Err(e) => panic!("{file}: {e}"),
        };
        println!("{file}: {}", image.kind());
        exec.kernel(&image, "saxpy").unwrap();
        let mut names: Vec<String> = globals_of(&exec, &image).into_iter().map(|g| g.0).collect();
        names.sort();
        assert_eq!(names, ["bias", "launches"], "{file}");
    }
}

/// Log records of this process, for tests that check a warning.
struct Captured(std::sync::Mutex<Vec<String>>);

impl log::Log for Captured {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, r: &log::Record<'_>) {
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        v.push(format!("{} {}", r.level(), r.args()));
    }
    fn flush(&self) {}
}

static LOGGED: Captured = Captured(std::sync::Mutex::new(Vec::new()));

#[test]
fn a_fat_binary_of_compressed_entries_warns_that_globals_are_not_recorded() {
    let Some((_lock, exec)) = gpu() else { return };
    if !simulated() {
        println!("skipped: the fat binary is made up; only the simulator loads it");
        return;
    }
    let _ = log::set_logger(&LOGGED);
    log::set_max_level(log::LevelFilter::Warn);
    // One container, one PTX entry whose payload is zstd-compressed (as far
    // as anyone reading it can tell); the simulator finds the kernel's name
    // in it.
    let payload = [&[0x28, 0xb5, 0x2f, 0xfd][..], b"\0saxpy\0", &[0; 5]].concat();
    let mut entry = vec![0u8; 64];
    entry[..2].copy_from_slice(&1u16.to_le_bytes());
    entry[4..8].copy_from_slice(&64u32.to_le_bytes());
    entry[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    entry[16..20].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    entry[28..32].copy_from_slice(&80u32.to_le_bytes());
    entry[40..48].copy_from_slice(&0x8011u64.to_le_bytes());
    let body = [entry, payload].concat();
    let mut fatbin = Vec::new();
    fatbin.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    fatbin.extend_from_slice(&1u16.to_le_bytes());
    fatbin.extend_from_slice(&16u16.to_le_bytes());
    fatbin.extend_from_slice(&(body.len() as u64).to_le_bytes());
    fatbin.extend_from_slice(&body);

    let image = exec.load_image(&fatbin).unwrap();
    exec.kernel(&image, "saxpy").unwrap();
    assert!(globals_of(&exec, &image).is_empty());
    let logged = LOGGED.0.lock().unwrap().clone();
    let warning = logged
        .iter()
        .find(|m| m.contains("compressed"))
        .unwrap_or_else(|| panic!("no warning in {logged:?}"));
    assert!(warning.starts_with("WARN "), "{warning}");
    assert!(warning.contains("PTX sm_80"), "names the image: {warning}");
    assert!(warning.contains("will not be recorded"), "{warning}");
    // An image whose globals can be listed says nothing.
    LOGGED.0.lock().unwrap().clear();
    let plain = exec.load_image(&fixture("saxpy.sm_90.fatbin")).unwrap();
    assert_eq!(globals_of(&exec, &plain).len(), 2);
    assert!(LOGGED.0.lock().unwrap().is_empty());
}

#[test]
fn dropping_an_image_waits_for_copies_of_its_globals() {
    let Some((_lock, exec)) = gpu() else { return };
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (_busy_image, busy) = fixture_kernel(&exec, "grid2d.ptx", "grid2d");
    let image = exec.load_image(&fixture("saxpy.ptx")).unwrap();
    let (_, bias, size) = globals_of(&exec, &image)
        .into_iter()
        .find(|g| g.0 == "bias")
        .expect("saxpy.ptx defines bias");
    let mut q = exec.queue().unwrap();
    // A kernel keeps the stream busy (on the simulator it waits before it
    // runs), so the copy of the global behind it is still queued when the
    // image goes, as when a launch fails after the snapshot of the globals
    // was queued and the recorder is dropped without a synchronize.
    common::sim::set_kernel_delay_us(50_000);
    let values = [region.base(), 8, 8];
    q.launch(&busy, &grid2d_launch(&values, [1, 1, 1])).unwrap();
    let t = q
        .download(exec.buffer(size as usize).unwrap(), &[seg(bias, 0, 4)])
        .unwrap();
    drop(image);
    common::sim::set_kernel_delay_us(0);
    sync(&mut q).unwrap();
    let (_, buf) = std::iter::from_fn(|| q.reclaim())
        .find(|(got, _)| *got == t)
        .expect("the download's buffer");
    assert_eq!(f32s(&buf.as_ref()[..4]), [0.5], "the image's bias");
}

#[test]
fn dropping_an_image_waits_for_kernels_given_the_address_of_its_global() {
    let Some((_lock, exec)) = gpu() else { return };
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (_image, saxpy) = fixture_kernel(&exec, "saxpy.ptx", "saxpy");
    // Another image, whose global the kernel reads through its `x`.
    let other = exec.load_image(&fixture("saxpy.ptx")).unwrap();
    let bias = exec
        .global(&other, "bias")
        .unwrap()
        .expect("saxpy.ptx defines bias")
        .addr;
    let y = region.base();
    let mut q = exec.queue().unwrap();
    q.upload(buffer_with(&exec, &f32_bytes(&[1.0])), &[seg(y, 0, 4)])
        .unwrap();
    sync(&mut q).unwrap();
    let modules = || common::sim::counts().map(|c| c[7]);
    let before = modules();
    // The kernel waits before it runs (on the simulator), so it is still
    // queued when the image goes.
    common::sim::set_kernel_delay_us(100_000);
    let values = [u64::from(2f32.to_bits()), bias, y, 1];
    let launch = Launch {
        config: LaunchConfig {
            grid: [1, 1, 1],
            block: [32, 1, 1],
            shared_mem: 0,
        },
        args: KernelArgs {
            values: &values,
            sizes: &[4, 8, 8, 4],
            data: &[],
        },
    };
    q.launch(&saxpy, &launch).unwrap();
    common::sim::set_kernel_delay_us(0);
    drop(other);
    assert_eq!(modules(), before, "kept by the queue");
    sync(&mut q).unwrap_or_else(|e| panic!("the kernel read an unloaded global: {e}"));
    assert_eq!(
        modules(),
        before.map(|n| n - 1),
        "unloaded once the launch is covered"
    );
    // y = a x + y + bias, with x the other image's bias.
    let got = read_device(&exec, &mut q, y, 4);
    assert_eq!(f32s(&got), [2.0 * 0.5 + 1.0 + 0.5]);
}

#[test]
fn a_module_unloaded_by_a_synchronize_waits_for_no_other_queue() {
    let Some((_lock, exec)) = gpu() else { return };
    if !simulated() {
        println!("skipped: needs the simulator's kernel delay");
        return;
    }
    let region = exec.reserve(RegionRequest::new(None, MIB)).unwrap();
    let (image, kernel) = fixture_kernel(&exec, "grid2d.ptx", "grid2d");
    let globals_image = exec.load_image(&fixture("saxpy.ptx")).unwrap();
    let (_, bias, _) = globals_of(&exec, &globals_image)
        .into_iter()
        .find(|g| g.0 == "bias")
        .expect("saxpy.ptx defines bias");
    let (_slow_image, slow) = fixture_kernel(&exec, "grid2d.ptx", "grid2d");
    let mut a = exec.queue().unwrap();
    let mut b = exec.queue().unwrap();
    let modules = || common::sim::counts().expect("the simulator")[7];
    let before = modules();
    // `a` holds the last references to two modules: one by a launch of its
    // kernel, one by a copy of its global.
    let values = [region.base(), 8, 8];
    a.launch(&kernel, &grid2d_launch(&values, [1, 1, 1]))
        .unwrap();
    let t = a
        .download(exec.buffer(4).unwrap(), &[seg(bias, 0, 4)])
        .unwrap();
    drop((kernel, image, globals_image));
    assert_eq!(modules(), before, "kept by the queue");
    // Meanwhile `b` runs a kernel of a third module for a second.
    common::sim::set_kernel_delay_us(1_000_000);
    let elsewhere = [region.base() + 4096, 8, 8];
    b.launch(&slow, &grid2d_launch(&elsewhere, [1, 1, 1]))
        .unwrap();
    common::sim::set_kernel_delay_us(0);
    // `a`'s synchronize unloads both modules, without waiting for `b`.
    let start = std::time::Instant::now();
    sync(&mut a).unwrap();
    let took = start.elapsed();
    assert_eq!(modules(), before - 2, "unloaded by the synchronize");
    assert!(
        took < std::time::Duration::from_millis(500),
        "the synchronize took {took:?}: it waited for the other queue"
    );
    let (_, buf) = std::iter::from_fn(|| a.reclaim())
        .find(|(got, _)| *got == t)
        .expect("the download's buffer");
    assert_eq!(f32s(buf.as_ref()), [0.5], "the image's bias");
    sync(&mut b).unwrap();
}
