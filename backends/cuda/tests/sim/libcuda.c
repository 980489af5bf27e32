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
 *    shared_reverse, and clang's OpenMP kernels of omp_saxpy and omp_sum),
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
 *    in a _ptsz/_ptds call, the per-thread one; one simulated stream serves
 *    both), the _ptsz/_ptds variants, cuLaunchKernelEx, synchronous copies,
 *    cuMemAllocAsync/cuMemFreeAsync (allocated at the call, freed when the
 *    stream reaches the free), cuMemAllocPitch_v2 (elements of 4, 8 or 16
 *    bytes; the pitch is the width rounded up to 512), cuMemAllocManaged
 *    (CU_MEM_ATTACH_GLOBAL or _HOST; the host reads and writes it
 *    directly, cuMemFree frees it), cuMemGetAddressRange_v2,
 *    cuMemGetInfo_v2, cuModuleLoadDataEx (options ignored),
 *    cuModuleLoadFatBinary, and CUDA 12's libraries (cuLibraryLoadData and
 *    friends over the same module machinery; a CUkernel may be passed where
 *    a CUfunction is expected, as the driver allows);
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
 *   REPRISE_SIM_CUDA_DEVICES=N  devices reported (default 1; 0 makes cuInit
 *                               fail with CUDA_ERROR_NO_DEVICE)
 *   REPRISE_SIM_CUDA_HINTS=ignore  place every reservation where the
 *                               simulator likes, ignoring address hints
 *   REPRISE_SIM_CUDA_HINTS=pool  place reservations in one address pool at
 *                               0x380000000, lowest free address first,
 *                               honouring a hint only inside the pool (as
 *                               driver 580 was seen to do)
 *   REPRISE_SIM_CUDA_PARAM_INFO=0  cuFuncGetParamInfo answers
 *                               CUDA_ERROR_NOT_SUPPORTED, as for a driver
 *                               before CUDA 12.4 that lacks it
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
 * reprise_sim_set_copy_delay_us() slows copies,
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
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct sim_ctx *CUcontext;
typedef struct sim_module *CUmodule;
typedef struct sim_function *CUfunction;
typedef struct sim_stream *CUstream;
typedef struct sim_event *CUevent;
typedef void (*CUstreamCallback)(CUstream, CUresult, void *);
typedef void (*CUhostFn)(void *);
typedef struct sim_library *CUlibrary;
typedef struct sim_kernel *CUkernel;
typedef struct sim_graph *CUgraph;
typedef struct sim_graph_exec *CUgraphExec;
typedef unsigned long long cuuint64_t;

/* As cuda.h (CUDA 12) lays them out: CUlaunchAttribute is the attribute's
 * id padded to 8 bytes, then a 64-byte value union; CUlaunchConfig as
 * below. */
typedef struct {
  int id;
  char pad[4];
  union {
    char pad[64];
    int cooperative;
    struct {
      unsigned x, y, z;
    } clusterDim;
    int priority;
  } value;
} CUlaunchAttribute;
typedef struct {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
} CUlaunchConfig;
/* CUlaunchAttributeID values the simulator accepts. */
#define LAUNCH_ATTR_IGNORE 0
#define LAUNCH_ATTR_COOPERATIVE 2
#define LAUNCH_ATTR_CLUSTER_DIMENSION 4
#define LAUNCH_ATTR_PRIORITY 8

/* The driver's version as cuDriverGetVersion reports it (CUDA 12.4). */
#define DRIVER_VERSION 12040
/* CUdriverProcAddress_flags and CUdriverProcAddressQueryResult. */
#define PROC_DEFAULT 0
#define PROC_LEGACY_STREAM 1
#define PROC_PER_THREAD_DEFAULT_STREAM 2
#define PROC_SUCCESS 0
#define PROC_SYMBOL_NOT_FOUND 1
#define PROC_VERSION_NOT_SUFFICIENT 2
/* The default-stream handles of cuda.h. */
#define STREAM_LEGACY ((CUstream)(uintptr_t)0x1)
#define STREAM_PER_THREAD ((CUstream)(uintptr_t)0x2)
#define STREAM_NON_BLOCKING 0x1
/* What the simulated device reports as its memory (80 GiB). */
#define TOTAL_MEMORY ((size_t)80 << 30)

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_ILLEGAL_STATE = 401,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
  CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
  CUDA_ERROR_STREAM_CAPTURE_ISOLATION = 905,
  CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906,
  CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD = 908,
};

#define GRANULARITY ((size_t)2 << 20)
#define ATTR_CC_MAJOR 75
#define ATTR_CC_MINOR 76
#define ATTR_VMM 102
#define ATTR_MAX_THREADS_PER_BLOCK 1
#define ATTR_MAX_BLOCK_DIM_X 2 /* then Y, Z */
#define ATTR_MAX_GRID_DIM_X 5  /* then Y, Z */
#define ATTR_MAX_SHARED_PER_BLOCK 8
#define ATTR_MAX_SHARED_PER_BLOCK_OPTIN 97
#define ATTR_MULTIPROCESSOR_COUNT 16
#define ATTR_MAX_THREADS_PER_SM 39
#define ATTR_MAX_SHARED_PER_SM 81
#define ATTR_MANAGED_MEMORY 83
#define ATTR_CONCURRENT_MANAGED_ACCESS 89
#define ATTR_COOPERATIVE_LAUNCH 95
#define ATTR_MAX_BLOCKS_PER_SM 106
#define ATTR_RESERVED_SHARED_PER_BLOCK 111
#define FUNC_ATTR_MAX_THREADS_PER_BLOCK 0
#define FUNC_ATTR_SHARED_SIZE 1
#define FUNC_ATTR_MAX_DYNAMIC_SHARED 8
#define MAX_THREADS_PER_BLOCK 1024
static const unsigned MAX_BLOCK[3] = {1024, 1024, 64};
static const unsigned MAX_GRID[3] = {2147483647u, 65535, 65535};
#define SHARED_DEFAULT (48u << 10)
/* An sm_90's (H100 SXM's) multiprocessors: how many, and what each holds
 * at once (cooperative launches must fit: see cooperative_fits). */
#define MULTIPROCESSORS 132
#define MAX_WARPS_PER_SM 64
#define MAX_BLOCKS_PER_SM 32
/* Shared memory the driver reserves for itself in every block. */
#define RESERVED_SHARED 1024u
/* cuMemAllocPitch's pitch: the width rounded up to this. */
#define PITCH_ALIGNMENT 512
/* CUmemAttach_flags cuMemAllocManaged takes. */
#define MEM_ATTACH_GLOBAL 0x1
#define MEM_ATTACH_HOST 0x2
/* The opt-in limit, an sm_90's unless REPRISE_SIM_CUDA_SHARED_OPTIN or
 * reprise_sim_set_shared_optin says otherwise (atomic). */
static unsigned g_shared_optin = 227u << 10;
static unsigned g_shared_optin_start = 227u << 10;
#define SHARED_OPTIN __atomic_load_n(&g_shared_optin, __ATOMIC_RELAXED)
#define MAX_RANGES 1024
#define MAX_PARAM_BYTES 64

static int g_initialized;
static int g_devices = 1;
static int g_ignore_hints;
/* REPRISE_SIM_CUDA_HINTS=pool: reservations come from one address pool,
 * lowest free address first, and a hint counts only inside it. */
static int g_pool;
#define POOL_BASE ((uintptr_t)0x380000000ull)
#define POOL_SIZE ((uintptr_t)1 << 40)
/* Where reservations go by default when their hint is taken or absent: a
 * fixed window far from where the kernel places mappings, so a child
 * process finds the same addresses free whatever its address-space
 * layout. */
#define WINDOW_BASE ((uintptr_t)0x300000000000ull)
static int g_vmm = 1;
static int g_param_info = 1;
static int g_cc = 90; /* compute capability as major * 10 + minor */
static unsigned g_copy_delay_us;
static unsigned g_kernel_delay_us;
static unsigned g_launch_return_delay_us;
/* Static shared memory of the functions of modules loaded from now on
 * (atomic; REPRISE_SIM_CUDA_STATIC_SHARED). */
static unsigned g_static_shared;

/* ------------------------------------------------------- fault injection */

/* Simulator only: makes the call named `call` fail with `code` once, after
 * `skip` calls of it succeed (one injection at a time; a new one replaces
 * the last). Every driver function but cuGetErrorName/String checks it
 * first, before any effect. */
static pthread_mutex_t g_inject_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_inject_call[64];
static CUresult g_inject_code;
static int g_inject_skip;
static int g_inject_times;

/* Simulator only: as reprise_sim_fail, but the `times` calls after the
 * skipped ones all fail. */
EXPORT void reprise_sim_fail_times(const char *call, int code, int skip,
                                   int times) {
  pthread_mutex_lock(&g_inject_lock);
  snprintf(g_inject_call, sizeof g_inject_call, "%s", call ? call : "");
  g_inject_code = code;
  g_inject_skip = skip;
  g_inject_times = times;
  pthread_mutex_unlock(&g_inject_lock);
}

EXPORT void reprise_sim_fail(const char *call, int code, int skip) {
  reprise_sim_fail_times(call, code, skip, 1);
}

static CUresult injected(const char *call) {
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&g_inject_lock);
  if (g_inject_call[0] && strcmp(call, g_inject_call) == 0) {
    if (g_inject_skip > 0) {
      g_inject_skip--;
    } else {
      r = g_inject_code;
      if (--g_inject_times <= 0)
        g_inject_call[0] = 0;
    }
  }
  pthread_mutex_unlock(&g_inject_lock);
  return r;
}

#define INJECT()                                                               \
  do {                                                                         \
    CUresult injected_ = injected(__func__);                                   \
    if (injected_)                                                             \
      return injected_;                                                        \
  } while (0)

/* ---------------------------------------------------------------- errors */

struct error_text {
  CUresult code;
  const char *name;
  const char *text;
};

static const struct error_text ERRORS[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
     "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
     "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
     "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE",
     "device kernel image is invalid (the simulated driver runs only "
     "reprise's fixture kernels)"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX",
     "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT",
     "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE",
     "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
     "the operation cannot be performed in the present state"},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
     "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
     "too many blocks in cooperative launch"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
     "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
     "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
     "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
     "dependency created on uncaptured work in another stream"},
    {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
     "operation would make the legacy stream depend on a capturing blocking "
     "stream"},
    {CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
     "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
     "attempt to terminate a thread-local capture sequence from another "
     "thread"},
};

static const struct error_text *find_error(CUresult code) {
  for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++)
    if (ERRORS[i].code == code)
      return &ERRORS[i];
  return NULL;
}

EXPORT CUresult cuGetErrorName(CUresult code, const char **out) {
  const struct error_text *e = find_error(code);
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  *out = e ? e->name : NULL;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult code, const char **out) {
  const struct error_text *e = find_error(code);
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  *out = e ? e->text : NULL;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* --------------------------------------------------------------- context */

struct sim_ctx {
  pthread_mutex_t lock;
  pthread_cond_t idle;
  int retains;
  CUresult sticky; /* a fault spoils the context, as on a device */
  int busy;        /* operations queued on any stream, not yet finished */
};

static struct sim_ctx g_ctx = {PTHREAD_MUTEX_INITIALIZER,
                               PTHREAD_COND_INITIALIZER, 0, CUDA_SUCCESS, 0};
static __thread CUcontext t_current;
/* Each stream worker's random delays (see reprise_sim_set_copy_delay_us). */
static __thread unsigned t_seed;

static CUresult sticky(void) {
  pthread_mutex_lock(&g_ctx.lock);
  CUresult r = g_ctx.sticky;
  pthread_mutex_unlock(&g_ctx.lock);
  return r;
}

/* Checks a call may use the context: initialised, current, not faulted. */
static CUresult usable(void) {
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (t_current != &g_ctx)
    return CUDA_ERROR_INVALID_CONTEXT;
  return sticky();
}

/* Stream capture (see "stream capture, graphs" below): whether the calling
 * thread may make a potentially unsafe call now, and whether anything may
 * synchronise the whole context; each invalidates the captures that forbid
 * it and returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. */
static CUresult unsafe_call(void);
static CUresult context_sync_gate(void);

static pthread_once_t g_env_once = PTHREAD_ONCE_INIT;

static void read_env(void) {
  const char *d = getenv("REPRISE_SIM_CUDA_DEVICES");
  g_devices = d ? atoi(d) : 1;
  const char *h = getenv("REPRISE_SIM_CUDA_HINTS");
  g_ignore_hints = h && strcmp(h, "ignore") == 0;
  g_pool = h && strcmp(h, "pool") == 0;
  const char *v = getenv("REPRISE_SIM_CUDA_VMM");
  g_vmm = !(v && strcmp(v, "0") == 0);
  const char *pi = getenv("REPRISE_SIM_CUDA_PARAM_INFO");
  g_param_info = !(pi && strcmp(pi, "0") == 0);
  const char *cc = getenv("REPRISE_SIM_CUDA_CC");
  if (cc && atoi(cc) > 0)
    g_cc = atoi(cc);
  const char *c = getenv("REPRISE_SIM_CUDA_COPY_DELAY_US");
  if (c)
    __atomic_store_n(&g_copy_delay_us, (unsigned)atoi(c), __ATOMIC_RELAXED);
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

/* Every device shares the one simulated context. */
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= g_devices)
    return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&g_ctx.lock);
  g_ctx.retains++;
  pthread_mutex_unlock(&g_ctx.lock);
  *ctx = &g_ctx;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  INJECT();
  if (dev < 0 || dev >= g_devices)
    return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&g_ctx.lock);
  CUresult r = g_ctx.retains > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
  if (g_ctx.retains > 0 && --g_ctx.retains == 0)
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
  if (ctx && ctx != &g_ctx)
    return CUDA_ERROR_INVALID_CONTEXT;
  t_current = ctx;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (t_current != &g_ctx)
    return CUDA_ERROR_INVALID_CONTEXT;
  /* Never while a stream captures: it would wait for work that is not
   * queued. */
  CUresult r = context_sync_gate();
  if (r)
    return r;
  pthread_mutex_lock(&g_ctx.lock);
  while (g_ctx.busy > 0)
    pthread_cond_wait(&g_ctx.idle, &g_ctx.lock);
  r = g_ctx.sticky;
  pthread_mutex_unlock(&g_ctx.lock);
  return r;
}

/* ---------------------------------------------------------------- memory */

/* Address ranges the simulator tracks: reservations, mappings made
 * accessible, and module globals. Kernels and copies may touch only
 * accessible ones. */
struct range {
  uintptr_t base;
  size_t size;
};

static pthread_mutex_t g_mem = PTHREAD_MUTEX_INITIALIZER;
static struct range g_reserved[MAX_RANGES];
static int g_nreserved;
static struct range g_access[MAX_RANGES];
static int g_naccess;
/* Ranges mapped by cuMemMap (accessible or not yet). */
static struct range g_mapped[MAX_RANGES];
static int g_nmapped;

static int add_range(struct range *set, int *n, uintptr_t base, size_t size) {
  if (*n == MAX_RANGES)
    return 0;
  set[(*n)++] = (struct range){base, size};
  return 1;
}

static int remove_range(struct range *set, int *n, uintptr_t base,
                        size_t size) {
  for (int i = 0; i < *n; i++)
    if (set[i].base == base && set[i].size == size) {
      set[i] = set[--*n];
      return 1;
    }
  return 0;
}

static int inside(const struct range *set, int n, uintptr_t base,
                  size_t size) {
  for (int i = 0; i < n; i++)
    if (base >= set[i].base && size <= set[i].size &&
        base - set[i].base <= set[i].size - size)
      return 1;
  return 0;
}

static int overlaps(const struct range *set, int n, uintptr_t base,
                    size_t size) {
  for (int i = 0; i < n; i++)
    if (base < set[i].base + set[i].size && set[i].base < base + size)
      return 1;
  return 0;
}

static void check_unused(const char *call, uintptr_t base, size_t size,
                         int host);

static int accessible(uintptr_t base, size_t size) {
  pthread_mutex_lock(&g_mem);
  int ok = size == 0 || inside(g_access, g_naccess, base, size);
  pthread_mutex_unlock(&g_mem);
  return ok;
}

EXPORT CUresult cuMemGetAllocationGranularity(size_t *gran, const void *prop,
                                              int option) {
  INJECT();
  (void)option;
  if (!gran || !prop)
    return CUDA_ERROR_INVALID_VALUE;
  *gran = GRANULARITY;
  return CUDA_SUCCESS;
}

/* Maps PROT_NONE at exactly `at`, or returns NULL. */
static void *reserve_at(uintptr_t at, size_t size) {
  void *p = mmap((void *)at, size, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
                     MAP_FIXED_NOREPLACE,
                 -1, 0);
  if (p == (void *)at)
    return p;
  if (p != MAP_FAILED)
    munmap(p, size); /* a kernel without MAP_FIXED_NOREPLACE moved it */
  return NULL;
}

/* The lowest free, `align`-aligned range of the POOL_SIZE bytes from
 * `pool` (g_mem held). */
static void *reserve_in_pool(uintptr_t pool, size_t size, size_t align) {
  if (align < GRANULARITY)
    align = GRANULARITY;
  uintptr_t at = (pool + align - 1) & ~(uintptr_t)(align - 1);
  while (at + size <= pool + POOL_SIZE) {
    void *p = NULL;
    if (!overlaps(g_reserved, g_nreserved, at, size))
      p = reserve_at(at, size);
    if (p)
      return p;
    at = (at + align) & ~(uintptr_t)(align - 1);
  }
  return NULL;
}

static void *reserve_anywhere(size_t size, size_t align) {
  if (align < GRANULARITY)
    align = GRANULARITY;
  /* A driver that ignores hints places reservations by rules of its own,
     which here differ from process to process (a slot derived from the
     PID), so that no new process gets a recorded address back by chance:
     mmap's randomisation alone gives two processes the same 2 GiB-aligned
     slot about once in 500. */
  uintptr_t slot = 0x500000000000ull + ((uintptr_t)getpid() % 4096) * 0x100000000ull;
  slot = (slot + align - 1) & ~(uintptr_t)(align - 1);
  void *at = mmap((void *)slot, size, PROT_NONE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
                  -1, 0);
  if (at == (void *)slot)
    return at;
  if (at != MAP_FAILED)
    munmap(at, size);
  size_t span = size + align;
  char *p = mmap(NULL, span, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return NULL;
  uintptr_t start = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
  size_t head = start - (uintptr_t)p;
  if (head)
    munmap(p, head);
  size_t tail = span - head - size;
  if (tail)
    munmap((char *)start + size, tail);
  return (void *)start;
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size,
                                    size_t align, CUdeviceptr addr,
                                    unsigned long long flags) {
  INJECT();
  CUresult r = usable();
  /* A device without virtual memory management refuses it, as the
   * driver does. */
  if (!r && !g_vmm)
    r = CUDA_ERROR_NOT_SUPPORTED;
  if (r)
    return r;
  if (!ptr || size == 0 || size % GRANULARITY || flags ||
      (align & (align - 1)) || addr % GRANULARITY)
    return CUDA_ERROR_INVALID_VALUE;
  void *got = NULL;
  pthread_mutex_lock(&g_mem);
  int in_pool = addr >= POOL_BASE && addr - POOL_BASE < POOL_SIZE &&
                size <= POOL_BASE + POOL_SIZE - addr;
  if (addr && !g_ignore_hints && (!g_pool || in_pool) &&
      !overlaps(g_reserved, g_nreserved, addr, size))
    got = reserve_at(addr, size);
  if (!got)
    got = g_pool           ? reserve_in_pool(POOL_BASE, size, align)
          : g_ignore_hints ? reserve_anywhere(size, align)
                           : reserve_in_pool(WINDOW_BASE, size, align);
  int ok = got && add_range(g_reserved, &g_nreserved, (uintptr_t)got, size);
  pthread_mutex_unlock(&g_mem);
  if (!got)
    return CUDA_ERROR_OUT_OF_MEMORY;
  if (!ok) {
    munmap(got, size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *ptr = (CUdeviceptr)(uintptr_t)got;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&g_mem);
  int mapped = overlaps(g_access, g_naccess, ptr, size) ||
               overlaps(g_mapped, g_nmapped, ptr, size);
  int ok = !mapped && remove_range(g_reserved, &g_nreserved, ptr, size);
  pthread_mutex_unlock(&g_mem);
  if (!ok)
    return CUDA_ERROR_INVALID_VALUE;
  munmap((void *)(uintptr_t)ptr, size);
  return CUDA_SUCCESS;
}

/* A physical allocation: a memfd of its size. */
static int g_nphysical;
static size_t g_physical_bytes;
struct allocation {
  int fd;
  size_t size;
};

/* Bytes of cuMemAlloc'd memory live (for cuMemGetInfo and cuMemCreate's
 * limit). */
static size_t g_alloc_bytes;

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                            const void *prop, unsigned long long flags) {
  INJECT();
  CUresult r = usable();
  /* A device without virtual memory management refuses it, as the
   * driver does. */
  if (!r && !g_vmm)
    r = CUDA_ERROR_NOT_SUPPORTED;
  if (r)
    return r;
  if (!handle || !prop || size == 0 || size % GRANULARITY || flags)
    return CUDA_ERROR_INVALID_VALUE;
  /* Physical memory is the device's: no more than it has, with what
   * cuMemAlloc holds. */
  size_t used = __atomic_load_n(&g_alloc_bytes, __ATOMIC_RELAXED) +
                __atomic_load_n(&g_physical_bytes, __ATOMIC_RELAXED);
  if (size > TOTAL_MEMORY || used > TOTAL_MEMORY - size)
    return CUDA_ERROR_OUT_OF_MEMORY;
  struct allocation *a = malloc(sizeof *a);
  if (!a)
    return CUDA_ERROR_OUT_OF_MEMORY;
  a->fd = memfd_create("reprise-sim-cuda", MFD_CLOEXEC);
  if (a->fd < 0 || ftruncate(a->fd, (off_t)size) != 0) {
    if (a->fd >= 0)
      close(a->fd);
    free(a);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->size = size;
  __atomic_add_fetch(&g_nphysical, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&g_physical_bytes, size, __ATOMIC_RELAXED);
  *handle = (CUmemGenericAllocationHandle)(uintptr_t)a;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  INJECT();
  struct allocation *a = (struct allocation *)(uintptr_t)handle;
  if (!a)
    return CUDA_ERROR_INVALID_VALUE;
  close(a->fd); /* mappings keep the memory alive until unmapped */
  __atomic_sub_fetch(&g_physical_bytes, a->size, __ATOMIC_RELAXED);
  free(a);
  __atomic_sub_fetch(&g_nphysical, 1, __ATOMIC_RELAXED);
  return CUDA_SUCCESS;
}


EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                         CUmemGenericAllocationHandle handle,
                         unsigned long long flags) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  struct allocation *a = (struct allocation *)(uintptr_t)handle;
  if (!a || flags || size == 0 || offset > a->size ||
      size > a->size - offset)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mem);
  int ok = inside(g_reserved, g_nreserved, ptr, size) &&
           !overlaps(g_mapped, g_nmapped, ptr, size);
  if (ok) {
    void *p = mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
                   MAP_SHARED | MAP_FIXED, a->fd, (off_t)offset);
    ok = p == (void *)(uintptr_t)ptr &&
         add_range(g_mapped, &g_nmapped, ptr, size);
  }
  pthread_mutex_unlock(&g_mem);
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const void *desc,
                               size_t count) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!desc || count == 0)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mem);
  int ok = inside(g_mapped, g_nmapped, ptr, size) &&
           mprotect((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE) ==
               0 &&
           (inside(g_access, g_naccess, ptr, size) ||
            add_range(g_access, &g_naccess, ptr, size));
  pthread_mutex_unlock(&g_mem);
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  check_unused("cuMemUnmap", ptr, size, 0);
  pthread_mutex_lock(&g_mem);
  int ok = remove_range(g_mapped, &g_nmapped, ptr, size);
  if (ok) {
    remove_range(g_access, &g_naccess, ptr, size);
    /* Back to a bare reservation. */
    mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  }
  pthread_mutex_unlock(&g_mem);
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* cuMemHostAlloc'd ranges. */
static struct range g_host[MAX_RANGES];
static int g_nhost;

/* cuMemAlloc'd ranges (also in g_access while allocated). */
static struct range g_allocs[MAX_RANGES];
static int g_nallocs;

/* cuMemFreeAsync'd ranges the stream has not reached yet (still in
 * g_allocs). */
static struct range g_freeing[MAX_RANGES];
static int g_nfreeing;
static CUresult alloc_device(CUdeviceptr *out, size_t size) {
  if (!out || size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_mem);
  int ok = add_range(g_allocs, &g_nallocs, (uintptr_t)p, size);
  if (ok && !add_range(g_access, &g_naccess, (uintptr_t)p, size)) {
    remove_range(g_allocs, &g_nallocs, (uintptr_t)p, size);
    ok = 0;
  }
  pthread_mutex_unlock(&g_mem);
  if (!ok) {
    munmap(p, size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  __atomic_add_fetch(&g_alloc_bytes, size, __ATOMIC_RELAXED);
  *out = (CUdeviceptr)(uintptr_t)p;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *out, size_t size) {
  INJECT();
  CUresult r = usable();
  if (!r)
    r = unsafe_call();
  if (r)
    return r;
  return alloc_device(out, size);
}

/* Pitched memory: `height` rows of the width rounded up to
 * PITCH_ALIGNMENT, for reads and writes of 4, 8 or 16 bytes (what
 * ElementSizeBytes may be). An ordinary allocation otherwise (cuMemFree
 * frees it). */
EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *out, size_t *pitch,
                                   size_t width, size_t height,
                                   unsigned element_size) {
  INJECT();
  CUresult r = usable();
  if (!r)
    r = unsafe_call();
  if (r)
    return r;
  if (!out || !pitch || !width || !height ||
      (element_size != 4 && element_size != 8 && element_size != 16) ||
      width > SIZE_MAX - (PITCH_ALIGNMENT - 1))
    return CUDA_ERROR_INVALID_VALUE;
  size_t p = (width + PITCH_ALIGNMENT - 1) & ~(size_t)(PITCH_ALIGNMENT - 1);
  if (height > SIZE_MAX / p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  r = alloc_device(out, p * height);
  if (!r)
    *pitch = p;
  return r;
}

/* Managed memory: the simulator's device memory is host memory already, so
 * the host reads and writes it directly, as on a device with concurrent
 * managed access; freed by cuMemFree. */
EXPORT CUresult cuMemAllocManaged(CUdeviceptr *out, size_t size,
                                  unsigned flags) {
  INJECT();
  CUresult r = usable();
  if (!r)
    r = unsafe_call();
  if (r)
    return r;
  if (flags != MEM_ATTACH_GLOBAL && flags != MEM_ATTACH_HOST)
    return CUDA_ERROR_INVALID_VALUE;
  return alloc_device(out, size);
}

/* The size of the allocation at `ptr` (0 when there is none, or when
 * cuMemFreeAsync already freed it unless `freeing` says that is fine). */
static size_t allocation_at(CUdeviceptr ptr, int freeing) {
  pthread_mutex_lock(&g_mem);
  size_t size = 0;
  for (int i = 0; i < g_nallocs; i++)
    if (g_allocs[i].base == ptr)
      size = g_allocs[i].size;
  if (size && !freeing && inside(g_freeing, g_nfreeing, ptr, size))
    size = 0;
  pthread_mutex_unlock(&g_mem);
  return size;
}

/* Frees the allocation at `ptr`; `call` names the caller in an abort. */
static CUresult free_device(const char *call, CUdeviceptr ptr, int freeing) {
  size_t size = allocation_at(ptr, freeing);
  if (size)
    check_unused(call, ptr, size, 0);
  pthread_mutex_lock(&g_mem);
  if (size) {
    remove_range(g_allocs, &g_nallocs, ptr, size);
    remove_range(g_access, &g_naccess, ptr, size);
    remove_range(g_freeing, &g_nfreeing, ptr, size);
  }
  pthread_mutex_unlock(&g_mem);
  if (!size)
    return CUDA_ERROR_INVALID_VALUE;
  __atomic_sub_fetch(&g_alloc_bytes, size, __ATOMIC_RELAXED);
  munmap((void *)(uintptr_t)ptr, size);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr ptr) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = unsafe_call();
  if (r)
    return r;
  return free_device("cuMemFree", ptr, 0);
}

EXPORT CUresult cuMemHostAlloc(void **pp, size_t size, unsigned flags) {
  INJECT();
  (void)flags;
  CUresult r = usable();
  if (!r)
    r = unsafe_call();
  if (r)
    return r;
  if (!pp || size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  void *p = NULL;
  if (posix_memalign(&p, 4096, size) != 0)
    return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_mem);
  int ok = add_range(g_host, &g_nhost, (uintptr_t)p, size);
  pthread_mutex_unlock(&g_mem);
  if (!ok) {
    free(p);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *pp = p;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeHost(void *p) {
  INJECT();
  CUresult r = unsafe_call();
  if (r)
    return r;
  size_t size = 0;
  pthread_mutex_lock(&g_mem);
  for (int i = 0; i < g_nhost; i++)
    if (g_host[i].base == (uintptr_t)p)
      size = g_host[i].size;
  pthread_mutex_unlock(&g_mem);
  if (!size)
    return CUDA_ERROR_INVALID_VALUE;
  check_unused("cuMemFreeHost", (uintptr_t)p, size, 1);
  pthread_mutex_lock(&g_mem);
  remove_range(g_host, &g_nhost, (uintptr_t)p, size);
  pthread_mutex_unlock(&g_mem);
  free(p);
  return CUDA_SUCCESS;
}

/* ------------------------------------------------------- modules, kernels */

struct launch;
/* One thread of a launch, and the phase of the kernel it runs: phase p is
 * the code after the p-th __syncthreads(). */
struct thread_index {
  unsigned tid[3], bid[3], bdim[3], gdim[3];
  unsigned phase;
};
typedef void (*kernel_fn)(struct launch *, const struct thread_index *);

struct param {
  size_t offset, size;
};

struct global_def {
  const char *name;
  size_t size;
  const void *init;
};

struct kernel_def {
  const char *name;
  int nparams;
  struct param params[4];
  kernel_fn run;
  int nglobals;
  struct global_def globals[2];
  /* Stretches of code between barriers (0 counts as 1): every thread of a
   * block finishes one before any starts the next. */
  unsigned phases;
};

struct sim_function {
  const struct kernel_def *def;
  struct sim_module *module;
  /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (atomic). */
  unsigned max_dynamic_shared;
  /* CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: fixed when the module loads. */
  unsigned static_shared;
  /* CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: the product of the PTX's
   * `.maxntid` for the kernel (OpenMP kernels say 128 unless a thread_limit
   * says otherwise), else the device's limit. */
  unsigned max_threads;
};

struct sim_module {
  int nkernels;
  struct sim_function functions[4];
  int nglobals;
  struct {
    const char *name;
    unsigned char *data;
    size_t size;
  } globals[8];
};

struct launch {
  const struct kernel_def *def;
  struct sim_module *module;
  unsigned grid[3], block[3];
  unsigned char params[MAX_PARAM_BYTES];
  int fault;
  /* Dynamic shared memory: its size, and the running block's copy. */
  unsigned shared;
  unsigned char *smem;
  /* How long it waits before it runs: the kernel delay when launched. */
  unsigned delay_us;
  /* The running block's partial sum (omp_sum keeps it in static shared
   * memory): undefined at the start of every block. */
  double acc;
};

/* A checked view of `len` bytes of device memory at `addr`, or NULL (and a
 * fault) when the kernel may not touch them. */
static void *dev(struct launch *l, uint64_t addr, size_t len) {
  if (!accessible((uintptr_t)addr, len)) {
    l->fault = 1;
    return NULL;
  }
  return (void *)(uintptr_t)addr;
}

/* A checked view of `len` bytes at `offset` of the block's dynamic shared
 * memory, or NULL (and a fault) beyond the launch's size. */
static void *smem(struct launch *l, uint64_t offset, size_t len) {
  if (offset > l->shared || len > l->shared - offset) {
    l->fault = 1;
    return NULL;
  }
  return l->smem + offset;
}

static void *global(struct launch *l, const char *name, size_t len) {
  for (int i = 0; i < l->module->nglobals; i++)
    if (strcmp(l->module->globals[i].name, name) == 0)
      return dev(l, (uintptr_t)l->module->globals[i].data, len);
  l->fault = 1;
  return NULL;
}

#define PARAM(l, i, type)                                                      \
  ({                                                                           \
    type v_;                                                                   \
    memcpy(&v_, (l)->params + (l)->def->params[i].offset, sizeof v_);          \
    v_;                                                                        \
  })

/* saxpy.cu: y[i] = a * x[i] + y[i] + bias; thread 0 counts the launch. */
static void k_saxpy(struct launch *l, const struct thread_index *t) {
  float a = PARAM(l, 0, float);
  uint64_t x = PARAM(l, 1, uint64_t), y = PARAM(l, 2, uint64_t);
  int n = PARAM(l, 3, int);
  int i = (int)(t->bid[0] * t->bdim[0] + t->tid[0]);
  if (i == 0) {
    unsigned *launches = global(l, "launches", 4);
    if (!launches)
      return;
    ++*launches;
  }
  if (i < n) {
    float *px = dev(l, x + 4 * (uint64_t)i, 4);
    float *py = dev(l, y + 4 * (uint64_t)i, 4);
    float *bias = global(l, "bias", 4);
    if (px && py && bias)
      *py = a * *px + *py + *bias;
  }
}

/* mixed.cu: out[i] = i*k + s + p.a + p.b + p.c + p.d + table[i % 16]. */
static void k_mixed(struct launch *l, const struct thread_index *t) {
  int k = PARAM(l, 0, int);
  float s = PARAM(l, 1, float);
  struct {
    float a, b, c;
    int d;
  } p = PARAM(l, 2, typeof(p));
  uint64_t out = PARAM(l, 3, uint64_t);
  int i = (int)(t->bid[0] * t->bdim[0] + t->tid[0]);
  int *table = global(l, "table", 64);
  float *o = dev(l, out + 4 * (uint64_t)i, 4);
  if (table && o)
    *o = (float)(i * k) + s + p.a + p.b + p.c + (float)p.d +
         (float)table[i % 16];
}

/* grid2d.cu: out[y * w + x] = x * scale[0] + y * scale[1]. */
static void k_grid2d(struct launch *l, const struct thread_index *t) {
  uint64_t out = PARAM(l, 0, uint64_t);
  unsigned w = PARAM(l, 1, unsigned), h = PARAM(l, 2, unsigned);
  unsigned x = t->bid[0] * t->bdim[0] + t->tid[0];
  unsigned y = t->bid[1] * t->bdim[1] + t->tid[1];
  if (x < w && y < h) {
    unsigned *scale = global(l, "scale", 8);
    unsigned *o = dev(l, out + 4 * ((uint64_t)y * w + x), 4);
    if (scale && o)
      *o = x * scale[0] + y * scale[1];
  }
}

/* shared_reverse.cu: each block reverses its slice of data (per_block
 * words, fewer in the last) through dynamic shared memory, with threads and
 * blocks numbered x-fastest over 3-D blocks and grids. Phase 0 loads the
 * tile, phase 1 (after __syncthreads) writes it back mirrored. */
static void k_shared_reverse(struct launch *l, const struct thread_index *t) {
  uint64_t data = PARAM(l, 0, uint64_t);
  unsigned per_block = PARAM(l, 1, unsigned), n = PARAM(l, 2, unsigned);
  unsigned threads = t->bdim[0] * t->bdim[1] * t->bdim[2];
  unsigned tid = (t->tid[2] * t->bdim[1] + t->tid[1]) * t->bdim[0] + t->tid[0];
  unsigned b = (t->bid[2] * t->gdim[1] + t->bid[1]) * t->gdim[0] + t->bid[0];
  unsigned base = b * per_block;
  unsigned len = base < n ? n - base : 0;
  if (len > per_block)
    len = per_block;
  for (unsigned i = tid; i < len; i += threads) {
    unsigned *d = dev(l, data + 4 * ((uint64_t)base + i), 4);
    unsigned *tile = smem(l, 4 * (uint64_t)(t->phase ? len - 1 - i : i), 4);
    if (!d || !tile)
      return;
    if (t->phase == 0)
      *tile = *d;
    else
      *d = *tile;
  }
}

/* omp_saxpy.c (clang-19's OpenMP code, SPMD): parameters dyn_ptr, n, x, y,
 * 8 bytes each. Team b takes the chunks of 128 iterations at b*128,
 * (b + teams)*128, ...; its threads take every blockDim-th iteration of a
 * chunk. dyn_ptr is never read: the region has no reductions. */
static void k_omp_saxpy(struct launch *l, const struct thread_index *t) {
  int64_t n = PARAM(l, 1, int64_t);
  uint64_t x = PARAM(l, 2, uint64_t), y = PARAM(l, 3, uint64_t);
  for (int64_t c = (int64_t)t->bid[0] * 128; c < n;
       c += (int64_t)t->gdim[0] * 128)
    for (int64_t i = c + t->tid[0]; i < n && i < c + 128; i += t->bdim[0]) {
      float *px = dev(l, x + 4 * (uint64_t)i, 4);
      float *py = dev(l, y + 4 * (uint64_t)i, 4);
      if (!px || !py)
        return;
      *py = 2.0f * *px + *py;
    }
}

/* omp_sum.c: *sum += x[0] + ... + x[n-1] (parameters dyn_ptr, n, sum, x).
 * Phase 0: each thread adds its iterations (chunked as omp_saxpy) to the
 * block's partial sum. Phase 1, thread 0, as the device runtime's
 * __kmpc_nvptx_teams_reduce_nowait_v2 does: the kernel launch environment
 * at dyn_ptr is {u32 ReductionCnt, u32 ReductionIterCnt, void
 * *ReductionBuffer}; the team stores its partial in buffer slot team % 1024
 * (adding to it from team 1024 on), counts itself (atomic increment
 * wrapping after 1023; the team that wraps it adds 1024 to
 * ReductionIterCnt), and the team that counts itself last adds the slots
 * of the first min(teams, 1024) teams to *sum and zeroes both counters.
 * The environment must be in device memory: a dyn_ptr of ~0 or anywhere
 * else unmapped faults, as on a device. */
static void k_omp_sum(struct launch *l, const struct thread_index *t) {
  uint64_t env = PARAM(l, 0, uint64_t);
  int64_t n = PARAM(l, 1, int64_t);
  uint64_t sum = PARAM(l, 2, uint64_t), x = PARAM(l, 3, uint64_t);
  int first = !t->tid[0] && !t->tid[1] && !t->tid[2];
  if (t->phase == 0) {
    if (first)
      l->acc = 0;
    for (int64_t c = (int64_t)t->bid[0] * 128; c < n;
         c += (int64_t)t->gdim[0] * 128)
      for (int64_t i = c + t->tid[0]; i < n && i < c + 128;
           i += t->bdim[0]) {
        double *px = dev(l, x + 8 * (uint64_t)i, 8);
        if (!px)
          return;
        l->acc += *px;
      }
    return;
  }
  if (!first)
    return;
  struct {
    uint32_t cnt, iter;
    uint64_t buffer;
  } *kle = dev(l, env, 16);
  if (!kle)
    return;
  unsigned team = t->bid[0], teams = t->gdim[0];
  uint32_t bound = kle->iter;
  double *slot = dev(l, kle->buffer + 8 * (uint64_t)(team % 1024), 8);
  if (!slot)
    return;
  *slot = team < 1024 ? l->acc : *slot + l->acc;
  uint32_t counted = kle->cnt;
  kle->cnt = counted >= 1023 ? 0 : counted + 1;
  if (counted != teams - bound - 1) {
    if (counted == 1023)
      kle->iter += 1024;
    return;
  }
  unsigned slots = teams < 1024 ? teams : 1024;
  double total = 0;
  for (unsigned i = 0; i < slots; i++) {
    double *p = dev(l, kle->buffer + 8 * (uint64_t)i, 8);
    if (!p)
      return;
    total += *p;
  }
  double *psum = dev(l, sum, 8);
  if (!psum)
    return;
  kle->cnt = kle->iter = 0;
  *psum += total;
}

static const float BIAS_INIT = 0.5f;
static const unsigned SCALE_INIT[2] = {1000, 1};

static const struct kernel_def KERNELS[] = {
    {"saxpy",
     4,
     {{0, 4}, {8, 8}, {16, 8}, {24, 4}},
     k_saxpy,
     2,
     {{"bias", 4, &BIAS_INIT}, {"launches", 4, NULL}},
     1},
    {"mixed",
     4,
     {{0, 4}, {4, 4}, {8, 16}, {24, 8}},
     k_mixed,
     1,
     {{"table", 64, NULL}},
     1},
    {"grid2d",
     3,
     {{0, 8}, {8, 4}, {12, 4}},
     k_grid2d,
     1,
     {{"scale", 8, SCALE_INIT}},
     1},
    {"shared_reverse",
     3,
     {{0, 8}, {8, 4}, {12, 4}},
     k_shared_reverse,
     0,
     {{0}},
     2},
    {"__omp_offloading_fe00_1_omp_saxpy_l6",
     4,
     {{0, 8}, {8, 8}, {16, 8}, {24, 8}},
     k_omp_saxpy,
     0,
     {{0}},
     1},
    {"__omp_offloading_fe00_1_omp_sum_l8",
     4,
     {{0, 8}, {8, 8}, {16, 8}, {24, 8}},
     k_omp_sum,
     0,
     {{0}},
     2},
};

/* The length of a binary image, from its own header; 0 when unknown. */
static size_t image_len(const unsigned char *p) {
  if (memcmp(p, "\x7f" "ELF", 4) == 0 && p[4] == 2) {
    uint64_t shoff;
    uint16_t shentsize, shnum;
    memcpy(&shoff, p + 0x28, 8);
    memcpy(&shentsize, p + 0x3a, 2);
    memcpy(&shnum, p + 0x3c, 2);
    return (size_t)(shoff + (uint64_t)shentsize * shnum);
  }
  uint32_t magic;
  memcpy(&magic, p, 4);
  if (magic == 0xBA55ED50u) {
    uint16_t header;
    uint64_t body;
    memcpy(&header, p + 6, 2);
    memcpy(&body, p + 8, 8);
    return header + (size_t)body;
  }
  return 0;
}

/* Whether the image defines kernel `name`: `.entry name` in PTX, the name as
 * a whole string in a binary's string tables. */
static int defines(const unsigned char *image, size_t len, int ptx,
                   const char *name) {
  char pat[128];
  size_t n;
  if (ptx) {
    n = (size_t)snprintf(pat, sizeof pat, ".entry %s(", name);
  } else {
    pat[0] = 0;
    memcpy(pat + 1, name, strlen(name) + 1);
    n = strlen(name) + 2;
  }
  return memmem(image, len, pat, n) != NULL;
}

/* The most threads per block the PTX allows kernel `name`: the product of
 * its `.maxntid` (between the parameter list and the body), else the
 * device's limit; for binaries, the device's limit. */
static unsigned max_threads_of(const unsigned char *image, size_t len,
                               int ptx, const char *name) {
  if (!ptx)
    return MAX_THREADS_PER_BLOCK;
  char pat[96];
  size_t n = (size_t)snprintf(pat, sizeof pat, ".entry %s(", name);
  const char *at = memmem(image, len, pat, n);
  if (!at)
    return MAX_THREADS_PER_BLOCK;
  const char *end = (const char *)image + len;
  const char *body = memchr(at, '{', (size_t)(end - at));
  const char *m = memmem(at, (size_t)((body ? body : end) - at), ".maxntid", 8);
  if (!m)
    return MAX_THREADS_PER_BLOCK;
  unsigned long long threads = 1;
  const char *p = m + 8;
  for (int d = 0; d < 3; d++) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
      p++;
    if (p >= end || *p < '0' || *p > '9')
      break;
    threads *= strtoull(p, (char **)&p, 10);
  }
  return threads && threads < MAX_THREADS_PER_BLOCK ? (unsigned)threads
                                                    : MAX_THREADS_PER_BLOCK;
}

/* Whether the PTX declares a function it does not define, other than the
 * ones the driver's compiler provides: loading it fails, as it does on a
 * driver (cuModuleLoadData links nothing; OpenMP device code must be linked
 * with the device runtime first). */
static int unresolved_extern(const unsigned char *image, size_t len) {
  static const char *const PROVIDED[] = {"vprintf", "malloc", "free",
                                         "__assertfail"};
  const char *p = (const char *)image, *end = p + len;
  while ((p = memmem(p, (size_t)(end - p), ".extern .func", 13))) {
    p += 13;
    /* The name: the identifier before the parameter list's '(' that
     * follows any return value's. */
    const char *q = p;
    while (q < end && (*q == ' ' || *q == '\t'))
      q++;
    if (q < end && *q == '(') {
      const char *close = memchr(q, ')', (size_t)(end - q));
      if (!close)
        return 1;
      q = close + 1;
    }
    while (q < end && (*q == ' ' || *q == '\t'))
      q++;
    const char *name = q;
    while (q < end && (isalnum((unsigned char)*q) || *q == '_' || *q == '$'))
      q++;
    size_t n = (size_t)(q - name);
    int provided = 0;
    for (size_t i = 0; i < sizeof PROVIDED / sizeof PROVIDED[0]; i++)
      if (strlen(PROVIDED[i]) == n && memcmp(PROVIDED[i], name, n) == 0)
        provided = 1;
    if (!provided)
      return 1;
  }
  return 0;
}

static int g_nmodules;
/* Every module global's range (for cuMemGetAddressRange). */
static struct range g_globals[MAX_RANGES];
static int g_nglobals;

static void free_module(struct sim_module *m) {
  pthread_mutex_lock(&g_mem);
  for (int i = 0; i < m->nglobals; i++) {
    remove_range(g_access, &g_naccess, (uintptr_t)m->globals[i].data,
                 m->globals[i].size);
    remove_range(g_globals, &g_nglobals, (uintptr_t)m->globals[i].data,
                 m->globals[i].size);
  }
  pthread_mutex_unlock(&g_mem);
  for (int i = 0; i < m->nglobals; i++)
    free(m->globals[i].data);
  free(m);
}

/* Whether the device can run the image: PTX for its SM or an older one, a
 * cubin for its major version and an older or equal minor one, a fat binary
 * with either. */
static CUresult image_fits(const unsigned char *p, size_t len, int ptx) {
  if (ptx) {
    const char *t = memmem(p, len, ".target sm_", 11);
    return t && atoi(t + 11) > g_cc ? CUDA_ERROR_INVALID_PTX : CUDA_SUCCESS;
  }
  if (memcmp(p, "\x7f" "ELF", 4) == 0) {
    uint32_t flags;
    memcpy(&flags, p + 0x30, 4);
    int sm = (p[8] >= 8 || flags >> 24) ? (flags >> 8) & 0xff : flags & 0xff;
    return sm / 10 == g_cc / 10 && sm <= g_cc ? CUDA_SUCCESS
                                              : CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  /* A fat binary: any PTX entry for an older SM, or a cubin that fits. */
  size_t off = 16;
  while (off + 32 <= len) {
    uint16_t kind;
    uint32_t hsize, arch;
    uint64_t size;
    memcpy(&kind, p + off, 2);
    memcpy(&hsize, p + off + 4, 4);
    memcpy(&size, p + off + 8, 8);
    memcpy(&arch, p + off + 28, 4);
    if ((kind == 1 && (int)arch <= g_cc) ||
        (kind == 2 && (int)arch / 10 == g_cc / 10 && (int)arch <= g_cc))
      return CUDA_SUCCESS;
    if (hsize < 32 || size > len)
      break;
    off += hsize + size;
  }
  return CUDA_ERROR_NO_BINARY_FOR_GPU;
}

/* Loads an image: PTX, a cubin, a fat binary, or a fat binary wrapped as
 * CUDA's runtime registers it (__fatBinC_Wrapper_t: magic 0x466243b1,
 * version, then the fat binary's address at offset 8). */
static CUresult load_module(CUmodule *out, const void *image) {
  CUresult r;
  if (!out || !image)
    return CUDA_ERROR_INVALID_VALUE;
  uint32_t wrapper;
  memcpy(&wrapper, image, 4);
  if (wrapper == 0x466243b1u) {
    memcpy(&image, (const unsigned char *)image + 8, sizeof image);
    if (!image)
      return CUDA_ERROR_INVALID_IMAGE;
  }
  const unsigned char *p = image;
  size_t len = image_len(p);
  int ptx = len == 0;
  if (ptx)
    len = strlen(image);
  r = image_fits(p, len, ptx);
  if (r)
    return r;
  if (ptx && unresolved_extern(p, len))
    return CUDA_ERROR_INVALID_PTX;
  unsigned static_shared =
      __atomic_load_n(&g_static_shared, __ATOMIC_RELAXED);
  if (static_shared > SHARED_DEFAULT)
    return CUDA_ERROR_INVALID_IMAGE; /* no compiler makes such a kernel */
  struct sim_module *m = calloc(1, sizeof *m);
  if (!m)
    return CUDA_ERROR_OUT_OF_MEMORY;
  for (size_t k = 0; k < sizeof KERNELS / sizeof KERNELS[0]; k++) {
    const struct kernel_def *def = &KERNELS[k];
    if (!defines(p, len, ptx, def->name))
      continue;
    /* By default a function may have 48 KiB of shared memory in all. */
    m->functions[m->nkernels++] = (struct sim_function){
        def, m, SHARED_DEFAULT - static_shared, static_shared,
        max_threads_of(p, len, ptx, def->name)};
    for (int g = 0; g < def->nglobals; g++) {
      const struct global_def *gd = &def->globals[g];
      unsigned char *data = calloc(1, gd->size);
      if (!data) {
        free_module(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
      if (gd->init)
        memcpy(data, gd->init, gd->size);
      m->globals[m->nglobals].name = gd->name;
      m->globals[m->nglobals].data = data;
      m->globals[m->nglobals].size = gd->size;
      m->nglobals++;
      pthread_mutex_lock(&g_mem);
      add_range(g_access, &g_naccess, (uintptr_t)data, gd->size);
      add_range(g_globals, &g_nglobals, (uintptr_t)data, gd->size);
      pthread_mutex_unlock(&g_mem);
    }
  }
  if (m->nkernels == 0) {
    free(m);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  __atomic_add_fetch(&g_nmodules, 1, __ATOMIC_RELAXED);
  *out = m;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleLoadData(CUmodule *out, const void *image) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  return load_module(out, image);
}

/* JIT options change nothing the simulator does. */
EXPORT CUresult cuModuleLoadDataEx(CUmodule *out, const void *image,
                                   unsigned nopts, int *opts, void **values) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (nopts && (!opts || !values))
    return CUDA_ERROR_INVALID_VALUE;
  return load_module(out, image);
}

EXPORT CUresult cuModuleLoadFatBinary(CUmodule *out, const void *image) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  return load_module(out, image);
}

/* Makes the kernels of `m` in graphs, graph executables and captures
 * dead, as the module goes (see cuGraphLaunch). */
static void forget_module(CUmodule m);

static void unload_module(const char *call, CUmodule m) {
  check_unused(call, (uintptr_t)m, 0, 2);
  /* Nor may a queued copy still read or write one of its globals. */
  for (int i = 0; i < m->nglobals; i++)
    check_unused(call, (uintptr_t)m->globals[i].data, m->globals[i].size, 0);
  forget_module(m);
  __atomic_sub_fetch(&g_nmodules, 1, __ATOMIC_RELAXED);
  free_module(m);
}

EXPORT CUresult cuModuleUnload(CUmodule m) {
  INJECT();
  if (!m)
    return CUDA_ERROR_INVALID_HANDLE;
  unload_module("cuModuleUnload", m);
  return CUDA_SUCCESS;
}

/* ------------------------------------------------ libraries (CUDA 12) */

/* A library wraps one module; its kernels are handles of their own, each
 * standing for one of the module's functions. */
struct sim_kernel {
  struct sim_library *library;
  struct sim_function *function;
};

struct sim_library {
  CUmodule module;
  struct sim_kernel kernels[4];
  struct sim_library *next; /* in g_libraries */
};

static pthread_mutex_t g_libraries_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_library *g_libraries;

/* Whether `lib` is a live library (g_libraries_lock held). */
static int library_live(const struct sim_library *lib) {
  for (struct sim_library *l = g_libraries; l; l = l->next)
    if (l == lib)
      return 1;
  return 0;
}

/* The library kernel at `p`, or NULL when `p` is none. */
static struct sim_kernel *kernel_at(const void *p) {
  struct sim_kernel *k = NULL;
  pthread_mutex_lock(&g_libraries_lock);
  for (struct sim_library *l = g_libraries; l && !k; l = l->next)
    for (int i = 0; i < l->module->nkernels; i++)
      if ((const void *)&l->kernels[i] == p)
        k = &l->kernels[i];
  pthread_mutex_unlock(&g_libraries_lock);
  return k;
}

/* The function a handle names: a CUfunction, or a CUkernel passed as one
 * (which the driver accepts wherever a CUfunction goes). */
static CUfunction fn_of(CUfunction f) {
  struct sim_kernel *k = f ? kernel_at(f) : NULL;
  return k ? k->function : f;
}

EXPORT CUresult cuLibraryLoadData(CUlibrary *out, const void *code,
                                  int *jit_opts, void **jit_values,
                                  unsigned njit, int *lib_opts,
                                  void **lib_values, unsigned nlib) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = sticky();
  if (r)
    return r;
  if (!out || (njit && (!jit_opts || !jit_values)) ||
      (nlib && (!lib_opts || !lib_values)))
    return CUDA_ERROR_INVALID_VALUE;
  struct sim_library *lib = calloc(1, sizeof *lib);
  if (!lib)
    return CUDA_ERROR_OUT_OF_MEMORY;
  r = load_module(&lib->module, code);
  if (r) {
    free(lib);
    return r;
  }
  for (int i = 0; i < lib->module->nkernels; i++)
    lib->kernels[i] = (struct sim_kernel){lib, &lib->module->functions[i]};
  pthread_mutex_lock(&g_libraries_lock);
  lib->next = g_libraries;
  g_libraries = lib;
  pthread_mutex_unlock(&g_libraries_lock);
  *out = lib;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryUnload(CUlibrary lib) {
  INJECT();
  pthread_mutex_lock(&g_libraries_lock);
  int live = lib && library_live(lib);
  pthread_mutex_unlock(&g_libraries_lock);
  if (!live)
    return CUDA_ERROR_INVALID_HANDLE;
  unload_module("cuLibraryUnload", lib->module);
  pthread_mutex_lock(&g_libraries_lock);
  for (struct sim_library **p = &g_libraries; *p; p = &(*p)->next)
    if (*p == lib) {
      *p = lib->next;
      break;
    }
  pthread_mutex_unlock(&g_libraries_lock);
  free(lib);
  return CUDA_SUCCESS;
}

/* The live library `lib` (checked), or NULL. */
static struct sim_library *library_of(CUlibrary lib) {
  pthread_mutex_lock(&g_libraries_lock);
  int live = lib && library_live(lib);
  pthread_mutex_unlock(&g_libraries_lock);
  return live ? lib : NULL;
}

EXPORT CUresult cuLibraryGetKernel(CUkernel *out, CUlibrary lib,
                                   const char *name) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!library_of(lib))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!out || !name)
    return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < lib->module->nkernels; i++)
    if (strcmp(lib->module->functions[i].def->name, name) == 0) {
      *out = &lib->kernels[i];
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuLibraryGetKernelCount(unsigned *count, CUlibrary lib) {
  INJECT();
  if (!library_of(lib))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  *count = (unsigned)lib->module->nkernels;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned n,
                                          CUlibrary lib) {
  INJECT();
  if (!library_of(lib))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!kernels || n != (unsigned)lib->module->nkernels)
    return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; i++)
    kernels[i] = &lib->kernels[i];
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryGetModule(CUmodule *out, CUlibrary lib) {
  INJECT();
  if (!library_of(lib))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  *out = lib->module;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *addr, size_t *size,
                                   CUlibrary lib, const char *name) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!library_of(lib))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  CUmodule m = lib->module;
  for (int i = 0; i < m->nglobals; i++)
    if (strcmp(m->globals[i].name, name) == 0) {
      if (addr)
        *addr = (CUdeviceptr)(uintptr_t)m->globals[i].data;
      if (size)
        *size = m->globals[i].size;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuKernelGetFunction(CUfunction *out, CUkernel kernel) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  struct sim_kernel *k = kernel ? kernel_at(kernel) : NULL;
  if (!k)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  *out = k->function;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuKernelGetName(const char **name, CUkernel kernel) {
  INJECT();
  struct sim_kernel *k = kernel ? kernel_at(kernel) : NULL;
  if (!k)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  *name = k->function->def->name;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetName(const char **name, CUfunction f) {
  INJECT();
  f = fn_of(f);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  *name = f->def->name;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetModule(CUmodule *out, CUfunction f) {
  INJECT();
  f = fn_of(f);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  *out = f->module;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *out, CUmodule m,
                                    const char *name) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!out || !m || !name)
    return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < m->nkernels; i++)
    if (strcmp(m->functions[i].def->name, name) == 0) {
      *out = &m->functions[i];
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *addr, size_t *size,
                                     CUmodule m, const char *name) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!m || !name)
    return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < m->nglobals; i++)
    if (strcmp(m->globals[i].name, name) == 0) {
      if (addr)
        *addr = (CUdeviceptr)(uintptr_t)m->globals[i].data;
      if (size)
        *size = m->globals[i].size;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuFuncSetAttribute(CUfunction f, int attr, int value) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  f = fn_of(f);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  if (attr != FUNC_ATTR_MAX_DYNAMIC_SHARED)
    return CUDA_ERROR_NOT_SUPPORTED; /* not simulated */
  /* Static and dynamic shared memory together within the opt-in limit. */
  if (value < 0 || (unsigned)value > SHARED_OPTIN - f->static_shared)
    return CUDA_ERROR_INVALID_VALUE;
  __atomic_store_n(&f->max_dynamic_shared, (unsigned)value, __ATOMIC_RELAXED);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetAttribute(int *value, int attr, CUfunction f) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  f = fn_of(f);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!value)
    return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
  case FUNC_ATTR_MAX_THREADS_PER_BLOCK:
    *value = (int)f->max_threads;
    return CUDA_SUCCESS;
  case FUNC_ATTR_SHARED_SIZE:
    *value = (int)f->static_shared;
    return CUDA_SUCCESS;
  case FUNC_ATTR_MAX_DYNAMIC_SHARED:
    *value = (int)__atomic_load_n(&f->max_dynamic_shared, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_NOT_SUPPORTED; /* not simulated */
  }
}

#ifndef SIM_NO_PARAM_INFO
EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset,
                                   size_t *size) {
  INJECT();
  if (!g_param_info)
    return CUDA_ERROR_NOT_SUPPORTED;
  f = fn_of(f);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  if (index >= (size_t)f->def->nparams)
    return CUDA_ERROR_INVALID_VALUE;
  if (offset)
    *offset = f->def->params[index].offset;
  if (size)
    *size = f->def->params[index].size;
  return CUDA_SUCCESS;
}
#endif

/* ------------------------------------------------------ streams, events */

struct sim_event {
  unsigned long recorded; /* recordings enqueued */
  unsigned long reached;  /* the last recording its stream reached */
  struct timespec at;
};

enum op_kind {
  OP_HTOD,
  OP_DTOH,
  OP_DTOD,
  OP_KERNEL,
  OP_EVENT,
  OP_WAIT,
  OP_CALLBACK,
  OP_HOSTFN,
  OP_FREE /* cuMemFreeAsync: u.copy.dst */
};

struct op {
  enum op_kind kind;
  struct op *next;
  union {
    struct {
      uintptr_t dst, src;
      size_t len;
    } copy;
    struct launch launch;
    struct {
      CUevent event;
      unsigned long generation;
      int owned; /* an OP_WAIT frees the simulator's own event */
    } event;
    struct {
      CUstreamCallback fn;
      void *data;
    } callback;
    struct {
      CUhostFn fn;
      void *data;
    } hostfn;
  } u;
};

struct sim_stream {
  pthread_mutex_t lock;
  pthread_cond_t work, idle;
  struct op *head, *tail;
  struct op *running;
  int pending; /* queued or running */
  int stop;
  unsigned flags; /* cuStreamCreate's (CU_STREAM_NON_BLOCKING) */
  pthread_t worker;
  struct sim_stream *next; /* in g_streams */
};

/* Every live stream, to check frees against queued work. */
static pthread_mutex_t g_streams_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_stream *g_streams;

/* ------------------------------------------------ stream capture, graphs */

/* CUstreamCaptureMode and CUstreamCaptureStatus. */
#define CAPTURE_MODE_GLOBAL 0
#define CAPTURE_MODE_THREAD_LOCAL 1
#define CAPTURE_MODE_RELAXED 2
#define CAPTURE_NONE 0
#define CAPTURE_ACTIVE 1
#define CAPTURE_INVALIDATED 2
/* CUgraphInstantiate_flags cuGraphInstantiateWithFlags takes. */
#define GRAPH_AUTO_FREE_ON_LAUNCH 0x1
#define GRAPH_DEVICE_LAUNCH 0x4
#define GRAPH_USE_NODE_PRIORITY 0x8

/* A graph: the operations a capture took, in capture order, as a chain of
 * queue entries of its own (kernel arguments copied when captured, as the
 * driver copies them); its nodes depend on each other in that order. */
struct sim_graph {
  struct op *head, *tail;
  struct sim_graph *next; /* in g_graphs */
};

/* An instantiated graph: a copy of the graph's chain, which cuGraphLaunch
 * copies onto a stream. */
struct sim_graph_exec {
  struct op *head;
  CUstream last; /* the stream its last launch went to, or NULL */
  struct sim_graph_exec *next; /* in g_execs */
};

/* A capture under way: on a stream of the program's, or (stream NULL) on
 * the per-thread default stream of the thread that began it. */
struct capture {
  CUstream stream;
  pthread_t thread; /* the thread that began it */
  int mode;         /* CUstreamCaptureMode */
  int status;       /* CAPTURE_ACTIVE or CAPTURE_INVALIDATED */
  struct sim_graph graph;
  struct capture *next; /* in g_captures */
};

/* Guards captures, graphs and graph executables. */
static pthread_mutex_t g_graph_lock = PTHREAD_MUTEX_INITIALIZER;
static struct capture *g_captures;
static struct sim_graph *g_graphs;
static struct sim_graph_exec *g_execs;
/* The calling thread's capture interaction mode
 * (cuThreadExchangeStreamCaptureMode; CAPTURE_MODE_GLOBAL to start). */
static __thread int t_capture_mode;

static void free_ops(struct op *op) {
  while (op) {
    struct op *next = op->next;
    free(op);
    op = next;
  }
}

/* Whether the handle names the legacy default stream. */
static int is_legacy(CUstream h, int per_thread) {
  return h == STREAM_LEGACY || (!h && !per_thread);
}

/* The capture under way on the stream the handle names, or NULL (never
 * one of the legacy stream, which cannot capture). g_graph_lock held. */
static struct capture *capture_on(CUstream h, int per_thread) {
  if (is_legacy(h, per_thread))
    return NULL;
  int ptds = !h || h == STREAM_PER_THREAD;
  for (struct capture *c = g_captures; c; c = c->next)
    if (ptds ? !c->stream && pthread_equal(c->thread, pthread_self())
             : c->stream == h)
      return c;
  return NULL;
}

/* How many captures work on the legacy stream would depend on: those of
 * blocking streams (a per-thread default stream is one); with
 * `invalidate`, invalidates them. g_graph_lock held. */
static int legacy_conflicts(int invalidate) {
  int n = 0;
  for (struct capture *c = g_captures; c; c = c->next)
    if (!c->stream || !(c->stream->flags & STREAM_NON_BLOCKING)) {
      if (invalidate)
        c->status = CAPTURE_INVALIDATED;
      n++;
    }
  return n;
}

/* A potentially unsafe call (one that may synchronise implicitly: the
 * synchronous copies, cuMemAlloc and cuMemFree, cuMemHostAlloc and
 * cuMemFreeHost) is forbidden, as the driver forbids it, to a thread in
 * CU_STREAM_CAPTURE_MODE_GLOBAL when it began a capture not in
 * CU_STREAM_CAPTURE_MODE_RELAXED or another thread began one in
 * CU_STREAM_CAPTURE_MODE_GLOBAL; to one in THREAD_LOCAL only in the first
 * case; never to one in RELAXED. Those captures are invalidated. */
static CUresult unsafe_call(void) {
  int mode = t_capture_mode;
  if (mode == CAPTURE_MODE_RELAXED)
    return CUDA_SUCCESS;
  int n = 0;
  pthread_mutex_lock(&g_graph_lock);
  for (struct capture *c = g_captures; c; c = c->next) {
    int mine = pthread_equal(c->thread, pthread_self());
    if (mine ? c->mode != CAPTURE_MODE_RELAXED
             : mode == CAPTURE_MODE_GLOBAL && c->mode == CAPTURE_MODE_GLOBAL) {
      c->status = CAPTURE_INVALIDATED;
      n++;
    }
  }
  pthread_mutex_unlock(&g_graph_lock);
  return n ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

/* cuCtxSynchronize: never while any stream captures (every capture is
 * invalidated). */
static CUresult context_sync_gate(void) {
  int n = 0;
  pthread_mutex_lock(&g_graph_lock);
  for (struct capture *c = g_captures; c; c = c->next, n++)
    c->status = CAPTURE_INVALIDATED;
  pthread_mutex_unlock(&g_graph_lock);
  return n ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

/* Synchronising or querying a stream (or a synchronous copy on it): never
 * while it captures, nor the legacy stream while it would wait for a
 * capturing blocking stream; the capture is invalidated. */
static CUresult sync_gate(CUstream h, int per_thread) {
  int n = 0;
  pthread_mutex_lock(&g_graph_lock);
  struct capture *c = capture_on(h, per_thread);
  if (c) {
    c->status = CAPTURE_INVALIDATED;
    n = 1;
  } else if (is_legacy(h, per_thread)) {
    n = legacy_conflicts(1);
  }
  pthread_mutex_unlock(&g_graph_lock);
  return n ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

/* Takes `op`, meant for a capturing stream, into its capture: copies,
 * kernels and host functions join the graph; a wait for an event (never
 * one recorded in a capture: see below) would depend on uncaptured work
 * and a stream callback cannot be captured, so either invalidates the
 * capture; event records and stream-ordered frees in a capture are not
 * simulated (CUDA_ERROR_NOT_SUPPORTED). On an invalidated capture,
 * nothing. Frees `op` unless it joins the graph. g_graph_lock held. */
static CUresult capture_op(struct capture *c, struct op *op) {
  CUresult r;
  if (c->status == CAPTURE_INVALIDATED) {
    r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  } else {
    switch (op->kind) {
    case OP_HTOD:
    case OP_DTOH:
    case OP_DTOD:
    case OP_KERNEL:
    case OP_HOSTFN:
      op->next = NULL;
      if (c->graph.tail)
        c->graph.tail->next = op;
      else
        c->graph.head = op;
      c->graph.tail = op;
      return CUDA_SUCCESS;
    case OP_WAIT:
      c->status = CAPTURE_INVALIDATED;
      r = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
      break;
    case OP_CALLBACK:
      c->status = CAPTURE_INVALIDATED;
      r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
      break;
    default:
      r = CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  free(op);
  return r;
}

/* Whether `op` uses [base, base + size) of host (or device) memory; with
 * host == 2, whether it is a launch of a kernel of module `base`. */
static int op_uses(const struct op *op, uintptr_t base, size_t size,
                   int host) {
  if (host == 2)
    return op->kind == OP_KERNEL && (uintptr_t)op->u.launch.module == base;
  if (op->kind != OP_HTOD && op->kind != OP_DTOH && op->kind != OP_DTOD)
    return 0;
  struct range r = {base, size};
  uintptr_t src = op->u.copy.src, dst = op->u.copy.dst;
  size_t len = op->u.copy.len;
  int src_host = op->kind == OP_HTOD, dst_host = op->kind == OP_DTOH;
  return (src_host == host && overlaps(&r, 1, src, len)) ||
         (dst_host == host && overlaps(&r, 1, dst, len));
}

/* Aborts when a queued or running copy still uses [base, base + size) of
 * host (or device) memory that `call` is about to free. */
static void check_unused(const char *call, uintptr_t base, size_t size,
                         int host) {
  pthread_mutex_lock(&g_streams_lock);
  for (struct sim_stream *s = g_streams; s; s = s->next) {
    pthread_mutex_lock(&s->lock);
    int used = s->running && op_uses(s->running, base, size, host);
    for (struct op *op = s->head; op && !used; op = op->next)
      used = op_uses(op, base, size, host);
    pthread_mutex_unlock(&s->lock);
    if (used) {
      if (host == 2)
        fprintf(stderr,
                "simulated CUDA driver: %s(%#lx) while a kernel of that "
                "module is queued or running\n",
                call, (unsigned long)base);
      else
        fprintf(stderr,
                "simulated CUDA driver: %s(%#lx, %zu bytes) while a queued "
                "copy still uses that memory\n",
                call, (unsigned long)base, size);
      abort();
    }
  }
  pthread_mutex_unlock(&g_streams_lock);
}

static pthread_mutex_t g_events = PTHREAD_MUTEX_INITIALIZER;
static int g_nevents;
static pthread_cond_t g_reached = PTHREAD_COND_INITIALIZER;

/* Simulator only: a status the next stream callback is given instead of
 * the context's (see reprise_sim_set_callback_status). */
static CUresult g_callback_status;

/* Simulator only: hands the next stream callback `code` as its status,
 * without spoiling the context, as a driver reporting a failure only to
 * the callback would. */
EXPORT void reprise_sim_set_callback_status(int code) {
  __atomic_store_n(&g_callback_status, code, __ATOMIC_RELAXED);
}

static void fault(void) {
  pthread_mutex_lock(&g_ctx.lock);
  if (!g_ctx.sticky)
    g_ctx.sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
  pthread_mutex_unlock(&g_ctx.lock);
}

/* Runs one block: every thread through phase 0, then every thread
 * through phase 1, and so on, so a barrier between phases holds. */
static void run_block(struct launch *l, struct thread_index *t) {
  unsigned phases = l->def->phases ? l->def->phases : 1;
  for (t->phase = 0; t->phase < phases; t->phase++)
    for (t->tid[2] = 0; t->tid[2] < l->block[2]; t->tid[2]++)
      for (t->tid[1] = 0; t->tid[1] < l->block[1]; t->tid[1]++)
        for (t->tid[0] = 0; t->tid[0] < l->block[0]; t->tid[0]++) {
          l->def->run(l, t);
          if (l->fault)
            return;
        }
}

static void run_kernel(struct launch *l) {
  struct thread_index t;
  memcpy(t.gdim, l->grid, sizeof t.gdim);
  memcpy(t.bdim, l->block, sizeof t.bdim);
  l->smem = NULL;
  if (l->shared && !(l->smem = malloc(l->shared))) {
    fprintf(stderr, "simulated CUDA driver: no memory for %u bytes of shared "
                    "memory\n", l->shared);
    abort();
  }
  for (t.bid[2] = 0; t.bid[2] < l->grid[2] && !l->fault; t.bid[2]++)
    for (t.bid[1] = 0; t.bid[1] < l->grid[1] && !l->fault; t.bid[1]++)
      for (t.bid[0] = 0; t.bid[0] < l->grid[0] && !l->fault; t.bid[0]++) {
        /* Shared memory starts undefined in every block. */
        if (l->smem)
          memset(l->smem, 0xa5, l->shared);
        run_block(l, &t);
      }
  free(l->smem);
  l->smem = NULL;
  if (l->fault)
    fault();
}

static void run_op(CUstream s, struct op *op) {
  int faulted = sticky() != CUDA_SUCCESS;
  switch (op->kind) {
  case OP_HTOD:
  case OP_DTOH:
  case OP_DTOD: {
    if (faulted)
      break;
    int src_ok = op->kind == OP_HTOD ||
                 accessible(op->u.copy.src, op->u.copy.len);
    int dst_ok = op->kind == OP_DTOH ||
                 accessible(op->u.copy.dst, op->u.copy.len);
    if (!src_ok || !dst_ok) {
      fault();
      break;
    }
    unsigned delay = __atomic_load_n(&g_copy_delay_us, __ATOMIC_RELAXED);
    if (delay && op->kind != OP_HTOD)
      usleep(rand_r(&t_seed) % (delay + 1));
    memcpy((void *)op->u.copy.dst, (const void *)op->u.copy.src,
           op->u.copy.len);
    break;
  }
  case OP_KERNEL: {
    if (op->u.launch.delay_us)
      usleep(op->u.launch.delay_us);
    if (!faulted)
      run_kernel(&op->u.launch);
    break;
  }
  case OP_EVENT:
    pthread_mutex_lock(&g_events);
    clock_gettime(CLOCK_MONOTONIC, &op->u.event.event->at);
    if (op->u.event.event->reached < op->u.event.generation)
      op->u.event.event->reached = op->u.event.generation;
    pthread_cond_broadcast(&g_reached);
    pthread_mutex_unlock(&g_events);
    break;
  case OP_WAIT:
    pthread_mutex_lock(&g_events);
    while (op->u.event.event->reached < op->u.event.generation)
      pthread_cond_wait(&g_reached, &g_events);
    pthread_mutex_unlock(&g_events);
    if (op->u.event.owned)
      free(op->u.event.event);
    break;
  case OP_FREE:
    free_device("cuMemFreeAsync", (CUdeviceptr)op->u.copy.dst, 1);
    break;
  case OP_CALLBACK: {
    /* Stream callbacks run after a fault too, and are told of it. */
    CUresult status = __atomic_exchange_n(&g_callback_status, CUDA_SUCCESS,
                                          __ATOMIC_RELAXED);
    op->u.callback.fn(s, status ? status : sticky(), op->u.callback.data);
    break;
  }
  case OP_HOSTFN:
    /* Host functions do not run once the context has faulted. */
    if (!faulted)
      op->u.hostfn.fn(op->u.hostfn.data);
    break;
  }
}

static void *worker(void *arg) {
  CUstream s = arg;
  t_current = &g_ctx;
  /* A new sequence for every worker: streams made one after the other
   * often get the same address, so that cannot be the seed. */
  static unsigned workers;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  t_seed = (unsigned)now.tv_nsec ^
           (__atomic_add_fetch(&workers, 1, __ATOMIC_RELAXED) * 0x9e3779b9u);
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (!s->head && !s->stop)
      pthread_cond_wait(&s->work, &s->lock);
    if (!s->head)
      break;
    struct op *op = s->head;
    s->head = op->next;
    if (!s->head)
      s->tail = NULL;
    s->running = op;
    pthread_mutex_unlock(&s->lock);
    run_op(s, op);
    pthread_mutex_lock(&s->lock);
    s->running = NULL;
    free(op);
    s->pending--;
    if (s->pending == 0)
      pthread_cond_broadcast(&s->idle);
    pthread_mutex_lock(&g_ctx.lock);
    if (--g_ctx.busy == 0)
      pthread_cond_broadcast(&g_ctx.idle);
    pthread_mutex_unlock(&g_ctx.lock);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/* Queues `op` on stream `s` as it is. */
static void enqueue_raw(CUstream s, struct op *op) {
  op->next = NULL;
  pthread_mutex_lock(&s->lock);
  if (s->tail)
    s->tail->next = op;
  else
    s->head = op;
  s->tail = op;
  s->pending++;
  pthread_mutex_lock(&g_ctx.lock);
  g_ctx.busy++;
  pthread_mutex_unlock(&g_ctx.lock);
  pthread_cond_signal(&s->work);
  pthread_mutex_unlock(&s->lock);
}

static struct op *new_op(enum op_kind kind) {
  struct op *op = calloc(1, sizeof *op);
  if (op)
    op->kind = kind;
  return op;
}

static CUstream new_stream(unsigned flags) {
  CUstream s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->flags = flags;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->work, NULL);
  pthread_cond_init(&s->idle, NULL);
  if (pthread_create(&s->worker, NULL, worker, s) != 0) {
    free(s);
    return NULL;
  }
  pthread_mutex_lock(&g_streams_lock);
  s->next = g_streams;
  g_streams = s;
  pthread_mutex_unlock(&g_streams_lock);
  return s;
}

/* The default stream (legacy and per-thread alike), made at first use. */
static pthread_mutex_t g_default_lock = PTHREAD_MUTEX_INITIALIZER;
static CUstream g_default;

static CUstream default_stream(void) {
  pthread_mutex_lock(&g_default_lock);
  if (!g_default)
    __atomic_store_n(&g_default, new_stream(0), __ATOMIC_RELEASE);
  CUstream s = g_default;
  pthread_mutex_unlock(&g_default_lock);
  return s;
}

static int is_default_handle(CUstream h) {
  return !h || h == STREAM_LEGACY || h == STREAM_PER_THREAD ||
         h == __atomic_load_n(&g_default, __ATOMIC_ACQUIRE);
}

/* The stream a handle names: 0 the legacy default stream (the per-thread
 * one in a _ptsz/_ptds call), CU_STREAM_LEGACY and CU_STREAM_PER_THREAD
 * those whatever the call; *legacy tells whether the legacy stream's
 * synchronisation with the blocking streams applies. NULL when the
 * default stream cannot be made. */
static CUstream stream_of(CUstream h, int per_thread, int *legacy) {
  if (legacy)
    *legacy = h == STREAM_LEGACY || (!h && !per_thread);
  if (!h || h == STREAM_LEGACY || h == STREAM_PER_THREAD)
    return default_stream();
  return h;
}

static int pending_of(CUstream s) {
  pthread_mutex_lock(&s->lock);
  int n = s->pending;
  pthread_mutex_unlock(&s->lock);
  return n;
}

/* Makes `waiter` wait, in order, for everything queued on `s` so far,
 * through an event of the simulator's own (freed by the wait). */
static int order_after(CUstream waiter, CUstream s) {
  struct sim_event *e = calloc(1, sizeof *e);
  struct op *rec = new_op(OP_EVENT), *wait = new_op(OP_WAIT);
  if (!e || !rec || !wait) {
    free(e);
    free(rec);
    free(wait);
    return 0;
  }
  e->recorded = 1;
  rec->u.event.event = wait->u.event.event = e;
  rec->u.event.generation = wait->u.event.generation = 1;
  wait->u.event.owned = 1;
  enqueue_raw(s, rec);
  enqueue_raw(waiter, wait);
  return 1;
}

/* Queues `op` on the stream handle `h` names (see stream_of), with the
 * legacy default stream's implicit synchronisation: work on it waits for
 * what every blocking stream has queued, and work on a blocking stream
 * waits for what it has queued. */
static CUresult enqueue(CUstream h, struct op *op, int per_thread) {
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  /* A capturing stream takes the work into its graph instead; the legacy
   * stream takes none while it would depend on a capture. */
  CUresult r = CUDA_SUCCESS;
  int captured = 0;
  pthread_mutex_lock(&g_graph_lock);
  if (is_legacy(h, per_thread)) {
    if (legacy_conflicts(1))
      r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  } else {
    struct capture *c = capture_on(h, per_thread);
    if (c) {
      captured = 1;
      r = capture_op(c, op);
    }
  }
  pthread_mutex_unlock(&g_graph_lock);
  if (captured)
    return r;
  if (r) {
    free(op);
    return r;
  }
  int legacy;
  CUstream s = stream_of(h, per_thread, &legacy);
  if (!s) {
    free(op);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  CUstream def = __atomic_load_n(&g_default, __ATOMIC_ACQUIRE);
  int ok = 1;
  if (s == def && legacy) {
    pthread_mutex_lock(&g_streams_lock);
    for (struct sim_stream *t = g_streams; t && ok; t = t->next)
      if (t != s && !(t->flags & STREAM_NON_BLOCKING) && pending_of(t))
        ok = order_after(s, t);
    pthread_mutex_unlock(&g_streams_lock);
  } else if (def && s != def && !(s->flags & STREAM_NON_BLOCKING) &&
             pending_of(def)) {
    ok = order_after(s, def);
  }
  if (!ok) {
    free(op);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  enqueue_raw(s, op);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamCreate(CUstream *out, unsigned flags) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  CUstream s = new_stream(flags);
  if (!s)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *out = s;
  return CUDA_SUCCESS;
}

static void wait_idle(CUstream s) {
  pthread_mutex_lock(&s->lock);
  while (s->pending > 0)
    pthread_cond_wait(&s->idle, &s->lock);
  pthread_mutex_unlock(&s->lock);
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
  INJECT();
  if (is_default_handle(s))
    return CUDA_ERROR_INVALID_HANDLE;
  /* A capture under way on it ends with it. */
  pthread_mutex_lock(&g_graph_lock);
  for (struct capture **p = &g_captures; *p; p = &(*p)->next)
    if ((*p)->stream == s) {
      struct capture *c = *p;
      *p = c->next;
      free_ops(c->graph.head);
      free(c);
      break;
    }
  pthread_mutex_unlock(&g_graph_lock);
  pthread_mutex_lock(&s->lock);
  s->stop = 1; /* the worker finishes what is queued first */
  pthread_cond_signal(&s->work);
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->worker, NULL);
  pthread_mutex_lock(&g_streams_lock);
  for (struct sim_stream **p = &g_streams; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      break;
    }
  pthread_mutex_unlock(&g_streams_lock);
  free(s);
  return CUDA_SUCCESS;
}

static CUresult stream_query(CUstream h, int per_thread) {
  CUresult r = sync_gate(h, per_thread);
  if (r)
    return r;
  CUstream s = stream_of(h, per_thread, NULL);
  if (!s)
    return CUDA_ERROR_OUT_OF_MEMORY;
  r = sticky();
  if (r)
    return r;
  pthread_mutex_lock(&s->lock);
  int busy = s->pending > 0;
  pthread_mutex_unlock(&s->lock);
  return busy ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

EXPORT CUresult cuStreamQuery(CUstream s) {
  INJECT();
  return stream_query(s, 0);
}

EXPORT CUresult cuStreamQuery_ptsz(CUstream s) {
  INJECT();
  return stream_query(s, 1);
}

static CUresult stream_synchronize(CUstream h, int per_thread) {
  CUresult r = sync_gate(h, per_thread);
  if (r)
    return r;
  CUstream s = stream_of(h, per_thread, NULL);
  if (!s)
    return CUDA_ERROR_OUT_OF_MEMORY;
  wait_idle(s);
  return sticky();
}

EXPORT CUresult cuStreamSynchronize(CUstream s) {
  INJECT();
  return stream_synchronize(s, 0);
}

EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s) {
  INJECT();
  return stream_synchronize(s, 1);
}

/* CU_STREAM_CAPTURE_STATUS_NONE, _ACTIVE or _INVALIDATED. Asked of the
 * legacy stream while a blocking stream captures, the driver's
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (which invalidates nothing). */
static CUresult stream_is_capturing(CUstream h, int *status,
                                    int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  if (!status)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_graph_lock);
  struct capture *c = capture_on(h, per_thread);
  if (is_legacy(h, per_thread) && legacy_conflicts(0))
    r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  else
    *status = c ? c->status : CAPTURE_NONE;
  pthread_mutex_unlock(&g_graph_lock);
  return r;
}

EXPORT CUresult cuStreamIsCapturing(CUstream s, int *status) {
  INJECT();
  return stream_is_capturing(s, status, 0);
}

EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream s, int *status) {
  INJECT();
  return stream_is_capturing(s, status, 1);
}

static CUresult copy_async(enum op_kind kind, uintptr_t dst, uintptr_t src,
                           size_t len, CUstream s, int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  if ((kind != OP_HTOD && !accessible(src, len)) ||
      (kind != OP_DTOH && !accessible(dst, len)))
    return CUDA_ERROR_INVALID_VALUE;
  struct op *op = new_op(kind);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.copy.dst = dst;
  op->u.copy.src = src;
  op->u.copy.len = len;
  return enqueue(s, op, per_thread);
}

/* A synchronous copy: on the default stream (the legacy one unless
 * `per_thread`), done before it returns. */
static CUresult copy_sync(enum op_kind kind, uintptr_t dst, uintptr_t src,
                          size_t len, int per_thread) {
  CUresult r = usable();
  if (!r)
    r = unsafe_call();
  if (!r)
    r = sync_gate(NULL, per_thread);
  if (!r)
    r = copy_async(kind, dst, src, len, NULL, per_thread);
  if (r)
    return r;
  CUstream s = stream_of(NULL, per_thread, NULL);
  wait_idle(s);
  return sticky();
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src,
                                     size_t len, CUstream s) {
  INJECT();
  return copy_async(OP_HTOD, (uintptr_t)dst, (uintptr_t)src, len, s, 0);
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t len,
                                     CUstream s) {
  INJECT();
  return copy_async(OP_DTOH, (uintptr_t)dst, (uintptr_t)src, len, s, 0);
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src,
                                     size_t len, CUstream s) {
  INJECT();
  return copy_async(OP_DTOD, (uintptr_t)dst, (uintptr_t)src, len, s, 0);
}

EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src,
                                          size_t len, CUstream s) {
  INJECT();
  return copy_async(OP_HTOD, (uintptr_t)dst, (uintptr_t)src, len, s, 1);
}

EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src,
                                          size_t len, CUstream s) {
  INJECT();
  return copy_async(OP_DTOH, (uintptr_t)dst, (uintptr_t)src, len, s, 1);
}

EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src,
                                          size_t len, CUstream s) {
  INJECT();
  return copy_async(OP_DTOD, (uintptr_t)dst, (uintptr_t)src, len, s, 1);
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src,
                                size_t len) {
  INJECT();
  return copy_sync(OP_HTOD, (uintptr_t)dst, (uintptr_t)src, len, 0);
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t len) {
  INJECT();
  return copy_sync(OP_DTOH, (uintptr_t)dst, (uintptr_t)src, len, 0);
}

EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src,
                                size_t len) {
  INJECT();
  return copy_sync(OP_DTOD, (uintptr_t)dst, (uintptr_t)src, len, 0);
}

EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src,
                                     size_t len) {
  INJECT();
  return copy_sync(OP_HTOD, (uintptr_t)dst, (uintptr_t)src, len, 1);
}

EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src,
                                     size_t len) {
  INJECT();
  return copy_sync(OP_DTOH, (uintptr_t)dst, (uintptr_t)src, len, 1);
}

EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src,
                                     size_t len) {
  INJECT();
  return copy_sync(OP_DTOD, (uintptr_t)dst, (uintptr_t)src, len, 1);
}

/* Whether a cooperative launch's blocks can all be resident at once, as
 * they must: at most MULTIPROCESSORS times the blocks one multiprocessor
 * holds, which its warps (rounded up per block), its block slots and its
 * shared memory (each block's static and dynamic shared memory and the
 * driver's reserve) limit. Registers are not simulated. */
static int cooperative_fits(CUfunction f, const unsigned grid[3],
                            const unsigned block[3], unsigned shared) {
  unsigned long long threads =
      (unsigned long long)block[0] * block[1] * block[2];
  unsigned long long warps = (threads + 31) / 32;
  unsigned long long per_sm = MAX_WARPS_PER_SM / warps;
  if (per_sm > MAX_BLOCKS_PER_SM)
    per_sm = MAX_BLOCKS_PER_SM;
  unsigned long long smem =
      (unsigned long long)f->static_shared + shared + RESERVED_SHARED;
  unsigned long long by_smem = (SHARED_OPTIN + RESERVED_SHARED) / smem;
  if (per_sm > by_smem)
    per_sm = by_smem;
  unsigned long long blocks = (unsigned long long)grid[0] * grid[1] * grid[2];
  return blocks <= per_sm * MULTIPROCESSORS;
}

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                       unsigned bx, unsigned by, unsigned bz,
                       unsigned shared, CUstream s, void **params,
                       void **extra, int per_thread, int cooperative) {
  CUresult r = usable();
  if (r)
    return r;
  f = fn_of(f);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  for (int d = 0; d < 3; d++)
    if (!grid[d] || !block[d] || grid[d] > MAX_GRID[d] ||
        block[d] > MAX_BLOCK[d])
      return CUDA_ERROR_INVALID_VALUE;
  /* No more dynamic shared memory than the function is allowed (48 KiB
   * less its static shared memory, unless cuFuncSetAttribute changed it),
   * and static plus dynamic within the opt-in limit. */
  unsigned max_shared =
      __atomic_load_n(&f->max_dynamic_shared, __ATOMIC_RELAXED);
  if ((unsigned long long)bx * by * bz > f->max_threads ||
      shared > max_shared ||
      (unsigned long long)f->static_shared + shared > SHARED_OPTIN || extra ||
      (f->def->nparams && !params))
    return CUDA_ERROR_INVALID_VALUE;
  if (cooperative && !cooperative_fits(f, grid, block, shared))
    return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  struct op *op = new_op(OP_KERNEL);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  struct launch *l = &op->u.launch;
  l->def = f->def;
  l->module = f->module;
  l->shared = shared;
  l->delay_us = __atomic_load_n(&g_kernel_delay_us, __ATOMIC_RELAXED);
  memcpy(l->grid, grid, sizeof grid);
  memcpy(l->block, block, sizeof block);
  /* The driver copies the arguments at launch. */
  for (int i = 0; i < f->def->nparams; i++)
    memcpy(l->params + f->def->params[i].offset, params[i],
           f->def->params[i].size);
  r = enqueue(s, op, per_thread);
  unsigned delay = __atomic_load_n(&g_launch_return_delay_us, __ATOMIC_RELAXED);
  if (delay)
    usleep(delay);
  return r;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy,
                               unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, CUstream s,
                               void **params, void **extra) {
  INJECT();
  return launch(f, gx, gy, gz, bx, by, bz, shared, s, params, extra, 0, 0);
}

EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                    unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned shared, CUstream s,
                                    void **params, void **extra) {
  INJECT();
  return launch(f, gx, gy, gz, bx, by, bz, shared, s, params, extra, 1, 0);
}

/* A cooperative launch runs as any other (blocks never wait for each
 * other here), but only when all its blocks fit on the device at once. */
EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx,
                                          unsigned gy, unsigned gz,
                                          unsigned bx, unsigned by,
                                          unsigned bz, unsigned shared,
                                          CUstream s, void **params) {
  INJECT();
  return launch(f, gx, gy, gz, bx, by, bz, shared, s, params, NULL, 0, 1);
}

EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx,
                                               unsigned gy, unsigned gz,
                                               unsigned bx, unsigned by,
                                               unsigned bz, unsigned shared,
                                               CUstream s, void **params) {
  INJECT();
  return launch(f, gx, gy, gz, bx, by, bz, shared, s, params, NULL, 1, 1);
}

/* cuLaunchKernelEx: the attributes the simulator takes are ignore,
 * cooperative (as cuLaunchCooperativeKernel when nonzero), a cluster shape
 * that divides the grid, and a priority; any other is
 * CUDA_ERROR_NOT_SUPPORTED. */
static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f,
                          void **params, void **extra, int per_thread) {
  if (!c || (c->numAttrs && !c->attrs))
    return CUDA_ERROR_INVALID_VALUE;
  int cooperative = 0;
  for (unsigned i = 0; i < c->numAttrs; i++) {
    const CUlaunchAttribute *a = &c->attrs[i];
    switch (a->id) {
    case LAUNCH_ATTR_COOPERATIVE:
      cooperative = a->value.cooperative != 0;
      break;
    case LAUNCH_ATTR_IGNORE:
    case LAUNCH_ATTR_PRIORITY:
      break;
    case LAUNCH_ATTR_CLUSTER_DIMENSION: {
      unsigned x = a->value.clusterDim.x, y = a->value.clusterDim.y,
               z = a->value.clusterDim.z;
      if (!x || !y || !z || c->gridDimX % x || c->gridDimY % y ||
          c->gridDimZ % z)
        return CUDA_ERROR_INVALID_VALUE;
      break;
    }
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  return launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
                c->blockDimY, c->blockDimZ, c->sharedMemBytes, c->hStream,
                params, extra, per_thread, cooperative);
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                 void **params, void **extra) {
  INJECT();
  return launch_ex(config, f, params, extra, 0);
}

EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config,
                                      CUfunction f, void **params,
                                      void **extra) {
  INJECT();
  return launch_ex(config, f, params, extra, 1);
}

/* ------------------------------------------- capture and graph calls */

static CUresult begin_capture(CUstream h, int mode, int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  if (mode < CAPTURE_MODE_GLOBAL || mode > CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  /* The legacy stream cannot capture. */
  if (is_legacy(h, per_thread))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  struct capture *c = calloc(1, sizeof *c);
  if (!c)
    return CUDA_ERROR_OUT_OF_MEMORY;
  c->stream = !h || h == STREAM_PER_THREAD ? NULL : h;
  c->thread = pthread_self();
  c->mode = mode;
  c->status = CAPTURE_ACTIVE;
  pthread_mutex_lock(&g_graph_lock);
  if (capture_on(h, per_thread)) {
    r = CUDA_ERROR_ILLEGAL_STATE; /* already capturing */
  } else {
    c->next = g_captures;
    g_captures = c;
  }
  pthread_mutex_unlock(&g_graph_lock);
  if (r)
    free(c);
  return r;
}

/* CUDA 10.1's, with a mode. */
EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, int mode) {
  INJECT();
  return begin_capture(s, mode, 0);
}

EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, int mode) {
  INJECT();
  return begin_capture(s, mode, 1);
}

/* CUDA 10.0's, without one: CU_STREAM_CAPTURE_MODE_GLOBAL. */
EXPORT CUresult cuStreamBeginCapture(CUstream s) {
  INJECT();
  return begin_capture(s, CAPTURE_MODE_GLOBAL, 0);
}

EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s) {
  INJECT();
  return begin_capture(s, CAPTURE_MODE_GLOBAL, 1);
}

/* Ends the capture under way on the stream: its graph, or, when it was
 * invalidated, NULL and CUDA_ERROR_STREAM_CAPTURE_INVALIDATED; either way
 * the stream no longer captures. A capture not begun in
 * CU_STREAM_CAPTURE_MODE_RELAXED ends only in the thread that began it. */
static CUresult end_capture(CUstream h, CUgraph *out, int per_thread) {
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  struct sim_graph *g = calloc(1, sizeof *g);
  if (!g)
    return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&g_graph_lock);
  struct capture *c = capture_on(h, per_thread);
  if (!c) {
    r = CUDA_ERROR_ILLEGAL_STATE; /* not capturing */
  } else if (c->mode != CAPTURE_MODE_RELAXED &&
             !pthread_equal(c->thread, pthread_self())) {
    r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  } else {
    for (struct capture **p = &g_captures; *p; p = &(*p)->next)
      if (*p == c) {
        *p = c->next;
        break;
      }
    if (c->status == CAPTURE_INVALIDATED) {
      r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
      free_ops(c->graph.head);
    } else {
      g->head = c->graph.head;
      g->tail = c->graph.tail;
      g->next = g_graphs;
      g_graphs = g;
    }
    free(c);
    *out = r ? NULL : g;
  }
  pthread_mutex_unlock(&g_graph_lock);
  if (r)
    free(g);
  return r;
}

EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *graph) {
  INJECT();
  return end_capture(s, graph, 0);
}

EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *graph) {
  INJECT();
  return end_capture(s, graph, 1);
}

/* The calling thread's capture interaction mode (see unsafe_call): sets
 * *mode and hands back the one it replaces. */
EXPORT CUresult cuThreadExchangeStreamCaptureMode(int *mode) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!mode || *mode < CAPTURE_MODE_GLOBAL || *mode > CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  int old = t_capture_mode;
  t_capture_mode = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}

/* A copy of the chain at `from`, or NULL with *ok 0 when memory ran out. */
static struct op *copy_ops(const struct op *from, int *ok) {
  struct op *head = NULL, **tail = &head;
  *ok = 1;
  for (; from; from = from->next) {
    struct op *op = malloc(sizeof *op);
    if (!op) {
      free_ops(head);
      *ok = 0;
      return NULL;
    }
    memcpy(op, from, sizeof *op);
    op->next = NULL;
    *tail = op;
    tail = &op->next;
  }
  return head;
}

/* Whether the chain launches a kernel of a module since unloaded. */
static int has_dead_kernel(const struct op *op) {
  for (; op; op = op->next)
    if (op->kind == OP_KERNEL && !op->u.launch.module)
      return 1;
  return 0;
}

static void forget_ops(struct op *op, CUmodule m) {
  for (; op; op = op->next)
    if (op->kind == OP_KERNEL && op->u.launch.module == m)
      op->u.launch.module = NULL;
}

static void forget_module(CUmodule m) {
  pthread_mutex_lock(&g_graph_lock);
  for (struct capture *c = g_captures; c; c = c->next)
    forget_ops(c->graph.head, m);
  for (struct sim_graph *g = g_graphs; g; g = g->next)
    forget_ops(g->head, m);
  for (struct sim_graph_exec *e = g_execs; e; e = e->next)
    forget_ops(e->head, m);
  pthread_mutex_unlock(&g_graph_lock);
}

static int graph_live(CUgraph g) {
  for (struct sim_graph *l = g_graphs; l; l = l->next)
    if (l == g)
      return 1;
  return 0;
}

static int exec_live(CUgraphExec e) {
  for (struct sim_graph_exec *l = g_execs; l; l = l->next)
    if (l == e)
      return 1;
  return 0;
}

/* An executable copy of the graph, independent of it from then on. A
 * graph with a kernel whose module was unloaded is
 * CUDA_ERROR_INVALID_HANDLE; device launch is not simulated. */
EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g,
                                            unsigned long long flags) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!out || (flags & ~(unsigned long long)(GRAPH_AUTO_FREE_ON_LAUNCH |
                                             GRAPH_DEVICE_LAUNCH |
                                             GRAPH_USE_NODE_PRIORITY)))
    return CUDA_ERROR_INVALID_VALUE;
  if (flags & GRAPH_DEVICE_LAUNCH)
    return CUDA_ERROR_NOT_SUPPORTED;
  struct sim_graph_exec *e = calloc(1, sizeof *e);
  if (!e)
    return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_graph_lock);
  if (!g || !graph_live(g)) {
    r = CUDA_ERROR_INVALID_VALUE;
  } else if (has_dead_kernel(g->head)) {
    r = CUDA_ERROR_INVALID_HANDLE;
  } else {
    int ok;
    e->head = copy_ops(g->head, &ok);
    if (ok) {
      e->next = g_execs;
      g_execs = e;
    } else {
      r = CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  pthread_mutex_unlock(&g_graph_lock);
  if (r)
    free(e);
  else
    *out = e;
  return r;
}

/* Queues the graph's operations, in capture order, on the stream (as any
 * work queued there, with the legacy stream's synchronisation), after the
 * previous launch of the same executable wherever that went; on a
 * capturing stream, into its capture. A kernel whose module was unloaded
 * since makes it CUDA_ERROR_INVALID_HANDLE. */
static CUresult graph_launch(CUgraphExec e, CUstream h, int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  struct op *ops = NULL;
  int capturing = 0, ok = 1;
  CUstream last = NULL;
  pthread_mutex_lock(&g_graph_lock);
  if (!e || !exec_live(e)) {
    r = CUDA_ERROR_INVALID_VALUE;
  } else if (has_dead_kernel(e->head)) {
    r = CUDA_ERROR_INVALID_HANDLE;
  } else {
    ops = copy_ops(e->head, &ok);
    if (!ok)
      r = CUDA_ERROR_OUT_OF_MEMORY;
    capturing = capture_on(h, per_thread) != NULL;
    last = e->last;
  }
  pthread_mutex_unlock(&g_graph_lock);
  if (r)
    return r;
  CUstream s = stream_of(h, per_thread, NULL);
  if (!s) {
    free_ops(ops);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (!capturing && last && last != s) {
    /* A destroyed stream finished its work. */
    pthread_mutex_lock(&g_streams_lock);
    for (struct sim_stream *t = g_streams; t && ok; t = t->next)
      if (t == last)
        ok = order_after(s, t);
    pthread_mutex_unlock(&g_streams_lock);
    if (!ok) {
      free_ops(ops);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  while (ops) {
    struct op *next = ops->next;
    r = enqueue(h, ops, per_thread);
    ops = next;
    if (r) {
      free_ops(ops);
      return r;
    }
  }
  if (!capturing) {
    pthread_mutex_lock(&g_graph_lock);
    if (exec_live(e))
      e->last = s;
    pthread_mutex_unlock(&g_graph_lock);
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream s) {
  INJECT();
  return graph_launch(e, s, 0);
}

EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s) {
  INJECT();
  return graph_launch(e, s, 1);
}

/* Launches already queued run to the end, as on the driver. */
EXPORT CUresult cuGraphExecDestroy(CUgraphExec e) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  int found = 0;
  pthread_mutex_lock(&g_graph_lock);
  for (struct sim_graph_exec **p = &g_execs; *p; p = &(*p)->next)
    if (*p == e) {
      *p = e->next;
      found = 1;
      break;
    }
  pthread_mutex_unlock(&g_graph_lock);
  if (!found)
    return CUDA_ERROR_INVALID_VALUE;
  free_ops(e->head);
  free(e);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphDestroy(CUgraph g) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  int found = 0;
  pthread_mutex_lock(&g_graph_lock);
  for (struct sim_graph **p = &g_graphs; *p; p = &(*p)->next)
    if (*p == g) {
      *p = g->next;
      found = 1;
      break;
    }
  pthread_mutex_unlock(&g_graph_lock);
  if (!found)
    return CUDA_ERROR_INVALID_VALUE;
  free_ops(g->head);
  free(g);
  return CUDA_SUCCESS;
}

/* Stream-ordered allocation: the memory is allocated at the call (so it is
 * ready for work the stream runs after it) and freed when the stream
 * reaches the free. Not on the legacy stream while it would depend on a
 * capture (which that invalidates); in a capture (a graph's allocation
 * node) not simulated. */
static CUresult mem_alloc_async(CUdeviceptr *out, size_t size, CUstream h,
                                int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  pthread_mutex_lock(&g_graph_lock);
  if (is_legacy(h, per_thread) ? legacy_conflicts(1) > 0
                               : capture_on(h, per_thread) != NULL)
    r = is_legacy(h, per_thread) ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
                                 : CUDA_ERROR_NOT_SUPPORTED;
  pthread_mutex_unlock(&g_graph_lock);
  if (r)
    return r;
  return alloc_device(out, size);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *out, size_t size, CUstream s) {
  INJECT();
  return mem_alloc_async(out, size, s, 0);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *out, size_t size,
                                     CUstream s) {
  INJECT();
  return mem_alloc_async(out, size, s, 1);
}

static CUresult mem_free_async(CUdeviceptr ptr, CUstream s, int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  pthread_mutex_lock(&g_mem);
  size_t size = 0;
  for (int i = 0; i < g_nallocs; i++)
    if (g_allocs[i].base == ptr)
      size = g_allocs[i].size;
  int ok = size && !inside(g_freeing, g_nfreeing, ptr, size) &&
           add_range(g_freeing, &g_nfreeing, ptr, size);
  pthread_mutex_unlock(&g_mem);
  if (!ok)
    return CUDA_ERROR_INVALID_VALUE;
  struct op *op = new_op(OP_FREE);
  if (op)
    op->u.copy.dst = (uintptr_t)ptr;
  r = enqueue(s, op, per_thread);
  if (r) {
    pthread_mutex_lock(&g_mem);
    remove_range(g_freeing, &g_nfreeing, ptr, size);
    pthread_mutex_unlock(&g_mem);
  }
  return r;
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr ptr, CUstream s) {
  INJECT();
  return mem_free_async(ptr, s, 0);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr ptr, CUstream s) {
  INJECT();
  return mem_free_async(ptr, s, 1);
}

EXPORT CUresult cuEventCreate(CUevent *out, unsigned flags) {
  INJECT();
  (void)flags;
  CUresult r = usable();
  if (r)
    return r;
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  *out = calloc(1, sizeof **out);
  if (!*out)
    return CUDA_ERROR_OUT_OF_MEMORY;
  __atomic_add_fetch(&g_nevents, 1, __ATOMIC_RELAXED);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuEventDestroy_v2(CUevent e) {
  INJECT();
  if (!e)
    return CUDA_ERROR_INVALID_HANDLE;
  /* Like the driver, let a pending recording finish first. */
  pthread_mutex_lock(&g_events);
  while (e->reached < e->recorded)
    pthread_cond_wait(&g_reached, &g_events);
  pthread_mutex_unlock(&g_events);
  free(e);
  __atomic_sub_fetch(&g_nevents, 1, __ATOMIC_RELAXED);
  return CUDA_SUCCESS;
}

static CUresult event_record(CUevent e, CUstream s, int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  if (!e)
    return CUDA_ERROR_INVALID_HANDLE;
  struct op *op = new_op(OP_EVENT);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.event.event = e;
  /* Each recording has its own generation; a wait waits for the latest. */
  pthread_mutex_lock(&g_events);
  op->u.event.generation = ++e->recorded;
  pthread_mutex_unlock(&g_events);
  r = enqueue(s, op, per_thread);
  if (r) {
    /* Never to be reached: take the recording back. */
    pthread_mutex_lock(&g_events);
    e->recorded--;
    pthread_mutex_unlock(&g_events);
  }
  return r;
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
  INJECT();
  return event_record(e, s, 0);
}

EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream s) {
  INJECT();
  return event_record(e, s, 1);
}

static CUresult stream_wait_event(CUstream s, CUevent e, unsigned flags,
                                  int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  if (!e || flags)
    return CUDA_ERROR_INVALID_VALUE;
  struct op *op = new_op(OP_WAIT);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.event.event = e;
  pthread_mutex_lock(&g_events);
  op->u.event.generation = e->recorded; /* its latest recording */
  pthread_mutex_unlock(&g_events);
  return enqueue(s, op, per_thread);
}

EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  INJECT();
  return stream_wait_event(s, e, flags, 0);
}

EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream s, CUevent e,
                                       unsigned flags) {
  INJECT();
  return stream_wait_event(s, e, flags, 1);
}

EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  INJECT();
  if (!ms || !start || !end)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_events);
  CUresult r = CUDA_SUCCESS;
  if (!start->recorded || !end->recorded)
    r = CUDA_ERROR_INVALID_HANDLE;
  else if (start->reached < start->recorded || end->reached < end->recorded)
    r = CUDA_ERROR_NOT_READY;
  else
    *ms = (float)((end->at.tv_sec - start->at.tv_sec) * 1e3 +
                  (end->at.tv_nsec - start->at.tv_nsec) / 1e6);
  pthread_mutex_unlock(&g_events);
  return r;
}

#ifndef SIM_NO_STREAM_CALLBACK
static CUresult stream_add_callback(CUstream s, CUstreamCallback fn,
                                    void *data, unsigned flags,
                                    int per_thread) {
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!fn || flags)
    return CUDA_ERROR_INVALID_VALUE;
  struct op *op = new_op(OP_CALLBACK);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.callback.fn = fn;
  op->u.callback.data = data;
  return enqueue(s, op, per_thread);
}

EXPORT CUresult cuStreamAddCallback(CUstream s, CUstreamCallback fn,
                                    void *data, unsigned flags) {
  INJECT();
  return stream_add_callback(s, fn, data, flags, 0);
}

EXPORT CUresult cuStreamAddCallback_ptsz(CUstream s, CUstreamCallback fn,
                                         void *data, unsigned flags) {
  INJECT();
  return stream_add_callback(s, fn, data, flags, 1);
}
#endif

static CUresult launch_host_func(CUstream s, CUhostFn fn, void *data,
                                 int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  if (!fn)
    return CUDA_ERROR_INVALID_VALUE;
  struct op *op = new_op(OP_HOSTFN);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.hostfn.fn = fn;
  op->u.hostfn.data = data;
  return enqueue(s, op, per_thread);
}

EXPORT CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data) {
  INJECT();
  return launch_host_func(s, fn, data, 0);
}

EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *data) {
  INJECT();
  return launch_host_func(s, fn, data, 1);
}

/* Simulator only: what is live, for tests that check every step of a
 * failed operation was undone: address reservations, cuMemMap mappings,
 * physical allocations, cuMemAlloc allocations, page-locked host
 * allocations, streams, events, modules, and the MiB of physical
 * allocations. */
EXPORT void reprise_sim_counts(int out[9]) {
  pthread_mutex_lock(&g_mem);
  out[0] = g_nreserved;
  out[1] = g_nmapped;
  out[2] = __atomic_load_n(&g_nphysical, __ATOMIC_RELAXED);
  out[3] = g_nallocs;
  out[4] = g_nhost;
  pthread_mutex_unlock(&g_mem);
  int streams = 0;
  pthread_mutex_lock(&g_streams_lock);
  for (struct sim_stream *st = g_streams; st; st = st->next)
    streams += st != g_default; /* the default stream is the driver's */
  pthread_mutex_unlock(&g_streams_lock);
  out[5] = streams;
  out[6] = __atomic_load_n(&g_nevents, __ATOMIC_RELAXED);
  out[7] = __atomic_load_n(&g_nmodules, __ATOMIC_RELAXED);
  out[8] = (int)(__atomic_load_n(&g_physical_bytes, __ATOMIC_RELAXED) >> 20);
}

/* ------------------------------------------ memory figures, driver info */

/* The allocation containing `ptr`: a cuMemAlloc'd (or cuMemAllocAsync'd)
 * one, a module global, or, for virtual memory, the range one cuMemMap
 * mapped (the driver reports the containing VMM allocation). */
EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size,
                                        CUdeviceptr ptr) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  const struct range *sets[] = {g_allocs, g_globals, g_mapped};
  const int *counts[] = {&g_nallocs, &g_nglobals, &g_nmapped};
  struct range found = {0, 0};
  pthread_mutex_lock(&g_mem);
  for (int s = 0; s < 3 && !found.size; s++)
    for (int i = 0; i < *counts[s]; i++)
      if (ptr >= sets[s][i].base && ptr - sets[s][i].base < sets[s][i].size) {
        found = sets[s][i];
        break;
      }
  pthread_mutex_unlock(&g_mem);
  if (!found.size)
    return CUDA_ERROR_NOT_FOUND;
  if (base)
    *base = (CUdeviceptr)found.base;
  if (size)
    *size = found.size;
  return CUDA_SUCCESS;
}

/* Free and total device memory: TOTAL_MEMORY less what cuMemAlloc and
 * cuMemCreate hold. */
EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!free_bytes || !total)
    return CUDA_ERROR_INVALID_VALUE;
  size_t used = __atomic_load_n(&g_alloc_bytes, __ATOMIC_RELAXED) +
                __atomic_load_n(&g_physical_bytes, __ATOMIC_RELAXED);
  *total = TOTAL_MEMORY;
  *free_bytes = used < TOTAL_MEMORY ? TOTAL_MEMORY - used : 0;
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

/* ------------------------------------------------- driver entry points */

/* How cuGetProcAddress resolves a base name, as cuda.h and cudaTypedefs.h
 * version the driver's functions (PFN_<name>_v<version> there): the entry
 * for `name` with the highest `version` at most the one asked for names
 * the export; with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM and a
 * version of at least 7000, an entry with `per_thread` set names its
 * per-thread variant (the export with `_ptsz`, or `_ptds` for synchronous
 * copies, appended). A name with no entry is its own export, from any
 * version, and never has a per-thread variant. A name that has entries
 * but none at most the version asked for is too new for it. */
struct proc_entry {
  const char *name;
  int version;
  const char *symbol;
  char per_thread; /* 0, 'z' (_ptsz) or 'd' (_ptds) */
};

static const struct proc_entry PROCS[] = {
    {"cuGetProcAddress", 11030, "cuGetProcAddress", 0},
    {"cuGetProcAddress", 12000, "cuGetProcAddress_v2", 0},
    {"cuDeviceTotalMem", 3020, "cuDeviceTotalMem_v2", 0},
    {"cuDevicePrimaryCtxRetain", 7000, "cuDevicePrimaryCtxRetain", 0},
    {"cuDevicePrimaryCtxRelease", 7000, "cuDevicePrimaryCtxRelease", 0},
    {"cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2", 0},
    {"cuModuleLoadDataEx", 2010, "cuModuleLoadDataEx", 0},
    {"cuModuleGetGlobal", 3020, "cuModuleGetGlobal_v2", 0},
    {"cuMemGetInfo", 3020, "cuMemGetInfo_v2", 0},
    {"cuMemAlloc", 3020, "cuMemAlloc_v2", 0},
    {"cuMemAllocPitch", 3020, "cuMemAllocPitch_v2", 0},
    {"cuMemAllocManaged", 6000, "cuMemAllocManaged", 0},
    {"cuMemFree", 3020, "cuMemFree_v2", 0},
    {"cuMemGetAddressRange", 3020, "cuMemGetAddressRange_v2", 0},
    {"cuMemHostAlloc", 2020, "cuMemHostAlloc", 0},
    {"cuMemcpyHtoD", 3020, "cuMemcpyHtoD_v2", 'd'},
    {"cuMemcpyDtoH", 3020, "cuMemcpyDtoH_v2", 'd'},
    {"cuMemcpyDtoD", 3020, "cuMemcpyDtoD_v2", 'd'},
    {"cuMemcpyHtoDAsync", 3020, "cuMemcpyHtoDAsync_v2", 'z'},
    {"cuMemcpyDtoHAsync", 3020, "cuMemcpyDtoHAsync_v2", 'z'},
    {"cuMemcpyDtoDAsync", 3020, "cuMemcpyDtoDAsync_v2", 'z'},
    {"cuMemAddressReserve", 10020, "cuMemAddressReserve", 0},
    {"cuMemAddressFree", 10020, "cuMemAddressFree", 0},
    {"cuMemCreate", 10020, "cuMemCreate", 0},
    {"cuMemRelease", 10020, "cuMemRelease", 0},
    {"cuMemMap", 10020, "cuMemMap", 0},
    {"cuMemUnmap", 10020, "cuMemUnmap", 0},
    {"cuMemSetAccess", 10020, "cuMemSetAccess", 0},
    {"cuMemGetAllocationGranularity", 10020, "cuMemGetAllocationGranularity",
     0},
    {"cuMemAllocAsync", 11020, "cuMemAllocAsync", 'z'},
    {"cuMemFreeAsync", 11020, "cuMemFreeAsync", 'z'},
    {"cuStreamDestroy", 4000, "cuStreamDestroy_v2", 0},
    {"cuStreamQuery", 2000, "cuStreamQuery", 'z'},
    {"cuStreamSynchronize", 2000, "cuStreamSynchronize", 'z'},
    {"cuStreamWaitEvent", 3020, "cuStreamWaitEvent", 'z'},
    {"cuStreamAddCallback", 5000, "cuStreamAddCallback", 'z'},
    {"cuStreamIsCapturing", 10000, "cuStreamIsCapturing", 'z'},
    {"cuStreamBeginCapture", 10000, "cuStreamBeginCapture", 'z'},
    {"cuStreamBeginCapture", 10010, "cuStreamBeginCapture_v2", 'z'},
    {"cuStreamEndCapture", 10000, "cuStreamEndCapture", 'z'},
    {"cuThreadExchangeStreamCaptureMode", 10010,
     "cuThreadExchangeStreamCaptureMode", 0},
    {"cuGraphInstantiateWithFlags", 11040, "cuGraphInstantiateWithFlags", 0},
    {"cuGraphLaunch", 10000, "cuGraphLaunch", 'z'},
    {"cuGraphExecDestroy", 10000, "cuGraphExecDestroy", 0},
    {"cuGraphDestroy", 10000, "cuGraphDestroy", 0},
    {"cuEventRecord", 2000, "cuEventRecord", 'z'},
    {"cuEventDestroy", 4000, "cuEventDestroy_v2", 0},
    {"cuFuncSetAttribute", 9000, "cuFuncSetAttribute", 0},
    {"cuLaunchKernel", 4000, "cuLaunchKernel", 'z'},
    {"cuLaunchKernelEx", 11060, "cuLaunchKernelEx", 'z'},
    {"cuLaunchCooperativeKernel", 9000, "cuLaunchCooperativeKernel", 'z'},
    {"cuLaunchHostFunc", 10000, "cuLaunchHostFunc", 'z'},
    {"cuLibraryLoadData", 12000, "cuLibraryLoadData", 0},
    {"cuLibraryUnload", 12000, "cuLibraryUnload", 0},
    {"cuLibraryGetKernel", 12000, "cuLibraryGetKernel", 0},
    {"cuLibraryGetModule", 12000, "cuLibraryGetModule", 0},
    {"cuLibraryGetGlobal", 12000, "cuLibraryGetGlobal", 0},
    {"cuKernelGetFunction", 12000, "cuKernelGetFunction", 0},
    {"cuLibraryGetKernelCount", 12040, "cuLibraryGetKernelCount", 0},
    {"cuLibraryEnumerateKernels", 12040, "cuLibraryEnumerateKernels", 0},
    {"cuFuncGetName", 12030, "cuFuncGetName", 0},
    {"cuKernelGetName", 12030, "cuKernelGetName", 0},
    {"cuFuncGetParamInfo", 12040, "cuFuncGetParamInfo", 0},
};

/* A local symbol, so dladdr finds this library, not an interposer's. */
static const char g_self_marker;
static pthread_once_t g_self_once = PTHREAD_ONCE_INIT;
static void *g_self;

static void find_self(void) {
  Dl_info info;
  if (dladdr(&g_self_marker, &info) && info.dli_fname)
    g_self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
}

/* Whether `name` carries an ABI suffix (_v2, _ptsz, _ptds): the driver is
 * asked for base names only. */
static int suffixed(const char *name) {
  size_t n = strlen(name);
  if (n > 5 && (strcmp(name + n - 5, "_ptsz") == 0 ||
                strcmp(name + n - 5, "_ptds") == 0))
    return 1;
  const char *v = strrchr(name, '_');
  return v && v[1] == 'v' && isdigit((unsigned char)v[2]);
}

static CUresult get_proc_address(const char *name, void **pfn, int version,
                                 cuuint64_t flags, int *status) {
  int st = PROC_SYMBOL_NOT_FOUND;
  if (status)
    *status = st;
  if (!name || !pfn || flags > PROC_PER_THREAD_DEFAULT_STREAM ||
      version > DRIVER_VERSION)
    return CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  const struct proc_entry *best = NULL;
  int known = 0;
  for (size_t i = 0; i < sizeof PROCS / sizeof PROCS[0]; i++)
    if (strcmp(PROCS[i].name, name) == 0) {
      known = 1;
      if (PROCS[i].version <= version &&
          (!best || PROCS[i].version > best->version))
        best = &PROCS[i];
    }
  if (known && !best) {
    if (status)
      *status = PROC_VERSION_NOT_SUFFICIENT;
    return CUDA_ERROR_NOT_FOUND;
  }
  if (strncmp(name, "cu", 2) != 0 || suffixed(name))
    return CUDA_ERROR_NOT_FOUND;
  char symbol[128];
  const char *suffix = "";
  if (best && best->per_thread && version >= 7000 &&
      flags == PROC_PER_THREAD_DEFAULT_STREAM)
    suffix = best->per_thread == 'z' ? "_ptsz" : "_ptds";
  if ((size_t)snprintf(symbol, sizeof symbol, "%s%s",
                       best ? best->symbol : name, suffix) >= sizeof symbol)
    return CUDA_ERROR_NOT_FOUND;
  pthread_once(&g_self_once, find_self);
  void *p = g_self ? dlsym(g_self, symbol) : NULL;
  if (!p)
    return CUDA_ERROR_NOT_FOUND;
  *pfn = p;
  if (status)
    *status = PROC_SUCCESS;
  return CUDA_SUCCESS;
}

/* CUDA 12's resolver (cuda.h: cuGetProcAddress_v2(const char *symbol,
 * void **pfn, int cudaVersion, cuuint64_t flags,
 * CUdriverProcAddressQueryResult *symbolStatus)). An unknown name, or one
 * too new for the version asked for, is CUDA_ERROR_NOT_FOUND with *pfn
 * NULL and the status saying which. */
EXPORT CUresult cuGetProcAddress_v2(const char *name, void **pfn, int version,
                                    cuuint64_t flags, int *status) {
  INJECT();
  return get_proc_address(name, pfn, version, flags, status);
}

/* CUDA 11.3's, without the status. */
EXPORT CUresult cuGetProcAddress(const char *name, void **pfn, int version,
                                 cuuint64_t flags) {
  INJECT();
  return get_proc_address(name, pfn, version, flags, NULL);
}
