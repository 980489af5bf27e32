//! What an executor can do, said once by its backend
//! ([`Executor::CAPABILITIES`](super::Executor::CAPABILITIES)), for the
//! choices made about a capture before (or without) opening a device:
//! whether its replay needs a process of its own, whether `tune` has a
//! geometry to vary, how a snapshot is copied.

/// What an executor kind can do.
///
/// ```
/// use reprise_core::exec::Capabilities;
///
/// // A backend starts from a GPU's and says how it differs.
/// const MINE: Capabilities = Capabilities {
///     library_var: Some("MY_RUNTIME_LIBRARY"),
///     ..Capabilities::GPU
/// };
/// assert!(MINE.launch_geometry && MINE.device_memory && !MINE.in_process);
/// assert_eq!(MINE.library_var, Some("MY_RUNTIME_LIBRARY"));
/// ```
///
/// Not `#[non_exhaustive]`: each backend writes its own, and a field added
/// here must be said by every backend (from [`Capabilities::GPU`] where it
/// is a GPU's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// It has devices to choose among (`--device-id`); the host has one.
    pub has_devices: bool,
    /// Its kernels run in the replaying process's own address space, so a
    /// kernel that faults or exits takes that process with it (the command
    /// line replays them in a child process).
    pub in_process: bool,
    /// Its kernels take a launch geometry (grid, block, shared memory), so
    /// `tune` has something to vary.
    pub launch_geometry: bool,
    /// Its memory is the device's, apart from the host's: its queues copy
    /// between device addresses themselves, and a snapshot is copied on the
    /// device, not with a `memcpy`.
    pub device_memory: bool,
    /// Applications using it can be recorded unmodified through the
    /// interposer (`reprise record -- ./app`).
    pub interposed: bool,
    /// Its loader reads an image of no kind reprise knows and says what it
    /// makes of it (the host's ELF reader, AMD's code-object reader), so a
    /// replay forced onto it lets it judge; otherwise such an image is
    /// refused as runnable by no executor.
    pub judges_unknown_images: bool,
    /// The environment variable naming the driver or runtime library to
    /// load instead of the system's (a simulated one, say), where one does
    /// (`None` where the dynamic loader's search decides).
    pub library_var: Option<&'static str>,
    /// Why it takes no PTX JIT options (`cuModuleLoadDataEx`'s
    /// `CU_JIT_*`), or `None` where it does (CUDA, and only for PTX).
    pub jit_refusal: Option<&'static str>,
}

impl Capabilities {
    /// A GPU's: devices to choose among, kernels that run on the device
    /// with a geometry, memory of its own; no interposer, an unknown image
    /// judged by its loader, the library found by the dynamic loader, JIT
    /// options taken.
    pub const GPU: Capabilities = Capabilities {
        has_devices: true,
        in_process: false,
        launch_geometry: true,
        device_memory: true,
        interposed: false,
        judges_unknown_images: true,
        library_var: None,
        jit_refusal: None,
    };
}
