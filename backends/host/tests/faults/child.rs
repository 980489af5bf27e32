//! Faults outside kernels run in a child process (this test binary, one
//! ignored test selected by name), which must die as it would without the
//! executor's handler: running one, within a time limit.

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use reprise_core::exec::Executor;
use reprise_host::HostExecutor;

use crate::{fault, run};

pub(crate) const CHILD: &str = "REPRISE_HOST_FAULT_CHILD";

/// A child's longest run: far more than any child needs, so reaching it
/// means the child hung.
const CHILD_LIMIT: Duration = Duration::from_secs(60);

/// This test binary running the ignored test `test` alone, as a child.
pub(crate) fn child_command(test: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        test,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, "1")
    .env("RUST_BACKTRACE", "0");
    cmd
}

/// Runs `cmd` to its end, or kills it and fails the test when it has not
/// ended after [`CHILD_LIMIT`].
pub(crate) fn output_within_limit(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > CHILD_LIMIT {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "the child hung for {CHILD_LIMIT:?}\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&stdout.join().unwrap()),
                String::from_utf8_lossy(&stderr.join().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Runs the ignored test `test` in a child, which must die by a signal
/// (within [`CHILD_LIMIT`]).
pub(crate) fn child(test: &str) -> Output {
    let out = output_within_limit(child_command(test));
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.code(),
        None,
        "the child exited instead of dying by a signal: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.signal().is_some());
    out
}

/// Catches one kernel fault first, so the handler is installed.
pub(crate) fn install_by_faulting() {
    let exec = HostExecutor::new().unwrap();
    let mut q = exec.queue().unwrap();
    fault(run(&exec, &mut q, "store", &[8, 1]));
}

/// Launches `name` with `args` on a fresh queue and synchronizes, printing
/// what came of it (reached only if the process survives).
pub(crate) fn launch_in_child(name: &str, args: &[u64]) {
    let exec = HostExecutor::new().unwrap();
    let mut q = exec.queue().unwrap();
    let r = run(&exec, &mut q, name, args);
    println!("the launch returned: {r:?}");
}
