//! [`Recorder::launch`]: a launch, recorded when the configuration selects
//! it (its snapshots, the kernel, the capture handed to the writer).

use reprise_core::exec::{Executor, Launch, LaunchConfig, Queue, Segment};
use reprise_core::globals::{self, Layout};
use reprise_core::record::{KernelRecord, MAX_ARGS};
use reprise_core::schedule::{self, Buffers, LaunchPlan, RecordPlan};

use super::capture_job::{CaptureJob, Reach};
use super::{Args, Kernel, LaunchReport, Recorder, hashing};
use crate::error::{Error, Handle, Result};
use crate::layout::{from_start, globals_segments};
use crate::store::next_launch_seq;

/// A recorded launch's snapshot buffers, and with device hashing what the
/// writer fills them from and the bytes of device memory that holds.
type Snapshots<E> = (
    Buffers<<E as Executor>::Buffer>,
    Option<(hashing::Pending<E>, u64)>,
);

impl<E> Recorder<E>
where
    E: Executor + 'static,
    E::Buffer: Send + 'static,
    // The writer reads device copies with device hashing on.
    E::Queue: Send,
    E::Region: Send,
{
    /// Checks `args` against the kernel's parameter sizes, where the executor
    /// knows them.
    fn check_params(&self, kernel: &Kernel<E>, args: &Args) -> Result<()> {
        let mut sizes = [0u32; MAX_ARGS];
        let n = self
            .exec
            .param_sizes(&kernel.kernel, &mut sizes)
            .map_err(|e| Error::executor(format!("reading {}'s parameters", kernel.name), e))?;
        if let Some(n) = n {
            let expected = &sizes[..n.min(MAX_ARGS)];
            let given: Vec<u32> = (0..args.len())
                .map(|i| args.as_kernel_args().size(i))
                .collect();
            if n != args.len() || expected != given.as_slice() {
                return Err(Error::ParamMismatch {
                    kernel: kernel.name.clone(),
                    expected: expected.to_vec(),
                    given,
                });
            }
        }
        Ok(())
    }

    /// The image `kernel` was found in.
    fn image_of(&self, kernel: &Kernel<E>) -> Result<&super::handles::LoadedImage<E>> {
        self.images
            .get(kernel.image)
            .ok_or(Error::Internal("a kernel of this recorder names no image"))
    }

    /// The descriptor of launch `seq` of `kernel` with `args` in `config`,
    /// as recorded on this recorder's region and device.
    fn describe(
        &self,
        kernel: &Kernel<E>,
        args: &Args,
        config: LaunchConfig,
        seq: u64,
    ) -> Result<KernelRecord> {
        let mut record = KernelRecord::new(&kernel.name)?;
        args.fill(&mut record)?;
        record.grid = config.grid;
        record.block = config.block;
        record.shared_mem = config.shared_mem;
        record.device_id = self.device_id;
        record.region_base = Some(self.bump.base());
        record.region_size = Some(self.bump.capacity());
        record.backend = Some(E::KIND);
        record.launch_seq = Some(seq);
        // Where each pointer argument's allocation lies, for `--arg N`.
        let base = self.bump.base();
        for i in 0..record.num_args() {
            if record.arg_size(i) != 8 {
                continue;
            }
            let v = record.arg_value(i);
            if let Some((a, n)) = self.allocations.containing(v)
                && let Some(offset) = a.checked_sub(base)
            {
                // Fits: one entry per argument, at most MAX_ARGS.
                let _ = record.arg_allocations.push([i as u64, offset, n]);
            }
        }
        record.checksums.ir = self
            .image_of(kernel)?
            .ir
            .as_ref()
            .map(|b| reprise_core::record::checksum(b));
        Ok(record)
    }

    /// Launches `kernel` unrecorded (`matches`: the configuration's
    /// pattern matches it, so it counts as one of the process's launches).
    fn launch_unrecorded(
        &mut self,
        kernel: &Kernel<E>,
        launch: &Launch<'_>,
        matches: bool,
    ) -> Result<LaunchReport> {
        self.flush_uploads()?;
        self.queue
            .launch(&kernel.kernel, launch)
            .map_err(|e| Error::executor(format!("launching {}", kernel.name), e))?;
        self.matched += u64::from(matches);
        if matches {
            // Skipped or not, it is one of the process's launches: the
            // next recorded one's number says so.
            next_launch_seq();
            self.occurrences.count(&kernel.name, &launch.config, None);
        }
        Ok(LaunchReport {
            recorded: false,
            seq: None,
        })
    }

    /// Runs the launch through the record schedule: the snapshots of the
    /// region's `used` bytes and of the globals (`global_segs`, `globals_len`
    /// bytes), or, with device hashing, what the writer fills them from
    /// (and the bytes of device memory that holds).
    async fn snapshots(
        &mut self,
        kernel: &Kernel<E>,
        launch: Launch<'_>,
        used: usize,
        global_segs: &[Segment],
        globals_len: usize,
    ) -> Result<Snapshots<E>> {
        // With device hashing: a device copy for the snapshots (none:
        // this launch takes the ordinary schedule).
        let copy = match &mut self.hashing {
            Some(h) => h.take_copy(&self.exec, used, self.config.save_output),
            None => None,
        };
        let globals_buf = (!global_segs.is_empty())
            .then(|| self.staging(globals_len))
            .transpose()?;
        let input_buf = self.staging(used)?;
        let output_buf = self
            .config
            .save_output
            .then(|| self.staging(used))
            .transpose()?;
        let pool = self.pool.clone();
        let uploads = std::mem::take(&mut self.pending);
        let context = || format!("recording {}", kernel.name);
        Ok(match (copy, &mut self.hashing) {
            (Some(copy), Some(h)) => {
                let hashes = self.pool.get(copy.hash_bytes(), |n| self.exec.buffer(n));
                let hashes = hashes.map_err(|e| {
                    Error::executor(
                        format!("allocating a {}-byte hash buffer", copy.hash_bytes()),
                        e,
                    )
                })?;
                let launch = LaunchPlan {
                    kernel: &kernel.kernel,
                    launch,
                    globals: global_segs,
                    mode: self.config.mode,
                };
                let plan = h.plan(self.bump.base(), &copy);
                let got = hashing::record(
                    &mut self.queue,
                    uploads,
                    launch,
                    plan,
                    globals_buf,
                    hashes,
                    |b| pool.put(b),
                )
                .await
                .map_err(|e| Error::schedule(context(), e))?;
                let region = h
                    .complete(&copy)
                    .ok_or(Error::Internal("a device copy in flight went missing"))?;
                let pending = h.pending(&copy, region, got.hashes.as_ref());
                pool.put(got.hashes);
                let out = Buffers {
                    input: input_buf,
                    globals: got.globals,
                    output: output_buf,
                };
                (out, Some((pending?, copy.bytes())))
            }
            _ => {
                let buffers = Buffers {
                    input: input_buf,
                    globals: globals_buf,
                    output: output_buf,
                };
                let plan = RecordPlan {
                    kernel: &kernel.kernel,
                    launch,
                    snapshot: from_start(self.bump.base(), used),
                    globals: global_segs,
                    save_output: self.config.save_output,
                    mode: self.config.mode,
                };
                let out =
                    schedule::record(&mut self.queue, uploads, plan, buffers, |b| pool.put(b))
                        .await
                        .map_err(|e| Error::schedule(context(), e))?;
                (out, None)
            }
        })
    }

    /// Launches `kernel`, recording it when the configuration selects it.
    /// An unrecorded launch is queued without waiting; a recorded one waits
    /// for its snapshots (one synchronize in `Async` mode) and hands the files
    /// to the writer.
    ///
    /// Only launches that happened count toward
    /// [`RecordConfig::skip`](crate::RecordConfig::skip) and
    /// [`RecordConfig::max`](crate::RecordConfig::max) (see there). Every
    /// matching launch that happened draws a launch sequence number,
    /// recorded or not, so a capture's `LaunchSeq` is which matching launch
    /// of its process it was: with `skip` 2, the first capture is launch #2.
    ///
    /// A kernel found by another recorder is an [`Error::ForeignHandle`].
    ///
    /// Cancel safety: dropping the future never leaves the device writing
    /// into memory that is gone (see [`reprise_core::schedule`]). Dropped
    /// after its first poll, what it enqueued still runs, but the launch is
    /// not recorded and counts toward neither `skip` nor `max`; the buffers
    /// come back at the recorder's next synchronize.
    pub async fn launch(
        &mut self,
        kernel: &Kernel<E>,
        config: LaunchConfig,
        args: &Args,
    ) -> Result<LaunchReport> {
        if kernel.recorder != self.id {
            return Err(Error::ForeignHandle {
                handle: Handle::Kernel(kernel.name.clone()),
            });
        }
        self.check_params(kernel, args)?;
        let matches = self.config.enabled && self.config.matches(&kernel.name);
        let repeat = matches && self.config.dedup && self.occurrences.seen(&kernel.name, &config);
        let selected = matches
            && !repeat
            && self.config.selects(self.matched, self.recorded)
            && self.reserve_disk(kernel);
        let launch = Launch {
            config,
            args: args.as_kernel_args(),
        };
        if !selected {
            return self.launch_unrecorded(kernel, &launch, matches);
        }
        let store = self
            .store
            .clone()
            .ok_or(Error::Internal("a launch was selected with recording off"))?;

        let used = usize::try_from(self.bump.used()).map_err(|_| Error::TooLarge {
            what: "the recording region's snapshot",
            bytes: self.bump.used(),
        })?;
        let (global_segs, globals_len) =
            globals_segments(self.image_of(kernel)?.globals.iter().map(|g| (g.1, g.2)))?;
        let started = std::time::Instant::now();
        let (out, hashed) = self
            .snapshots(kernel, launch, used, &global_segs, globals_len)
            .await?;
        // The launch ran and its snapshots were taken: only now does it count.
        self.matched += 1;
        self.recorded += 1;
        let seq = next_launch_seq();
        self.occurrences.count(&kernel.name, &config, Some(seq));
        let names = self.occurrences.names();
        log::debug!(
            "recorded launch #{seq} of {}: {used} bytes snapshotted in {:?}",
            kernel.name,
            started.elapsed()
        );

        let image = self.image_of(kernel)?;
        let record = self.describe(kernel, args, config, seq)?;
        let globals = encode_globals(&image.globals, out.globals.as_ref().map(|g| g.as_ref()))?;
        // What the capture holds while it waits: its snapshot buffers and,
        // with device hashing, its device copy.
        let held = [Some(&out.input), out.output.as_ref(), out.globals.as_ref()]
            .into_iter()
            .flatten()
            .map(|b| b.as_ref().len() as u64)
            .sum::<u64>()
            + hashed.as_ref().map_or(0, |h| h.1);
        let hashed = hashed.map(|h| h.0);
        let job = CaptureJob {
            record,
            used,
            out,
            hashed,
            // Reachable-only: the writer selects what the snapshots hold.
            reach: self.allocations.sorted().map(|allocations| Reach {
                allocations,
                base: self.bump.base(),
                globals: global_segs.clone(),
            }),
            globals,
            image: image.bytes.clone(),
            ir: image.ir.clone(),
            store,
            seq,
            names,
            pool: self.pool.clone(),
        };
        let job = move || job.run();
        match &self.writer {
            Some(w) => w.submit(Box::new(job), held)?,
            None => self.written.push(job()?),
        }
        Ok(LaunchReport {
            recorded: true,
            seq: Some(seq),
        })
    }
}

/// Encodes the snapshot of `globals` (name, address, size) held in `buf` in
/// the current layout.
fn encode_globals(globals: &[(String, u64, u64)], buf: Option<&[u8]>) -> Result<Vec<u8>> {
    let buf = buf.unwrap_or(&[]);
    let mut at = 0usize;
    let items: Vec<(&str, &[u8])> = globals
        .iter()
        .map(|(name, _, size)| {
            let s = &buf[at..at + *size as usize];
            at += *size as usize;
            (name.as_str(), s)
        })
        .collect();
    // The current layout has no limit but the address space's, the
    // names come from the image's symbol table (not empty, no NUL) and the
    // buffer is sized by `encoded_len`: an error here is a bug.
    let len = globals::encoded_len(Layout::Current, items.iter().copied())
        .map_err(|_| Error::Internal("the globals could not be laid out"))?;
    let mut out = vec![0u8; len];
    globals::encode_into(Layout::Current, items.iter().copied(), &mut out)
        .map_err(|_| Error::Internal("the globals could not be encoded"))?;
    Ok(out)
}
