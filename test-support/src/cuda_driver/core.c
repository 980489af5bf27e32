/*
 * A simulated CUDA driver for testing reprise's CUDA executor on machines
 * without an NVIDIA GPU. Built by the tests as `libcuda.so.1` (soname
 * `libcuda.so.1`, the name programs linked with -lcuda and CUDA's runtime
 * load) with a `libcuda.so` link next to it (the name the executor loads),
 * and never shipped.
 *
 * It implements the driver API functions the executor calls, with the
 * semantics the executor relies on, on host memory:
 *
 *  - device memory: `cuMemAddressReserve` reserves host address space
 *    (PROT_NONE) at the hint when it is free, `cuMemCreate` makes a memfd,
 *    `cuMemMap` maps it, `cuMemSetAccess` makes it readable and writable;
 *  - streams: one worker thread each, running copies, launches, events,
 *    stream callbacks (which run even after a fault, with the error) and host
 *    functions (which do not) in order;
 *  - modules: the kernels of reprise's CUDA fixtures (saxpy, mixed, grid2d,
 *    shared_reverse, the chunk hashing reprise_chunk_hashes, and clang's
 *    OpenMP kernels of omp_saxpy and omp_sum),
 *    found by name in PTX, cubin or fat binary images (PTX that declares a
 *    function it does not define fails to load, CUDA_ERROR_INVALID_PTX, as
 *    the driver's compiler links nothing), each
 *    with its own `__device__` globals, run block by block on the stream's
 *    worker: the threads of a block one after the other, phase by phase
 *    (a kernel with __syncthreads() has one phase per stretch between
 *    barriers), each block with fresh dynamic shared memory filled with
 *    garbage; every memory access a kernel makes is checked against the
 *    mapped ranges (shared ones against the launch's dynamic shared memory),
 *    and a bad one is a sticky CUDA_ERROR_ILLEGAL_ADDRESS, as on a device;
 *  - launch limits as on an sm_90 device: 1024 threads per block (fewer for
 *    a kernel whose PTX says `.maxntid`, reported by cuFuncGetAttribute
 *    as CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), blocks of
 *    at most 1024x1024x64, grids of at most (2^31-1)x65535x65535, reported
 *    by cuDeviceGetAttribute and enforced by cuLaunchKernel
 *    (CUDA_ERROR_INVALID_VALUE); shared memory as on a device: each
 *    function has its static shared memory (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
 *    0 unless REPRISE_SIM_CUDA_STATIC_SHARED says otherwise) and may use
 *    dynamic shared memory up to CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
 *    which starts at 48 KiB less the static size and which
 *    cuFuncSetAttribute sets (raising or lowering it) as long as static plus
 *    dynamic stays within the opt-in limit (an sm_90's 227 KiB unless
 *    REPRISE_SIM_CUDA_SHARED_OPTIN says otherwise); cuFuncGetAttribute
 *    reports both; cuLaunchKernel refuses more dynamic shared memory than
 *    the function's maximum, or static plus dynamic over the opt-in limit;
 *  - parameter sizes from `cuFuncGetParamInfo`;
 *  - what unmodified CUDA programs use beyond that: cuDriverGetVersion
 *    (12040), cuGetProcAddress[_v2] (base names resolved to the versioned
 *    exports by ABI version and flags, as the driver does: see PROCS),
 *    the default streams (stream 0 and CU_STREAM_LEGACY are the legacy
 *    default stream, which waits for earlier work on every blocking stream
 *    and makes later work on them wait for it; CU_STREAM_PER_THREAD, and 0
 *    in a _ptsz/_ptds call, the calling thread's per-thread one), the
 *    _ptsz/_ptds variants, cuLaunchKernelEx, synchronous copies,
 *    cuMemAllocAsync/cuMemFreeAsync (allocated at the call, freed when the
 *    stream reaches the free), cuMemAllocPitch_v2 (elements of 4, 8 or 16
 *    bytes; the pitch is the width rounded up to 512), cuMemAllocManaged
 *    (CU_MEM_ATTACH_GLOBAL or _HOST; the host reads and writes it
 *    directly, cuMemFree frees it), cuMemGetAddressRange_v2 (and
 *    cuPointerGetAttribute[s] for its range), cuMemGetInfo_v2, cuModuleLoadDataEx (JIT options recorded and simulated: see module.c),
 *    cuModuleLoadFatBinary, cuModuleLoad (from a file;
 *    CUDA_ERROR_FILE_NOT_FOUND when it cannot be read), the linker
 *    (cuLinkCreate_v2, cuLinkAddData_v2, cuLinkAddFile_v2, cuLinkComplete,
 *    cuLinkDestroy: the linked image is the PTX inputs concatenated, see
 *    module.c), cuMemsetD32_v2 (synchronous), created contexts
 *    (cuCtxCreate_v2/_v3 make a handle of their own on the one device,
 *    current to the caller; cuCtxDestroy_v2 waits for the device and kills
 *    the handle, which no thread may use or make current again), and CUDA
 *    12's libraries (cuLibraryLoadData, cuLibraryLoadFromFile and friends
 *    over the same module machinery; a CUkernel may be passed where a
 *    CUfunction is expected, as the driver allows);
 *  - what real applications call besides, each as NVIDIA's driver API
 *    reference documents it (the section cited where it is defined):
 *    page-locked host memory that kernels reach at its host address
 *    (host_memory.c), memory pools and cuMemPrefetchAsync (pools.c), 2D
 *    copies and 8-bit memsets (copy2d.c), the stack of current contexts
 *    and cuCtxGetDevice (contexts.c), cuEventSynchronize and cuEventQuery
 *    (waits.c), cuStreamCreateWithPriority; each thread has a per-thread
 *    default stream of its own;
 *  - cooperative launches (cuLaunchCooperativeKernel[_ptsz], and
 *    cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_COOPERATIVE): run as any
 *    launch, but CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE unless every block
 *    can be resident at once on the 132 multiprocessors
 *    cuDeviceGetAttribute reports (each holding 64 warps, 32 blocks, and the
 *    opt-in limit plus 1 KiB of shared memory, of which every block takes
 *    its static and dynamic shared memory and 1 KiB the driver reserves);
 *  - stream capture and graphs, with the driver's rules:
 *    cuStreamBeginCapture[_v2][_ptsz] (not of the legacy stream:
 *    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; CUDA_ERROR_ILLEGAL_STATE when
 *    already capturing; the per-thread default stream may capture),
 *    cuStreamEndCapture[_ptsz] (CUDA_ERROR_ILLEGAL_STATE when not
 *    capturing, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD from another thread
 *    unless the capture is RELAXED), cuStreamIsCapturing[_ptsz] (NONE,
 *    ACTIVE or INVALIDATED; of the legacy stream while a blocking stream
 *    captures, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT),
 *    cuThreadExchangeStreamCaptureMode, cuGraphInstantiateWithFlags,
 *    cuGraphLaunch[_ptsz] (the graph's operations queued on the stream in
 *    capture order, after the executable's previous launch; into the
 *    capture on a capturing stream), cuGraphExecDestroy, cuGraphDestroy.
 *    On a capturing stream kernels (every launch entry point; arguments
 *    copied at capture), async copies and host functions are not run but
 *    join the capture's graph; an event wait
 *    (CUDA_ERROR_STREAM_CAPTURE_ISOLATION) or a stream callback
 *    (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) invalidates it; event records
 *    and stream-ordered allocation in a capture are not simulated
 *    (CUDA_ERROR_NOT_SUPPORTED). Synchronising or querying a capturing
 *    stream, cuCtxSynchronize while any stream captures, work on the legacy
 *    stream while a blocking stream captures
 *    (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT; a synchronous copy
 *    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), and potentially unsafe calls
 *    (synchronous copies, cuMemAlloc[Pitch|Managed], cuMemFree,
 *    cuMemHostAlloc, cuMemFreeHost) by a thread the capture modes forbid
 *    them (see unsafe_call) fail and invalidate the captures concerned;
 *    further work on an invalidated capture's stream fails with
 *    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, as its cuStreamEndCapture does
 *    (with a NULL graph), which ends it. A graph holding a kernel of a
 *    module unloaded since neither instantiates nor launches
 *    (CUDA_ERROR_INVALID_HANDLE).
 *
 * Knobs (environment, read by cuInit):
 *   REPRISE_SIM_CUDA_DEVICES=N  devices reported (default 1, at most 8; 0
 *                               makes cuInit fail with
 *                               CUDA_ERROR_NO_DEVICE): each has a primary
 *                               context of its own, which cuCtxGetDevice
 *                               names, over the one simulated memory
 *   REPRISE_SIM_CUDA_HINTS=ignore  place every reservation where the
 *                               simulator likes, ignoring address hints
 *   REPRISE_SIM_CUDA_HINTS=pool  place reservations in one address pool at
 *                               0x380000000, lowest free address first,
 *                               honouring a hint only inside the pool (as
 *                               driver 580 was seen to do)
 *   REPRISE_SIM_CUDA_PARAM_INFO=0  cuFuncGetParamInfo answers
 *                               CUDA_ERROR_NOT_SUPPORTED, as for a driver
 *                               before CUDA 12.4 that lacks it
 *   REPRISE_SIM_CUDA_FAIL=CALL:CODE:SKIP  make CALL fail with CODE once,
 *                               after SKIP calls of it succeed (as
 *                               reprise_sim_fail, for programs run whole)
 *   REPRISE_SIM_CUDA_VMM=0      report no virtual memory management support
 *   REPRISE_SIM_CUDA_CC=NN      the device's compute capability (default 90);
 *                               PTX for a newer SM fails to load with
 *                               CUDA_ERROR_INVALID_PTX, a cubin for another
 *                               one with CUDA_ERROR_NO_BINARY_FOR_GPU
 *   REPRISE_SIM_CUDA_KERNEL_DELAY_US=N  make every kernel wait N
 *                               microseconds before it runs (also
 *                               reprise_sim_set_kernel_delay_us(N), for the
 *                               kernels launched after it)
 *   REPRISE_SIM_CUDA_COPY_DELAY_US=N  make each device-to-host and
 *                               device-to-device copy take a random 0 to N
 *                               microseconds more, so streams overlap
 *                               unpredictably (also
 *                               reprise_sim_set_copy_delay_us(N))
 *   REPRISE_SIM_CUDA_UPLOAD_DELAY_US=N  make each host-to-device copy
 *                               from page-locked memory wait a random 0 to
 *                               N microseconds on its stream before it
 *                               reads its source, so a caller that writes
 *                               a staging buffer before a synchronize
 *                               covered its copy shows (also
 *                               reprise_sim_set_upload_delay_us(N))
 *   REPRISE_SIM_CUDA_STATIC_SHARED=BYTES  give every function of the
 *                               modules loaded from then on BYTES of static
 *                               shared memory (default 0; as an OpenMP
 *                               kernel always has some); also
 *                               reprise_sim_set_static_shared(BYTES)
 *   REPRISE_SIM_CUDA_SHARED_OPTIN=BYTES  the device's opt-in limit of shared
 *                               memory per block (default 227 KiB, as on
 *                               sm_90; 64 KiB on sm_75, 99 KiB on sm_86);
 *                               also reprise_sim_set_shared_optin(BYTES)
 *
 * Misuse the executor must never commit aborts the process with a message:
 * freeing host or device memory that a queued or running copy still uses,
 * or unloading a module whose kernel is queued or running or one of whose
 * globals a queued or running copy still uses.
 *
 * For tests: reprise_sim_fail() makes one call fail (reprise_sim_fail_times()
 * several in a row), reprise_sim_counts() tells what is live,
 * reprise_sim_set_copy_delay_us() slows copies, reprise_sim_copied_bytes()
 * tells the bytes copied each way,
 * reprise_sim_set_upload_delay_us() uploads from page-locked memory,
 * reprise_sim_set_static_shared() gives the functions of modules loaded
 * later static shared memory, reprise_sim_set_shared_optin() changes the
 * opt-in limit,
 * reprise_sim_set_callback_status() hands the next stream callback a failed
 * status, reprise_sim_set_launch_return_delay_us() makes cuLaunchKernel
 * return late (its kernel may run meanwhile).
 *
 * Build switches: -DSIM_NO_STREAM_CALLBACK leaves out cuStreamAddCallback
 * (as a future driver may), -DSIM_NO_PARAM_INFO cuFuncGetParamInfo (as
 * drivers before CUDA 12.4 do).
 *
 * sim.h says which source file holds what, and how they stand on each
 * other.
 */
#include "core.h"
#include "errors.h"

/* The opt-in limit, an sm_90's unless REPRISE_SIM_CUDA_SHARED_OPTIN or
 * reprise_sim_set_shared_optin says otherwise (atomic). */
unsigned g_shared_optin = 227u << 10;
static unsigned g_shared_optin_start = 227u << 10;

const unsigned MAX_BLOCK[3] = {1024, 1024, 64};
const unsigned MAX_GRID[3] = {2147483647u, 65535, 65535};

int g_initialized;
int g_devices = 1;
int g_ignore_hints;
/* REPRISE_SIM_CUDA_HINTS=pool: reservations come from one address pool,
 * lowest free address first, and a hint counts only inside it. */
int g_pool;
int g_vmm = 1;
int g_param_info = 1;
int g_cc = 90; /* compute capability as major * 10 + minor */
unsigned g_copy_delay_us;
unsigned long long g_copied_bytes[3];
unsigned g_upload_delay_us;
unsigned g_kernel_delay_us;
unsigned g_launch_return_delay_us;
/* Static shared memory of the functions of modules loaded from now on
 * (atomic; REPRISE_SIM_CUDA_STATIC_SHARED). */
unsigned g_static_shared;

struct sim_ctx g_ctx = {PTHREAD_MUTEX_INITIALIZER,
                        PTHREAD_COND_INITIALIZER, 0, CUDA_SUCCESS, 0, 0};
/* The primary contexts of devices 1 and up: handles of their own, each
 * with its own retain count (CUDA Driver API, Primary Context Management:
 * "there is exactly one primary context per device"). */
static struct sim_ctx g_primaries[MAX_DEVICES - 1];

CUcontext primary_ctx(CUdevice dev) {
  return dev == 0 ? &g_ctx : &g_primaries[dev - 1];
}
__thread CUcontext t_current;
/* The contexts below t_current on the calling thread's stack, oldest
 * first (contexts.c pushes and pops). */
#define CTX_STACK 64
static __thread CUcontext t_below[CTX_STACK];
static __thread int t_depth;

int ctx_push(CUcontext ctx) {
  if (t_depth == CTX_STACK)
    return 0;
  t_below[t_depth++] = t_current;
  t_current = ctx;
  return 1;
}

void ctx_pop(void) { t_current = t_depth ? t_below[--t_depth] : NULL; }

CUresult sticky(void) {
  pthread_mutex_lock(&g_ctx.lock);
  CUresult r = g_ctx.sticky;
  pthread_mutex_unlock(&g_ctx.lock);
  return r;
}

/* Contexts cuCtxCreate made and cuCtxDestroy has not destroyed (guarded
 * by g_ctx.lock). Each is a handle of its own on the one simulated device:
 * its memory, modules and streams are the device's, which the primary
 * context shares (they outlive it: not simulated), but once destroyed
 * the handle is dead: no thread may use it or make it current. */
struct created_ctx {
  struct sim_ctx ctx;
  struct created_ctx *next;
};
static struct created_ctx *g_created;

int ctx_live(CUcontext ctx) {
  if (ctx == &g_ctx)
    return 1;
  if (ctx >= g_primaries && ctx < g_primaries + (g_devices - 1))
    return 1;
  if (!ctx)
    return 0;
  pthread_mutex_lock(&g_ctx.lock);
  int live = 0;
  for (struct created_ctx *c = g_created; c && !live; c = c->next)
    live = &c->ctx == ctx;
  pthread_mutex_unlock(&g_ctx.lock);
  return live;
}

/* Checks a call may use the context: initialised, current (and not
 * destroyed), not faulted. */
CUresult usable(void) {
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!t_current || !ctx_live(t_current))
    return CUDA_ERROR_INVALID_CONTEXT;
  return sticky();
}

void fault(void) {
  pthread_mutex_lock(&g_ctx.lock);
  if (!g_ctx.sticky)
    g_ctx.sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
  pthread_mutex_unlock(&g_ctx.lock);
}

static pthread_once_t g_env_once = PTHREAD_ONCE_INIT;

static void read_env(void) {
  const char *d = getenv("REPRISE_SIM_CUDA_DEVICES");
  g_devices = d ? atoi(d) : 1;
  if (g_devices > MAX_DEVICES)
    g_devices = MAX_DEVICES;
  for (int i = 0; i < MAX_DEVICES - 1; i++)
    g_primaries[i].device = i + 1;
  const char *h = getenv("REPRISE_SIM_CUDA_HINTS");
  g_ignore_hints = h && strcmp(h, "ignore") == 0;
  g_pool = h && strcmp(h, "pool") == 0;
  const char *v = getenv("REPRISE_SIM_CUDA_VMM");
  g_vmm = !(v && strcmp(v, "0") == 0);
  const char *pi = getenv("REPRISE_SIM_CUDA_PARAM_INFO");
  g_param_info = !(pi && strcmp(pi, "0") == 0);
  const char *fail = getenv("REPRISE_SIM_CUDA_FAIL");
  if (fail) {
    char call[64];
    int code, skip;
    if (sscanf(fail, "%63[^:]:%d:%d", call, &code, &skip) == 3)
      reprise_sim_fail(call, code, skip);
  }
  const char *cc = getenv("REPRISE_SIM_CUDA_CC");
  if (cc && atoi(cc) > 0)
    g_cc = atoi(cc);
  const char *c = getenv("REPRISE_SIM_CUDA_COPY_DELAY_US");
  if (c)
    __atomic_store_n(&g_copy_delay_us, (unsigned)atoi(c), __ATOMIC_RELAXED);
  const char *u = getenv("REPRISE_SIM_CUDA_UPLOAD_DELAY_US");
  if (u)
    __atomic_store_n(&g_upload_delay_us, (unsigned)atoi(u), __ATOMIC_RELAXED);
  const char *k = getenv("REPRISE_SIM_CUDA_KERNEL_DELAY_US");
  if (k)
    __atomic_store_n(&g_kernel_delay_us, (unsigned)atoi(k), __ATOMIC_RELAXED);
  const char *st = getenv("REPRISE_SIM_CUDA_STATIC_SHARED");
  if (st)
    __atomic_store_n(&g_static_shared, (unsigned)atoi(st), __ATOMIC_RELAXED);
  const char *so = getenv("REPRISE_SIM_CUDA_SHARED_OPTIN");
  if (so && atoi(so) >= (int)SHARED_DEFAULT) {
    g_shared_optin_start = (unsigned)atoi(so);
    __atomic_store_n(&g_shared_optin, g_shared_optin_start, __ATOMIC_RELAXED);
  }
}

EXPORT CUresult cuInit(unsigned flags) {
  INJECT();
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_once(&g_env_once, read_env);
  if (g_devices <= 0)
    return CUDA_ERROR_NO_DEVICE;
  __atomic_store_n(&g_initialized, 1, __ATOMIC_RELEASE);
  return CUDA_SUCCESS;
}

/* Simulator only: the most (microseconds) a device-to-host or
 * device-to-device copy is delayed, at random, so that work on two streams
 * overlaps unpredictably and a missing dependency between them shows. */
EXPORT void reprise_sim_set_copy_delay_us(unsigned us) {
  __atomic_store_n(&g_copy_delay_us, us, __ATOMIC_RELAXED);
}

/* Simulator only: the most (microseconds) a host-to-device copy from
 * page-locked memory waits on its stream before it reads its source, at
 * random, so that a staging buffer rewritten before its copy ran shows. */
EXPORT void reprise_sim_set_upload_delay_us(unsigned us) {
  __atomic_store_n(&g_upload_delay_us, us, __ATOMIC_RELAXED);
}

/* Simulator only: how long (microseconds) every kernel launched from now on
 * waits before it runs, so a launch returns and later work is queued before
 * a fault. Taken at the launch, so changing it never changes how long a
 * kernel already queued waits. */
EXPORT void reprise_sim_set_kernel_delay_us(unsigned us) {
  __atomic_store_n(&g_kernel_delay_us, us, __ATOMIC_RELAXED);
}

/* Simulator only: how long (microseconds) cuLaunchKernel takes to return
 * once it has queued the kernel, which may run (and fault) meanwhile, as on
 * a device. */
EXPORT void reprise_sim_set_launch_return_delay_us(unsigned us) {
  __atomic_store_n(&g_launch_return_delay_us, us, __ATOMIC_RELAXED);
}

/* Simulator only: the static shared memory (bytes) of every function of the
 * modules loaded from now on, as a kernel with `__shared__` arrays (every
 * OpenMP kernel) has; at most the opt-in limit. */
EXPORT void reprise_sim_set_static_shared(unsigned bytes) {
  __atomic_store_n(&g_static_shared, bytes, __ATOMIC_RELAXED);
}

/* Simulator only: the device's opt-in limit of shared memory per block, as
 * reported by cuDeviceGetAttribute and enforced from now on (never below
 * the 48 KiB default; 0: back to REPRISE_SIM_CUDA_SHARED_OPTIN or 227 KiB).
 * Functions already opted in beyond it keep their attribute, as on no real
 * device: set it before loading modules. */
EXPORT void reprise_sim_set_shared_optin(unsigned bytes) {
  if (bytes == 0)
    bytes = g_shared_optin_start;
  if (bytes < SHARED_DEFAULT)
    bytes = SHARED_DEFAULT;
  __atomic_store_n(&g_shared_optin, bytes, __ATOMIC_RELAXED);
}

EXPORT CUresult cuDeviceGetCount(int *count) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  *count = g_devices;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!dev)
    return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= g_devices)
    return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, int attr, CUdevice dev) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!value)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= g_devices)
    return CUDA_ERROR_INVALID_DEVICE;
  switch (attr) {
  case ATTR_VMM:
    *value = g_vmm;
    break;
  case ATTR_CC_MAJOR:
    *value = g_cc / 10;
    break;
  case ATTR_CC_MINOR:
    *value = g_cc % 10;
    break;
  case ATTR_MAX_THREADS_PER_BLOCK:
    *value = MAX_THREADS_PER_BLOCK;
    break;
  case ATTR_MAX_BLOCK_DIM_X:
  case ATTR_MAX_BLOCK_DIM_X + 1:
  case ATTR_MAX_BLOCK_DIM_X + 2:
    *value = (int)MAX_BLOCK[attr - ATTR_MAX_BLOCK_DIM_X];
    break;
  case ATTR_MAX_GRID_DIM_X:
  case ATTR_MAX_GRID_DIM_X + 1:
  case ATTR_MAX_GRID_DIM_X + 2:
    *value = (int)MAX_GRID[attr - ATTR_MAX_GRID_DIM_X];
    break;
  case ATTR_MAX_SHARED_PER_BLOCK:
    *value = SHARED_DEFAULT;
    break;
  case ATTR_MAX_SHARED_PER_BLOCK_OPTIN:
    *value = SHARED_OPTIN;
    break;
  case ATTR_MULTIPROCESSOR_COUNT:
    *value = MULTIPROCESSORS;
    break;
  case ATTR_MAX_THREADS_PER_SM:
    *value = MAX_WARPS_PER_SM * 32;
    break;
  case ATTR_MAX_BLOCKS_PER_SM:
    *value = MAX_BLOCKS_PER_SM;
    break;
  case ATTR_MAX_SHARED_PER_SM:
    *value = (int)(SHARED_OPTIN + RESERVED_SHARED);
    break;
  case ATTR_RESERVED_SHARED_PER_BLOCK:
    *value = RESERVED_SHARED;
    break;
  case ATTR_CAN_MAP_HOST_MEMORY:
  case ATTR_UNIFIED_ADDRESSING:
  case ATTR_HOST_POINTER_FOR_REGISTERED:
  case ATTR_MEMORY_POOLS:
  case ATTR_MANAGED_MEMORY:
  case ATTR_CONCURRENT_MANAGED_ACCESS:
  case ATTR_COOPERATIVE_LAUNCH:
    *value = 1;
    break;
  default:
    *value = 0;
  }
  return CUDA_SUCCESS;
}

/* Each device has a primary context of its own (see g_primaries). */
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= g_devices)
    return CUDA_ERROR_INVALID_DEVICE;
  CUcontext c = primary_ctx(dev);
  pthread_mutex_lock(&g_ctx.lock);
  c->retains++;
  pthread_mutex_unlock(&g_ctx.lock);
  *ctx = c;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  INJECT();
  if (dev < 0 || dev >= g_devices)
    return CUDA_ERROR_INVALID_DEVICE;
  CUcontext c = primary_ctx(dev);
  pthread_mutex_lock(&g_ctx.lock);
  CUresult r = c->retains > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
  if (c->retains > 0 && --c->retains == 0 && dev == 0)
    g_ctx.sticky = CUDA_SUCCESS; /* the last release resets the device */
  pthread_mutex_unlock(&g_ctx.lock);
  return r;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx)
    return CUDA_ERROR_INVALID_VALUE;
  *ctx = t_current;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx && !ctx_live(ctx))
    return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx)
    t_current = ctx;
  else if (t_current)
    ctx_pop();
  return CUDA_SUCCESS;
}

/* CU_CTX_SCHED_*, CU_CTX_MAP_HOST, CU_CTX_LMEM_RESIZE_TO_MAX, coredump and
 * CU_CTX_SYNC_MEMOPS: every flag cuCtxCreate takes (none changes what the
 * simulator does). */
#define CTX_FLAGS 0xffu

static CUresult ctx_create(CUcontext *out, unsigned flags, CUdevice dev) {
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!out || (flags & ~CTX_FLAGS))
    return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= g_devices)
    return CUDA_ERROR_INVALID_DEVICE;
  struct created_ctx *c = calloc(1, sizeof *c);
  if (!c)
    return CUDA_ERROR_OUT_OF_MEMORY;
  c->ctx.device = dev;
  pthread_mutex_lock(&g_ctx.lock);
  c->next = g_created;
  g_created = c;
  pthread_mutex_unlock(&g_ctx.lock);
  /* The new context is current to the calling thread. */
  t_current = &c->ctx;
  *out = &c->ctx;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *out, unsigned flags, CUdevice dev) {
  INJECT();
  return ctx_create(out, flags, dev);
}

/* CUDA 11.4's, with execution affinity parameters (none simulated). */
EXPORT CUresult cuCtxCreate_v3(CUcontext *out, void *params, int nparams,
                               unsigned flags, CUdevice dev) {
  INJECT();
  if (nparams < 0 || (nparams && !params))
    return CUDA_ERROR_INVALID_VALUE;
  if (nparams)
    return CUDA_ERROR_NOT_SUPPORTED;
  return ctx_create(out, flags, dev);
}

/* cuCtxDestroy_v2: waits for the device's work, then the context is gone
 * "regardless of how many threads it is current to": not current to the
 * calling thread any more, and every call that uses it from any thread
 * fails with CUDA_ERROR_INVALID_CONTEXT. The primary context is not
 * destroyed so (CUDA_ERROR_INVALID_CONTEXT). */
EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_ctx.lock);
  struct created_ctx **p = &g_created;
  while (*p && &(*p)->ctx != ctx)
    p = &(*p)->next;
  struct created_ctx *c = *p;
  if (c) {
    while (g_ctx.busy > 0)
      pthread_cond_wait(&g_ctx.idle, &g_ctx.lock);
    *p = c->next;
  }
  pthread_mutex_unlock(&g_ctx.lock);
  if (!c)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (t_current == ctx)
    ctx_pop();
  free(c);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!bytes)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= g_devices)
    return CUDA_ERROR_INVALID_DEVICE;
  *bytes = TOTAL_MEMORY;
  return CUDA_SUCCESS;
}

/* Needs no cuInit, as on the driver. */
EXPORT CUresult cuDriverGetVersion(int *version) {
  INJECT();
  if (!version)
    return CUDA_ERROR_INVALID_VALUE;
  *version = DRIVER_VERSION;
  return CUDA_SUCCESS;
}

/* The bytes every copy that ran so far moved, by direction: host to device,
 * device to host, device to device (a recorder's traffic, for tests). */
EXPORT void reprise_sim_copied_bytes(unsigned long long out[3]) {
  for (int i = 0; i < 3; i++)
    out[i] = __atomic_load_n(&g_copied_bytes[i], __ATOMIC_RELAXED);
}
