//! A fake executor for the core's own tests: device memory is a `Vec`, every
//! operation is logged, and work runs only when a synchronize is polled (after
//! a configurable number of `Pending` polls, to model a busy device).

#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::rc::Rc;
use std::task::{Context, Poll};

use reprise_core::exec::*;
use reprise_core::record::BackendKind;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Upload(Vec<Segment>),
    Download(Vec<Segment>),
    Launch { grid: [u32; 3], args: Vec<u64> },
    DeviceCopy { dst: u64, src: u64, len: usize },
    Sync,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FakeError(pub &'static str);

impl fmt::Display for FakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for FakeError {}

/// The fake's errors say their kind from their message, as a driver's
/// code would: a synchronize failed with "illegal address" is the fault of
/// a kernel, "device lost" a device gone; anything else is another error.
impl ExecError for FakeError {
    fn kind(&self) -> ErrorKind {
        match self.0 {
            "illegal address" => ErrorKind::KernelFault,
            "device lost" => ErrorKind::DeviceLost,
            _ => ErrorKind::Other,
        }
    }
}

/// A kernel: mutates device memory given the argument values.
pub type KernelFn = Rc<dyn Fn(&mut Device, &[u64])>;

pub struct Device {
    pub base: u64,
    pub mem: Vec<u8>,
}

impl Device {
    pub fn slice(&mut self, addr: u64, len: usize) -> &mut [u8] {
        let at = (addr - self.base) as usize;
        &mut self.mem[at..at + len]
    }
}

pub struct Shared {
    pub device: Device,
    pub log: Vec<Op>,
    /// Buffers currently owned by queues (to show nothing is freed early).
    pub buffers_in_flight: usize,
    /// How many times each synchronize answers `Pending` before running.
    pub busy_polls: usize,
    /// Fail the next synchronize with this error.
    pub fail_sync: Option<FakeError>,
    /// Whether queues copy on the device.
    pub device_copies: bool,
}

#[derive(Clone)]
pub struct Fake(pub Rc<RefCell<Shared>>);

impl Fake {
    pub fn new(base: u64, size: usize) -> Self {
        Fake(Rc::new(RefCell::new(Shared {
            device: Device {
                base,
                mem: vec![0; size],
            },
            log: Vec::new(),
            buffers_in_flight: 0,
            busy_polls: 0,
            fail_sync: None,
            device_copies: false,
        })))
    }
    pub fn log(&self) -> Vec<Op> {
        self.0.borrow().log.clone()
    }
    pub fn syncs(&self) -> usize {
        self.log().iter().filter(|o| **o == Op::Sync).count()
    }
}

pub struct Region(u64, u64);
impl DeviceRegion for Region {
    fn base(&self) -> u64 {
        self.0
    }
    fn capacity(&self) -> u64 {
        self.1
    }
}

enum Work {
    Up(Vec<u8>, Vec<Segment>, Ticket),
    Down(Vec<u8>, Vec<Segment>, Ticket),
    Run(KernelFn, Vec<u64>),
    Copy(u64, u64, usize),
}

pub struct FakeQueue {
    fake: Fake,
    pending: VecDeque<Work>,
    /// Tickets, and the buffers of finished copies until reclaimed: the
    /// core's ledger, as every backend keeps them (fixed-size, as the core's
    /// tests build without `alloc`; no test holds more buffers).
    ledger: FixedLedger<Vec<u8>, 256>,
    polls: usize,
}

impl ErrorType for Fake {
    type Error = FakeError;
}
impl ErrorType for FakeQueue {
    type Error = FakeError;
}

impl Executor for Fake {
    const KIND: BackendKind = BackendKind::Host;
    // The host's, but for what the tests set: whether queues copy on the
    // device.
    const CAPABILITIES: Capabilities = Capabilities {
        has_devices: false,
        in_process: true,
        launch_geometry: false,
        device_memory: false,
        ..Capabilities::GPU
    };
    type Region = Region;
    type Image = ();
    type Kernel = KernelFn;
    type Buffer = Vec<u8>;
    type Queue = FakeQueue;

    fn reserve(&self, r: RegionRequest) -> Result<Region, FakeError> {
        let s = self.0.borrow();
        Ok(Region(r.base.unwrap_or(s.device.base), r.capacity))
    }
    fn load_image(&self, _: &[u8]) -> Result<(), FakeError> {
        Ok(())
    }
    fn kernel(&self, _: &(), _: &str) -> Result<KernelFn, FakeError> {
        Err(FakeError("no kernels in fake images"))
    }
    fn global<'n>(&self, _: &(), _: &'n str) -> Result<Option<GlobalInfo<'n>>, FakeError> {
        Ok(None)
    }
    fn for_each_global(&self, _: &(), _: &mut dyn FnMut(GlobalInfo<'_>)) -> Result<(), FakeError> {
        Ok(())
    }
    fn buffer(&self, len: usize) -> Result<Vec<u8>, FakeError> {
        Ok(vec![0; len])
    }
    fn copies_on_device(&self) -> bool {
        self.0.borrow().device_copies
    }
    fn queue(&self) -> Result<FakeQueue, FakeError> {
        Ok(FakeQueue {
            fake: self.clone(),
            pending: VecDeque::new(),
            ledger: FixedLedger::new(),
            polls: 0,
        })
    }
}

impl FakeQueue {
    pub fn owned_buffers(&self) -> usize {
        self.pending
            .iter()
            .filter(|w| matches!(w, Work::Up(..) | Work::Down(..)))
            .count()
            + self.ledger.held()
    }
}

impl Queue for FakeQueue {
    type Buffer = Vec<u8>;
    type Kernel = KernelFn;

    fn upload(&mut self, buf: Vec<u8>, segs: &[Segment]) -> Result<Ticket, FakeError> {
        let t = self.ledger.issue();
        let mut s = self.fake.0.borrow_mut();
        s.log.push(Op::Upload(segs.to_vec()));
        s.buffers_in_flight += 1;
        self.pending.push_back(Work::Up(buf, segs.to_vec(), t));
        Ok(t)
    }
    fn download(&mut self, buf: Vec<u8>, segs: &[Segment]) -> Result<Ticket, FakeError> {
        let t = self.ledger.issue();
        let mut s = self.fake.0.borrow_mut();
        s.log.push(Op::Download(segs.to_vec()));
        s.buffers_in_flight += 1;
        self.pending.push_back(Work::Down(buf, segs.to_vec(), t));
        Ok(t)
    }
    fn launch(&mut self, k: &KernelFn, l: &Launch<'_>) -> Result<(), FakeError> {
        self.fake.0.borrow_mut().log.push(Op::Launch {
            grid: l.config.grid,
            args: l.args.values.to_vec(),
        });
        self.pending
            .push_back(Work::Run(k.clone(), l.args.values.to_vec()));
        Ok(())
    }
    fn copy_on_device(&mut self, dst: u64, src: u64, len: usize) -> Result<bool, FakeError> {
        let mut s = self.fake.0.borrow_mut();
        if !s.device_copies {
            return Ok(false);
        }
        s.log.push(Op::DeviceCopy { dst, src, len });
        self.pending.push_back(Work::Copy(dst, src, len));
        Ok(true)
    }
    fn poll_synchronize(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), FakeError>> {
        let busy = self.fake.0.borrow().busy_polls;
        if self.polls < busy {
            self.polls += 1;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.polls = 0;
        let mut s = self.fake.0.borrow_mut();
        s.log.push(Op::Sync);
        if let Some(e) = s.fail_sync.take() {
            return Poll::Ready(Err(e));
        }
        while let Some(w) = self.pending.pop_front() {
            match w {
                Work::Up(buf, segs, t) => {
                    for g in &segs {
                        s.device
                            .slice(g.device, g.len)
                            .copy_from_slice(&buf[g.host_offset..g.host_offset + g.len]);
                    }
                    self.ledger.hold(t, buf).expect("at most 256 buffers held");
                    self.ledger.complete(t);
                }
                Work::Down(mut buf, segs, t) => {
                    for g in &segs {
                        buf[g.host_offset..g.host_offset + g.len]
                            .copy_from_slice(s.device.slice(g.device, g.len));
                    }
                    self.ledger.hold(t, buf).expect("at most 256 buffers held");
                    self.ledger.complete(t);
                }
                Work::Run(k, args) => k(&mut s.device, &args),
                Work::Copy(dst, src, len) => {
                    let from = s.device.slice(src, len).to_vec();
                    s.device.slice(dst, len).copy_from_slice(&from);
                }
            }
        }
        Poll::Ready(Ok(()))
    }
    fn reclaim(&mut self) -> Option<(Ticket, Vec<u8>)> {
        let r = self.ledger.reclaim()?;
        self.fake.0.borrow_mut().buffers_in_flight -= 1;
        Some(r)
    }
}
