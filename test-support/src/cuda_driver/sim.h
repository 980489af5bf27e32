/*
 * A simulated CUDA driver for testing reprise's CUDA executor on machines
 * without an NVIDIA GPU, built by the tests as `libcuda.so.1`: core.c
 * describes it (what it implements, its knobs, its hooks for tests, its
 * build switches).
 *
 * This header declares the driver API's types and values the simulator
 * implements (as cuda.h lays them out; cuda.h is not included) and the
 * structures its source files share. What a source file defines for the
 * others, its own header declares (core.h for core.c, and so on), and a
 * file includes the headers of the files it uses, all before it in this
 * list, so that no two files depend on each other:
 *
 *  - errors.c: fault injection, error names and strings;
 *  - core.c: the knobs, cuInit, devices and their contexts;
 *  - contexts.c: the stack of current contexts, cuCtxGetDevice;
 *  - ranges.c: the address ranges kernels and copies may touch;
 *  - capture.c: stream capture, and the checks that keep work out of a
 *    capture's way;
 *  - kernels.c: the fixture kernels and the interpreter that runs them;
 *  - stream.c: streams and their workers, the default streams, stream
 *    callbacks and host functions, synchronisation;
 *  - event.c: events; waits.c: waiting for them from the host;
 *  - memory.c: virtual memory management, the cuMemAlloc family,
 *    stream-ordered allocation;
 *  - host_memory.c: page-locked host memory, allocated or registered;
 *  - pools.c: memory pools, cuMemPrefetchAsync;
 *  - graph.c: graphs and graph executables;
 *  - module.c: images, modules and their functions;
 *  - library.c: CUDA 12's libraries and their kernels, and the attributes
 *    of functions (a CUkernel passed as one too);
 *  - copy.c: copies; copy2d.c: 2D copies and 8-bit memsets;
 *  - launch.c: kernel launches, cooperative ones and cuLaunchKernelEx;
 *  - procs.c: cuGetProcAddress;
 *  - counts.c: what is live, for tests (reprise_sim_counts).
 *
 * Only the driver's functions and the simulator's hooks for tests (EXPORT)
 * are in the library's dynamic symbol table: what the headers declare
 * otherwise is hidden.
 */
#ifndef SIM_CUDA_H
#define SIM_CUDA_H

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
  CUDA_ERROR_FILE_NOT_FOUND = 301,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_ILLEGAL_STATE = 401,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
  CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
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
#define ATTR_CAN_MAP_HOST_MEMORY 19
#define ATTR_UNIFIED_ADDRESSING 41
#define ATTR_HOST_POINTER_FOR_REGISTERED 91
#define ATTR_MEMORY_POOLS 115
#define ATTR_MANAGED_MEMORY 83
#define ATTR_CONCURRENT_MANAGED_ACCESS 89
#define ATTR_COOPERATIVE_LAUNCH 95
#define ATTR_MAX_BLOCKS_PER_SM 106
#define ATTR_RESERVED_SHARED_PER_BLOCK 111
#define FUNC_ATTR_MAX_THREADS_PER_BLOCK 0
#define FUNC_ATTR_SHARED_SIZE 1
#define FUNC_ATTR_MAX_DYNAMIC_SHARED 8
#define FUNC_ATTR_NUM_REGS 4
#define MAX_THREADS_PER_BLOCK 1024
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
#define MAX_RANGES 1024
#define MAX_PARAM_BYTES 64

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

/* Modules, their functions, and a launch of one (module.c, kernels.c). */

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
  /* CU_FUNC_ATTRIBUTE_NUM_REGS: see jit_registers in module.c (0: not
   * loaded through cuModuleLoadDataEx, reported as 32). */
  unsigned regs;
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

/* Events, and the operations a stream queues (stream.c, event.c). */

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
  OP_FREE /* cuMemFreeAsync: u.free */
};

struct op {
  enum op_kind kind;
  struct op *next;
  union {
    struct {
      uintptr_t dst, src;
      size_t len;
      int pinned; /* a host-to-device copy from page-locked memory */
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
    struct {
      CUdeviceptr ptr;
      /* Frees it when the stream reaches it (memory.c's, handed over so
       * that the stream needs nothing of memory.c). */
      void (*release)(CUdeviceptr ptr);
    } free;
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
  int implicit;   /* a default stream (legacy or per-thread): the driver's */
  pthread_t worker;
  struct sim_stream *next; /* in g_streams */
};

/* Graphs and captures (capture.c, graph.c). */

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

#endif
