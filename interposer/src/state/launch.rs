//! Launches: recorded when selected, and what becomes of those that are
//! not, or whose recording fails.

use std::ffi::c_int;

use super::*;

/// A launch that cannot be recorded, counted for the summary while
/// recording is on.
pub fn not_recordable(why: Skipped) {
    if let Ok(phase) = enter()
        && let Phase::Recording(_) = &*phase
    {
        summary::skipped(why);
    }
}

/// Recordings failing before their kernel, one after the other, that stop
/// recording.
const FAILURES_IN_A_ROW: u32 = 8;

/// Why [`launch_known`] did not record a launch.
enum NotRecorded {
    /// The launch cannot be recorded (counted for `why`); the driver runs
    /// it.
    Skip(Skipped),
    /// The recording failed before the kernel was queued: the driver runs
    /// it, and answers the program.
    Before(reprise_std::Error),
    /// The recording failed after the program's kernel was queued: it ran,
    /// and must not run again.
    After(reprise_std::Error),
    /// The driver refuses the launch as the program made it (a block past
    /// the device's or the function's limit, say): the program's own error,
    /// which the driver's launch then gives it unchanged.
    Refused,
}

/// How a launch the recorder ran went.
struct Ran {
    recorded: bool,
    /// Recorded with arguments marked (outside the region, or in globals).
    marked: bool,
}

/// Records `launch` when the configuration selects it: `Some` with the
/// launch's result when the recorder ran it, `None` for the driver to run
/// it (not selected, not recordable, or recording is off).
///
/// # Safety
/// `launch.params` holds one pointer per parameter of the function.
pub unsafe fn launch(launch: &Launch) -> Option<CuResult> {
    // Before the state is taken: a host function may wait for a thread
    // that needs it.
    if behind_host_function(launch.stream) {
        not_recordable(Skipped::HostFunction);
        return None;
    }
    let mut phase = match enter() {
        Ok(p) => p,
        Err(Busy::Timeout) => {
            summary::skipped(Skipped::Busy);
            return None;
        }
        Err(Busy::Passing) => return None,
    };
    let s = state(&mut phase)?;
    if capturing(launch.stream) {
        summary::skipped(Skipped::Capture);
        return None;
    }

    if current_device() != Some(s.device) {
        summary::skipped(Skipped::OtherDevice);
        return None;
    }
    if !s.kernels.contains_key(&(launch.function as usize)) {
        match discover(s, launch.function) {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                give_up(&mut phase, e);
                return None;
            }
            None => {
                summary::skipped(Skipped::Unknown);
                return None;
            }
        }
    }
    let s = match &mut *phase {
        Phase::Recording(s) => s,
        _ => return None,
    };
    let Some(kernel) = s.kernels.remove(&(launch.function as usize)) else {
        summary::skipped(Skipped::Unknown);
        return None;
    };
    // SAFETY: the caller's guarantee.
    let result = unsafe { launch_known(s, &kernel, launch) };
    s.kernels.insert(launch.function as usize, kernel);
    match result {
        Ok(ran) => {
            s.failed_in_a_row = 0;
            if ran.recorded {
                summary::recorded(ran.marked);
            }
            // The disk budget (or the free space kept) refused this
            // launch's capture: it ran, unrecorded, and so do the rest.
            if let Some(why) = s.rec.disk_stop().map(str::to_owned) {
                give_up(&mut phase, why);
            }
            Some(SUCCESS)
        }
        Err(NotRecorded::Refused) => {
            summary::skipped(Skipped::Refused);
            None
        }
        Err(NotRecorded::Skip(why)) => {
            summary::skipped(why);
            None
        }
        Err(NotRecorded::Before(e)) => {
            summary::skipped(Skipped::Failed);
            s.failed_in_a_row += 1;
            if s.failed_in_a_row >= FAILURES_IN_A_ROW {
                give_up(
                    &mut phase,
                    format!("{FAILURES_IN_A_ROW} launches in a row could not be recorded: {e}"),
                );
                return None;
            }
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                say(format_args!(
                    "reprise: a launch was not recorded: {e} (the driver ran it; said once)"
                ))
            });
            None
        }
        Err(NotRecorded::After(e)) => {
            // The kernel ran: the program's launch happened, and a failure
            // the device reported is sticky, so the program sees it next.
            give_up(&mut phase, e);
            Some(SUCCESS)
        }
    }
}

/// [`launch`] of a function the recorder knows.
///
/// # Safety
/// As [`launch`].
unsafe fn launch_known(
    s: &mut State,
    kernel: &Kernel<Interposed>,
    launch: &Launch,
) -> Result<Ran, NotRecorded> {
    use reprise_core::record::{MAX_ARG_DATA, MAX_ARGS, MAX_NAME_LEN};
    let exec = s.rec.executor();
    let mut sizes = [0u32; MAX_ARGS];
    let n = match exec.param_sizes(kernel.handle(), &mut sizes) {
        Ok(Some(n)) if n <= MAX_ARGS => n,
        Ok(Some(_)) => return Err(NotRecorded::Skip(Skipped::TooLarge)),
        _ => return Err(NotRecorded::Skip(Skipped::Unknown)),
    };
    let large: u64 = sizes[..n]
        .iter()
        .filter(|&&s| s > 8)
        .map(|&s| u64::from(s))
        .sum();
    if kernel.name().len() > MAX_NAME_LEN || large > MAX_ARG_DATA as u64 {
        return Err(NotRecorded::Skip(Skipped::TooLarge));
    }
    if n > 0 && launch.params.is_null() {
        // The driver's error to give, not ours.
        return Err(NotRecorded::Skip(Skipped::Unknown));
    }
    if refuses(launch, s.device) {
        return Err(NotRecorded::Refused);
    }
    let mut args = Args::new();
    let heap = heap();
    let mut outside = Vec::new();
    let mut in_globals = Vec::new();
    for (i, &size) in sizes[..n].iter().enumerate() {
        // SAFETY: the caller of `launch` guarantees `params[i]` points at
        // parameter i, which the driver (or, before CUDA 12.4, the PTX the
        // kernel was loaded from) says is `size` bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(*launch.params.add(i) as *const u8, size as usize)
        };
        if let Ok(word) = <[u8; 8]>::try_from(bytes) {
            let v = u64::from_le_bytes(word);
            if !heap.in_region(v) {
                if let Some(range) = heap.outside_range(v) {
                    outside.push((i, range));
                } else if heap.in_global(v) {
                    in_globals.push(i);
                }
            }
        }
        args = args.bytes(bytes);
    }
    // Reachable-only recording closes over what the program holds now,
    // not over blocks it freed.
    s.rec.set_live_allocations(heap.live());
    let extra = extra_ranges(&heap, outside.iter().map(|&(_, r)| r));
    drop(heap);
    // Arguments into memory the capture holds are replayed as recorded.
    outside.retain(|&(_, (addr, _, _))| !extra.iter().any(|e| e.addr == addr));
    let marked = !outside.is_empty() || !in_globals.is_empty();
    for (i, _) in outside {
        args = args.mark_outside(i);
    }
    for i in in_globals {
        args = args.mark_in_global(i);
    }
    *exec.stream.lock().unwrap_or_else(|e| e.into_inner()) = Raw(launch.stream as usize);
    exec.launched
        .store(false, std::sync::atomic::Ordering::Relaxed);
    exec.refused.store(0, std::sync::atomic::Ordering::Relaxed);
    let config = LaunchConfig {
        grid: launch.grid,
        block: launch.block,
        shared_mem: launch.shared,
    };
    let save_output = s.rec.config().save_output;
    lock(&exec.extra).plan(extra, save_output);
    let result = reprise_core::block_on(s.rec.launch(kernel, config, &args));
    lock(&s.rec.executor().extra).done(result.as_ref().ok().and_then(|r| r.seq));
    result
        .map(|r| Ran {
            recorded: r.recorded,
            marked,
        })
        .map_err(|e| {
            let exec = s.rec.executor();
            if exec.launched.load(std::sync::atomic::Ordering::Relaxed) {
                NotRecorded::After(e)
            } else if exec.refused.load(std::sync::atomic::Ordering::Relaxed) != SUCCESS {
                // The recorder's cuLaunchKernel of the program's launch
                // itself was refused: the driver refuses the program's too.
                NotRecorded::Refused
            } else {
                NotRecorded::Before(e)
            }
        })
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Most bytes of memory beyond the region that no argument points into a
/// capture takes as well (a pointer stored in memory may lead there).
const UNREACHED_EXTRA_BYTES: u64 = 64 << 20;

/// The ranges beyond the region a recorded launch holds: the managed,
/// page-locked and registered host memory its arguments point into
/// (`reached`), and, while they stay under [`UNREACHED_EXTRA_BYTES`] in
/// all, the rest of that memory the program holds, which the kernel may
/// reach through pointers stored in memory; in address order, at most
/// [`MAX_EXTRA_RANGES`](reprise_core::record::MAX_EXTRA_RANGES).
fn extra_ranges(
    heap: &crate::heap::Heap,
    reached: impl Iterator<Item = (u64, u64, Outside)>,
) -> Vec<reprise_core::record::ExtraRange> {
    use reprise_core::record::{ExtraRange, MAX_EXTRA_RANGES, MemoryClass};
    let class = |kind| match kind {
        Outside::Managed => Some(MemoryClass::Managed),
        Outside::Host => Some(MemoryClass::Host),
        Outside::Registered => Some(MemoryClass::Registered),
        Outside::Driver => None,
    };
    let mut out: Vec<ExtraRange> = Vec::new();
    let mut unreached = 0u64;
    let ranges = reached
        .map(|r| (r, true))
        .chain(heap.outside_ranges().map(|r| (r, false)));
    for ((addr, size, kind), by_argument) in ranges {
        let Some(class) = class(kind) else {
            continue;
        };
        if out.len() == MAX_EXTRA_RANGES || out.iter().any(|e| e.addr == addr) {
            continue;
        }
        if !by_argument {
            if unreached.saturating_add(size) > UNREACHED_EXTRA_BYTES {
                continue;
            }
            unreached += size;
        }
        out.push(ExtraRange { class, addr, size });
    }
    out.sort_by_key(|e| e.addr);
    out
}

/// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
const FUNC_MAX_THREADS_PER_BLOCK: c_int = 0;
/// `CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X` (then Y, Z).
const DEVICE_MAX_BLOCK_DIM_X: c_int = 2;
/// `CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X` (then Y, Z).
const DEVICE_MAX_GRID_DIM_X: c_int = 5;

/// Whether the driver will refuse `launch`'s geometry, by the limits it
/// reports (the function's threads per block, the device's block and grid
/// dimensions), before any snapshot is queued for it. What the driver does
/// not tell is left to the launch itself (see [`NotRecorded::Refused`]).
fn refuses(launch: &Launch, device: i32) -> bool {
    let threads = launch.block.iter().map(|&b| u64::from(b)).product::<u64>();
    if threads == 0 || launch.grid.contains(&0) {
        return true;
    }
    if let Some(get) = crate::driver_fn!(FuncGetAttribute, "cuFuncGetAttribute") {
        let mut max = 0;
        // SAFETY: the program's function (or library kernel, which the
        // driver takes as one) and a valid out-pointer.
        let rc = unsafe { get(&mut max, FUNC_MAX_THREADS_PER_BLOCK, launch.function) };
        if rc == SUCCESS && max > 0 && threads > max as u64 {
            return true;
        }
    }
    let Some(get) = crate::driver_fn!(DeviceGetAttribute, "cuDeviceGetAttribute") else {
        return false;
    };
    let over = |first: c_int, dims: &[u32; 3]| {
        (0..3).any(|i| {
            let mut max = 0;
            // SAFETY: a valid out-pointer; the recording device.
            let rc = unsafe { get(&mut max, first + i as c_int, device) };
            rc == SUCCESS && max > 0 && dims[i] as u64 > max as u64
        })
    };
    over(DEVICE_MAX_BLOCK_DIM_X, &launch.block) || over(DEVICE_MAX_GRID_DIM_X, &launch.grid)
}

#[cfg(test)]
mod tests {
    use reprise_core::record::MemoryClass;

    use super::*;
    use crate::heap::Heap;

    #[test]
    fn reached_ranges_always_others_while_they_stay_small() {
        let mut h = Heap::default();
        h.outside(0x10_0000, 4096, Outside::Managed);
        h.outside(0x20_0000, 8192, Outside::Host);
        h.outside(0x30_0000, UNREACHED_EXTRA_BYTES, Outside::Registered);
        h.outside(0x90_0000_0000, 1 << 20, Outside::Driver);
        // An argument into the large registered range: it is held, and the
        // small ones besides; device memory the driver placed never is.
        let reached = [(0x30_0000, UNREACHED_EXTRA_BYTES, Outside::Registered)];
        let got = extra_ranges(&h, reached.into_iter());
        let got: Vec<_> = got.iter().map(|e| (e.addr, e.class)).collect();
        assert_eq!(
            got,
            [
                (0x10_0000, MemoryClass::Managed),
                (0x20_0000, MemoryClass::Host),
                (0x30_0000, MemoryClass::Registered)
            ]
        );
        // Unreached, the large one is left out.
        let got = extra_ranges(&h, std::iter::empty());
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.iter().all(|e| e.size < UNREACHED_EXTRA_BYTES));
    }
}
