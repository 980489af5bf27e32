//! The executor contract every backend implements.
//!
//! An [`Executor`] is one device. It reserves a region (at an exact address
//! when asked), loads images, finds kernels and the image's globals, hands out
//! host staging buffers and makes [`Queue`]s. A queue runs copies and launches
//! in submission order and offers one awaitable synchronize.
//!
//! ## Buffer ownership (the cancellation rule)
//!
//! Host buffers move *into* the queue with every copy and stay owned by the
//! queue until a synchronize has seen the copy complete; only then does
//! [`Queue::reclaim`] hand them back. Nothing the device reads or writes is
//! ever borrowed from a future, so dropping a future mid-flight cannot leave
//! the device writing into freed memory: the work runs on, and its buffers are
//! reclaimed by the queue's next synchronize or freed by the queue's `Drop`,
//! which waits for outstanding work first. Device memory (regions) and loaded
//! images must likewise stay alive until work that uses them completes; each
//! backend documents how (reference counts, or a wait in `Drop`).

use crate::record::BackendKind;
use core::task::{Context, Poll};
use core::time::Duration;

mod capabilities;
pub mod ledger;
pub mod limits;
mod settle;

pub use capabilities::Capabilities;
#[cfg(feature = "alloc")]
pub use ledger::VecLedger;
pub use ledger::{Fifo, FixedLedger, Full, Ledger, Unbounded};
pub use limits::{Dims, GeometryError, LaunchLimits};
pub use settle::{settle, synchronize};

/// The error type of an executor or queue (as `embedded_io::ErrorType`).
///
/// Errors are real errors (`core::error::Error`, so `Display` and `Debug`)
/// that say their [`ErrorKind`] ([`ExecError`]), can cross threads and be
/// boxed by code above the executors, which then needs no bounds of its own
/// on them, and never needs to know a backend's error type to tell what
/// kind of failure it was.
pub trait ErrorType {
    /// The error every fallible operation returns.
    type Error: ExecError + Send + Sync + 'static;
}

/// What kind of failure an executor's error is, whatever the executor (as
/// `embedded_io::ErrorKind` is for I/O errors): what code above the
/// executors decides by (stop using a lost device, report a refused launch
/// as such), where the error's own type and message say the details.
///
/// ```
/// use reprise_core::exec::ErrorKind;
/// assert_eq!(ErrorKind::LaunchRefused.to_string(), "launch refused");
/// assert!(ErrorKind::DeviceLost.device_unusable());
/// assert!(!ErrorKind::LaunchRefused.device_unusable());
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The driver or runtime library is missing, or lacks what the
    /// executor needs of it (no NVIDIA driver, no HSA runtime, a stub or
    /// too old a driver).
    DeviceMissing,
    /// The driver or runtime is there, but there is no device (or not the
    /// one asked for), or this machine cannot run the executor's kernels.
    NoDevice,
    /// The device (its context or queue) is unusable after an earlier
    /// failure, until the process restarts.
    DeviceLost,
    /// The device would not launch the kernel as asked: a geometry or the
    /// resources it needs (threads per block, grid dimensions, shared
    /// memory) beyond the kernel's or the device's limits. Nothing ran.
    LaunchRefused,
    /// A kernel faulted while it ran (a bad memory access, an illegal
    /// instruction, a trap).
    KernelFault,
    /// Memory (device or host, or address space) ran out.
    OutOfMemory,
    /// An operating system call failed (mapping memory, starting a thread,
    /// writing a file).
    Io,
    /// The region could not be reserved at the address asked for (it is in
    /// use, or the device cannot place a region at a chosen address).
    AddressUnavailable,
    /// What the executor was given is unusable: an image it cannot load, a
    /// kernel or global it lacks, arguments that do not fit the kernel, a
    /// copy outside its buffer or the device's memory, a bad request.
    InvalidInput,
    /// Anything else.
    Other,
}

impl ErrorKind {
    /// Whether an error of this kind alone says the device is unusable
    /// afterwards ([`ErrorKind::DeviceLost`]); whether a kernel fault leaves
    /// it usable depends on the executor ([`ExecError::device_lost`]).
    pub const fn device_unusable(self) -> bool {
        matches!(self, ErrorKind::DeviceLost)
    }

    /// The kind in a few words (`"launch refused"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::DeviceMissing => "device driver missing",
            ErrorKind::NoDevice => "no device",
            ErrorKind::DeviceLost => "device lost",
            ErrorKind::LaunchRefused => "launch refused",
            ErrorKind::KernelFault => "kernel fault",
            ErrorKind::OutOfMemory => "out of memory",
            ErrorKind::Io => "I/O error",
            ErrorKind::AddressUnavailable => "address unavailable",
            ErrorKind::InvalidInput => "invalid input",
            ErrorKind::Other => "other error",
        }
    }
}

impl core::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An executor's error (every [`ErrorType::Error`] is one): a
/// `core::error::Error` that says its [`ErrorKind`], as
/// `embedded_io::Error::kind` does.
///
/// ```
/// use reprise_core::exec::{ErrorKind, ExecError};
/// #[derive(Debug)]
/// struct Refused;
/// impl core::fmt::Display for Refused {
///     fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
///         f.write_str("block too large")
///     }
/// }
/// impl core::error::Error for Refused {}
/// impl ExecError for Refused {
///     fn kind(&self) -> ErrorKind {
///         ErrorKind::LaunchRefused
///     }
/// }
/// assert_eq!(Refused.kind(), ErrorKind::LaunchRefused);
/// assert!(!Refused.device_lost());
/// ```
pub trait ExecError: core::error::Error {
    /// What kind of failure this is.
    fn kind(&self) -> ErrorKind;

    /// Whether the device is unusable after this error, until the process
    /// restarts: by default, whether the kind says so
    /// ([`ErrorKind::device_unusable`]). An executor whose kernel faults
    /// (or other errors) also lose the device says so here: a GPU's
    /// [`ErrorKind::KernelFault`] loses its context or queue, the host's
    /// does not.
    fn device_lost(&self) -> bool {
        self.kind().device_unusable()
    }
}

/// Every geometry error is a launch the device refuses.
impl ExecError for GeometryError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::LaunchRefused
    }
}

/// A copy outside its buffer is the caller's mistake.
impl ExecError for SegmentOutOfBounds {
    fn kind(&self) -> ErrorKind {
        ErrorKind::InvalidInput
    }
}

impl ExecError for core::convert::Infallible {
    fn kind(&self) -> ErrorKind {
        match *self {}
    }
}

/// How a region should be reserved.
///
/// ```
/// use reprise_core::exec::RegionRequest;
/// // A replay: 64 GiB of address space as recorded, of which only the
/// // 1 MiB snapshot needs memory behind it.
/// let r = RegionRequest::new(Some(0x1539_4000_0000), 64 << 30).backed(1 << 20);
/// assert_eq!((r.capacity, r.backed), (64 << 30, 1 << 20));
/// // A recording's region is all usable.
/// assert_eq!(RegionRequest::new(None, 1 << 30).backed, 1 << 30);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionRequest {
    /// Reserve exactly here (a replay), or anywhere suitable (`None`, a fresh
    /// recording, whose base the executor aligns to 2 GiB where it can).
    pub base: Option<u64>,
    /// Bytes of address space to reserve.
    pub capacity: u64,
    /// Bytes from the base that must be usable memory (at most `capacity`);
    /// an executor may leave the rest as bare address space. A replay needs
    /// only its snapshot backed, whatever the recording reserved.
    pub backed: u64,
}

impl RegionRequest {
    /// `capacity` bytes at `base` (or anywhere), all of them usable.
    pub const fn new(base: Option<u64>, capacity: u64) -> Self {
        RegionRequest {
            base,
            capacity,
            backed: capacity,
        }
    }

    /// The same request with only the first `bytes` (at most the capacity)
    /// needing memory behind them.
    pub const fn backed(self, bytes: u64) -> Self {
        RegionRequest {
            backed: if bytes < self.capacity {
                bytes
            } else {
                self.capacity
            },
            ..self
        }
    }
}

/// A reserved device address range.
pub trait DeviceRegion {
    /// First address.
    fn base(&self) -> u64;
    /// Usable bytes from the base (at least the request's `backed`, possibly
    /// rounded up by the device's granularity; the address space reserved
    /// may be larger).
    fn capacity(&self) -> u64;
    /// Bytes of address space reserved from the base: how far
    /// [`Executor::grow_region`] can make it usable. By default, the
    /// usable bytes (a region that does not grow).
    fn reserved(&self) -> u64 {
        self.capacity()
    }
    /// Whether the region is host memory the device reaches over the bus,
    /// placed so because the device would not put its own memory at the
    /// address asked for (a kernel's timings over it differ). By default,
    /// device memory.
    fn on_host(&self) -> bool {
        false
    }
}

/// A device global as an image defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlobalInfo<'a> {
    /// Symbol name.
    pub name: &'a str,
    /// Device address.
    pub addr: u64,
    /// Size in bytes.
    pub size: u64,
}

/// A host staging buffer: plain bytes for the host executor, page-locked
/// memory for GPUs. Its length is fixed when it is made.
pub trait HostBuffer: AsRef<[u8]> + AsMut<[u8]> {}

impl<T: AsRef<[u8]> + AsMut<[u8]>> HostBuffer for T {}

/// One contiguous copy between a host buffer and device memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Device address.
    pub device: u64,
    /// Offset within the host buffer.
    pub host_offset: usize,
    /// Bytes to copy.
    pub len: usize,
}

impl Segment {
    /// Checks that every segment lies inside a host buffer of `buffer`
    /// bytes: the one bounds check every queue makes before it enqueues a
    /// copy (and the schedule before it enqueues anything).
    ///
    /// ```
    /// use reprise_core::exec::{Segment, SegmentOutOfBounds};
    /// let s = |host_offset, len| Segment { device: 0x1000, host_offset, len };
    /// assert_eq!(Segment::check_all(&[s(0, 8), s(8, 8)], 16), Ok(()));
    /// let e = Segment::check_all(&[s(0, 8), s(12, 8)], 16).unwrap_err();
    /// assert_eq!(e, SegmentOutOfBounds { offset: 12, len: 8, buffer: 16 });
    /// assert_eq!(e.end(), 20);
    /// // An end past `usize::MAX` is out of bounds too, never a wrap.
    /// assert!(Segment::check_all(&[s(usize::MAX, 2)], 16).is_err());
    /// ```
    pub fn check_all(segments: &[Segment], buffer: usize) -> Result<(), SegmentOutOfBounds> {
        match segments.iter().find(|s| {
            s.host_offset
                .checked_add(s.len)
                .is_none_or(|end| end > buffer)
        }) {
            Some(s) => Err(SegmentOutOfBounds {
                offset: s.host_offset,
                len: s.len,
                buffer,
            }),
            None => Ok(()),
        }
    }
}

/// A copy segment that does not fit its host buffer
/// ([`Segment::check_all`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentOutOfBounds {
    /// The segment's offset in the buffer.
    pub offset: usize,
    /// The segment's length.
    pub len: usize,
    /// The buffer's length.
    pub buffer: usize,
}

impl SegmentOutOfBounds {
    /// Where the segment ends (saturating: it may end past `usize::MAX`).
    pub fn end(&self) -> usize {
        self.offset.saturating_add(self.len)
    }
}

impl core::fmt::Display for SegmentOutOfBounds {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "copy of {} bytes at buffer offset {} overruns the {}-byte buffer",
            self.len, self.offset, self.buffer
        )
    }
}

impl core::error::Error for SegmentOutOfBounds {}

/// An open file whose first `len` bytes an executor may map into its memory
/// instead of having them read and copied (a snapshot, on replay): see
/// [`Executor::reserve_mapped`] and [`Executor::buffer_mapped`] (and, for
/// files that fill parts of one buffer, [`MapPart`]).
///
/// The file is named by its descriptor (a Unix file descriptor, which the
/// caller keeps open for the duration of the call; a mapping made from it
/// stays valid after the descriptor is closed). `len` is at most the file's
/// length: the caller has checked it. An executor only ever maps the file
/// privately: nothing it or a kernel writes reaches the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapFile {
    /// The open file's descriptor.
    pub fd: i32,
    /// Bytes from the start of the file that are wanted.
    pub len: u64,
}

/// One part of a buffer or region that an open file's first `len` bytes
/// fill, mapped rather than copied where the executor can map files:
/// see [`Executor::buffer_mapped_parts`] and
/// [`Executor::reserve_mapped_parts`] (a snapshot kept as chunk files, on
/// replay).
///
/// As for [`MapFile`], the file is named by its descriptor, which the caller
/// keeps open for the duration of the call; `len` is at most the file's
/// length (the caller has checked it), and an executor only ever maps the
/// file privately. `offset` and `len` are multiples of the executor's
/// [`Executor::map_granularity`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapPart {
    /// The open file's descriptor; its bytes are mapped from its start.
    pub fd: i32,
    /// Where in the buffer (or from the region's base) its bytes go.
    pub offset: u64,
    /// Bytes from the start of the file.
    pub len: u64,
}

/// Launch geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks (teams) in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    /// Dynamic shared memory in bytes.
    pub shared_mem: u32,
}

/// Kernel arguments, as [`crate::record::KernelRecord`] holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelArgs<'a> {
    /// Per argument: its 64-bit value, or for arguments larger than 8 bytes
    /// its offset into `data`.
    pub values: &'a [u64],
    /// Per argument: its size in bytes; empty means every argument is 8 bytes.
    pub sizes: &'a [u32],
    /// Bytes of arguments larger than 8 bytes.
    pub data: &'a [u8],
}

impl KernelArgs<'_> {
    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no arguments.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Size of argument `i` in bytes.
    pub fn size(&self, i: usize) -> u32 {
        self.sizes.get(i).copied().unwrap_or(8)
    }

    /// Bytes of argument `i` in the kernel's parameter layout, or `None` when
    /// a large argument points outside `data`.
    pub fn bytes<'s>(&'s self, i: usize, scratch: &'s mut [u8; 8]) -> Option<&'s [u8]> {
        let size = self.size(i) as usize;
        let value = *self.values.get(i)?;
        if size > 8 {
            let at = usize::try_from(value).ok()?;
            return self.data.get(at..at.checked_add(size)?);
        }
        *scratch = value.to_le_bytes();
        Some(&scratch[..size])
    }
}

/// A kernel launch: geometry and arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch<'a> {
    /// Geometry.
    pub config: LaunchConfig,
    /// Arguments.
    pub args: KernelArgs<'a>,
}

/// Identifies one enqueued copy; buffers come back from [`Queue::reclaim`]
/// with the ticket their copy was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ticket(pub u64);

/// One device.
pub trait Executor: ErrorType {
    /// The kind of executor this is, as captures record it (as wgpu-hal's
    /// `Api` names its variant): what a recorder writes into each capture's
    /// `backend`, and what a replay chooses by.
    const KIND: BackendKind;
    /// What it can do, said once here: the command line's choices by kind
    /// and the defaults of [`Executor::launch_geometry`] and
    /// [`Executor::copies_on_device`] read it.
    const CAPABILITIES: Capabilities;
    /// A reserved region; dropping it releases the range.
    type Region: DeviceRegion;
    /// A loaded image; dropping it unloads the image.
    type Image;
    /// A kernel found in an image.
    type Kernel;
    /// A host staging buffer.
    type Buffer: HostBuffer;
    /// A queue of copies and launches.
    type Queue: Queue<Error = Self::Error, Buffer = Self::Buffer, Kernel = Self::Kernel>;

    /// Reserves a region, at exactly `request.base` when given (an address
    /// that is not available is an error naming it).
    fn reserve(&self, request: RegionRequest) -> Result<Self::Region, Self::Error>;

    /// Bytes of memory the device has, where the executor can tell: how
    /// much address space a fresh recording reserves by default (memory is
    /// put behind it as allocations reach it). `None` (the default): the
    /// recorder's configured size.
    fn memory_size(&self) -> Option<u64> {
        None
    }

    /// Makes the first `backed` bytes of `region` usable (at most its
    /// [`DeviceRegion::reserved`] bytes), putting memory behind what is not
    /// yet; `region.capacity()` is then at least `backed`. The default does
    /// nothing: a region whose reserved bytes are all usable already.
    /// Safe to call from several threads at once on one region.
    fn grow_region(&self, region: &Self::Region, backed: u64) -> Result<(), Self::Error> {
        let _ = (region, backed);
        Ok(())
    }

    /// Loads a device image (its bytes as they were recorded).
    fn load_image(&self, image: &[u8]) -> Result<Self::Image, Self::Error>;

    /// Finds kernel `name` in `image`.
    fn kernel(&self, image: &Self::Image, name: &str) -> Result<Self::Kernel, Self::Error>;

    /// Looks up global `name` in `image`; `Ok(None)` when it has none.
    fn global<'n>(
        &self,
        image: &Self::Image,
        name: &'n str,
    ) -> Result<Option<GlobalInfo<'n>>, Self::Error>;

    /// Calls `f` with each global of `image` that a recording should save.
    fn for_each_global(
        &self,
        image: &Self::Image,
        f: &mut dyn FnMut(GlobalInfo<'_>),
    ) -> Result<(), Self::Error>;

    /// Sizes in bytes of `kernel`'s parameters, where the executor can tell
    /// (CUDA's `cuFuncGetParamInfo`): writes up to `out.len()` sizes and
    /// returns how many parameters the kernel has, or `None` when unknown.
    fn param_sizes(
        &self,
        kernel: &Self::Kernel,
        out: &mut [u32],
    ) -> Result<Option<usize>, Self::Error> {
        let _ = (kernel, out);
        Ok(None)
    }

    /// A host staging buffer of exactly `len` bytes (zeroed or not).
    fn buffer(&self, len: usize) -> Result<Self::Buffer, Self::Error>;

    /// Whether launches on this executor use their geometry (grid, block,
    /// dynamic shared memory): [`Capabilities::launch_geometry`]. A GPU's
    /// do. A host kernel's ABI passes only its arguments, so on the host a
    /// capture whose team or thread count is unknown (0, as LLVM 16 records
    /// a construct without `num_teams`/`thread_limit` clauses) replays as it
    /// is: the OpenMP runtime inside the image chooses its threads.
    fn launch_geometry(&self) -> bool {
        Self::CAPABILITIES.launch_geometry
    }

    /// Reserves a region as [`Executor::reserve`] does, with its first
    /// `file.len` bytes already holding the file's first `file.len` bytes,
    /// where the executor can map files into device memory: the host can
    /// (the region is then a private, copy-on-write mapping of the file,
    /// and nothing is copied); a GPU cannot.
    ///
    /// `Ok(None)` (the default) means it cannot, here or at all, and the
    /// caller reserves with [`Executor::reserve`] and uploads the bytes; a
    /// request that cannot be reserved is also `Ok(None)`, so that the
    /// caller's own reservation reports why.
    fn reserve_mapped(
        &self,
        request: RegionRequest,
        file: MapFile,
    ) -> Result<Option<Self::Region>, Self::Error> {
        let _ = (request, file);
        Ok(None)
    }

    /// A host buffer of exactly `file.len` bytes holding the file's first
    /// bytes, mapped rather than read where the executor's buffers can be
    /// file mappings (the host's can; page-locked GPU staging memory
    /// cannot). `Ok(None)` (the default) means the caller reads the file
    /// into a [`Executor::buffer`] itself.
    fn buffer_mapped(&self, file: MapFile) -> Result<Option<Self::Buffer>, Self::Error> {
        let _ = file;
        Ok(None)
    }

    /// The granularity of the parts this executor maps files into one
    /// buffer or region at ([`MapPart`]: its page size), or `None` (the
    /// default) when it maps no parts, and
    /// [`Executor::buffer_mapped_parts`] and
    /// [`Executor::reserve_mapped_parts`] always answer `Ok(None)`.
    fn map_granularity(&self) -> Option<u64> {
        None
    }

    /// A host buffer of exactly `len` bytes in which each of `parts`
    /// (disjoint, inside `len`) holds its file's bytes, mapped rather than
    /// read; the other bytes are zero, for the caller to fill. The host's
    /// buffers can be built so (private file mappings inside one anonymous
    /// mapping); page-locked GPU staging memory cannot. `Ok(None)` (the
    /// default) means the caller reads every byte into a
    /// [`Executor::buffer`] itself; a part that is not aligned to
    /// [`Executor::map_granularity`] or does not fit is also `Ok(None)`.
    fn buffer_mapped_parts(
        &self,
        len: usize,
        parts: &[MapPart],
    ) -> Result<Option<Self::Buffer>, Self::Error> {
        let _ = (len, parts);
        Ok(None)
    }

    /// Reserves a region as [`Executor::reserve`] does, in which each of
    /// `parts` (disjoint, offsets from the base, inside the request's
    /// `backed` bytes; none at all is fine) holds its file's bytes, mapped
    /// privately where the executor can map files into device memory (the
    /// host); the other bytes are zero, for the caller to fill. `Ok(None)`
    /// (the default) means it cannot, here or at all, as for
    /// [`Executor::reserve_mapped`].
    fn reserve_mapped_parts(
        &self,
        request: RegionRequest,
        parts: &[MapPart],
    ) -> Result<Option<Self::Region>, Self::Error> {
        let _ = (request, parts);
        Ok(None)
    }

    /// A new queue.
    fn queue(&self) -> Result<Self::Queue, Self::Error>;

    /// Whether this executor's queues copy between device addresses
    /// themselves ([`Queue::copy_on_device`]): where its memory is the
    /// device's ([`Capabilities::device_memory`]). A GPU's do, faster than
    /// any upload; the host's need not (its memory is the host's, and a
    /// replay restores from the mapped snapshot file).
    fn copies_on_device(&self) -> bool {
        Self::CAPABILITIES.device_memory
    }
}

/// An in-order stream of copies and launches with an awaitable synchronize.
///
/// Enqueuing never blocks on the device. Errors the device raises after
/// enqueueing are reported by the next [`Queue::poll_synchronize`].
pub trait Queue: ErrorType {
    /// The executor's host buffer type.
    type Buffer;
    /// The executor's kernel type.
    type Kernel;

    /// Enqueues host-to-device copies of `segments` of `buffer`. The buffer
    /// belongs to the queue until it is reclaimed.
    fn upload(&mut self, buffer: Self::Buffer, segments: &[Segment])
    -> Result<Ticket, Self::Error>;

    /// Enqueues device-to-host copies into `segments` of `buffer`. The buffer
    /// belongs to the queue until it is reclaimed.
    fn download(
        &mut self,
        buffer: Self::Buffer,
        segments: &[Segment],
    ) -> Result<Ticket, Self::Error>;

    /// Enqueues a kernel launch.
    fn launch(&mut self, kernel: &Self::Kernel, launch: &Launch<'_>) -> Result<(), Self::Error>;

    /// Completes when everything enqueued so far has finished, with the first
    /// error any of it raised. Cancel-safe: dropping the poller loses nothing.
    fn poll_synchronize(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>>;

    /// Hands back one buffer whose copy a completed synchronize has covered,
    /// in submission order; `None` when there is none.
    fn reclaim(&mut self) -> Option<(Ticket, Self::Buffer)>;

    /// Device time of the most recent launch a synchronize has covered, when
    /// the executor measures it.
    fn last_kernel_time(&self) -> Option<Duration> {
        None
    }

    /// Enqueues a copy of `len` bytes from device address `src` to `dst`
    /// (both in this executor's regions) made by the device, where the
    /// queue can ([`Executor::copies_on_device`]): `Ok(true)` once
    /// enqueued, `Ok(false)` (the default) when it cannot, and the caller
    /// copies through the host instead.
    fn copy_on_device(&mut self, dst: u64, src: u64, len: usize) -> Result<bool, Self::Error> {
        let _ = (dst, src, len);
        Ok(false)
    }
}
