//! The worker pool. Captures are replayed in child processes (this
//! executable, `check --worker-serve`: [`super::worker`]), so that a kernel
//! that faults, hangs or kills its process is that capture's result and the
//! suite goes on; the verdict is the suite's own ([`super::verdict`]).
//!
//! A host capture's code runs in its worker's process, where it can print
//! anything, results included: each host capture has a worker of its own,
//! `jobs` at a time, and every line of it is that capture's. A GPU worker,
//! one per visible device, serves up to [`PER_WORKER`] captures (a process,
//! its libraries and a device context are paid for once) and refuses any
//! that would run in its process. A worker runs in a process group of its
//! own, killed past the timeout and once it has ended (so that nothing it
//! started lingers), and dies with the suite (`PR_SET_PDEATHSIG`); a fresh
//! one follows any capture that failed or killed its worker.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::discover::Found;
use super::protocol::{Lines, NoResult, Outcome, Request};
use super::results::{CaptureResult, Status, median};
use super::verdict;
use crate::compare_args::CompareArgs;
use crate::jobs::process;

/// How workers are started.
pub struct Workers {
    /// This executable.
    pub exe: PathBuf,
    /// The arguments of this `reprise check` after `check`, handed to each
    /// worker (which reads the comparison and opening options from them).
    pub args: Vec<OsString>,
    /// How long one capture may take.
    pub timeout: Option<Duration>,
    /// Host captures at once.
    pub jobs: usize,
    /// GPU devices: one worker each.
    pub devices: usize,
    /// How the suite opens a capture to judge its output.
    pub options: reprise::OpenOptions,
    /// How the suite compares.
    pub compare: CompareArgs,
    /// How many region bases the suite tries, where a capture's is not
    /// settled.
    pub base_tries: crate::isolate::BaseTryArgs,
    /// The suite's private directory (mode 0700, removed when dropped),
    /// where each worker writes the output of the capture it replayed.
    pub scratch: tempfile::TempDir,
    /// Outputs named in `scratch` so far.
    pub outputs: AtomicU64,
}

/// The most bytes kept of a worker's stderr (its end).
const KEPT: usize = 256 << 10;

/// Captures one worker checks before a fresh one takes over.
const PER_WORKER: usize = 64;

/// The longest line kept of a worker's stdout (a kernel may print one
/// without end); the rest of it is skipped.
const LONGEST_LINE: usize = 1 << 20;

struct Served {
    child: Child,
    pid: libc::pid_t,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    stderr: Tail,
    served: usize,
}

/// The end of a worker's stderr since the capture under way was sent: a
/// reader thread appends, the slot clears it before each capture, so that
/// what a worker that died said is its last capture's.
#[derive(Clone, Default)]
struct Tail {
    kept: Arc<Mutex<Vec<u8>>>,
    done: Arc<(Mutex<bool>, Condvar)>,
}

impl Tail {
    /// Reads `pipe` to its end on a thread, keeping the last
    /// [`KEPT`] bytes.
    fn of(pipe: Option<impl Read + Send + 'static>) -> Tail {
        let tail = Tail::default();
        let t = tail.clone();
        std::thread::spawn(move || {
            if let Some(mut pipe) = pipe {
                let mut chunk = [0u8; 16 << 10];
                while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                    let mut kept = t.kept.lock().unwrap_or_else(|e| e.into_inner());
                    kept.extend_from_slice(&chunk[..n]);
                    if kept.len() > 2 * KEPT {
                        let cut = kept.len() - KEPT;
                        kept.drain(..cut);
                    }
                }
            }
            let (done, cv) = &*t.done;
            *done.lock().unwrap_or_else(|e| e.into_inner()) = true;
            cv.notify_all();
        });
        tail
    }

    fn clear(&self) {
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// What was kept, once the pipe has ended (waiting `grace` at most: a
    /// process that left the group may hold it open).
    fn take(&self, grace: Duration) -> Vec<u8> {
        let (done, cv) = &*self.done;
        let guard = done.lock().unwrap_or_else(|e| e.into_inner());
        drop(cv.wait_timeout_while(guard, grace, |d| !*d));
        let mut kept = std::mem::take(&mut *self.kept.lock().unwrap_or_else(|e| e.into_inner()));
        if kept.len() > KEPT {
            kept.drain(..kept.len() - KEPT);
        }
        kept
    }
}

/// One slot of the pool: its worker, started when needed.
struct Slot<'a> {
    w: &'a Workers,
    /// Its GPU; `None` for host captures.
    device: Option<i32>,
    worker: Option<Served>,
}

impl Slot<'_> {
    fn check(&mut self, found: &Found) -> CaptureResult {
        let mut result = CaptureResult::of(found, Status::Failed, String::new());
        let started = Instant::now();
        let n = self.w.outputs.fetch_add(1, Ordering::Relaxed);
        let output = self.w.scratch.path().join(format!("output-{n}"));
        let mut line = serde_json::to_string(&Request::new(&found.path, &output))
            .expect("a request serializes");
        line.push('\n');
        let sent = match self.send(&line) {
            // The worker ended while it waited (killed from outside, say):
            // that is no capture's doing, and a fresh one takes this one
            // (one that cannot take it either: how it ended is said below).
            Ok(false) => {
                self.retire();
                self.send(&line)
            }
            sent => sent,
        };
        if let Err(why) = sent {
            result.message = why;
            return result;
        }
        let wk = self.worker.as_mut().expect("started above");
        // Host captures run their code in the worker's process: each has a
        // worker of its own, whose every line is that capture's.
        let one_shot = self.device.is_none();
        if one_shot {
            drop(wk.stdin.take());
        }
        let mut deadline = self.w.timeout.map(|t| started + t);
        let mut exited = false;
        let mut lines = Lines::default();
        // `Timeout`: past the timeout; `Disconnected`: the worker has ended
        // and its lines are all read; `None`: a worker serving many
        // answered.
        let ended = loop {
            let got = match deadline {
                Some(d) => wk
                    .lines
                    .recv_timeout(d.saturating_duration_since(Instant::now())),
                None => wk.lines.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match got {
                // The worker has ended: what it wrote is read within a
                // grace (a process it started may hold the pipe open).
                Ok(l) if l.is_empty() => {
                    exited = true;
                    let grace = Instant::now() + Duration::from_secs(1);
                    deadline = Some(deadline.map_or(grace, |d| d.min(grace)));
                }
                Err(RecvTimeoutError::Timeout) if exited => {
                    break Some(RecvTimeoutError::Disconnected);
                }
                Ok(l) => {
                    if lines.add(&l) && !one_shot {
                        break None;
                    }
                }
                Err(e) => break Some(e),
            }
        };
        result.wall_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if ended == Some(RecvTimeoutError::Timeout) {
            let wk = self.worker.take().expect("running");
            process::kill_group(wk.pid);
            let _ = end(wk, Duration::from_secs(5));
            result.status = Status::Timeout;
            result.message = format!(
                "ran past the timeout of {} and was killed",
                crate::ui::human_time(self.w.timeout.unwrap_or_default())
            );
        } else {
            // A worker that has ended is reaped: how it ended, and what it
            // said last on stderr.
            let wait =
                ended.and_then(|_| self.worker.take().map(|wk| end(wk, Duration::from_secs(2))));
            let clean = wait
                .as_ref()
                .is_none_or(|(s, _)| s.is_some_and(|s| s.success()));
            let (status, stderr) = wait.unwrap_or_default();
            // (`result` says `failed` until a report says otherwise.)
            match lines.one(clean) {
                Ok(r) => {
                    result.kernel_ns = median(&r.kernel_times_ns);
                    result.replay_ns = median(&r.replay_times_ns);
                    result.kernel = r.kernel.or(result.kernel.take());
                    result.backend = r.backend.or(result.backend.take());
                    result.kernel_times_ns = r.kernel_times_ns;
                    result.replay_times_ns = r.replay_times_ns;
                    // When the kernel ran, the suite's own comparison of the
                    // output it left.
                    (result.status, result.message) = match r.outcome {
                        Outcome::Ran => {
                            verdict::judge(&found.path, &self.w.options, &self.w.compare, &output)
                        }
                        Outcome::Refused => (Status::Refused, r.message),
                        Outcome::Failed => (Status::Failed, r.message),
                    };
                    // A region base left unsettled: the bases possible tried.
                    (result.status, result.message) = verdict::by_trying(
                        &found.path,
                        &verdict::Trying {
                            exe: &self.w.exe,
                            options: &self.w.options,
                            budget: self.w.base_tries,
                            timeout: self.w.timeout,
                        },
                        &self.w.compare,
                        (result.status, std::mem::take(&mut result.message)),
                    );
                    result.exit_code = Some(result.status.exit_code());
                }
                Err(NoResult::None) => {
                    let stderr = String::from_utf8_lossy(&stderr);
                    let said = stderr
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .map(|l| format!(": {}", l.trim()))
                        .unwrap_or_default();
                    let how = how_ended(status, &mut result);
                    result.message = format!("the worker {how} before it gave a result{said}");
                }
                Err(NoResult::Several(n)) => {
                    result.message = format!(
                        "the worker's output held {n} results for one capture: something in \
                         the process (the capture's code?) printed results, and none of them \
                         is taken"
                    );
                }
                Err(NoResult::Malformed) => {
                    result.message = "the worker's result could not be read: something in the \
                                      process (the capture's code?) printed a malformed one"
                        .to_string();
                }
                Err(NoResult::Unclean) => {
                    result.message = format!(
                        "the worker {} after it gave a result: something in the process (the \
                         capture's code?) ended it, and its result is not taken",
                        how_ended(status, &mut result)
                    );
                }
            }
        }
        let _ = std::fs::remove_file(&output);
        // A worker that failed a capture may have been left unsound, and one
        // that served its share makes way: a fresh one takes the next.
        if let Some(wk) = self.worker.as_mut() {
            wk.served += 1;
            if result.status == Status::Failed || wk.served >= PER_WORKER {
                self.retire();
            }
        }
        result
    }

    /// Hands `line` to the worker (started when none runs), its stderr
    /// cleared first; whether it took it, or why no worker could start.
    fn send(&mut self, line: &str) -> Result<bool, String> {
        if self.worker.is_none() {
            self.worker = Some(start(self.w, self.device)?);
        }
        let wk = self.worker.as_mut().expect("started above");
        wk.stderr.clear();
        Ok(wk.stdin.as_mut().is_some_and(|s| {
            s.write_all(line.as_bytes())
                .and_then(|()| s.flush())
                .is_ok()
        }))
    }

    /// Lets the worker end (its stdin closed), and waits for it.
    fn retire(&mut self) {
        if let Some(mut wk) = self.worker.take() {
            drop(wk.stdin.take());
            let _ = end(wk, Duration::from_secs(5));
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.retire();
    }
}

/// Runs every capture of `host` and `gpu` and hands each result to
/// `done` as it comes, on this thread.
pub fn run(w: &Workers, host: Vec<Found>, gpu: Vec<Found>, mut done: impl FnMut(CaptureResult)) {
    let devices = (0..w.devices.min(gpu.len())).map(|d| Some(d as i32));
    let slots: Vec<Option<i32>> = (0..w.jobs.min(host.len()))
        .map(|_| None)
        .chain(devices)
        .collect();
    let (host, gpu) = (
        Mutex::new(VecDeque::from(host)),
        Mutex::new(VecDeque::from(gpu)),
    );
    let (tx, rx) = mpsc::channel::<CaptureResult>();
    std::thread::scope(|s| {
        for device in slots {
            let queue = if device.is_some() { &gpu } else { &host };
            let tx = tx.clone();
            s.spawn(move || {
                let mut slot = Slot {
                    w,
                    device,
                    worker: None,
                };
                let next = || queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                for found in std::iter::from_fn(next) {
                    if tx.send(slot.check(&found)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for r in rx {
            done(r);
        }
    });
}

/// How a worker ended, for people (and into `result`).
fn how_ended(status: Option<ExitStatus>, result: &mut CaptureResult) -> String {
    result.exit_code = status.and_then(|s| s.code());
    result.signal = status.and_then(|s| s.signal());
    match (result.exit_code, result.signal) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("was killed by {}", crate::isolate::signal_name(sig)),
        (None, None) => "ended".to_string(),
    }
}

fn start(w: &Workers, device: Option<i32>) -> Result<Served, String> {
    let mut cmd = Command::new(&w.exe);
    cmd.arg("check").arg("--worker-serve");
    if let Some(d) = device {
        cmd.arg("--worker-device").arg(d.to_string());
    }
    cmd.args(&w.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: prctl is async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            // Dies with the suite, which otherwise could not kill it.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("could not start a worker ({}): {e}", w.exe.display()))?;
    let pid = child.id() as libc::pid_t;
    let stdin = child.stdin.take();
    // Its stdout line by line (each line at most LONGEST_LINE bytes, none
    // empty), and then an empty line, which says the worker has ended.
    let (tx, lines) = mpsc::channel();
    let ended = tx.clone();
    std::thread::spawn(move || {
        process::wait_unreaped(pid);
        let _ = ended.send(Vec::new());
    });
    if let Some(out) = child.stdout.take() {
        std::thread::spawn(move || {
            let mut r = BufReader::new(out);
            loop {
                let mut line = Vec::new();
                match r
                    .by_ref()
                    .take(LONGEST_LINE as u64)
                    .read_until(b'\n', &mut line)
                {
                    Ok(1..) if tx.send(line).is_ok() => {}
                    _ => break,
                }
            }
        });
    }
    let stderr = Tail::of(child.stderr.take());
    Ok(Served {
        child,
        pid,
        stdin,
        lines,
        stderr,
        served: 0,
    })
}

/// Waits for the worker to end (killing its group after `grace`), then
/// kills what is left of its group and reaps it: its exit status (none
/// when it could not be had) and the end of its stderr.
fn end(mut wk: Served, grace: Duration) -> (Option<ExitStatus>, Vec<u8>) {
    drop(wk.stdin.take());
    let pid = wk.pid;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        process::wait_unreaped(pid);
        let _ = tx.send(());
    });
    if rx.recv_timeout(grace).is_err() {
        process::kill_group(pid);
        let _ = rx.recv();
    }
    // Not reaped yet: the group's id is still the worker's own.
    process::kill_group(pid);
    let status = wk.child.wait().ok();
    (status, wk.stderr.take(Duration::from_secs(2)))
}
