//! [`Recorder::launch`]: a launch, recorded when the configuration selects
//! it (its snapshots, the kernel, the capture handed to the writer).

use reprise_core::exec::{Executor, Launch, LaunchConfig, Queue, Segment};
use reprise_core::globals::{self, Layout};
use reprise_core::record::{KernelRecord, MAX_ARGS};
use reprise_core::schedule::{self, Buffers, RecordPlan};

use super::{Args, Kernel, LaunchReport, Recorder, hashing, reachable};
use crate::error::{Error, Handle, Result};
use crate::layout::globals_segments;
use crate::store::{CaptureData, estimate, next_launch_seq};

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

    /// Launches `kernel`, recording it when the configuration selects it.
    /// An unrecorded launch is queued without waiting; a recorded one waits
    /// for its snapshots (one synchronize in `Async` mode) and hands the files
    /// to the writer.
    ///
    /// Only launches that happened count toward [`RecordConfig::skip`](crate::RecordConfig::skip) and
    /// [`RecordConfig::max`](crate::RecordConfig::max): a launch that fails to be queued, or fails
    /// while it is recorded (a kernel that faults, say), counts toward
    /// neither, and draws no launch sequence number. Every matching launch
    /// that happened draws one, recorded or not (skipped, past `max`, a
    /// repeat), so a capture's `LaunchSeq` is which matching launch of its
    /// process it was: with `skip` 2, the first capture is launch #2. An unrecorded launch is
    /// not waited for, so a fault it causes is reported by the next
    /// synchronize, and it has counted toward `skip`.
    ///
    /// A kernel found by another recorder is an [`Error::ForeignHandle`].
    ///
    /// Cancel safety: dropping the future before it completes never leaves
    /// the device writing into memory that is gone (the buffers of its
    /// copies belong to the recorder's queue until a synchronize covers
    /// them, as [`reprise_core::schedule`] describes). Dropped before its
    /// first poll, it does nothing. Dropped later, what it enqueued (the
    /// pending uploads, the snapshot copies, the kernel) still runs, but
    /// the launch is not recorded and counts toward neither `skip` nor
    /// `max`; the buffers come back to the recorder at its next
    /// synchronize ([`Recorder::synchronize`], [`Recorder::download`],
    /// [`Recorder::finish`] or a recorded launch).
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
            self.flush_uploads()?;
            self.queue
                .launch(&kernel.kernel, &launch)
                .map_err(|e| Error::executor(format!("launching {}", kernel.name), e))?;
            self.matched += u64::from(matches);
            if matches {
                // Skipped or not, it is one of the process's launches: the
                // next recorded one's number says so.
                next_launch_seq();
                self.occurrences.count(&kernel.name, &config, None);
            }
            return Ok(LaunchReport {
                recorded: false,
                seq: None,
            });
        }
        let store = self
            .store
            .clone()
            .ok_or(Error::Internal("a launch was selected with recording off"))?;

        let used = usize::try_from(self.bump.used()).map_err(|_| Error::TooLarge {
            what: "the recording region's snapshot",
            bytes: self.bump.used(),
        })?;
        let image = self
            .images
            .get(kernel.image)
            .ok_or(Error::Internal("a kernel of this recorder names no image"))?;
        let (global_segs, globals_len) =
            globals_segments(image.globals.iter().map(|g| (g.1, g.2)))?;
        // With device hashing: a device copy for the snapshots (none:
        // this launch takes the ordinary schedule).
        let copy = match &mut self.hashing {
            Some(h) => h.take_copy(&self.exec, used, self.config.save_output),
            None => None,
        };
        let globals_buf = if global_segs.is_empty() {
            None
        } else {
            Some(self.staging(globals_len)?)
        };
        let input_buf = self.staging(used)?;
        let output_buf = if self.config.save_output {
            Some(self.staging(used)?)
        } else {
            None
        };
        let pool = self.pool.clone();
        let uploads = std::mem::take(&mut self.pending);
        let started = std::time::Instant::now();
        let context = || format!("recording {}", kernel.name);
        // The snapshots, or (device hashing) what the writer fills them
        // from.
        let (out, hashed) = match (copy, &mut self.hashing) {
            (Some(copy), Some(h)) => {
                let hashes = self.pool.get(copy.hash_bytes(), |n| self.exec.buffer(n));
                let hashes = hashes.map_err(|e| {
                    Error::executor(
                        format!("allocating a {}-byte hash buffer", copy.hash_bytes()),
                        e,
                    )
                })?;
                let plan = h.plan(
                    &kernel.kernel,
                    launch,
                    self.bump.base(),
                    &copy,
                    &global_segs,
                    self.config.mode,
                );
                let got =
                    hashing::record(&mut self.queue, uploads, plan, globals_buf, hashes, |b| {
                        pool.put(b)
                    })
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
                    snapshot: Segment {
                        device: self.bump.base(),
                        host_offset: 0,
                        len: used,
                    },
                    globals: &global_segs,
                    save_output: self.config.save_output,
                    mode: self.config.mode,
                };
                let out =
                    schedule::record(&mut self.queue, uploads, plan, buffers, |b| pool.put(b))
                        .await
                        .map_err(|e| Error::schedule(context(), e))?;
                (out, None)
            }
        };
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
        let globals_blob =
            encode_globals(&image.globals, out.globals.as_ref().map(|g| g.as_ref()))?;
        let image_bytes = image.bytes.clone();
        let ir = image.ir.clone();
        record.checksums.ir = ir.as_ref().map(|b| reprise_core::record::checksum(b));
        // What the capture holds while it waits: its snapshot buffers.
        let held = [Some(&out.input), out.output.as_ref(), out.globals.as_ref()]
            .into_iter()
            .flatten()
            .map(|b| b.as_ref().len() as u64)
            .sum::<u64>()
            // and, with device hashing, its device copy.
            + hashed.as_ref().map_or(0, |h| h.1);
        let hashed = hashed.map(|h| h.0);
        // Reachable-only: the writer selects what the snapshots hold.
        let reach = self
            .allocations
            .sorted()
            .map(|allocs| (allocs, self.bump.base(), global_segs.clone()));
        let job = move || {
            let mut out = out;
            // A capture that fails before it is written gives its disk
            // reservation back (a written one settles it in the store).
            let unwritten = |output: bool| {
                if let Some(b) = store.budget() {
                    let output = if output { used as u64 } else { 0 };
                    let len = (globals_blob.len() as u64, image_bytes.len() as u64);
                    b.settle(estimate(used as u64, output, len.0, len.1), 0);
                }
            };
            let filled = match hashed {
                Some(p) => {
                    let saved = out.output.is_some();
                    let (input, output, filled) = p
                        .fill(out.input, out.output)
                        .inspect_err(|_| unwritten(saved))?;
                    out.input = input;
                    out.output = output;
                    Some(filled)
                }
                None => None,
            };
            let selected = match &reach {
                Some((allocs, base, segs)) => reachable::select(
                    &mut record,
                    allocs,
                    *base,
                    (out.globals.as_ref().map_or(&[][..], |g| g.as_ref()), segs),
                    &mut out.input.as_mut()[..used],
                    out.output.as_mut().map(|o| &mut o.as_mut()[..used]),
                ),
                None => Ok(()),
            };
            let data = CaptureData {
                input: &out.input.as_ref()[..used],
                output: out.output.as_ref().map(|o| &o.as_ref()[..used]),
                globals: &globals_blob,
                image: &image_bytes,
            };
            let r = selected.and_then(|()| store.write(&mut record, data));
            let r = match (r, &ir) {
                (Ok(p), Some(ir)) => {
                    crate::store::write_atomically(&crate::capture::ir_path(&p), ir, false)
                        .map(|()| p)
                }
                (r, _) => r,
            };
            if let Ok(p) = &r
                && let Some(n) = p.file_name()
            {
                names
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(seq, n.to_string_lossy().into_owned());
            }
            match filled {
                // The last snapshot stays the writer's, for the next
                // capture's unchanged chunks.
                Some(f) => match out.output {
                    Some(o) => f.keep(o, Some(out.input), &pool),
                    None => f.keep(out.input, None, &pool),
                },
                None => {
                    pool.put(out.input);
                    out.output.into_iter().for_each(|b| pool.put(b));
                }
            }
            out.globals.into_iter().for_each(|b| pool.put(b));
            r
        };
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
