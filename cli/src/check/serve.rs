//! Workers: a worker process (`check --worker-serve`) reads requests on
//! stdin, one JSON line each (a capture, and where its output goes), and
//! answers each with its marked report line. The verdict is never the
//! worker's: the suite compares the output the worker left (the verdict
//! module).
//!
//! A host capture's code runs in its worker's process, where it can print
//! anything, results included: each host capture has a worker of its own,
//! every line of which is that capture's, read until the worker has ended;
//! a worker that gave no result, more than one, a malformed one, or one
//! and then did not exit cleanly, has failed that capture and no other.
//! A GPU capture's kernel runs on the device and cannot write to its
//! worker's output, so a GPU worker serves up to [`PER_WORKER`] captures
//! (the start of a process, its libraries and a device context, is paid
//! once for them) and refuses any capture that would run in its process.
//!
//! A capture is its own result whatever it does: one that hangs past the
//! timeout has the worker's process group killed, one that kills its
//! worker is named with how the process ended, and a new worker takes the
//! next capture. A worker also ends after any capture that failed (a
//! kernel that faulted may have left the process unsound).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::discover::Found;
use super::pool::{self, Workers};
use super::protocol::{Lines, NoResult, Outcome, Report, Request};
use super::results::{CaptureResult, Status};
use super::verdict;
use super::worker;
use crate::jobs::process;

/// The most bytes kept of a worker's stderr (its end).
const KEPT: usize = 256 << 10;

/// Captures one worker checks before a fresh one takes over.
pub const PER_WORKER: usize = 64;

/// The longest line kept of a worker's stdout (a kernel may print one
/// without end); the rest of it is skipped.
const LONGEST_LINE: usize = 1 << 20;

/// A running worker.
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
pub struct Slot<'a> {
    w: &'a Workers,
    device: Option<i32>,
    worker: Option<Served>,
}

impl<'a> Slot<'a> {
    /// A slot for host captures (`device` none) or for one GPU.
    pub fn new(w: &'a Workers, device: Option<i32>) -> Slot<'a> {
        Slot {
            w,
            device,
            worker: None,
        }
    }

    /// Checks `found` in this slot's worker.
    pub fn check(&mut self, found: &Found) -> CaptureResult {
        let mut result = CaptureResult::of(found, Status::Failed, String::new());
        let started = Instant::now();
        // Host captures run their code in the worker's process: each has a
        // worker of its own, whose every line is that capture's.
        let one_shot = self.device.is_none();
        let output = self.w.scratch.output_path();
        let mut line = serde_json::to_string(&Request::new(&found.path, &output))
            .expect("a request serializes");
        line.push('\n');
        if !self.started(&mut result) {
            return result;
        }
        if !self.send(&line) {
            // The worker ended while it waited (killed from outside, say):
            // that is no capture's doing, and a fresh one takes this one.
            self.retire();
            if !self.started(&mut result) {
                return result;
            }
            // One that cannot take it either: how it ended is said below.
            self.send(&line);
        }
        let wk = self.worker.as_mut().expect("started above");
        if one_shot {
            drop(wk.stdin.take());
        }
        let mut deadline = self.w.timeout.map(|t| started + t);
        let mut exited = false;
        let mut lines = Lines::default();
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
        match ended {
            Some(RecvTimeoutError::Timeout) => {
                let wk = self.worker.take().expect("running");
                process::kill_group(wk.pid);
                let _ = end(wk, Duration::from_secs(5));
                result.status = Status::Timeout;
                result.message = format!(
                    "ran past the timeout of {} and was killed",
                    crate::ui::human_time(self.w.timeout.unwrap_or_default())
                );
            }
            // A one-shot worker has ended (its lines are all read), or a
            // worker serving many answered.
            Some(RecvTimeoutError::Disconnected) | None => {
                let wait = if ended.is_none() {
                    None
                } else {
                    let wk = self.worker.take().expect("running");
                    Some(end(wk, Duration::from_secs(2)))
                };
                let exit = wait.as_ref().map(|(status, _)| *status);
                let clean = exit.is_none_or(|s| s.is_some_and(|s| s.success()));
                match lines.one(clean) {
                    Ok(r) => self.reported(found, r, &output, &mut result),
                    Err(NoResult::None) => {
                        let (status, stderr) = wait.unwrap_or_default();
                        ended_without_result(status, &stderr, &mut result);
                    }
                    Err(why) => {
                        result.status = Status::Failed;
                        result.message = match why {
                            NoResult::Several(n) => format!(
                                "the worker's output held {n} results for one capture: \
                                 something in the process (the capture's code?) printed \
                                 results, and none of them is taken"
                            ),
                            NoResult::Malformed => "the worker's result could not be read: \
                                 something in the process (the capture's code?) printed a \
                                 malformed one"
                                .to_string(),
                            NoResult::Unclean | NoResult::None => {
                                let (status, _) = wait.unwrap_or_default();
                                format!(
                                    "the worker {} after it gave a result: something in the \
                                     process (the capture's code?) ended it, and its result \
                                     is not taken",
                                    how_ended(status, &mut result)
                                )
                            }
                        };
                        if let Some(w) = self.worker.take() {
                            let _ = end(w, Duration::from_secs(2));
                        }
                    }
                }
            }
        }
        let _ = std::fs::remove_file(&output);
        result
    }

    /// Starts this slot's worker when none runs; whether one does (if not,
    /// `result` says why).
    fn started(&mut self, result: &mut CaptureResult) -> bool {
        if self.worker.is_none() {
            match start(self.w, self.device) {
                Ok(s) => self.worker = Some(s),
                Err(why) => {
                    result.message = why;
                    return false;
                }
            }
        }
        true
    }

    /// `result` from the worker's report `r`: when the kernel ran, the
    /// suite's own comparison of the output it left.
    fn reported(&mut self, found: &Found, r: Report, output: &Path, result: &mut CaptureResult) {
        result.kernel_ns = worker::kernel_ns(&r);
        result.replay_ns = worker::replay_ns(&r);
        result.kernel = r.kernel.or(result.kernel.take());
        result.backend = r.backend.or(result.backend.take());
        result.kernel_times_ns = r.kernel_times_ns;
        result.replay_times_ns = r.replay_times_ns;
        (result.status, result.message) = match r.outcome {
            Outcome::Ran => verdict::judge(&found.path, &self.w.options, &self.w.compare, output),
            Outcome::Refused => (Status::Refused, r.message),
            Outcome::Failed => (Status::Failed, r.message),
        };
        result.exit_code = Some(pool::expected_code(result.status));
        if let Some(wk) = self.worker.as_mut() {
            wk.served += 1;
            if result.status == Status::Failed || wk.served >= PER_WORKER {
                self.retire();
            }
        }
    }

    /// Hands `line` to the worker, its stderr cleared first; whether it
    /// took it.
    fn send(&mut self, line: &str) -> bool {
        let Some(wk) = self.worker.as_mut() else {
            return false;
        };
        wk.stderr.clear();
        wk.stdin.as_mut().is_some_and(|s| {
            s.write_all(line.as_bytes())
                .and_then(|()| s.flush())
                .is_ok()
        })
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

/// Captures waiting for a worker, shared by the workers that take them.
type Queue = Arc<Mutex<VecDeque<Found>>>;

/// Runs every capture of `host` and `gpu` and hands each result to
/// `done` as it comes, on this thread.
pub fn run(w: &Workers, host: Vec<Found>, gpu: Vec<Found>, mut done: impl FnMut(CaptureResult)) {
    let (tx, rx) = mpsc::channel::<CaptureResult>();
    let host = Arc::new(Mutex::new(VecDeque::from(host)));
    let gpu = Arc::new(Mutex::new(VecDeque::from(gpu)));
    std::thread::scope(|s| {
        let mut slots: Vec<(Queue, Option<i32>)> = Vec::new();
        let host_len = host.lock().unwrap_or_else(|e| e.into_inner()).len();
        let gpu_len = gpu.lock().unwrap_or_else(|e| e.into_inner()).len();
        for _ in 0..w.jobs.min(host_len) {
            slots.push((host.clone(), None));
        }
        for d in 0..w.devices.min(gpu_len) {
            slots.push((gpu.clone(), Some(d as i32)));
        }
        for (queue, device) in slots {
            let tx = tx.clone();
            s.spawn(move || {
                let mut slot = Slot::new(w, device);
                loop {
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                    let Some(found) = next else { break };
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

/// `result` for a worker that ended as `status` without a result, with the
/// last line of its `stderr`.
fn ended_without_result(status: Option<ExitStatus>, stderr: &[u8], result: &mut CaptureResult) {
    let ended = how_ended(status, result);
    let stderr = String::from_utf8_lossy(stderr);
    let said = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| format!(": {}", l.trim()))
        .unwrap_or_default();
    result.status = Status::Failed;
    result.message = format!("the worker {ended} before it gave a result{said}");
}

/// Starts a worker.
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
    let (lines, tx) = line_reader(child.stdout.take());
    // An empty line says the worker has ended.
    std::thread::spawn(move || {
        process::wait_unreaped(pid);
        let _ = tx.send(Vec::new());
    });
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

/// Reads `pipe` line by line on a thread (each line at most
/// [`LONGEST_LINE`] bytes kept, none empty), and a sender of more.
fn line_reader(
    pipe: Option<impl Read + Send + 'static>,
) -> (Receiver<Vec<u8>>, mpsc::Sender<Vec<u8>>) {
    let (tx, rx) = mpsc::channel();
    let more = tx.clone();
    if let Some(pipe) = pipe {
        std::thread::spawn(move || {
            let mut r = BufReader::new(pipe);
            loop {
                let mut line = Vec::new();
                match r
                    .by_ref()
                    .take(LONGEST_LINE as u64)
                    .read_until(b'\n', &mut line)
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
    }
    (rx, more)
}
