//! One kernel launch recorded on the device through the core's record
//! schedule, as an application on a microcontroller would: its data and
//! globals uploaded (the pending H2D copies), then
//! `reprise_core::schedule::record` in [`Mode::Async`] (one synchronize)
//! or [`Mode::Sync`] (one after every step, LLVM's way).

use core::cell::Cell;
use core::future::{Future, poll_fn};
use core::pin::pin;

use reprise_core::BumpRegion;
use reprise_core::exec::{Executor, GlobalInfo, KernelArgs, Launch, LaunchConfig, Queue, Segment};
use reprise_core::schedule::{
    self, Buffers, Mode, RecordPlan, ReplayPlan, Restore, ScheduleError, Upload,
};

use crate::device::{self, MEMORY};
use crate::exec::{McuBuffer, McuError, McuExecutor, McuKernel};

/// Elements of the kernel's array.
pub const COUNT: usize = 48;
/// Bytes of it.
pub const DATA_BYTES: usize = COUNT * 4;
/// The kernel's name.
pub const KERNEL: &str = "scale";
/// The globals' initial values: `factor` (u32) and `calls` (u64).
pub const FACTOR: u32 = 3;
/// See [`FACTOR`].
pub const CALLS: u64 = 41;
/// Bytes of the globals' buffer (`factor`, then `calls`).
pub const GLOBAL_BYTES: usize = 12;

/// The device's globals, as its image defines them.
pub static GLOBALS: [GlobalInfo<'static>; 2] = [
    GlobalInfo {
        name: "factor",
        addr: device::GLOBALS,
        size: 4,
    },
    GlobalInfo {
        name: "calls",
        addr: device::GLOBALS + 8,
        size: 8,
    },
];

/// The firmware's kernels.
pub static KERNELS: [McuKernel; 1] = [McuKernel {
    name: KERNEL,
    run: scale,
}];

/// The kernel: `data[i] = data[i] * factor + i` over `args[1]` u32s at
/// device address `args[0]`, and one more in `calls`. Written so that it
/// calls nothing (no bounds-check panic paths): its code alone is the
/// image's.
#[inline(never)]
#[cfg_attr(target_arch = "arm", unsafe(link_section = ".kernel.scale"))]
pub fn scale(memory: &mut [u8; MEMORY], args: &[u64]) {
    let g = (device::GLOBALS - device::BASE) as usize;
    let mut factor = [0u8; 4];
    factor.copy_from_slice(&memory[g..g + 4]);
    let factor = u32::from_le_bytes(factor);
    let (Some(&at), Some(&n)) = (args.first(), args.get(1)) else {
        return;
    };
    let at = at.wrapping_sub(device::BASE) as usize;
    let end = at.saturating_add((n as usize).saturating_mul(4)).min(g);
    if let Some(data) = memory.get_mut(at..end) {
        for (i, x) in data.chunks_exact_mut(4).enumerate() {
            let v = u32::from_le_bytes([x[0], x[1], x[2], x[3]]);
            x.copy_from_slice(&v.wrapping_mul(factor).wrapping_add(i as u32).to_le_bytes());
        }
    }
    let mut calls = [0u8; 8];
    calls.copy_from_slice(&memory[g + 8..g + 16]);
    let calls = u64::from_le_bytes(calls).wrapping_add(1);
    memory[g + 8..g + 16].copy_from_slice(&calls.to_le_bytes());
}

/// The launch's host buffers, kept from launch to launch (the static
/// arena gives each once).
pub struct Bufs {
    /// The application's data, uploaded before the launch.
    pub data: Option<McuBuffer>,
    /// The application's globals, uploaded before the launch.
    pub init: Option<McuBuffer>,
    /// The snapshot before the kernel.
    pub input: Option<McuBuffer>,
    /// The snapshot after it.
    pub output: Option<McuBuffer>,
    /// The globals before it.
    pub globals: Option<McuBuffer>,
}

/// The device's region as the application allocated in it, and the
/// snapshot's length.
pub struct Layout {
    /// Device address of the kernel's array.
    pub data: u64,
    /// Bytes of the region in use: what a snapshot copies.
    pub used: usize,
}

/// The application's allocations in the region, through the core's
/// recording allocator: a header word, then the array (64-byte aligned).
pub fn layout() -> Result<Layout, ScheduleError<McuError>> {
    let region = BumpRegion::new(device::BASE, device::REGION as u64);
    let oom = |_| ScheduleError::Executor(McuError::Full("region"));
    region.alloc(4, 1).map_err(oom)?;
    let data = region.alloc(DATA_BYTES as u64, 64).map_err(oom)?;
    Ok(Layout {
        data,
        used: region.used() as usize,
    })
}

impl Bufs {
    /// Every buffer, from `exec`.
    pub fn new(exec: &McuExecutor, used: usize) -> Result<Self, McuError> {
        Ok(Bufs {
            data: Some(exec.buffer(DATA_BYTES)?),
            init: Some(exec.buffer(GLOBAL_BYTES)?),
            input: Some(exec.buffer(used)?),
            output: Some(exec.buffer(used)?),
            globals: Some(exec.buffer(GLOBAL_BYTES)?),
        })
    }
}

/// Polls `fut` to completion, counting its polls into `polls` (each poll
/// after the first answers a wake).
pub async fn counted<F: Future>(fut: F, polls: &Cell<u32>) -> F::Output {
    let mut fut = pin!(fut);
    poll_fn(|cx| {
        polls.set(polls.get() + 1);
        fut.as_mut().poll(cx)
    })
    .await
}

/// The application's element `i` before the launch.
pub const fn initial(i: usize) -> u32 {
    (i as u32) * 7 + 1
}

/// Uploads the application's data and globals, then records the launch
/// with `mode`; the buffers come back into `bufs`.
pub async fn record(
    exec: &McuExecutor,
    at: &Layout,
    bufs: &mut Bufs,
    mode: Mode,
) -> Result<(), ScheduleError<McuError>> {
    let missing = ScheduleError::MissingBuffer;
    let mut queue = exec.queue()?;
    let image = exec.load_image(crate::exec::IMAGE_HEADER)?;
    let kernel = exec.kernel(&image, KERNEL)?;
    let mut data = bufs.data.take().ok_or(missing("data"))?;
    for (i, x) in data.as_mut().chunks_exact_mut(4).enumerate() {
        x.copy_from_slice(&initial(i).to_le_bytes());
    }
    let mut init = bufs.init.take().ok_or(missing("globals' values"))?;
    init.as_mut()[..4].copy_from_slice(&FACTOR.to_le_bytes());
    init.as_mut()[4..].copy_from_slice(&CALLS.to_le_bytes());
    let globals = [
        Segment {
            device: GLOBALS[0].addr,
            host_offset: 0,
            len: 4,
        },
        Segment {
            device: GLOBALS[1].addr,
            host_offset: 4,
            len: 8,
        },
    ];
    let uploads = [Upload {
        buffer: data,
        segment: Segment {
            device: at.data,
            host_offset: 0,
            len: DATA_BYTES,
        },
    }];
    // The globals' values go up as the application's second copy (two
    // segments, so it is enqueued here rather than as an `Upload`).
    queue.upload(init, &globals)?;
    let values = [at.data, COUNT as u64];
    let plan = RecordPlan {
        kernel: &kernel,
        launch: Launch {
            config: LaunchConfig {
                grid: [1, 1, 1],
                block: [1, 1, 1],
                shared_mem: 0,
            },
            args: KernelArgs {
                values: &values,
                sizes: &[],
                data: &[],
            },
        },
        snapshot: Segment {
            device: device::BASE,
            host_offset: 0,
            len: at.used,
        },
        globals: &globals,
        save_output: true,
        mode,
    };
    let buffers = Buffers {
        input: bufs.input.take().ok_or(missing("input"))?,
        globals: bufs.globals.take(),
        output: bufs.output.take(),
    };
    let mut back: [Option<McuBuffer>; 2] = [None, None];
    let got = schedule::record(&mut queue, uploads, plan, buffers, |b| {
        // The application's two buffers: the larger is its data.
        let slot = usize::from(b.as_ref().len() != DATA_BYTES);
        back[slot] = Some(b);
    })
    .await?;
    bufs.input = Some(got.input);
    bufs.output = got.output;
    bufs.globals = got.globals;
    [bufs.data, bufs.init] = back;
    Ok(())
}

/// Replays the launch `bufs` recorded, on the same device, through
/// `reprise_core::schedule::replay`: the input snapshot and the globals
/// uploaded, the kernel launched with the recorded arguments, the region
/// copied back into `bufs.output` (which the caller may clear first).
pub async fn replay(
    exec: &McuExecutor,
    at: &Layout,
    bufs: &mut Bufs,
) -> Result<(), ScheduleError<McuError>> {
    let missing = ScheduleError::MissingBuffer;
    let mut queue = exec.queue()?;
    let image = exec.load_image(crate::exec::IMAGE_HEADER)?;
    let kernel = exec.kernel(&image, KERNEL)?;
    let globals = [
        Segment {
            device: GLOBALS[0].addr,
            host_offset: 0,
            len: 4,
        },
        Segment {
            device: GLOBALS[1].addr,
            host_offset: 4,
            len: 8,
        },
    ];
    let values = [at.data, COUNT as u64];
    let plan = ReplayPlan {
        kernel: &kernel,
        launch: Launch {
            config: LaunchConfig {
                grid: [1, 1, 1],
                block: [1, 1, 1],
                shared_mem: 0,
            },
            args: KernelArgs {
                values: &values,
                sizes: &[],
                data: &[],
            },
        },
        memory: Segment {
            device: device::BASE,
            host_offset: 0,
            len: at.used,
        },
        globals: &globals,
        save_output: true,
        restore: Restore::Upload,
    };
    let buffers = Buffers {
        input: bufs.input.take().ok_or(missing("input"))?,
        globals: bufs.globals.take(),
        output: bufs.output.take(),
    };
    let got = schedule::replay(&mut queue, plan, buffers, drop).await?;
    bufs.input = Some(got.input);
    bufs.globals = got.globals;
    bufs.output = got.output;
    Ok(())
}

/// What a recorded launch should hold: the input snapshot's array is the
/// application's, the output's is `x * factor + i`, and the globals are
/// their values before the kernel. `None` when all is right, else which
/// is wrong.
pub fn verify(at: &Layout, bufs: &Bufs) -> Option<&'static str> {
    let off = (at.data - device::BASE) as usize;
    let word = |b: &Option<McuBuffer>, i: usize| {
        b.as_ref().map(|b| {
            let x = &b.as_ref()[off + 4 * i..off + 4 * i + 4];
            u32::from_le_bytes([x[0], x[1], x[2], x[3]])
        })
    };
    for i in 0..COUNT {
        if word(&bufs.input, i) != Some(initial(i)) {
            return Some("input snapshot");
        }
        if word(&bufs.output, i) != Some(initial(i).wrapping_mul(FACTOR).wrapping_add(i as u32)) {
            return Some("output snapshot");
        }
    }
    let mut want = [0u8; GLOBAL_BYTES];
    want[..4].copy_from_slice(&FACTOR.to_le_bytes());
    want[4..].copy_from_slice(&CALLS.to_le_bytes());
    if bufs.globals.as_ref().map(|g| g.as_ref()) != Some(&want[..]) {
        return Some("globals");
    }
    None
}
