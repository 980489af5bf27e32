//! Worker processes: waiting for one to end without reaping it, and
//! ending its process group.

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, kill_process_group, waitid};

/// Waits until process `pid` has ended, leaving it to be reaped.
pub fn wait_unreaped(pid: libc::pid_t) {
    let Some(pid) = Pid::from_raw(pid) else {
        return;
    };
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
    while let Err(rustix::io::Errno::INTR) = waitid(WaitId::Pid(pid), options) {}
}

/// Kills the process group `pid` leads (gone already: nothing happens).
pub fn kill_group(pid: libc::pid_t) {
    if let Some(pid) = Pid::from_raw(pid) {
        let _ = kill_process_group(pid, Signal::KILL);
    }
}
