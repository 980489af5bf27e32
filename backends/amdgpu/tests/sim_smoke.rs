//! reprise's AMD executor end to end on the simulated HSA runtime
//! (`test-support/src/hsa_runtime`): a region at the fresh base, the gfx90a fixture, saxpy
//! and mixed launched between uploads and downloads, a copy on the device,
//! one asynchronous handler per synchronize, a kernel fault, a code object
//! for another GPU, and nothing left live afterwards.
//!
//! The simulator's state is per process, so the checks run in one test, in
//! order.

mod common;

use common::{fixture, synchronize};
use reprise_test_support::hsa_runtime as sim;

use reprise_amdgpu::{AmdBuffer, AmdError, AmdExecutor, AmdKernel, AmdQueue, FRESH_BASE};
use reprise_core::exec::{
    DeviceRegion, Executor, KernelArgs, Launch, LaunchConfig, Queue, RegionRequest, Segment, Ticket,
};

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn buffer_of(exec: &AmdExecutor, values: &[f32]) -> AmdBuffer {
    let mut b = exec.buffer(values.len() * 4).unwrap();
    for (dst, v) in b.as_mut().chunks_exact_mut(4).zip(values) {
        dst.copy_from_slice(&v.to_le_bytes());
    }
    b
}

fn whole(device: u64, len: usize) -> [Segment; 1] {
    [Segment {
        device,
        host_offset: 0,
        len,
    }]
}

/// Every buffer the queue gives back, by ticket.
fn reclaim_all(q: &mut AmdQueue) -> Vec<(Ticket, AmdBuffer)> {
    std::iter::from_fn(|| q.reclaim()).collect()
}

fn take(bufs: &mut Vec<(Ticket, AmdBuffer)>, t: Ticket) -> AmdBuffer {
    let i = bufs.iter().position(|(u, _)| *u == t).expect("ticket back");
    bufs.swap_remove(i).1
}

fn saxpy(q: &mut AmdQueue, k: &AmdKernel, a: f32, x: u64, y: u64, n: u32) -> Result<(), AmdError> {
    let values = [u64::from(a.to_bits()), x, y, u64::from(n)];
    let launch = Launch {
        config: LaunchConfig {
            grid: [4, 1, 1],
            block: [256, 1, 1],
            shared_mem: 0,
        },
        args: KernelArgs {
            values: &values,
            sizes: &[4, 8, 8, 4],
            data: &[],
        },
    };
    q.launch(k, &launch)
}

const KINDS: [&str; 10] = [
    "allocations",
    "signals",
    "queues",
    "executables",
    "readers",
    "handlers",
    "reservations",
    "handles",
    "mappings",
    "copies",
];

#[test]
fn end_to_end() {
    if let Err(why) = sim::available() {
        eprintln!("skipped: {why}");
        return;
    }
    sim::use_in_this_process().unwrap();
    let probe = sim::Probe::open().unwrap();

    let exec = AmdExecutor::new(0).unwrap();
    assert_eq!(exec.name(), "gfx90a");
    assert_eq!(exec.isa(), "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
    assert!(exec.has_virtual_memory());
    assert_eq!(probe.init_count(), 1);

    let region = exec
        .reserve(RegionRequest::new(Some(FRESH_BASE), 1 << 20))
        .unwrap();
    let base = region.base();
    assert_eq!(base, FRESH_BASE);
    assert_eq!(probe.live("reservations"), 1);
    assert_eq!(probe.live("mappings"), 1);

    let image = exec
        .load_image(&fixture("saxpy_mixed.gfx90a.hsaco"))
        .unwrap();
    let kernel = exec.kernel(&image, "saxpy").unwrap();
    let bias = exec.global(&image, "bias").unwrap().expect("bias");
    let launches = exec.global(&image, "launches").unwrap().expect("launches");
    assert_eq!((bias.size, launches.size), (4, 4));
    assert!(exec.kernel(&image, "nope").is_err());

    // saxpy between uploads and downloads, one synchronize.
    let n = 1000usize;
    let a = 2.5f32;
    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.75 - 3.0).collect();
    let ys: Vec<f32> = (0..n).map(|i| 1.0 / (i as f32 + 1.0)).collect();
    let (x, y) = (base, base + 0x1000);
    let mut q = exec.queue().unwrap();
    assert_eq!(probe.live("queues"), 1);
    q.upload(buffer_of(&exec, &xs), &whole(x, n * 4)).unwrap();
    q.upload(buffer_of(&exec, &ys), &whole(y, n * 4)).unwrap();
    saxpy(&mut q, &kernel, a, x, y, n as u32).unwrap();
    let t_y = q
        .download(exec.buffer(n * 4).unwrap(), &whole(y, n * 4))
        .unwrap();
    let t_l = q
        .download(exec.buffer(4).unwrap(), &whole(launches.addr, 4))
        .unwrap();
    let (waits, handlers) = (probe.waits(), probe.handlers());
    synchronize(&mut q).unwrap();
    assert_eq!(
        probe.waits(),
        waits,
        "a synchronize waits through a handler"
    );
    assert_eq!(probe.handlers(), handlers + 1);
    let mut bufs = reclaim_all(&mut q);
    assert_eq!(bufs.len(), 4);
    let got = floats(take(&mut bufs, t_y).as_ref());
    for i in 0..n {
        let want = a * xs[i] + ys[i] + 0.5;
        assert_eq!(
            got[i].to_bits(),
            want.to_bits(),
            "y[{i}]: {} != {want}",
            got[i]
        );
    }
    assert_eq!(take(&mut bufs, t_l).as_ref(), 1u32.to_le_bytes());
    drop(bufs);

    // A copy on the device, then mixed (a struct argument, a global table).
    let z = base + 0x2000;
    assert!(q.copy_on_device(z, y, n * 4).unwrap());
    let t_z = q
        .download(exec.buffer(n * 4).unwrap(), &whole(z, n * 4))
        .unwrap();
    let mixed = exec.kernel(&image, "mixed").unwrap();
    let out = base + 0x3000;
    let mut data = Vec::new();
    for v in [1.5f32, 2.0, -0.25] {
        data.extend_from_slice(&v.to_le_bytes());
    }
    data.extend_from_slice(&7i32.to_le_bytes());
    let values = [3u64, u64::from(0.125f32.to_bits()), 0, out];
    let launch = Launch {
        config: LaunchConfig {
            grid: [2, 1, 1],
            block: [64, 1, 1],
            shared_mem: 0,
        },
        args: KernelArgs {
            values: &values,
            sizes: &[4, 4, 16, 8],
            data: &data,
        },
    };
    q.launch(&mixed, &launch).unwrap();
    let t_m = q
        .download(exec.buffer(128 * 4).unwrap(), &whole(out, 128 * 4))
        .unwrap();
    synchronize(&mut q).unwrap();
    let mut bufs = reclaim_all(&mut q);
    assert_eq!(floats(take(&mut bufs, t_z).as_ref()), got);
    let m = floats(take(&mut bufs, t_m).as_ref());
    for (i, v) in m.iter().enumerate() {
        let want = (i as i32 * 3) as f32 + 0.125 + 1.5 + 2.0 + -0.25 + 7.0 + 0.0;
        assert_eq!(*v, want, "out[{i}]");
    }
    drop(bufs);

    // A code object for another GPU.
    let err = exec
        .load_image(&fixture("saxpy_mixed.gfx1030.hsaco"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("gfx1030") && err.contains("gfx90a"), "{err}");

    // Nothing left once everything is gone.
    drop((q, mixed, kernel, image, region, exec));
    for what in KINDS {
        assert_eq!(probe.live(what), 0, "live {what}");
    }
    assert_eq!(probe.init_count(), 0);

    // A kernel writing through a stray pointer faults the queue.
    let exec = AmdExecutor::new(0).unwrap();
    let region = exec
        .reserve(RegionRequest::new(Some(FRESH_BASE), 1 << 20))
        .unwrap();
    let image = exec
        .load_image(&fixture("saxpy_mixed.gfx90a.hsaco"))
        .unwrap();
    let kernel = exec.kernel(&image, "saxpy").unwrap();
    let mut q = exec.queue().unwrap();
    q.upload(buffer_of(&exec, &xs), &whole(region.base(), n * 4))
        .unwrap();
    saxpy(&mut q, &kernel, a, region.base(), 0xdead_0000, n as u32).unwrap();
    let err = synchronize(&mut q).unwrap_err().to_string();
    assert!(err.contains("the kernel `saxpy` faulted"), "{err}");
    assert!(synchronize(&mut q).is_err(), "a faulted queue stays lost");
    drop((q, kernel, image, region, exec));
    // The executor leaves a faulted queue's signals and kernels to the
    // process; the queue, region and buffers go.
    for what in ["queues", "reservations", "handles", "mappings", "copies"] {
        assert_eq!(probe.live(what), 0, "live {what} after the fault");
    }
}

/// saxpy over 1000 elements at `base` of a fresh queue, checked.
fn saxpy_round(exec: &AmdExecutor, base: u64) {
    let image = exec
        .load_image(&fixture("saxpy_mixed.gfx90a.hsaco"))
        .unwrap();
    let kernel = exec.kernel(&image, "saxpy").unwrap();
    let n = 1000usize;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let ys: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
    let mut q = exec.queue().unwrap();
    q.upload(buffer_of(exec, &xs), &whole(base, n * 4)).unwrap();
    q.upload(buffer_of(exec, &ys), &whole(base + 0x1000, n * 4))
        .unwrap();
    saxpy(&mut q, &kernel, 3.0, base, base + 0x1000, n as u32).unwrap();
    let t = q
        .download(exec.buffer(n * 4).unwrap(), &whole(base + 0x1000, n * 4))
        .unwrap();
    synchronize(&mut q).unwrap();
    let mut bufs = reclaim_all(&mut q);
    let got = floats(take(&mut bufs, t).as_ref());
    for i in 0..n {
        assert_eq!(got[i], 3.0 * xs[i] + ys[i] + 0.5, "y[{i}]");
    }
}

/// The calls of one recorded round (open, reserve, load, find, buffers,
/// queue, copies, a launch, a synchronize) that can fail, each made to fail
/// in turn by the `fail_step` scenario.
const STEPS: [&str; 17] = [
    "hsa_iterate_agents",
    "hsa_amd_register_system_event_handler",
    "hsa_amd_agent_iterate_memory_pools",
    "hsa_amd_vmem_address_reserve",
    "hsa_amd_vmem_handle_create",
    "hsa_amd_vmem_map",
    "hsa_amd_vmem_set_access",
    "hsa_code_object_reader_create_from_memory",
    "hsa_executable_create_alt",
    "hsa_executable_load_agent_code_object",
    "hsa_executable_freeze",
    "hsa_amd_memory_pool_allocate",
    "hsa_amd_agents_allow_access",
    "hsa_queue_create",
    "hsa_signal_create",
    "hsa_amd_memory_async_copy",
    "hsa_amd_signal_async_handler",
];

/// [`saxpy_round`] with every step fallible.
fn try_round(exec: &AmdExecutor, base: u64) -> Result<(), AmdError> {
    let image = exec.load_image(&fixture("saxpy_mixed.gfx90a.hsaco"))?;
    let kernel = exec.kernel(&image, "saxpy")?;
    let n = 1000usize;
    let mut q = exec.queue()?;
    let mut x = exec.buffer(n * 4)?;
    x.as_mut().fill(1);
    q.upload(x, &whole(base, n * 4))?;
    q.upload(exec.buffer(n * 4)?, &whole(base + 0x1000, n * 4))?;
    saxpy(&mut q, &kernel, 3.0, base, base + 0x1000, n as u32)?;
    q.download(exec.buffer(n * 4)?, &whole(base + 0x1000, n * 4))?;
    synchronize(&mut q)
}

#[test]
fn a_failed_step_undoes_the_earlier_ones() {
    if let Err(why) = sim::available() {
        eprintln!("skipped: {why}");
        return;
    }
    for call in STEPS {
        child(
            "fail_step",
            &[("REPRISE_SIM_HSA_FAIL", &format!("{call}:1"))],
        );
    }
}

/// One scenario in a child process (the runtime is loaded once per
/// process, and the simulator reads its switches at the first `hsa_init`).
fn child(scenario: &str, env: &[(&str, &str)]) {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "scenario", "--nocapture", "--test-threads=1"])
        .env("REPRISE_SIM_SCENARIO", scenario);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "scenario {scenario}:\n{text}");
    assert!(
        text.contains("1 passed"),
        "scenario {scenario} did not run:\n{text}"
    );
}

#[test]
fn switches() {
    if let Err(why) = sim::available() {
        eprintln!("skipped: {why}");
        return;
    }
    let novmem = sim::variant(&["-DSIM_NO_VMEM"]).unwrap();
    let novmem = novmem.to_str().unwrap();
    child("novmem", &[(hsa_sys::LIBRARY_VARIABLE, novmem)]);
    child("vmem_ignored", &[("REPRISE_SIM_HSA_VMEM", "ignored")]);
    child("gfx1030", &[("REPRISE_SIM_HSA_GFX", "gfx1030")]);
    child("no_gpu", &[("REPRISE_SIM_HSA_NO_GPU", "1")]);
    child("init_fails", &[("REPRISE_SIM_HSA_INIT", "1008")]);
    child(
        "fail_queue",
        &[("REPRISE_SIM_HSA_FAIL", "hsa_queue_create:1")],
    );
    child("copy_delay", &[("REPRISE_SIM_HSA_COPY_DELAY_US", "300")]);
    child(
        "abandoned_sync",
        &[("REPRISE_SIM_HSA_COPY_DELAY_US", "20000")],
    );
}

/// The child's side of [`switches`]: nothing unless
/// `REPRISE_SIM_SCENARIO` names a scenario.
#[test]
fn scenario() {
    let Ok(name) = std::env::var("REPRISE_SIM_SCENARIO") else {
        return;
    };
    if name != "novmem" {
        sim::use_in_this_process().unwrap();
    }
    let fresh = || RegionRequest::new(Some(FRESH_BASE), 1 << 20);
    match name.as_str() {
        "novmem" => {
            let exec = AmdExecutor::new(0).unwrap();
            assert!(!exec.has_virtual_memory());
            assert!(exec.reserve(fresh()).is_err());
            let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
            saxpy_round(&exec, region.base());
        }
        "vmem_ignored" => {
            let probe = sim::Probe::open().unwrap();
            let exec = AmdExecutor::new(0).unwrap();
            let err = exec.reserve(fresh()).unwrap_err().to_string();
            assert!(!err.is_empty());
            assert_eq!(probe.live("reservations"), 0);
            let region = exec.reserve(RegionRequest::new(None, 1 << 20)).unwrap();
            assert_ne!(region.base(), FRESH_BASE);
        }
        "gfx1030" => {
            let exec = AmdExecutor::new(0).unwrap();
            assert_eq!(exec.name(), "gfx1030");
            assert_eq!(exec.isa(), "amdgcn-amd-amdhsa--gfx1030");
            let image = exec.load_image(&fixture("saxpy_mixed.gfx1030.hsaco"));
            assert!(exec.kernel(&image.unwrap(), "saxpy").is_ok());
            assert!(
                exec.load_image(&fixture("saxpy_mixed.gfx90a.hsaco"))
                    .is_err()
            );
        }
        "no_gpu" => {
            let probe = sim::Probe::open().unwrap();
            assert!(AmdExecutor::new(0).is_err());
            assert_eq!(probe.init_count(), 0, "a failed open shuts down");
        }
        "init_fails" => {
            let err = AmdExecutor::new(0).unwrap_err().to_string();
            assert!(!err.is_empty());
        }
        "fail_queue" => {
            let exec = AmdExecutor::new(0).unwrap();
            assert!(exec.queue().is_err());
            assert!(exec.queue().is_ok());
        }
        "copy_delay" => {
            let exec = AmdExecutor::new(0).unwrap();
            let region = exec.reserve(fresh()).unwrap();
            saxpy_round(&exec, region.base());
        }
        "fail_step" => {
            let call = std::env::var("REPRISE_SIM_HSA_FAIL").unwrap();
            let probe = sim::Probe::open().unwrap();
            let result = (|| {
                let exec = AmdExecutor::new(0)?;
                let region = exec.reserve(fresh())?;
                try_round(&exec, region.base())
            })();
            let err = result.expect_err(&format!("failing {call} went unnoticed"));
            // The injected status surfaces (the call that failed may be
            // one the simulator makes inside another).
            assert!(
                err.to_string()
                    .contains("HSA_STATUS_ERROR_OUT_OF_RESOURCES"),
                "{call}: {err}"
            );
            for what in KINDS {
                assert_eq!(probe.live(what), 0, "{call}: live {what}");
            }
            assert_eq!(probe.init_count(), 0, "{call}: hsa_init not balanced");
        }
        "abandoned_sync" => {
            // A synchronize polled once and dropped, then more work: the
            // next synchronize must cover all of it, not only what the
            // first one saw.
            let exec = AmdExecutor::new(0).unwrap();
            let region = exec.reserve(fresh()).unwrap();
            let base = region.base();
            let n = 4096usize;
            let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let mut q = exec.queue().unwrap();
            q.upload(buffer_of(&exec, &xs), &whole(base, n * 4))
                .unwrap();
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            assert!(
                q.poll_synchronize(&mut cx).is_pending(),
                "the delayed copy is still running"
            );
            let t = q
                .download(exec.buffer(n * 4).unwrap(), &whole(base, n * 4))
                .unwrap();
            synchronize(&mut q).unwrap();
            let mut bufs = reclaim_all(&mut q);
            assert_eq!(floats(take(&mut bufs, t).as_ref()), xs);
        }
        other => panic!("unknown scenario {other}"),
    }
}
