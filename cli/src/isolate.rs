//! Running a host image in a child process: a capture is code, and a host
//! image runs in the process that loads it. A corrupted image (a flipped
//! bit in its relocations, its PLT or its constructors) can crash the
//! dynamic loader or itself before any kernel runs, where the host
//! executor's fault guard does not reach, or make the loader end the
//! process (status 127); a kernel that calls a runtime (OpenMP's) can
//! fault on the runtime's threads, outside the guard; and the image's code
//! can end the process itself (`exit(0)` in a kernel or a constructor). So
//! `reprise replay` on the host executor runs the replay in a child
//! process of its own (the same command, marked by [`CHILD`]).
//!
//! The child reports over a pipe whose descriptor [`CHILD`] names: `fault
//! TEXT` for a kernel fault the guard caught, `fatal TEXT` for one that
//! ends the process (the guard's signal handler writes it), and `done`
//! once the replay has finished and its result was printed. The parent
//! passes the child's exit status on only after `done`; a child that ended
//! without it is an error naming the image and what happened: the kernel's
//! fault when one was reported (with the candidates when the region base
//! was derived), else how the process ended.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::path::Path;
use std::process::{Command, ExitCode};

use reprise::OpenOptions;
use reprise::capture::offload::ImageOrigin;
use reprise::capture::{BaseOrigin, ResolvedBase};
use reprise::capture::{CapturePaths, head, read_descriptor, resolve_base};

use crate::error::{CliError, Result};

/// Set in the child's environment, to the descriptor of the pipe it
/// reports on: it replays in its own process.
pub const CHILD: &str = "REPRISE_REPLAY_CHILD";

const REPORTS_MAX: usize = 64 << 10;

/// Whether this process should hand the replay of `descriptor` to a child:
/// it is not the child itself, and the capture runs on an executor whose
/// kernels run in this process (the host's), as
/// [`reprise::executors::choose`] chooses it. A capture whose files cannot be read
/// goes to the child too, which reports what is wrong.
pub fn wanted(descriptor: &Path, options: &OpenOptions) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return false;
    }
    let image = if options.images.is_empty() {
        image_path(descriptor).and_then(|image| head(&image, 4096))
    } else {
        // From application binaries: the entry for the capture's kernel.
        given_image(descriptor, options).map(|(bytes, _)| bytes)
    };
    // The executor the replay chooses (a capture it refuses runs nothing,
    // and is refused in this process).
    image.is_none_or(|bytes| {
        let kind = reprise::core::image::sniff(&bytes);
        reprise::executors::choose(kind, options.backend)
            .is_ok_and(|b| reprise::executors::capabilities(b).in_process)
    })
}

/// The image `options` give the capture `descriptor`, where one is chosen.
fn given_image(descriptor: &Path, options: &OpenOptions) -> Option<(Vec<u8>, ImageOrigin)> {
    let record = read_descriptor(descriptor).ok()?;
    options.given_image(&record, descriptor)?.ok()
}

fn image_path(descriptor: &Path) -> Option<std::path::PathBuf> {
    let record = read_descriptor(descriptor).ok()?;
    Some(CapturePaths::new(descriptor, record.generation).image)
}

/// The report pipe of this process, when it is a replay's child.
fn report_fd() -> Option<RawFd> {
    std::env::var(CHILD).ok()?.parse().ok().filter(|&fd| fd > 2)
}

/// In a replay's child: kernel faults are reported to the parent too, and
/// the report pipe is not inherited by programs the image may run.
pub fn child_start() {
    if let Some(fd) = report_fd() {
        // SAFETY: fcntl on a descriptor number; a bad one fails, harmlessly.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        reprise::report_faults_to(fd);
    }
}

/// In a replay's child: the replay has finished, and its result (or its
/// error, printed next) is the child's to give.
pub fn child_done() {
    if let Some(fd) = report_fd() {
        // SAFETY: the descriptor stays open (ManuallyDrop): the guard may
        // still write fault reports to it.
        let mut f = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
        let _ = f.write_all(b"done\n");
    }
}

/// Runs this very command again in a child process that replays in its
/// own process, and passes its exit status on once it has finished; a
/// child that ended before is an error naming the image and why.
pub fn replay_in_child(descriptor: &Path, options: &OpenOptions) -> Result<ExitCode> {
    let exe = crate::ui::exe()?;
    let (mut reader, writer) =
        std::io::pipe().map_err(|e| reprise::Error::io("a pipe", "create", e))?;
    let fd = writer.as_raw_fd();
    // SAFETY: fcntl on a descriptor this process owns (`writer`): the
    // child must inherit it, so it is not close-on-exec here.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } != 0 {
        return Err(reprise::Error::io("a pipe", "set up", std::io::Error::last_os_error()).into());
    }
    let spawned = Command::new(&exe)
        .args(std::env::args_os().skip(1))
        .env(CHILD, fd.to_string())
        .spawn();
    drop(writer);
    let status = spawned
        .and_then(|mut c| c.wait())
        .map_err(|e| reprise::Error::io(&exe, "run", e))?;
    let reports = read_reports(&mut reader);
    let image = match options.images.as_slice() {
        [] => image_path(descriptor),
        [one] => Some(one.clone()),
        _ => given_image(descriptor, options).map(|(_, origin)| origin.path),
    }
    .unwrap_or_else(|| descriptor.to_path_buf());
    let done = reports.lines().any(|l| l == "done");
    use std::os::unix::process::ExitStatusExt;
    let ended = match (status.code(), status.signal()) {
        // What reprise itself ends with, once the replay has finished:
        // success, a difference, an error; and stdout closed (as `out!`
        // ends) at any time.
        (Some(code @ 0..=2), _) if done => return Ok(ExitCode::from(code as u8)),
        (Some(141), _) => return Ok(ExitCode::from(141)),
        // Interrupted (Ctrl-C reaches the child too): end as it did.
        (None, Some(sig @ (libc::SIGINT | libc::SIGTERM | libc::SIGHUP))) => {
            return Ok(ExitCode::from(128 + sig as u8));
        }
        (Some(code), _) => format!("exited with status {code}"),
        (None, sig) => format!(
            "was killed by {}",
            sig.map_or_else(|| "a signal".to_string(), signal_name)
        ),
    };
    let fault = reports
        .lines()
        .find_map(|l| l.strip_prefix("fault "))
        .or_else(|| {
            reports
                .lines()
                .find_map(|l| l.strip_prefix("fatal "))
                .map(|l| l.strip_prefix("reprise: ").unwrap_or(l))
        });
    let why = match (fault, status.code()) {
        (Some(fault), _) => format!(
            "{fault}; the process running it then {ended}{}",
            base_hint(descriptor, options, address_in(fault))
        ),
        (None, Some(0..=2)) => format!(
            "the process running this image {ended} before the replay finished: the image's \
             code ended it (exit() in a kernel or a constructor?), and the replay has no result"
        ),
        (None, Some(_)) => format!(
            "the process that loaded and ran this image {ended} (the dynamic loader ends a \
             process with 127 when it cannot load an image): the image is corrupt, or does not \
             belong to this machine"
        ),
        (None, None) => match reports.lines().find_map(|l| l.strip_prefix("started ")) {
            // Loaded, and a kernel ran: not the loader's doing.
            Some(kernel) => format!(
                "the process running this image {ended} after the kernel `{kernel}` started, \
                 with no fault reported: a thread outside the fault guard most likely faulted \
                 (one of a runtime the kernel called, such as OpenMP's team, running its code), \
                 where reprise cannot catch it{}",
                base_hint(descriptor, options, None)
            ),
            None => format!(
                "the process that loaded and ran this image {ended}: the image is corrupt (its \
                 relocations, PLT or constructors), or its code crashed outside the kernel, \
                 where reprise cannot catch the fault"
            ),
        },
    };
    Err(CliError::file(&image, why))
}

/// What the child reported, as text, read after it ended: what it wrote
/// is in the pipe (a program the image started may still hold the pipe
/// open, so this never waits for the end of it).
fn read_reports(reader: &mut std::io::PipeReader) -> String {
    // SAFETY: fcntl on the descriptor `reader` owns.
    unsafe { libc::fcntl(reader.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while buf.len() < REPORTS_MAX {
        match reader.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// After a kernel fault (at `fault`, where the fault says): that a derived
/// region base may be the cause, with the other bases possible that would
/// hold the faulting address and the option that gives one, or that none
/// would; empty when the base was recorded or given.
pub fn base_hint(descriptor: &Path, options: &OpenOptions, fault: Option<u64>) -> String {
    let Ok(record) = read_descriptor(descriptor) else {
        return String::new();
    };
    match resolve_base(&record, descriptor, options) {
        Some(ResolvedBase {
            addr: Some(addr),
            origin: origin @ BaseOrigin::Derived { .. },
        }) => fault_hint(addr, &origin, &record, descriptor, fault),
        _ => String::new(),
    }
}

/// The address a kernel fault's text (`the kernel `k` faulted: invalid
/// memory access at 0x10 (SIGSEGV...`) says it accessed; `None` for a
/// fault at an instruction (an arithmetic fault, an illegal instruction).
fn address_in(fault: &str) -> Option<u64> {
    let rest = fault.split_once("faulted: ")?.1;
    if rest.contains(" by the instruction at ") {
        return None;
    }
    let hex = rest.split_once(" at 0x")?.1;
    let end = hex
        .find(|c: char| !c.is_ascii_hexdigit())
        .unwrap_or(hex.len());
    u64::from_str_radix(&hex[..end], 16).ok()
}

/// The data address a kernel fault `e` accessed, where the executor says
/// (the host's does; a GPU's driver does not).
pub fn fault_address(e: &reprise::Error) -> Option<u64> {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(reprise::HostError::KernelFault(f)) = s.downcast_ref::<reprise::HostError>() {
            return (f.place != reprise::FaultPlace::Instruction).then_some(f.addr);
        }
        source = s.source();
    }
    None
}

/// [`derived_hint`] after a kernel fault at `fault` (when known) in the
/// capture `record` at `descriptor`, whose base `base` was derived as
/// `origin` says: only the other bases possible whose snapshot would hold
/// the faulting address are named (no other base could avoid the fault),
/// or it says that none would.
pub fn fault_hint(
    base: u64,
    origin: &BaseOrigin,
    record: &reprise::core::record::KernelRecord,
    descriptor: &Path,
    fault: Option<u64>,
) -> String {
    let (Some(addr), Some(others)) = (fault, origin.alternatives()) else {
        return derived_hint(base, origin);
    };
    let Some(holding) = reprise::capture::base::holding(record, descriptor, addr, Some(base))
    else {
        return derived_hint(base, origin);
    };
    let size = record.memory_size.unwrap_or(0);
    if holding.total == 0 {
        format!(
            "; the region base {base:#x} was derived, not recorded, but none of the {} other \
             base(s) possible would put {addr:#x} inside the {size}-byte snapshot, so no other \
             base avoids this fault: the kernel reached memory the capture does not hold (an \
             address of the recording process, such as its stack?)",
            others.total
        )
    } else {
        format!(
            "; the region base {base:#x} was derived, not recorded, and may be wrong: {} of the \
             {} other base(s) possible would put {addr:#x} inside the {size}-byte snapshot, \
             {holding}; give one with --region-base ADDR",
            holding.total, others.total
        )
    }
}

/// [`base_hint`] for a base `base` derived as `origin` says.
pub fn derived_hint(base: u64, origin: &BaseOrigin) -> String {
    match origin.alternatives() {
        Some(others) => format!(
            "; the region base {base:#x} was derived, not recorded, and may be wrong: {} \
             other(s) are possible, {others}; give one with --region-base ADDR",
            others.total
        ),
        None => format!(
            "; the region base {base:#x} was derived, not recorded (the only one that holds \
             the pointer arguments): if the capture's pointers lie elsewhere, give the base \
             with --region-base ADDR"
        ),
    }
}

/// A signal for people: `SIGSEGV (signal 11)`.
pub(crate) fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    format!("{name} (signal {sig})")
}

/// Set in the environment of a replay that runs under one of a capture's
/// possible region bases ([`try_bases`]): it gives its verdict as it is
/// (exit 1 on a difference), and tries no bases itself.
pub const TRIAL: &str = "REPRISE_BASE_TRIAL";

/// How many of a capture's possible region bases a replay that verifies
/// may try, when the base was not recorded and the rule left several.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct BaseTryArgs {
    /// When the capture records no region base and several are possible
    /// (LLVM 16's), replay under at most N of them, each in a child
    /// process, most likely first, and use the one that verifies; 0 tries
    /// none (the capture is refused, naming them).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub max_base_tries: u32,
    /// Try bases only for a capture whose snapshot is at most SIZE (K/M/G
    /// suffixes): each try restores all of it.
    #[arg(long, value_name = "SIZE", default_value = "64M", value_parser = try_bytes)]
    pub max_base_try_bytes: u64,
}

fn try_bytes(s: &str) -> std::result::Result<u64, String> {
    reprise::config::parse_size("--max-base-try-bytes", s).map_err(|e| e.to_string())
}

/// The bases a verifying replay of `descriptor` tries, in order, and how
/// many are possible in all, when its base is not recorded nor given and
/// the rule did not settle it alone; `None` when there is nothing to try
/// (a note says why when the budget is what leaves them untried).
pub struct Trials {
    /// The bases to try, most likely first (a derived base first).
    pub bases: Vec<u64>,
    /// How many bases are possible in all.
    pub total: u64,
    /// The base the rule chose, when it chose one (tried first, as a plain
    /// replay would run it).
    pub derived: Option<u64>,
    /// The snapshot's length.
    pub size: u64,
}

/// The [`Trials`] for `descriptor`, within `budget`.
pub fn trials(descriptor: &Path, options: &OpenOptions, budget: BaseTryArgs) -> Option<Trials> {
    if options.region_base.is_some()
        || std::env::var_os(TRIAL).is_some()
        || std::env::var_os(CHILD).is_some()
    {
        return None;
    }
    let record = read_descriptor(descriptor).ok()?;
    let resolved = resolve_base(&record, descriptor, options)?;
    let alternatives = resolved.origin.alternatives()?;
    let size = record.memory_size.unwrap_or(0);
    let why = if budget.max_base_tries == 0 {
        Some("--max-base-tries 0".to_string())
    } else if size > budget.max_base_try_bytes {
        Some(format!(
            "the snapshot's {size} bytes exceed --max-base-try-bytes {}",
            budget.max_base_try_bytes
        ))
    } else {
        None
    };
    if let Some(why) = why {
        // With a base of the rule's, that one is used, and a difference
        // names the others.
        if resolved.addr.is_none() {
            note!(
                "note: {}: the region base is not recorded and {} others are possible; none \
                 is tried ({why})",
                descriptor.display(),
                alternatives.total
            );
        }
        return None;
    }
    let (bases, total) = reprise::capture::base::ordered(
        &record,
        descriptor,
        resolved.addr,
        budget.max_base_tries as usize,
    );
    (!bases.is_empty()).then_some(Trials {
        bases,
        total,
        derived: resolved.addr,
        size,
    })
}

/// `reprise replay --verify` of `descriptor` as `options` open it, within
/// `budget`: the child that tries a capture's possible region bases for
/// commands that do not replay it themselves (`check`, `tune`).
pub fn trying_command(
    exe: &Path,
    descriptor: &Path,
    options: &OpenOptions,
    budget: BaseTryArgs,
) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg("replay").arg("--verify");
    for image in &options.images {
        cmd.arg("--image").arg(image);
    }
    if options.allow_missing_globals {
        cmd.arg("--allow-missing-globals");
    }
    if !options.verify_checksums {
        cmd.arg("--no-checksums");
    }
    cmd.arg(format!("--max-base-tries={}", budget.max_base_tries))
        .arg(format!(
            "--max-base-try-bytes={}",
            budget.max_base_try_bytes
        ))
        .arg(descriptor)
        .stdin(std::process::Stdio::null());
    cmd
}

/// What one try gave.
enum Tried {
    Verifies(std::process::Output),
    Differs(std::process::Output),
    /// The kernel faulted: the recorded launch did not, so this is not the
    /// base (or the capture does not hold what the kernel reads).
    Faulted,
    /// It did not finish with a verdict: the first line of what it said.
    Failed(String),
}

/// Replays this very command once under each base of `t`, each in a child
/// process (the derived base, when there is one, as a plain replay): the
/// bases under which the output verifies pass, and the first of them is
/// reported with its replay's output; the output differing under every
/// base possible is a difference (exit 1); anything else is a refusal
/// naming what was tried.
pub fn try_bases(descriptor: &Path, t: &Trials) -> Result<ExitCode> {
    let exe = crate::ui::exe()?;
    let mut results: Vec<(u64, Tried)> = Vec::new();
    let mut first_fault: Option<Vec<u8>> = None;
    // This very command, under the base `b` (the derived one as a plain
    // replay runs it).
    let under = |b: u64| {
        let mut cmd = Command::new(&exe);
        cmd.args(std::env::args_os().skip(1)).env(TRIAL, "1");
        if Some(b) != t.derived {
            cmd.arg(format!("--region-base={b:#x}"));
        }
        cmd.output().map_err(|e| reprise::Error::io(&exe, "run", e))
    };
    for &b in &t.bases {
        let out = under(b)?;
        let tried = match out.status.code() {
            Some(0) => Tried::Verifies(out),
            Some(1) => Tried::Differs(out),
            _ => {
                let err = String::from_utf8_lossy(&out.stderr);
                let line = err
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty() && !l.starts_with("warning"))
                    .unwrap_or("ended without a verdict")
                    .trim_start_matches("error: ")
                    .to_string();
                // The rule's base faulted at an address no other base's
                // snapshot holds: the kernel reaches it under any base (an
                // address of the recording process, such as its stack),
                // and its message, which says so, is the answer.
                if results.is_empty()
                    && Some(b) == t.derived
                    && let Some(addr) = err.lines().find_map(address_in)
                    && !t
                        .bases
                        .iter()
                        .any(|&o| o != b && o <= addr && addr - o < t.size)
                {
                    first_fault = Some(out.stderr.clone());
                }
                if err.contains(" faulted") {
                    Tried::Faulted
                } else {
                    Tried::Failed(line)
                }
            }
        };
        // The rule's own base verifying settles it: no other is tried.
        let settled =
            (Some(b) == t.derived && matches!(tried, Tried::Verifies(_))) || first_fault.is_some();
        results.push((b, tried));
        if settled {
            break;
        }
    }
    let addrs = |f: fn(&Tried) -> bool| -> Vec<u64> {
        results
            .iter()
            .filter(|(_, r)| f(r))
            .map(|(b, _)| *b)
            .collect()
    };
    let verifying = addrs(|r| matches!(r, Tried::Verifies(_)));
    let list = |v: &[u64]| {
        let mut s = String::new();
        let _ = reprise::core::record::base::write_addresses(&mut s, v, v.len() as u64);
        s
    };
    let tried = results.len();
    if let Some((b, Tried::Verifies(out))) = results
        .iter()
        .find(|(_, r)| matches!(r, Tried::Verifies(_)))
    {
        pass_on(out);
        // Each try saved its output where the replay saves it: the one
        // left must be the verifying base's.
        let last = results.last().map(|(l, _)| *l);
        if saves_output() && last != Some(*b) && !under(*b)?.status.success() {
            return Err(CliError::file(
                descriptor,
                format!(
                    "the output verified under the region base {b:#x}, but saving it \
                     again under that base did not"
                ),
            ));
        }
        if Some(*b) == t.derived && tried == 1 {
            return Ok(ExitCode::SUCCESS);
        }
        let others = if verifying.len() > 1 {
            format!(
                "; it verifies under {} of them: {}",
                verifying.len(),
                list(&verifying)
            )
        } else {
            String::new()
        };
        out!(
            "region base {b:#x}: derived by trying {tried} of the {} bases possible: the \
             output verifies under it{others}",
            t.total
        );
        return Ok(ExitCode::SUCCESS);
    }
    // Only the rule's base ran, and no other could avoid its fault: its
    // refusal is the answer.
    if tried == 1
        && let Some(stderr) = &first_fault
    {
        let _ = std::io::stderr().write_all(stderr);
        return Ok(ExitCode::from(2));
    }
    let differing = addrs(|r| matches!(r, Tried::Differs(_)));
    let faulted = addrs(|r| matches!(r, Tried::Faulted));
    // Every base possible ran: those under which the kernel faulted are
    // not the recording's (it did not fault), so the recording's is one of
    // those under which the output differs.
    if !differing.is_empty() && differing.len() + faulted.len() == tried && tried as u64 >= t.total
    {
        let also = if faulted.is_empty() {
            String::new()
        } else {
            format!(
                " (under the other {} the kernel faults: {})",
                faulted.len(),
                list(&faulted)
            )
        };
        // The replay shown is the one nearest to verifying: under the
        // recording's base, a kernel that computes something else differs
        // least.
        let nearest = results
            .iter()
            .filter_map(|(_, r)| match r {
                Tried::Differs(out) => Some(out),
                _ => None,
            })
            .min_by_key(|out| bytes_differing(out));
        if let Some(out) = nearest {
            pass_on(out);
        }
        out!(
            "FAIL: the capture records no region base, and of the {tried} bases possible, all \
             tried, none verifies: the output differs under {} of them, {}{also}",
            differing.len(),
            list(&differing)
        );
        return Ok(ExitCode::from(1));
    }
    let mut what = Vec::new();
    if !differing.is_empty() {
        what.push(format!("the output differs under {}", list(&differing)));
    }
    if !faulted.is_empty() {
        what.push(format!("the kernel faults under {}", list(&faulted)));
    }
    for (b, r) in &results {
        if let Tried::Failed(why) = r {
            what.push(format!("under {b:#x}: {why}"));
        }
    }
    let left = t.total.saturating_sub(tried as u64);
    Err(CliError::file(
        descriptor,
        format!(
            "the region base is not recorded, and {} are possible; {tried} tried ({}){}: give \
             the base with --region-base ADDR",
            t.total,
            what.join("; "),
            if left > 0 {
                format!(", {left} not tried (--max-base-tries, --max-base-try-bytes say how many)")
            } else {
                String::new()
            }
        ),
    ))
}

/// How many bytes a replay that differs said differ (`FAIL: N of M bytes
/// differ`), `u64::MAX` where it did not say.
fn bytes_differing(out: &std::process::Output) -> u64 {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            let rest = l.split_once("FAIL: ")?.1;
            rest.split_once(" of ")?.0.trim().parse().ok()
        })
        .unwrap_or(u64::MAX)
}

/// Whether this command saves the replay's output (`--save-output`).
fn saves_output() -> bool {
    std::env::args_os().any(|a| {
        a.to_str()
            .is_some_and(|a| a == "--save-output" || a == "--save-output=true")
    })
}

/// A try's output, as the replay's own.
fn pass_on(out: &std::process::Output) {
    let _ = std::io::stderr().write_all(&out.stderr);
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        out_text!("{line}");
    }
}
