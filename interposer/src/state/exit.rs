//! At exit: what is in flight is written, and what was recorded and what
//! was not is said.

use super::*;

/// Writes what is still in flight and says what was recorded, and what
/// was not.
pub(super) extern "C" fn at_exit() {
    if forked() {
        // A forked child: the recorder's threads are the parent's.
        return;
    }
    // Another thread may be inside a recorded launch (the program exits
    // from one thread while another still works): wait for it a while, not
    // for ever.
    let mut phase = None;
    for _ in 0..1000 {
        match cell().try_lock() {
            Ok(g) => {
                phase = Some(g);
                break;
            }
            Err(std::sync::TryLockError::Poisoned(e)) => {
                phase = Some(e.into_inner());
                break;
            }
            Err(std::sync::TryLockError::WouldBlock) => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
    let Some(mut phase) = phase else {
        say(format_args!(
            "reprise: a launch was still being recorded at exit; captures in flight are left as orphans"
        ));
        return;
    };
    let mut written = Vec::new();
    if let Phase::Recording(s) = std::mem::replace(&mut *phase, Phase::Off) {
        let mut s = s;
        s.rec
            .executor()
            .exiting
            .store(true, std::sync::atomic::Ordering::Release);
        match reprise_core::block_on(s.rec.finish()) {
            Ok(w) => written = w,
            Err(e) => say(format_args!("reprise: finishing the recording: {e}")),
        }
        // The driver may be shutting down: nothing of it is released.
        std::mem::forget(s);
    }
    if let Some(dir) = DIR.get() {
        summary::at_exit(dir, &written);
    }
}
