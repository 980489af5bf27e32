//! Launches: recorded when selected, and what becomes of those that are
//! not, or whose recording fails.

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
}

/// Records `launch` when the configuration selects it: `Some` with the
/// launch's result when the recorder ran it, `None` for the driver to run
/// it (not selected, not recordable, or recording is off).
///
/// # Safety
/// `launch.params` holds one pointer per parameter of the function.
pub unsafe fn launch(launch: &Launch) -> Option<CuResult> {
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
        Ok(recorded) => {
            s.failed_in_a_row = 0;
            if recorded {
                summary::recorded();
            }
            Some(SUCCESS)
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
) -> Result<bool, NotRecorded> {
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
                if heap.outside_kind(v).is_some() {
                    outside.push(i);
                } else if heap.in_global(v) {
                    in_globals.push(i);
                }
            }
        }
        args = args.bytes(bytes);
    }
    drop(heap);
    for i in outside {
        args = args.mark_outside(i);
    }
    for i in in_globals {
        args = args.mark_in_global(i);
    }
    *exec.stream.lock().unwrap_or_else(|e| e.into_inner()) = Raw(launch.stream as usize);
    exec.launched
        .store(false, std::sync::atomic::Ordering::Relaxed);
    let config = LaunchConfig {
        grid: launch.grid,
        block: launch.block,
        shared_mem: launch.shared,
    };
    let result = reprise_core::block_on(s.rec.launch(kernel, config, &args));
    result.map(|r| r.recorded).map_err(|e| {
        if s.rec
            .executor()
            .launched
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            NotRecorded::After(e)
        } else {
            NotRecorded::Before(e)
        }
    })
}
