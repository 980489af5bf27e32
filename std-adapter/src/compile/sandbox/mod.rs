//! The one way a compile runs an external tool: bounded by the compile's
//! [`CompileLimits`], in a private temporary directory.
//!
//! - **time**: the tool runs in a process group of its own; at the
//!   compile's deadline the whole group is killed (`SIGKILL`), so a
//!   subprocess (clang's `cc1`, the linker it starts) goes with it;
//! - **memory**: `RLIMIT_AS` (set in the child before `exec`);
//! - **output**: `RLIMIT_FSIZE` at one byte past the limit, with `SIGXFSZ`
//!   ignored, so a write past it fails (`EFBIG`) instead of killing the
//!   tool silently (LLVM's tools catch `SIGXFSZ` themselves and die by it:
//!   both are told apart from other failures); and no core file;
//! - **temporary files**: a directory of mode 0700 ([`WorkDir`]), the
//!   tool's working directory and its `TMPDIR`, `TMP` and `TEMP`, removed
//!   with what is in it when the compile ends, whichever way it ends.
//!
//! A tool that ends on a limit is [`CompileError::LimitHit`]; any other
//! failure is [`CompileError::Tool`] with the end of its standard error.

use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::process::{Pid, Resource, Rlimit, Signal, WaitId, WaitIdOptions};

use super::{CompileError, CompileLimits, Limit};

/// How much of a tool's output is kept.
const KEPT: usize = 64 << 10;

/// The name of the IR in the private directory (written by the compile,
/// not by a tool, so not bounded by the output limit).
pub const INPUT: &str = "input.bc";

/// How long the pipes of a tool that ended (or was killed) are read on.
const DRAIN: Duration = Duration::from_secs(2);

/// The longest wait for the pipes before the tool is checked on again.
const POLL: Duration = Duration::from_millis(50);

/// A private temporary directory: a new name in the system's temporary
/// directory (`TMPDIR`), created with mode 0700 (never an existing one),
/// removed with everything in it when dropped.
#[derive(Debug)]
pub struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    pub fn new() -> Result<Self, CompileError> {
        let base = std::env::temp_dir();
        let mut last = None;
        for _ in 0..64 {
            let path = base.join(format!("reprise-ir-{:016x}", fastrand::u64(..)));
            // `mkdir` creates the name or fails: an existing directory or
            // a link planted at the name is never used.
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(WorkDir { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(CompileError::io(&base, "create a directory in", e)),
            }
        }
        Err(CompileError::io(
            &base,
            "create a directory in",
            last.unwrap_or_else(|| std::io::Error::other("no free name")),
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        // Links in it are removed, not followed.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Where and under what a compile's tools run.
#[derive(Debug, Clone, Copy)]
pub struct Bounds<'a> {
    /// The private directory.
    pub work: &'a Path,
    pub limits: &'a CompileLimits,
    /// When the compile's time is up.
    pub deadline: Instant,
    /// The IR being compiled (named in errors).
    pub ir: Option<&'a Path>,
}

impl Bounds<'_> {
    /// The error of `tool` ending on `limit`.
    pub fn hit(&self, tool: &Path, limit: Limit, detail: Option<String>) -> CompileError {
        CompileError::LimitHit {
            tool: tool.to_path_buf(),
            limit,
            ir: self.ir.map(Path::to_path_buf),
            detail,
        }
    }
}

/// Runs `c` (the tool `tool`) within `b`; what it wrote to its standard
/// output (the first [`KEPT`] bytes) when it succeeded.
pub fn run(tool: &Path, mut c: Command, b: &Bounds<'_>) -> Result<Vec<u8>, CompileError> {
    let failed = |message: String| CompileError::Tool {
        tool: tool.to_path_buf(),
        message,
    };
    let parent = rustix::process::getpid();
    let memory = b.limits.memory;
    // One byte past the limit: a file the tool wrote whole is at most the
    // limit, and one that reached past it was cut short.
    let output = b.limits.output.saturating_add(1);
    c.current_dir(b.work)
        .env("TMPDIR", b.work)
        .env("TMP", b.work)
        .env("TEMP", b.work)
        // Messages (strerror, strsignal) in the words the classification
        // below looks for.
        .env("LC_ALL", "C")
        // A crashing LLVM tool prints its stack without starting
        // llvm-symbolizer (seconds, under the same limits).
        .env("LLVM_DISABLE_SYMBOLIZATION", "1")
        // glibc reserves 64 MiB of address space for each thread's arena:
        // a linker with a thread per core would otherwise spend the memory
        // limit on reservations.
        .env("MALLOC_ARENA_MAX", "4")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: the closure runs in the child between `fork` and `exec`; it
    // allocates nothing and makes only async-signal-safe system calls
    // (getrlimit, setrlimit, signal, prctl, getppid).
    unsafe {
        c.pre_exec(move || bound_self(parent, memory, output));
    }
    let mut child = match c.spawn() {
        Ok(child) => child,
        // The kernel could not map the program within the memory limit.
        Err(e) if e.raw_os_error() == Some(libc::ENOMEM) => {
            return Err(b.hit(tool, Limit::Memory(memory), Some(e.to_string())));
        }
        Err(e) => return Err(failed(format!("could not run it: {e}"))),
    };
    let pid = Pid::from_child(&child);
    let mut pipes = [
        child.stdout.take().map(|p| File::from(OwnedFd::from(p))),
        child.stderr.take().map(|p| File::from(OwnedFd::from(p))),
    ];
    // What the tool wrote: standard output, standard error.
    let mut kept = [Vec::new(), Vec::new()];
    let timed_out = loop {
        if ended(pid) {
            break false;
        }
        let now = Instant::now();
        if now >= b.deadline {
            break true;
        }
        pump(&mut pipes, &mut kept, (b.deadline - now).min(POLL));
    };
    // The group's leader is not reaped yet (a zombie when it ended), so its
    // id names this group still: whatever of the group is left goes, on a
    // timeout the leader with it.
    let _ = rustix::process::kill_process_group(pid, Signal::KILL);
    let drained = Instant::now() + DRAIN;
    while pipes.iter().any(Option::is_some) && Instant::now() < drained {
        pump(&mut pipes, &mut kept, POLL);
    }
    drop(pipes);
    let [stdout, stderr] = kept;
    let status = child
        .wait()
        .map_err(|e| failed(format!("could not wait for it: {e}")))?;
    if timed_out {
        return Err(b.hit(tool, Limit::Time(b.limits.time), None));
    }
    if status.success() {
        return Ok(stdout);
    }
    let said = printable(&String::from_utf8_lossy(&stderr));
    let line_with = |needles: &[&str]| {
        said.lines()
            .find(|l| needles.iter().any(|n| l.contains(n)))
            .map(|l| l.trim().to_string())
    };
    // How the C library words `SIGXFSZ` and `EFBIG` (under `LC_ALL=C`):
    // the tool, or a subprocess it reports on, wrote past the limit.
    const OUTPUT: &[&str] = &["File size limit exceeded", "File too large"];
    // A failed allocation, as LLVM, the C++ runtime, the dynamic loader,
    // the C library and GNU ld say it.
    const MEMORY: &[&str] = &[
        "out of memory",
        "Allocation failed",
        "failed to map segment",
        "Cannot allocate memory",
        "std::bad_alloc",
        "memory exhausted",
    ];
    if status.signal() == Some(libc::SIGXFSZ)
        || line_with(OUTPUT).is_some()
        || holds_larger_than(b.work, b.limits.output)
    {
        return Err(b.hit(tool, Limit::Output(b.limits.output), None));
    }
    if let Some(line) = line_with(MEMORY) {
        return Err(b.hit(tool, Limit::Memory(memory), Some(line)));
    }
    let lines: Vec<&str> = said.lines().collect();
    let tail = lines[lines.len().saturating_sub(20)..].join("\n");
    let mut message = format!("failed ({status}):\n{tail}");
    if status.signal().is_some() {
        // An allocation past `RLIMIT_AS` need not say so: a tool may fault
        // or abort instead.
        message.push_str(&format!(
            "\n(it was killed by a signal: if it ran out of memory, raise the compile memory \
             limit of {} with {})",
            Limit::Memory(memory).value(),
            Limit::Memory(memory).option()
        ));
    }
    Err(failed(message))
}

/// Whether a file in `dir` (or a directory below it, a few levels deep)
/// but the IR ([`INPUT`]) is larger than `limit`: one that a tool wrote
/// until `RLIMIT_FSIZE` stopped it.
fn holds_larger_than(dir: &Path, limit: u64) -> bool {
    fn walk(dir: &Path, limit: u64, depth: u32, seen: &mut u32) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        for e in entries.flatten() {
            *seen += 1;
            if *seen > 10_000 {
                return false;
            }
            // Not following links.
            let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
                continue;
            };
            if meta.is_file() && meta.len() > limit && !(depth == 0 && e.file_name() == INPUT) {
                return true;
            }
            if meta.is_dir() && depth < 4 && walk(&e.path(), limit, depth + 1, seen) {
                return true;
            }
        }
        false
    }
    walk(dir, limit, 0, &mut 0)
}

/// In the child, before `exec`: the limits, `SIGXFSZ` ignored, no core
/// file, and killed with its parent (the parent's thread that waits for
/// it). Async-signal-safe.
fn bound_self(parent: Pid, memory: u64, output: u64) -> std::io::Result<()> {
    for (resource, limit) in [
        (Resource::As, memory),
        (Resource::Fsize, output),
        (Resource::Core, 0),
    ] {
        // Never above the hard limit the process has (which an
        // unprivileged process cannot raise).
        let limit = match rustix::process::getrlimit(resource).maximum {
            Some(hard) => limit.min(hard),
            None => limit,
        };
        rustix::process::setrlimit(
            resource,
            Rlimit {
                current: Some(limit),
                maximum: Some(limit),
            },
        )?;
    }
    // SAFETY: `signal` with `SIG_IGN` is async-signal-safe and installs
    // no handler; the disposition is kept across `exec`.
    if unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) } == libc::SIG_ERR {
        return Err(std::io::Error::last_os_error());
    }
    #[cfg(target_os = "linux")]
    {
        rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
        // The parent may have gone before the line above took effect.
        if rustix::process::getppid() != Some(parent) {
            return Err(std::io::Error::other("the compiling process ended"));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = parent;
    Ok(())
}

/// Whether the child `pid` has ended, leaving it unreaped (`WNOWAIT`).
fn ended(pid: Pid) -> bool {
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    match rustix::process::waitid(WaitId::Pid(pid), options) {
        Ok(Some(_)) => true,
        Ok(None) => false,
        Err(rustix::io::Errno::INTR) => false,
        // No such child: gone already.
        Err(_) => true,
    }
}

/// Waits up to `wait` for the pipes (standard output, standard error) and
/// reads what they hold, keeping the first [`KEPT`] bytes of the one and
/// the last [`KEPT`] of the other; a pipe at its end (or failing) is
/// closed.
fn pump(pipes: &mut [Option<File>; 2], [stdout, stderr]: &mut [Vec<u8>; 2], wait: Duration) {
    let which: Vec<usize> = (0..pipes.len()).filter(|&i| pipes[i].is_some()).collect();
    let mut fds: Vec<PollFd<'_>> = pipes
        .iter()
        .flatten()
        .map(|f| PollFd::new(f, PollFlags::IN))
        .collect();
    if fds.is_empty() {
        std::thread::sleep(wait);
        return;
    }
    let wait = wait.clamp(Duration::from_millis(1), Duration::from_secs(1));
    let timeout = Timespec {
        tv_sec: wait.as_secs() as _,
        tv_nsec: wait.subsec_nanos().into(),
    };
    if !matches!(rustix::event::poll(&mut fds, Some(&timeout)), Ok(n) if n > 0) {
        return;
    }
    let ready: Vec<bool> = fds.iter().map(|fd| !fd.revents().is_empty()).collect();
    drop(fds);
    let mut buf = [0u8; 16 << 10];
    for (&ready, &i) in ready.iter().zip(&which) {
        if !ready {
            continue;
        }
        let Some(f) = pipes[i].as_mut() else {
            continue;
        };
        match f.read(&mut buf) {
            Ok(0) => pipes[i] = None,
            Ok(n) if i == 0 => {
                let room = KEPT.saturating_sub(stdout.len());
                stdout.extend_from_slice(&buf[..n.min(room)]);
            }
            Ok(n) => {
                stderr.extend_from_slice(&buf[..n]);
                if stderr.len() > 2 * KEPT {
                    stderr.drain(..stderr.len() - KEPT);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => pipes[i] = None,
        }
    }
}

/// `s` with control characters (but newlines and tabs) escaped, so that
/// what a tool printed cannot drive the terminal it is shown on.
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if (c.is_control() && c != '\n' && c != '\t') || c == '\u{fffe}' || c == '\u{ffff}' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests;
