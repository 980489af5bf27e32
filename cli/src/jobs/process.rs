//! Worker processes: waiting for one to end without reaping it, and
//! ending its process group.

/// Waits until process `pid` has ended, leaving it to be reaped.
pub fn wait_unreaped(pid: libc::pid_t) {
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
pub fn kill_group(pid: libc::pid_t) {
    // SAFETY: kill sends a signal; the group is the worker's own.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
}
