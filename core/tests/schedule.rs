//! The launch schedules against the fake executor: exact operation order,
//! synchronize counts, buffer contents, cancellation and errors.

mod fake;

use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use fake::{Fake, FakeError, KernelFn, Op};
use reprise_core::exec::*;
use reprise_core::schedule::{
    self, Buffers, Mode, RecordPlan, ReplayPlan, Restore, ScheduleError, Upload,
};

const BASE: u64 = 0x1000;

/// Polls a future by hand until it is ready (the fake may answer Pending).
fn run<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..100 {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
    panic!("future never completed");
}

/// Kernel: x[i] = x[i] * 2 + global, over `args[1]` bytes at `args[0]`;
/// the global lives at BASE + 0x100 (one byte).
fn doubler() -> KernelFn {
    Rc::new(|dev, args| {
        let g = dev.slice(BASE + 0x100, 1)[0];
        for b in dev.slice(args[0], args[1] as usize) {
            *b = b.wrapping_mul(2).wrapping_add(g);
        }
    })
}

fn launch(values: &[u64]) -> Launch<'_> {
    Launch {
        config: LaunchConfig {
            grid: [2, 1, 1],
            block: [32, 1, 1],
            shared_mem: 0,
        },
        args: KernelArgs {
            values,
            sizes: &[],
            data: &[],
        },
    }
}

fn seg(device: u64, host_offset: usize, len: usize) -> Segment {
    Segment {
        device,
        host_offset,
        len,
    }
}

struct Setup {
    fake: Fake,
    kernel: KernelFn,
    globals: [Segment; 1],
    snapshot: Segment,
}

fn setup() -> Setup {
    let fake = Fake::new(BASE, 0x200);
    fake.0.borrow_mut().device.slice(BASE + 0x100, 1)[0] = 1;
    Setup {
        fake,
        kernel: doubler(),
        globals: [seg(BASE + 0x100, 0, 1)],
        snapshot: seg(BASE, 0, 4),
    }
}

fn record_once(
    s: &Setup,
    mode: Mode,
    save_output: bool,
) -> Result<Buffers<Vec<u8>>, ScheduleError<FakeError>> {
    let mut q = s.fake.queue().unwrap();
    let args = [BASE, 4];
    let plan = RecordPlan {
        kernel: &s.kernel,
        launch: launch(&args),
        snapshot: s.snapshot,
        globals: &s.globals,
        save_output,
        mode,
    };
    let uploads = [Upload {
        buffer: vec![1, 2, 3, 4],
        segment: seg(BASE, 0, 4),
    }];
    let bufs = Buffers {
        input: vec![0; 4],
        globals: Some(vec![0; 1]),
        output: Some(vec![0; 4]),
    };
    let mut recycled = 0;
    let out = run(schedule::record(&mut q, uploads, plan, bufs, &mut |_| {
        recycled += 1
    }));
    if out.is_ok() {
        assert_eq!(recycled, 1, "the application's upload buffer comes back");
    }
    out
}

#[test]
fn async_record_runs_the_steps_in_order_with_one_synchronize() {
    let s = setup();
    let out = record_once(&s, Mode::Async, true).unwrap();
    assert_eq!(
        s.fake.log(),
        vec![
            Op::Upload(vec![seg(BASE, 0, 4)]),
            Op::Download(vec![s.snapshot]),
            Op::Download(s.globals.to_vec()),
            Op::Launch {
                grid: [2, 1, 1],
                args: vec![BASE, 4]
            },
            Op::Download(vec![s.snapshot]),
            Op::Sync,
        ]
    );
    assert_eq!(s.fake.syncs(), 1);
    // Input is the state before the kernel, output after it.
    assert_eq!(out.input, [1, 2, 3, 4]);
    assert_eq!(out.globals.unwrap(), [1]);
    assert_eq!(out.output.unwrap(), [3, 5, 7, 9]);
    assert_eq!(s.fake.0.borrow().buffers_in_flight, 0);
}

#[test]
fn sync_record_synchronizes_after_every_step() {
    let s = setup();
    let out = record_once(&s, Mode::Sync, true).unwrap();
    let log = s.fake.log();
    assert_eq!(
        log,
        vec![
            Op::Upload(vec![seg(BASE, 0, 4)]),
            Op::Sync,
            Op::Download(vec![s.snapshot]),
            Op::Download(s.globals.to_vec()),
            Op::Sync,
            Op::Launch {
                grid: [2, 1, 1],
                args: vec![BASE, 4]
            },
            Op::Sync,
            Op::Download(vec![s.snapshot]),
            Op::Sync,
        ]
    );
    assert_eq!(out.output.unwrap(), [3, 5, 7, 9]);

    let s = setup();
    let out = record_once(&s, Mode::Sync, false).unwrap();
    assert_eq!(s.fake.syncs(), 3, "three steps without the output copy");
    // The unused output buffer is handed back untouched.
    assert_eq!(out.output.unwrap(), [0; 4]);
    assert!(!s.fake.log().contains(&Op::Download(vec![])));
}

#[test]
fn replay_restores_globals_then_memory_launches_and_synchronizes_once() {
    let s = setup();
    // Scribble over device memory and the global: the replay must restore both.
    s.fake.0.borrow_mut().device.mem.fill(0xEE);
    let mut q = s.fake.queue().unwrap();
    let args = [BASE, 4];
    let plan = ReplayPlan {
        kernel: &s.kernel,
        launch: launch(&args),
        memory: s.snapshot,
        globals: &s.globals,
        save_output: true,
        restore: Restore::Upload,
    };
    let bufs = Buffers {
        input: vec![1, 2, 3, 4],
        globals: Some(vec![1]),
        output: Some(vec![0; 4]),
    };
    let out = run(schedule::replay(&mut q, plan, bufs, &mut |_| {
        panic!("nothing stale")
    }))
    .unwrap();
    assert_eq!(
        s.fake.log(),
        vec![
            Op::Upload(s.globals.to_vec()),
            Op::Upload(vec![s.snapshot]),
            Op::Launch {
                grid: [2, 1, 1],
                args: vec![BASE, 4]
            },
            Op::Download(vec![s.snapshot]),
            Op::Sync,
        ]
    );
    assert_eq!(out.output.unwrap(), [3, 5, 7, 9]);
    assert_eq!(
        out.input,
        [1, 2, 3, 4],
        "input comes back unchanged for the next repetition"
    );
}

#[test]
fn zero_byte_recording_copies_nothing_and_succeeds() {
    let s = setup();
    let mut q = s.fake.queue().unwrap();
    let plan = RecordPlan {
        kernel: &s.kernel,
        launch: launch(&[BASE, 0]),
        snapshot: seg(BASE, 0, 0),
        globals: &[],
        save_output: true,
        mode: Mode::Async,
    };
    let bufs = Buffers {
        input: vec![],
        globals: None,
        output: Some(vec![]),
    };
    let out = run(schedule::record(&mut q, [], plan, bufs, &mut |_| {})).unwrap();
    assert!(out.input.is_empty());
    assert_eq!(
        s.fake.log(),
        vec![
            Op::Download(vec![]),
            Op::Launch {
                grid: [2, 1, 1],
                args: vec![BASE, 0]
            },
            Op::Download(vec![]),
            Op::Sync
        ]
    );
}

#[test]
fn dropping_a_record_mid_flight_leaves_buffers_with_the_queue() {
    let s = setup();
    s.fake.0.borrow_mut().busy_polls = 3;
    let mut q = s.fake.queue().unwrap();
    let args = [BASE, 4];
    {
        let plan = RecordPlan {
            kernel: &s.kernel,
            launch: launch(&args),
            snapshot: s.snapshot,
            globals: &s.globals,
            save_output: true,
            mode: Mode::Async,
        };
        let uploads = [Upload {
            buffer: vec![1, 2, 3, 4],
            segment: seg(BASE, 0, 4),
        }];
        let bufs = Buffers {
            input: vec![0; 4],
            globals: Some(vec![0; 1]),
            output: Some(vec![0; 4]),
        };
        let mut ignore = |_| {};
        let mut fut = pin!(schedule::record(&mut q, uploads, plan, bufs, &mut ignore));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        // Dropped here, with every copy enqueued and none complete.
    }
    assert_eq!(s.fake.syncs(), 0, "nothing ran yet");
    assert_eq!(s.fake.0.borrow().buffers_in_flight, 4);
    assert_eq!(
        q.owned_buffers(),
        4,
        "the queue owns upload, input, globals and output buffers"
    );

    // The device finishes the work later: it writes into buffers the queue
    // still owns, never into freed memory, and the next schedule on this
    // queue hands those stale buffers to `recycle`.
    s.fake.0.borrow_mut().busy_polls = 0;
    let plan = ReplayPlan {
        kernel: &s.kernel,
        launch: launch(&args),
        memory: s.snapshot,
        globals: &[],
        save_output: false,
        restore: Restore::Upload,
    };
    let mut stale = Vec::new();
    let out = run(schedule::replay(
        &mut q,
        plan,
        Buffers {
            input: vec![1, 2, 3, 4],
            globals: None,
            output: None,
        },
        &mut |b| stale.push(b),
    ))
    .unwrap();
    assert_eq!(out.input, [1, 2, 3, 4]);
    assert_eq!(stale.len(), 4);
    assert!(
        stale.contains(&vec![3, 5, 7, 9]),
        "the abandoned output copy completed into its own buffer"
    );
    assert_eq!(s.fake.0.borrow().buffers_in_flight, 0);
}

#[test]
fn bad_plans_fail_before_anything_is_enqueued() {
    let s = setup();
    let mut q = s.fake.queue().unwrap();
    let plan = RecordPlan {
        kernel: &s.kernel,
        launch: launch(&[]),
        snapshot: seg(BASE, 0, 8),
        globals: &[],
        save_output: false,
        mode: Mode::Async,
    };
    let small = Buffers {
        input: vec![0; 4],
        globals: None,
        output: None,
    };
    let e = run(schedule::record(&mut q, [], plan, small, &mut |_| {})).unwrap_err();
    assert_eq!(e, ScheduleError::SegmentOutOfBounds { end: 8, buffer: 4 });

    let plan = RecordPlan {
        save_output: true,
        snapshot: seg(BASE, 0, 4),
        ..plan
    };
    let no_output = Buffers {
        input: vec![0; 4],
        globals: None,
        output: None,
    };
    let e = run(schedule::record(&mut q, [], plan, no_output, &mut |_| {})).unwrap_err();
    assert_eq!(e, ScheduleError::MissingBuffer("output"));
    assert!(s.fake.log().is_empty());
}

#[test]
fn device_errors_surface_at_the_synchronize() {
    let s = setup();
    s.fake.0.borrow_mut().fail_sync = Some(FakeError("illegal address"));
    let e = record_once(&s, Mode::Async, true).unwrap_err();
    assert_eq!(e, ScheduleError::Executor(FakeError("illegal address")));
    assert_eq!(e.to_string(), "illegal address");
}

#[test]
fn a_device_error_keeps_its_kind_through_the_schedule() {
    let s = setup();
    s.fake.0.borrow_mut().fail_sync = Some(FakeError("illegal address"));
    let Err(ScheduleError::Executor(e)) = record_once(&s, Mode::Sync, true) else {
        panic!("the executor's error");
    };
    // Code above the executor tells the kind without knowing its type.
    fn kind_of(e: &dyn ExecError) -> (ErrorKind, bool) {
        (e.kind(), e.device_lost())
    }
    assert_eq!(kind_of(&e), (ErrorKind::KernelFault, false));
    let lost = FakeError("device lost");
    assert_eq!(kind_of(&lost), (ErrorKind::DeviceLost, true));
    assert_eq!(
        kind_of(&FakeError("no kernels in fake images")).0,
        ErrorKind::Other
    );
}

#[test]
fn replay_without_restoring_memory_still_copies_the_output() {
    let s = setup();
    {
        let mut shared = s.fake.0.borrow_mut();
        shared.device.slice(BASE, 4).copy_from_slice(&[5, 6, 7, 8]);
    }
    let mut q = s.fake.queue().unwrap();
    let args = [BASE, 4];
    let plan = ReplayPlan {
        kernel: &s.kernel,
        launch: launch(&args),
        memory: s.snapshot,
        globals: &[],
        save_output: true,
        restore: Restore::Nothing,
    };
    let bufs = Buffers {
        input: vec![1, 2, 3, 4],
        globals: None,
        output: Some(vec![0; 4]),
    };
    let out = run(schedule::replay(&mut q, plan, bufs, drop)).unwrap();
    assert_eq!(
        s.fake.log(),
        vec![
            Op::Launch {
                grid: [2, 1, 1],
                args: vec![BASE, 4]
            },
            Op::Download(vec![s.snapshot]),
            Op::Sync,
        ]
    );
    // The region's own contents were used, not the input buffer's.
    assert_eq!(out.output.unwrap(), [11, 13, 15, 17]);
    assert_eq!(out.input, [1, 2, 3, 4]);
}

#[test]
fn replay_restores_from_a_pristine_device_copy_without_uploading_it() {
    let s = setup();
    // The pristine copy of the snapshot, at BASE + 0x80.
    s.fake
        .0
        .borrow_mut()
        .device
        .slice(BASE + 0x80, 4)
        .copy_from_slice(&[1, 2, 3, 4]);
    let mut q = s.fake.queue().unwrap();
    let args = [BASE, 4];
    let plan = ReplayPlan {
        kernel: &s.kernel,
        launch: launch(&args),
        memory: s.snapshot,
        globals: &s.globals,
        save_output: true,
        restore: Restore::FromDevice(BASE + 0x80),
    };
    let bufs = || Buffers {
        input: vec![9, 9, 9, 9],
        globals: Some(vec![1]),
        output: Some(vec![0; 4]),
    };
    // A queue that cannot copy on the device says so.
    let e = run(schedule::replay(&mut q, plan, bufs(), drop)).unwrap_err();
    assert_eq!(e, ScheduleError::NoDeviceCopy);
    let mut q = s.fake.queue().unwrap();
    s.fake.0.borrow_mut().device_copies = true;
    s.fake.0.borrow_mut().log.clear();
    for _ in 0..2 {
        let out = run(schedule::replay(&mut q, plan, bufs(), drop)).unwrap();
        // The kernel ran on the pristine bytes each time, not on the input
        // buffer's, nor on the previous repetition's output.
        assert_eq!(out.output.unwrap(), [3, 5, 7, 9]);
    }
    let log = s.fake.log();
    assert_eq!(
        log[..4],
        [
            Op::Upload(vec![s.globals[0]]),
            Op::DeviceCopy {
                dst: BASE,
                src: BASE + 0x80,
                len: 4
            },
            Op::Launch {
                grid: [2, 1, 1],
                args: vec![BASE, 4]
            },
            Op::Download(vec![s.snapshot]),
        ]
    );
    assert!(!log.contains(&Op::Upload(vec![s.snapshot])), "{log:?}");
}

#[test]
fn a_replay_that_does_not_upload_reads_no_input_buffer_and_one_that_does_checks_it() {
    // A GPU replay that streamed the snapshot into the device holds no
    // host buffer of its size: with any restore but an upload, the input
    // buffer is not checked against the snapshot (nor read).
    let s = setup();
    s.fake.0.borrow_mut().device_copies = true;
    s.fake
        .0
        .borrow_mut()
        .device
        .slice(BASE + 0x80, 4)
        .copy_from_slice(&[1, 2, 3, 4]);
    let args = [BASE, 4];
    let plan = |restore| ReplayPlan {
        kernel: &s.kernel,
        launch: launch(&args),
        memory: s.snapshot,
        globals: &[],
        save_output: true,
        restore,
    };
    let bufs = || Buffers {
        input: vec![9],
        globals: None,
        output: Some(vec![0; 4]),
    };
    for restore in [Restore::FromDevice(BASE + 0x80), Restore::Nothing] {
        let mut q = s.fake.queue().unwrap();
        let out = run(schedule::replay(&mut q, plan(restore), bufs(), drop)).unwrap();
        assert_eq!(
            out.input,
            [9],
            "{restore:?}: the input comes back untouched"
        );
        assert_eq!(out.output.unwrap().len(), 4);
    }
    // An upload from a one-byte buffer is refused before anything is
    // enqueued.
    s.fake.0.borrow_mut().log.clear();
    let mut q = s.fake.queue().unwrap();
    let e = run(schedule::replay(
        &mut q,
        plan(Restore::Upload),
        bufs(),
        drop,
    ))
    .unwrap_err();
    assert_eq!(e, ScheduleError::SegmentOutOfBounds { end: 4, buffer: 1 });
    assert!(s.fake.log().is_empty(), "{:?}", s.fake.log());
}
