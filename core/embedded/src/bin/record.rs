//! One kernel launch recorded on a Cortex-M4F through reprise-core's record
//! schedule, with the device's copies and kernel run from its interrupt
//! handler (PendSV) and completion signalled from there; run on QEMU's
//! netduinoplus2 by `scripts/embedded-check.sh`. In order:
//!
//! 1. an interrupt landing mid-update: SysTick fires every few dozen
//!    instructions while thread mode updates the core's 64-bit atomics,
//!    and its handler updates the same ones (a `Completion`'s mark);
//! 2. the launch under the core's `block_on`, async then Sync mode;
//! 3. the launch under embassy-executor's thread-mode executor (WFE
//!    between wakes, SEV from the wake), async then Sync mode;
//! 4. the embassy async launch written to the host as a capture over
//!    semihosting, and its bytes reported for the host to compare;
//! 5. that capture replayed here (`reprise_core::schedule::replay`), its
//!    output compared with the recorded one.
//!
//! Each launch reports its polls (wakes + 1) and instructions, counted by
//! TIM2 under QEMU's `-icount shift=0` (one instruction per nanosecond of
//! virtual time, TIM2 at 1 GHz). The program exits 0 when every value is
//! what it should be.

#![no_std]
#![no_main]

use core::cell::Cell;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::{Peripherals, SCB};
use cortex_m_rt::{entry, exception};
use cortex_m_semihosting::{debug, hprint, hprintln};
use embassy_executor::Executor;
use panic_halt as _;
use portable_atomic::AtomicU64;
use reprise_core::record::checksum;
use reprise_core::schedule::Mode;
use reprise_core::{Completion, block_on};
use reprise_core_embedded::capture::{self, Sink};
use reprise_core_embedded::launch::{self, Bufs, Layout};
use reprise_core_embedded::{McuError, McuExecutor, device};
use static_cell::StaticCell;

// ---- the device's interrupt ----------------------------------------------

/// Instructions spent in the device's interrupt handler (the copies, the
/// kernel, the completion's signal and wake).
static IN_DEVICE: AtomicU32 = AtomicU32::new(0);

#[exception]
fn PendSV() {
    let start = now();
    device::service();
    IN_DEVICE.fetch_add(now().wrapping_sub(start), Ordering::Relaxed);
}

fn doorbell() {
    SCB::set_pendsv();
}

// ---- instruction counts ---------------------------------------------------

/// TIM2's counter (STM32F405): QEMU counts it at 1 GHz of virtual time.
const TIM2: usize = 0x4000_0000;

fn tim2_start() {
    // SAFETY: TIM2's registers (CR1, PSC, ARR) on this machine; nothing
    // else uses the timer.
    unsafe {
        core::ptr::write_volatile((TIM2 + 0x28) as *mut u32, 0);
        core::ptr::write_volatile((TIM2 + 0x2c) as *mut u32, u32::MAX);
        core::ptr::write_volatile(TIM2 as *mut u32, 1);
    }
}

fn now() -> u32 {
    // SAFETY: reading TIM2's counter register.
    unsafe { core::ptr::read_volatile((TIM2 + 0x24) as *const u32) }
}

// ---- stack high-water mark ------------------------------------------------

const PAINT: u32 = 0x5afe_57ac;
/// Bytes painted below the caller's stack pointer.
const DEPTH: usize = 16 * 1024;

fn sp() -> usize {
    cortex_m::register::msp::read() as usize
}

/// Paints the `DEPTH` bytes below its own frame and returns the stack
/// pointer (its caller's, but for this call's few bytes).
#[inline(never)]
fn paint() -> usize {
    let top = sp();
    for a in (top - 64 - DEPTH..top - 64).step_by(4) {
        // SAFETY: unused stack below the live frames, in RAM (the stack
        // starts at the top of 128 KiB, the statics use far less).
        unsafe { core::ptr::write_volatile(a as *mut u32, PAINT) };
    }
    top
}

/// Bytes of stack below `top` (from [`paint`]) used since.
fn used(top: usize) -> usize {
    let (low, high) = (top - 64 - DEPTH, top - 64);
    let mut a = low;
    // SAFETY: as in `paint`, reading the painted range.
    while a < high && unsafe { core::ptr::read_volatile(a as *const u32) } == PAINT {
        a += 4;
    }
    top - a
}

/// Instructions TIM2 counts for a loop of exactly 2000 (1000 rounds of
/// `subs` and `bne`): 2000 when one tick is one instruction.
fn calibrate() -> u32 {
    let start = now();
    // SAFETY: a counted loop on one scratch register.
    unsafe {
        core::arch::asm!(
            "2:",
            "subs {n}, #1",
            "bne 2b",
            n = inout(reg) 1000u32 => _,
            options(nomem, nostack),
        );
    }
    now().wrapping_sub(start)
}

// ---- 1. an interrupt landing mid-update -----------------------------------

static SHARED: AtomicU64 = AtomicU64::new(0);
static MARKS: Completion = Completion::new();
static TICKS: AtomicU32 = AtomicU32::new(0);
static UPDATING: AtomicBool = AtomicBool::new(false);
static LANDED: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    let n = TICKS.fetch_add(1, Ordering::Relaxed) + 1;
    if UPDATING.load(Ordering::Relaxed) {
        LANDED.fetch_add(1, Ordering::Relaxed);
    }
    SHARED.fetch_add(1, Ordering::AcqRel);
    MARKS.signal(u64::from(n));
}

/// Thread mode adds to the 64-bit counter and raises the marks while
/// SysTick's handler does the same: with a spin lock under the 64-bit
/// atomics, a handler that lands while thread mode holds it spins forever.
fn mid_update(p: &mut Peripherals) -> Option<(u32, u32)> {
    const ROUNDS: u64 = 20_000;
    p.SYST.set_clock_source(SystClkSource::Core);
    p.SYST.set_reload(40);
    p.SYST.clear_current();
    p.SYST.enable_interrupt();
    p.SYST.enable_counter();
    for i in 0..ROUNDS {
        UPDATING.store(true, Ordering::Relaxed);
        SHARED.fetch_add(1, Ordering::AcqRel);
        MARKS.signal(i);
        UPDATING.store(false, Ordering::Relaxed);
    }
    p.SYST.disable_interrupt();
    p.SYST.disable_counter();
    let ticks = TICKS.load(Ordering::Relaxed);
    let landed = LANDED.load(Ordering::Relaxed);
    let whole = SHARED.load(Ordering::Acquire) == ROUNDS + u64::from(ticks)
        && MARKS.reached() >= u64::from(ticks).max(ROUNDS - 1);
    (whole && landed > 0).then_some((ticks, landed))
}

// ---- the launches ---------------------------------------------------------

/// One launch's numbers.
#[derive(Clone, Copy, Default)]
struct Run {
    polls: u32,
    instructions: u32,
    /// Of which in the device's interrupt handler.
    in_device: u32,
    /// Bytes of the schedule future (the launch's `async fn`, the core's
    /// `record` inside it).
    future: usize,
    ok: bool,
}

fn report(what: &str, r: &Run) {
    hprintln!(
        "{}: polls {} (wakes {}), {} instructions ({} in the device's interrupt), future {} bytes, {}",
        what,
        r.polls,
        r.polls.saturating_sub(1),
        r.instructions,
        r.in_device,
        r.future,
        if r.ok { "ok" } else { "WRONG" }
    );
}

async fn run(exec: &McuExecutor, at: &Layout, bufs: &mut Bufs, mode: Mode) -> Run {
    let polls = Cell::new(0);
    let fut = launch::record(exec, at, bufs, mode);
    let future = core::mem::size_of_val(&fut);
    IN_DEVICE.store(0, Ordering::Relaxed);
    let start = now();
    let done = launch::counted(fut, &polls).await;
    let instructions = now().wrapping_sub(start);
    Run {
        polls: polls.get(),
        instructions,
        in_device: IN_DEVICE.load(Ordering::Relaxed),
        future,
        ok: done.is_ok() && launch::verify(at, bufs).is_none(),
    }
}

struct State {
    exec: McuExecutor,
    at: Layout,
    bufs: Bufs,
    block_on: [Run; 2],
    /// Stack used by `block_on` of an async launch.
    block_on_stack: usize,
}

/// Host buffers' memory: a static arena, or none with `alloc` (the heap).
fn arena() -> &'static mut [u8] {
    #[cfg(not(feature = "alloc"))]
    {
        static ARENA: StaticCell<[u8; 1024]> = StaticCell::new();
        ARENA.init([0; 1024])
    }
    #[cfg(feature = "alloc")]
    {
        &mut []
    }
}
static STATE: StaticCell<State> = StaticCell::new();
static EXECUTOR: StaticCell<Executor> = StaticCell::new();

fn setup() -> Result<State, McuError> {
    #[cfg(feature = "alloc")]
    reprise_core_embedded::heap::init();
    let exec = McuExecutor::new(arena(), &launch::KERNELS, &launch::GLOBALS, doorbell);
    let at = launch::layout().map_err(|_| McuError::Full("region"))?;
    let bufs = Bufs::new(&exec, at.used)?;
    Ok(State {
        exec,
        at,
        bufs,
        block_on: [Run::default(); 2],
        block_on_stack: 0,
    })
}

// ---- the capture, over semihosting ----------------------------------------

/// Files on the host, in QEMU's working directory.
struct Semihosting;

impl Semihosting {
    fn c_name(name: &str) -> heapless::String<64> {
        let mut c = heapless::String::new();
        let _ = c.push_str(name);
        let _ = c.push('\0');
        c
    }
}

impl Sink for Semihosting {
    type Error = ();

    fn write(&mut self, name: &str, bytes: &[u8]) -> Result<(), ()> {
        use cortex_m_semihosting::nr::open::W_TRUNC_BINARY;
        let c = Self::c_name(name);
        // SAFETY: SYS_OPEN with a NUL-terminated name and its length
        // without the NUL.
        let fd =
            unsafe { cortex_m_semihosting::syscall!(OPEN, c.as_ptr(), W_TRUNC_BINARY, name.len()) };
        if fd as isize == -1 {
            return Err(());
        }
        // SAFETY: SYS_WRITE of `bytes` (pointer and length of a live
        // slice) to the file just opened; it answers the bytes not written.
        let left =
            unsafe { cortex_m_semihosting::syscall!(WRITE, fd, bytes.as_ptr(), bytes.len()) };
        // SAFETY: SYS_CLOSE of the file just opened.
        let closed = unsafe { cortex_m_semihosting::syscall!(CLOSE, fd) };
        (left == 0 && closed == 0).then_some(()).ok_or(())
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), ()> {
        let (f, t) = (Self::c_name(from), Self::c_name(to));
        // SAFETY: SYS_RENAME with two NUL-terminated names and their
        // lengths without the NUL.
        let r = unsafe {
            cortex_m_semihosting::syscall!(RENAME, f.as_ptr(), from.len(), t.as_ptr(), to.len())
        };
        (r == 0).then_some(()).ok_or(())
    }
}

unsafe extern "C" {
    static __kernel_start: u8;
    static __kernel_end: u8;
}

/// The kernel's code, as linked (`memory.x` places it alone).
fn kernel_code() -> &'static [u8] {
    let start = &raw const __kernel_start;
    let end = &raw const __kernel_end;
    // SAFETY: the linker script brackets the kernel's section with these
    // two symbols: bytes of flash, read-only for the program's life.
    unsafe { core::slice::from_raw_parts(start, end as usize - start as usize) }
}

fn hex(what: &str, bytes: &[u8]) {
    hprint!("reported {} ", what);
    for b in bytes {
        hprint!("{:02x}", b);
    }
    hprintln!();
}

fn write_capture(s: &State) -> bool {
    let mut image = [0u8; 1024];
    let Some(n) = capture::elf_object(kernel_code(), launch::KERNEL, &mut image) else {
        hprintln!("the kernel's code does not fit the image buffer");
        return false;
    };
    let mut scratch = [0u8; 1024];
    if capture::write(
        &mut Semihosting,
        "scale",
        &s.at,
        &s.bufs,
        &image[..n],
        &mut scratch,
    )
    .is_err()
    {
        hprintln!("writing the capture failed");
        return false;
    }
    let used = s.at.used;
    hex(
        "input",
        s.bufs
            .input
            .as_ref()
            .map_or(&[][..], |b| &b.as_ref()[..used]),
    );
    hex(
        "output",
        s.bufs
            .output
            .as_ref()
            .map_or(&[][..], |b| &b.as_ref()[..used]),
    );
    hex(
        "globals",
        s.bufs.globals.as_ref().map_or(&[], |b| b.as_ref()),
    );
    true
}

/// Replays the capture just written, here: its output snapshot cleared,
/// then made again by `reprise_core::schedule::replay` from its input
/// snapshot and globals, and compared with the recorded one.
async fn replay_here(s: &mut State) -> bool {
    let Some(recorded) = s.bufs.output.as_ref().map(|b| checksum(b.as_ref())) else {
        return false;
    };
    if let Some(out) = s.bufs.output.as_mut() {
        out.as_mut().fill(0);
    }
    let polls = Cell::new(0);
    let done = launch::counted(launch::replay(&s.exec, &s.at, &mut s.bufs), &polls).await;
    let same = s.bufs.output.as_ref().map(|b| checksum(b.as_ref())) == Some(recorded);
    hprintln!(
        "replay on the device: polls {} (wakes {}), output {} the recorded one",
        polls.get(),
        polls.get().saturating_sub(1),
        if same {
            "identical to"
        } else {
            "DIFFERENT from"
        }
    );
    done.is_ok() && same && polls.get() == 2
}

// ---- embassy --------------------------------------------------------------

#[embassy_executor::task]
async fn launches(s: &'static mut State) {
    let a = run(&s.exec, &s.at, &mut s.bufs, Mode::Sync).await;
    // The async launch last: its buffers are the capture's.
    let top = paint();
    let b = run(&s.exec, &s.at, &mut s.bufs, Mode::Async).await;
    let embassy_stack = used(top);
    let captured = write_capture(s);
    let replayed = replay_here(s).await;
    let [ba, bs] = s.block_on;
    report("block_on async", &ba);
    report("block_on sync", &bs);
    report("embassy async", &b);
    report("embassy sync", &a);
    hprintln!(
        "stack high-water mark: block_on {} bytes (the future on its frame, its polls, the device's interrupt), embassy {} bytes below the task's frame (its polls, the device's interrupt; the future in the task arena)",
        s.block_on_stack,
        embassy_stack
    );
    // Hundredths, rounded.
    let ratio =
        |s: &Run, a: &Run| (s.instructions * 100 + a.instructions / 2) / a.instructions.max(1);
    hprintln!(
        "sync/async instructions: block_on {}.{:02}, embassy {}.{:02}",
        ratio(&bs, &ba) / 100,
        ratio(&bs, &ba) % 100,
        ratio(&a, &b) / 100,
        ratio(&a, &b) % 100
    );
    // One synchronize, one wake; Sync mode's four synchronizes, four.
    let wakes = ba.polls == 2 && b.polls == 2 && bs.polls == 5 && a.polls == 5;
    let ok = captured && replayed && wakes && [ba, bs, a, b].iter().all(|r| r.ok);
    hprintln!(
        "reprise-core-embedded record: {}",
        if ok { "ok" } else { "FAILED" }
    );
    debug::exit(if ok {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
}

#[entry]
fn main() -> ! {
    let mut p = Peripherals::take().unwrap_or_else(|| fail("peripherals taken"));
    match mid_update(&mut p) {
        Some((ticks, landed)) => hprintln!(
            "interrupts mid-update: {} SysTick handlers raised the marks, {} of them landed while thread mode was updating; no update lost",
            ticks,
            landed
        ),
        None => fail("an update was lost (or no interrupt landed mid-update)"),
    }
    tim2_start();
    let counted = calibrate();
    hprintln!(
        "TIM2 under -icount shift=0: a 2000-instruction loop counts {}",
        counted
    );
    if !(2000..2010).contains(&counted) {
        fail("TIM2 does not count instructions (run QEMU with -icount shift=0)");
    }
    let s = STATE.init(setup().unwrap_or_else(|_| fail("setup")));
    let top = paint();
    let a = block_on(run(&s.exec, &s.at, &mut s.bufs, Mode::Async));
    s.block_on_stack = used(top);
    let b = block_on(run(&s.exec, &s.at, &mut s.bufs, Mode::Sync));
    s.block_on = [a, b];
    let executor = EXECUTOR.init(Executor::new());

    executor.run(|spawner| {
        if spawner.spawn(launches(s)).is_err() {
            fail("spawning the task");
        }
    })
}

fn fail(why: &str) -> ! {
    hprintln!("reprise-core-embedded record: FAILED: {}", why);
    debug::exit(debug::EXIT_FAILURE);
    loop {
        core::hint::spin_loop();
    }
}
