//! Loading the HSA runtime at run time: the required entry points, and the
//! optional `hsa_amd_vmem_*` ones (ROCm 6 and later).

use core::ffi::{c_char, c_void};
use std::fmt;

use libloading::Library;

use crate::types::*;

/// The library names tried, in order, when `REPRISE_HSA_LIBRARY` is unset.
pub const DEFAULT_NAMES: [&str; 2] = ["libhsa-runtime64.so.1", "libhsa-runtime64.so"];

/// The variable that names the one library file to load instead.
pub const LIBRARY_VARIABLE: &str = "REPRISE_HSA_LIBRARY";

/// Why the runtime could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// No library could be opened: each name tried with the loader's answer.
    #[error("HSA runtime not found ({})", attempts(.tried))]
    Library {
        /// `(name, reason)` per attempt.
        tried: Vec<(String, String)>,
    },
    /// The library lacks an entry point reprise requires.
    #[error("HSA runtime not found ({library} lacks {symbol}, which reprise requires)")]
    Symbol {
        /// The library that was opened.
        library: String,
        /// The missing entry point.
        symbol: &'static str,
    },
}

/// Each attempt as `name: reason`, separated by `; `.
fn attempts(tried: &[(String, String)]) -> String {
    tried
        .iter()
        .map(|(name, reason)| format!("{name}: {reason}"))
        .collect::<Vec<_>>()
        .join("; ")
}

macro_rules! entry_points {
    ($(#[$meta:meta])* $table:ident { $($name:ident: fn($($arg:ty),*) $(-> $ret:ty)?;)* }) => {
        $(#[$meta])*
        #[allow(missing_docs)]
        #[derive(Clone, Copy)]
        pub struct $table {
            $(pub $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }

        impl $table {
            /// The names of every entry point in the table.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name)),*];

            fn resolve(lib: &Library) -> Result<Self, &'static str> {
                Ok($table {
                    $($name: {
                        // SAFETY: the symbol is declared with the signature
                        // the HSA headers give it (types in `types.rs`); the
                        // pointer is copied out while `lib` stays loaded in
                        // the `Hsa` that owns both.
                        let symbol = unsafe {
                            lib.get::<unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                                concat!(stringify!($name), "\0").as_bytes(),
                            )
                        };
                        *symbol.map_err(|_| stringify!($name))?
                    },)*
                })
            }
        }

        impl fmt::Debug for $table {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($table)).finish_non_exhaustive()
            }
        }
    };
}

/// An iteration callback over agents (`hsa_iterate_agents`).
pub type AgentCallback = unsafe extern "C" fn(hsa_agent_t, *mut c_void) -> hsa_status_t;
/// An iteration callback over memory pools.
pub type PoolCallback = unsafe extern "C" fn(hsa_amd_memory_pool_t, *mut c_void) -> hsa_status_t;
/// An iteration callback over ISAs.
pub type IsaCallback = unsafe extern "C" fn(hsa_isa_t, *mut c_void) -> hsa_status_t;
/// A queue's error callback (`hsa_queue_create`).
pub type QueueErrorCallback = unsafe extern "C" fn(hsa_status_t, *mut hsa_queue_t, *mut c_void);
/// A system event handler (`hsa_amd_register_system_event_handler`):
/// returning `HSA_STATUS_SUCCESS` for a memory fault keeps ROCr from
/// ending the process.
pub type SystemEventCallback =
    unsafe extern "C" fn(*const hsa_amd_event_t, *mut c_void) -> hsa_status_t;
/// A signal handler (`hsa_amd_signal_async_handler`): returning `true` keeps
/// it registered.
pub type SignalHandler = unsafe extern "C" fn(hsa_signal_value_t, *mut c_void) -> bool;

entry_points! {
    /// The entry points reprise requires: a runtime without any of them is
    /// not usable.
    Functions {
        hsa_init: fn() -> hsa_status_t;
        hsa_shut_down: fn() -> hsa_status_t;
        hsa_status_string: fn(hsa_status_t, *mut *const c_char) -> hsa_status_t;
        hsa_iterate_agents: fn(AgentCallback, *mut c_void) -> hsa_status_t;
        hsa_agent_get_info: fn(hsa_agent_t, u32, *mut c_void) -> hsa_status_t;
        hsa_agent_iterate_isas: fn(hsa_agent_t, IsaCallback, *mut c_void) -> hsa_status_t;
        hsa_isa_get_info_alt: fn(hsa_isa_t, u32, *mut c_void) -> hsa_status_t;
        hsa_amd_agent_iterate_memory_pools: fn(hsa_agent_t, PoolCallback, *mut c_void) -> hsa_status_t;
        hsa_amd_memory_pool_get_info: fn(hsa_amd_memory_pool_t, u32, *mut c_void) -> hsa_status_t;
        hsa_amd_memory_pool_allocate: fn(hsa_amd_memory_pool_t, usize, u32, *mut *mut c_void) -> hsa_status_t;
        hsa_amd_memory_pool_free: fn(*mut c_void) -> hsa_status_t;
        hsa_amd_agents_allow_access: fn(u32, *const hsa_agent_t, *const u32, *const c_void) -> hsa_status_t;
        hsa_signal_create: fn(hsa_signal_value_t, u32, *const hsa_agent_t, *mut hsa_signal_t) -> hsa_status_t;
        hsa_signal_destroy: fn(hsa_signal_t) -> hsa_status_t;
        hsa_signal_store_screlease: fn(hsa_signal_t, hsa_signal_value_t);
        hsa_signal_wait_scacquire: fn(hsa_signal_t, u32, hsa_signal_value_t, u64, u32) -> hsa_signal_value_t;
        hsa_amd_register_system_event_handler: fn(SystemEventCallback, *mut c_void) -> hsa_status_t;
        hsa_amd_signal_async_handler: fn(hsa_signal_t, u32, hsa_signal_value_t, SignalHandler, *mut c_void) -> hsa_status_t;
        hsa_queue_create: fn(hsa_agent_t, u32, u32, Option<QueueErrorCallback>, *mut c_void, u32, u32, *mut *mut hsa_queue_t) -> hsa_status_t;
        hsa_queue_destroy: fn(*mut hsa_queue_t) -> hsa_status_t;
        hsa_queue_load_read_index_scacquire: fn(*const hsa_queue_t) -> u64;
        hsa_queue_add_write_index_screlease: fn(*const hsa_queue_t, u64) -> u64;
        hsa_amd_memory_async_copy: fn(*mut c_void, hsa_agent_t, *const c_void, hsa_agent_t, usize, u32, *const hsa_signal_t, hsa_signal_t) -> hsa_status_t;
        hsa_code_object_reader_create_from_memory: fn(*const c_void, usize, *mut hsa_code_object_reader_t) -> hsa_status_t;
        hsa_code_object_reader_destroy: fn(hsa_code_object_reader_t) -> hsa_status_t;
        hsa_executable_create_alt: fn(u32, u32, *const c_char, *mut hsa_executable_t) -> hsa_status_t;
        hsa_executable_load_agent_code_object: fn(hsa_executable_t, hsa_agent_t, hsa_code_object_reader_t, *const c_char, *mut c_void) -> hsa_status_t;
        hsa_executable_freeze: fn(hsa_executable_t, *const c_char) -> hsa_status_t;
        hsa_executable_destroy: fn(hsa_executable_t) -> hsa_status_t;
        hsa_executable_get_symbol_by_name: fn(hsa_executable_t, *const c_char, *const hsa_agent_t, *mut hsa_executable_symbol_t) -> hsa_status_t;
        hsa_executable_symbol_get_info: fn(hsa_executable_symbol_t, u32, *mut c_void) -> hsa_status_t;
    }
}

entry_points! {
    /// Virtual memory management (ROCm 6 and later): reserving an address
    /// range, then mapping physical memory into it. Needed to replay at a
    /// recorded address.
    Vmem {
        hsa_amd_vmem_address_reserve: fn(*mut *mut c_void, usize, u64, u64) -> hsa_status_t;
        hsa_amd_vmem_address_free: fn(*mut c_void, usize) -> hsa_status_t;
        hsa_amd_vmem_handle_create: fn(hsa_amd_memory_pool_t, usize, u32, u64, *mut hsa_amd_vmem_alloc_handle_t) -> hsa_status_t;
        hsa_amd_vmem_handle_release: fn(hsa_amd_vmem_alloc_handle_t) -> hsa_status_t;
        hsa_amd_vmem_map: fn(*mut c_void, usize, usize, hsa_amd_vmem_alloc_handle_t, u64) -> hsa_status_t;
        hsa_amd_vmem_unmap: fn(*mut c_void, usize) -> hsa_status_t;
        hsa_amd_vmem_set_access: fn(*mut c_void, usize, *const hsa_amd_memory_access_desc_t, usize) -> hsa_status_t;
    }
}

/// The loaded HSA runtime: its entry points, and the library kept loaded
/// for as long as they may be called.
pub struct Hsa {
    /// The required entry points.
    pub fns: Functions,
    /// The virtual memory entry points, where the runtime has all of them.
    pub vmem: Option<Vmem>,
    /// Which of [`Vmem::NAMES`] the runtime lacks (empty when it has them
    /// all; all of them on runtimes before ROCm 6).
    pub vmem_missing: Vec<&'static str>,
    path: String,
    _library: Library,
}

impl fmt::Debug for Hsa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hsa")
            .field("path", &self.path)
            .field("vmem", &self.vmem.is_some())
            .finish_non_exhaustive()
    }
}

impl Hsa {
    /// Loads the runtime: the file `REPRISE_HSA_LIBRARY` names when it is
    /// set (and only that file), else the first of [`DEFAULT_NAMES`] the
    /// dynamic loader finds.
    pub fn load() -> Result<Hsa, LoadError> {
        match std::env::var_os(LIBRARY_VARIABLE) {
            Some(path) => Hsa::load_from(&[path.to_string_lossy().as_ref()]),
            None => Hsa::load_from(&DEFAULT_NAMES),
        }
    }

    /// Loads the first of `names` that opens (a name with a `/` is a path;
    /// others are looked up as the dynamic loader does).
    pub fn load_from(names: &[&str]) -> Result<Hsa, LoadError> {
        let mut tried = Vec::new();
        for name in names {
            // SAFETY: opening the HSA runtime runs its initialisers, which
            // do not depend on anything of ours; no entry point is called
            // here.
            match unsafe { Library::new(*name) } {
                Ok(library) => return Hsa::resolve(library, name),
                Err(e) => tried.push((name.to_string(), loader_reason(&e))),
            }
        }
        Err(LoadError::Library { tried })
    }

    fn resolve(library: Library, name: &str) -> Result<Hsa, LoadError> {
        let fns = Functions::resolve(&library).map_err(|symbol| LoadError::Symbol {
            library: name.to_string(),
            symbol,
        })?;
        let vmem_missing: Vec<&'static str> = Vmem::NAMES
            .iter()
            .copied()
            .filter(|n| {
                let c = format!("{n}\0");
                // SAFETY: only the symbol's presence is asked; the pointer is
                // not used.
                unsafe { library.get::<*const c_void>(c.as_bytes()) }.is_err()
            })
            .collect();
        let vmem = Vmem::resolve(&library).ok();
        Ok(Hsa {
            fns,
            vmem,
            vmem_missing,
            path: name.to_string(),
            _library: library,
        })
    }

    /// The name or path the runtime was loaded from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The runtime's own description of `status` (`hsa_status_string`),
    /// when it has one.
    pub fn status_string(&self, status: hsa_status_t) -> Option<String> {
        let mut text: *const c_char = core::ptr::null();
        // SAFETY: `hsa_status_string` writes a pointer to a static,
        // NUL-terminated string into `text`, or fails; it may be called
        // before `hsa_init`.
        let rc = unsafe { (self.fns.hsa_status_string)(status, &mut text) };
        if rc != status::SUCCESS || text.is_null() {
            return None;
        }
        // SAFETY: on success `text` points to a NUL-terminated string the
        // runtime owns for its lifetime.
        let s = unsafe { core::ffi::CStr::from_ptr(text) };
        Some(s.to_string_lossy().into_owned())
    }
}

/// The dynamic loader's message for a failed open (libloading's own
/// text is only "dlopen failed"; the loader's is its source).
fn loader_reason(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(source) => source.to_string(),
        None => e.to_string(),
    }
}
