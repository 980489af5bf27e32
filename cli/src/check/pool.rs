//! Running the workers: each capture in a child process of its own (this
//! executable, `check --worker`), so that a kernel that faults, hangs or
//! kills its process is that capture's result and the suite goes on. Host
//! captures run `jobs` at a time; GPU captures one at a time per visible
//! device. A worker runs in a process group of its own, which is killed
//! when it passes the timeout (and once it has ended, so that nothing it
//! started lingers), and it dies with the suite (`PR_SET_PDEATHSIG`).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::discover::Found;
use super::results::{CaptureResult, Status};
use super::worker::Report;

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
}

/// Captures waiting for a worker, shared by the workers that take them.
type Queue = Arc<Mutex<VecDeque<Found>>>;

/// The most bytes kept of a worker's stdout and stderr (their ends).
const KEPT: usize = 256 << 10;

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
                loop {
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                    let Some(found) = next else { break };
                    if tx.send(one(w, &found, device)).is_err() {
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

/// Checks one capture in a worker.
pub fn one(w: &Workers, found: &Found, device: Option<i32>) -> CaptureResult {
    let mut result = CaptureResult {
        path: found.path.display().to_string(),
        name: found.name.clone(),
        kernel: found.kernel.clone(),
        backend: found.backend.map(|b| b.to_string()),
        status: Status::Failed,
        exit_code: None,
        signal: None,
        kernel_ns: None,
        kernel_times_ns: Vec::new(),
        replay_ns: None,
        replay_times_ns: Vec::new(),
        wall_ns: 0,
        message: String::new(),
    };
    let started = Instant::now();
    let ran = run_worker(w, found, device);
    result.wall_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let ran = match ran {
        Ok(r) => r,
        Err(why) => {
            result.message = why;
            return result;
        }
    };
    result.exit_code = ran.status.code();
    result.signal = ran.status.signal();
    let report = Report::find(&String::from_utf8_lossy(&ran.stdout));
    let stderr = String::from_utf8_lossy(&ran.stderr);
    if ran.timed_out {
        result.status = Status::Timeout;
        result.message = format!(
            "ran past the timeout of {} and was killed",
            crate::ui::human_time(w.timeout.unwrap_or_default())
        );
        return result;
    }
    match (report, ran.status.code()) {
        (Some(r), Some(code @ 0..=2)) if code == expected_code(r.status) => {
            result.status = r.status;
            result.kernel_ns = r.kernel_ns();
            result.replay_ns = r.replay_ns();
            result.kernel = r.kernel.or(result.kernel);
            result.backend = r.backend.or(result.backend);
            result.kernel_times_ns = r.kernel_times_ns;
            result.replay_times_ns = r.replay_times_ns;
            result.message = r.message;
        }
        (_, _) => {
            let ended = match (ran.status.code(), ran.status.signal()) {
                (Some(code), _) => format!("exited with status {code}"),
                (None, Some(sig)) => format!("was killed by {}", crate::isolate::signal_name(sig)),
                (None, None) => "ended".to_string(),
            };
            // What the worker said last: the fault guard's report, an error.
            let said = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| format!(": {}", l.trim()))
                .unwrap_or_default();
            result.message = format!("the worker {ended} before it gave a result{said}");
        }
    }
    result
}

/// The exit status a worker ends with for `status`.
fn expected_code(status: Status) -> i32 {
    match status {
        Status::Passed => 0,
        Status::Differs => 1,
        _ => 2,
    }
}

/// How a worker ended.
struct Ran {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    timed_out: bool,
}

/// Starts the worker for `found` and waits for it, killing its process
/// group once it passes the timeout.
fn run_worker(w: &Workers, found: &Found, device: Option<i32>) -> Result<Ran, String> {
    let mut cmd = Command::new(&w.exe);
    cmd.arg("check").arg("--worker").arg(&found.path);
    if let Some(d) = device {
        cmd.arg("--worker-device").arg(d.to_string());
    }
    cmd.args(&w.args)
        .stdin(Stdio::null())
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
    let out = keep_tail(child.stdout.take());
    let err = keep_tail(child.stderr.take());
    // Reaped only under this lock, after its group was killed: until then
    // the group's id cannot be another's, so killing it never hits a
    // stranger.
    let reaped = Arc::new(Mutex::new(false));
    let (tx, rx) = mpsc::channel();
    let r = reaped.clone();
    std::thread::spawn(move || {
        wait_unreaped(pid);
        let mut reaped = r.lock().unwrap_or_else(|e| e.into_inner());
        kill_group(pid);
        let status = child.wait();
        *reaped = true;
        drop(reaped);
        let _ = tx.send(status);
    });
    let mut timed_out = false;
    let status = match w.timeout {
        None => rx.recv(),
        Some(limit) => match rx.recv_timeout(limit) {
            Ok(s) => Ok(s),
            Err(_) => {
                {
                    let reaped = reaped.lock().unwrap_or_else(|e| e.into_inner());
                    if !*reaped {
                        kill_group(pid);
                        timed_out = true;
                    }
                }
                rx.recv()
            }
        },
    };
    let status = status
        .map_err(|_| "the worker's waiter went away".to_string())?
        .map_err(|e| format!("waiting for the worker: {e}"))?;
    Ok(Ran {
        status,
        stdout: collected(out),
        stderr: collected(err),
        timed_out,
    })
}

/// Waits until process `pid` has ended, leaving it to be reaped.
fn wait_unreaped(pid: libc::pid_t) {
    loop {
        // SAFETY: waitid writes into the siginfo_t given, nothing else.
        let rc = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// Kills the process group `pid` leads (gone already: nothing happens).
fn kill_group(pid: libc::pid_t) {
    // SAFETY: kill sends a signal; the group is the worker's own.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
}

/// Reads `pipe` to its end on a thread, keeping the last [`KEPT`] bytes.
fn keep_tail(pipe: Option<impl Read + Send + 'static>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let mut chunk = [0u8; 16 << 10];
            loop {
                match pipe.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        kept.extend_from_slice(&chunk[..n]);
                        if kept.len() > 2 * KEPT {
                            kept.drain(..kept.len() - KEPT);
                        }
                    }
                }
            }
            if kept.len() > KEPT {
                kept.drain(..kept.len() - KEPT);
            }
            let _ = tx.send(kept);
        });
    }
    rx
}

/// What a reader kept: waits a moment at most once the worker has ended
/// (a process that left its group may still hold the pipe).
fn collected(rx: mpsc::Receiver<Vec<u8>>) -> Vec<u8> {
    rx.recv_timeout(Duration::from_secs(2)).unwrap_or_default()
}
