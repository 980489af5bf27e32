//! Recording a saxpy launch through the schedule (with one synchronize, or
//! one after every step) and replaying it in a fresh region at the recorded
//! address.

use reprise_core::exec::{
    DeviceRegion, Executor, KernelArgs, Launch, LaunchConfig, Queue, RegionRequest, Segment,
};
use reprise_core::region::BumpRegion;
use reprise_core::schedule::{self, Buffers, Mode, RecordPlan, ReplayPlan, Restore, Upload};
use reprise_cuda::{CudaBuffer, CudaExecutor, CudaImage, CudaQueue, CudaRegion};

use crate::common::{block_on, buffer_with, f32_bytes, f32s, fixture_kernel, gpu, seg, u32s};
use crate::{MIB, globals_of, read_device};

/// Everything a saxpy recording needs, on a fresh region.
pub(crate) struct Saxpy {
    region: CudaRegion,
    /// Keeps its image loaded.
    kernel: reprise_cuda::CudaKernel,
    x: u64,
    y: u64,
    used: usize,
    n: usize,
    a: f32,
    /// One segment per global (`bias`, `launches`) into the globals buffer.
    pub(crate) globals: Vec<Segment>,
    globals_len: usize,
}

impl Saxpy {
    pub(crate) fn new(exec: &CudaExecutor, base: Option<u64>) -> Saxpy {
        let region = exec.reserve(RegionRequest::new(base, MIB)).unwrap();
        let bump = BumpRegion::new(region.base(), region.capacity());
        let n = 1000;
        let x = bump.alloc(4 * n as u64, 16).unwrap();
        let y = bump.alloc(4 * n as u64, 16).unwrap();
        let (image, kernel) = fixture_kernel(exec, "saxpy.ptx", "saxpy");
        let (globals, globals_len) = Self::global_segments(exec, &image);
        Saxpy {
            used: bump.used() as usize,
            region,
            kernel,
            x,
            y,
            n,
            a: 2.0,
            globals,
            globals_len,
        }
    }

    /// One segment per global, laid out back to back in a host buffer.
    fn global_segments(exec: &CudaExecutor, image: &CudaImage) -> (Vec<Segment>, usize) {
        let mut at = 0;
        let segs = globals_of(exec, image)
            .into_iter()
            .map(|(_, addr, size)| {
                let s = seg(addr, at, size as usize);
                at += size as usize;
                s
            })
            .collect();
        (segs, at)
    }

    fn xs(&self) -> Vec<f32> {
        (0..self.n).map(|i| i as f32).collect()
    }

    fn ys(&self) -> Vec<f32> {
        (0..self.n).map(|i| 2.0 * i as f32).collect()
    }

    fn args(&self) -> [u64; 4] {
        [u64::from(self.a.to_bits()), self.x, self.y, self.n as u64]
    }

    fn launch<'a>(&self, values: &'a [u64]) -> Launch<'a> {
        Launch {
            config: LaunchConfig {
                grid: [self.n.div_ceil(128) as u32, 1, 1],
                block: [128, 1, 1],
                shared_mem: 0,
            },
            args: KernelArgs {
                values,
                sizes: &[4, 8, 8, 4],
                data: &[],
            },
        }
    }

    /// Records one launch; returns the buffers, the queue and how many
    /// buffers went to `recycle`.
    pub(crate) fn record(
        &self,
        exec: &CudaExecutor,
        mode: Mode,
    ) -> (Buffers<CudaBuffer>, CudaQueue, usize) {
        let mut q = exec.queue().unwrap();
        let uploads = [
            Upload {
                buffer: buffer_with(exec, &f32_bytes(&self.xs())),
                segment: seg(self.x, 0, 4 * self.n),
            },
            Upload {
                buffer: buffer_with(exec, &f32_bytes(&self.ys())),
                segment: seg(self.y, 0, 4 * self.n),
            },
        ];
        let values = self.args();
        let plan = RecordPlan {
            kernel: &self.kernel,
            launch: self.launch(&values),
            snapshot: seg(self.region.base(), 0, self.used),
            globals: &self.globals,
            save_output: true,
            mode,
        };
        let buffers = Buffers {
            input: exec.buffer(self.used).unwrap(),
            globals: Some(exec.buffer(self.globals_len).unwrap()),
            output: Some(exec.buffer(self.used).unwrap()),
        };
        let mut recycled = 0;
        let out = block_on(schedule::record(
            &mut q,
            uploads,
            plan,
            buffers,
            &mut |_| recycled += 1,
        ))
        .unwrap_or_else(|e| panic!("record: {e}"));
        (out, q, recycled)
    }

    fn expected_output(&self) -> Vec<f32> {
        let (xs, ys) = (self.xs(), self.ys());
        (0..self.n).map(|i| self.a * xs[i] + ys[i] + 0.5).collect()
    }
}

#[test]
fn records_saxpy_with_one_synchronize_and_replays_it_in_a_fresh_region() {
    let Some((_lock, exec)) = gpu() else { return };
    let s = Saxpy::new(&exec, None);
    let base = s.region.base();
    let (rec, q, recycled) = s.record(&exec, Mode::Async);
    assert_eq!(q.syncs_enqueued(), 1, "Async records with one synchronize");
    assert_eq!(recycled, 2, "the two application uploads come back");
    let time = q.last_kernel_time().expect("kernel time");
    println!("saxpy: {} elements at {base:#x} in {time:?}", s.n);
    assert!(time.as_nanos() > 0);

    // The snapshot before the kernel: x then y.
    let input = rec.input.as_ref();
    let four_n = 4 * s.n;
    assert_eq!(f32s(&input[..four_n]), s.xs());
    assert_eq!(f32s(&input[four_n..2 * four_n]), s.ys());
    // Globals before the kernel: bias = 0.5, launches = 0.
    let globals = rec.globals.as_ref().unwrap().as_ref().to_vec();
    assert_eq!(f32s(&globals[..4]), [0.5]);
    assert_eq!(u32s(&globals[4..8]), [0]);
    // After: y = a x + y + bias.
    let output = rec.output.as_ref().unwrap().as_ref().to_vec();
    assert_eq!(f32s(&output[four_n..2 * four_n]), s.expected_output());
    assert_eq!(&output[..four_n], &input[..four_n], "x unchanged");
    let (n, a) = (s.n, s.a);
    drop(q);
    drop(s);

    // Replay: a fresh region at the recorded address, a freshly loaded image.
    let region = exec.reserve(RegionRequest::new(Some(base), MIB)).unwrap();
    assert_eq!(region.base(), base);
    let (image, kernel) = fixture_kernel(&exec, "saxpy.ptx", "saxpy");
    let (gsegs, glen) = Saxpy::global_segments(&exec, &image);
    assert_eq!(glen, globals.len());
    let mut q = exec.queue().unwrap();
    let memory = seg(base, 0, input.len());
    let values = [u64::from(a.to_bits()), base, base + 4 * n as u64, n as u64];
    let plan = ReplayPlan {
        kernel: &kernel,
        launch: Launch {
            config: LaunchConfig {
                grid: [n.div_ceil(128) as u32, 1, 1],
                block: [128, 1, 1],
                shared_mem: 0,
            },
            args: KernelArgs {
                values: &values,
                sizes: &[4, 8, 8, 4],
                data: &[],
            },
        },
        memory,
        globals: &gsegs,
        save_output: true,
        restore: Restore::Upload,
    };
    let buffers = Buffers {
        input: rec.input,
        globals: rec.globals,
        output: Some(exec.buffer(memory.len).unwrap()),
    };
    let back = block_on(schedule::replay(&mut q, plan, buffers, &mut |_| {
        panic!("nothing to recycle")
    }))
    .unwrap_or_else(|e| panic!("replay: {e}"));
    assert_eq!(q.syncs_enqueued(), 1);
    assert_eq!(back.output.unwrap().as_ref(), &output[..], "replay matches");
    assert!(q.last_kernel_time().is_some());
    // The restored counter (0) was incremented once by the replay.
    let launches = gsegs[1];
    assert_eq!(u32s(&read_device(&exec, &mut q, launches.device, 4)), [1]);
}

#[test]
fn sync_mode_synchronizes_after_every_step() {
    let Some((_lock, exec)) = gpu() else { return };
    let s = Saxpy::new(&exec, None);
    let (rec, q, _) = s.record(&exec, Mode::Sync);
    assert_eq!(q.syncs_enqueued(), 4, "H2D, D2H info, kernel, D2H output");
    let output = rec.output.unwrap();
    assert_eq!(
        f32s(&output.as_ref()[4 * s.n..8 * s.n]),
        s.expected_output()
    );
    assert!(q.last_kernel_time().is_some());
}
