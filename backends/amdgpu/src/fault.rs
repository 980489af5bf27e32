//! How the runtime's callbacks reach a queue: its completion mark and its
//! fault, which come from the queue's error callback (traps, illegal
//! instructions, aperture violations) or, for GPU memory faults, from the
//! process's system event handler. ROCr reports a memory fault only there
//! (its AQL queue's exception handler suppresses page faults) and ends the
//! process unless a handler answers `HSA_STATUS_SUCCESS`
//! (`Runtime::VMFaultHandler` in ROCR-Runtime's `runtime.cpp`); reprise's
//! handler marks every live queue of the faulting agent and answers so.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use hsa_sys::*;
use reprise_core::completion::Completion;

use crate::error::{AmdError, check};

/// What a queue shares with the runtime's callback threads.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) completion: Completion,
    /// The status its fault was reported with (0: none).
    pub(crate) fault: AtomicU32,
    /// The address a memory fault hit (0: unknown).
    pub(crate) address: AtomicU64,
    /// The queue's GPU agent.
    pub(crate) agent: u64,
}

impl Shared {
    pub(crate) fn new(agent: hsa_agent_t) -> Arc<Shared> {
        let shared = Arc::new(Shared {
            agent: agent.handle,
            ..Shared::default()
        });
        queues().push(Arc::downgrade(&shared));
        shared
    }

    /// Records a fault (the first one stays) and wakes the waiter.
    pub(crate) fn faulted(&self, status: u32, address: u64) {
        if self
            .fault
            .compare_exchange(0, status.max(1), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.address.store(address, Ordering::Release);
        }
        self.completion.signal(u64::MAX);
    }
}

fn queues() -> std::sync::MutexGuard<'static, Vec<Weak<Shared>>> {
    static QUEUES: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());
    let mut q = QUEUES.lock().unwrap_or_else(|e| e.into_inner());
    q.retain(|w| w.strong_count() > 0);
    q
}

/// The process's system event handler: a GPU memory fault marks every live
/// queue of that agent as faulted and keeps the runtime from ending the
/// process; other events are left to the runtime.
unsafe extern "C" fn on_system_event(
    event: *const hsa_amd_event_t,
    _data: *mut c_void,
) -> hsa_status_t {
    // SAFETY: the runtime passes a valid event for the call.
    let Some(e) = (unsafe { event.as_ref() }) else {
        return status::ERROR;
    };
    if e.event_type != event_type::GPU_MEMORY_FAULT {
        return status::ERROR;
    }
    let f = e.memory_fault;
    for q in queues().iter().filter_map(Weak::upgrade) {
        if q.agent == f.agent.handle {
            q.faulted(status::ERROR_MEMORY_FAULT, f.virtual_address);
        }
    }
    status::SUCCESS
}

/// Registers the handler with a runtime just initialised (each `hsa_init`
/// of the process's first one; ROCr keeps handlers until it shuts down,
/// and has no call to remove one).
pub(crate) fn watch(hsa: &Hsa) -> Result<(), AmdError> {
    // SAFETY: a plain function and no data; it only reads the event and
    // the registry of queues.
    let rc = unsafe {
        (hsa.fns.hsa_amd_register_system_event_handler)(on_system_event, std::ptr::null_mut())
    };
    check("hsa_amd_register_system_event_handler", rc)
}
