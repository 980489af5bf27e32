/*
 * The little of the CUDA driver API that the test programs use, declared
 * here as cuda.h declares it (no CUDA headers are needed to build them):
 * the types, the constants, and the versioned names that cuda.h's macros
 * turn the base names into (cuMemAlloc is cuMemAlloc_v2, and so on).
 *
 * Also the computation the programs make, and its check: saxpy.ptx's
 * `saxpy(float a, float *x, float *y, int n)` (y[i] = a * x[i] + y[i] +
 * bias, bias a 0.5 device global; thread 0 counts the launch in the
 * `launches` global) launched three times with different `a`.
 */
#ifndef REPRISE_TEST_DRIVER_H
#define REPRISE_TEST_DRIVER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef int CUdriverProcAddressQueryResult;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_FOUND 500
#define CU_GET_PROC_ADDRESS_DEFAULT 0
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2
#define CU_GET_PROC_ADDRESS_SUCCESS 0
#define CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND 1
#define CU_STREAM_NON_BLOCKING 0x1

/* For features.c: more of cuda.h's types and constants. */
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED 900
#define CU_MEM_ATTACH_GLOBAL 0x1
#define CU_STREAM_CAPTURE_MODE_GLOBAL 0
#define CU_STREAM_CAPTURE_MODE_RELAXED 2
#define CU_STREAM_CAPTURE_STATUS_NONE 0
#define CU_STREAM_CAPTURE_STATUS_ACTIVE 1
#define CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION 4
#define CU_POINTER_ATTRIBUTE_RANGE_START_ADDR 11
#define CU_POINTER_ATTRIBUTE_RANGE_SIZE 12

/* cuda.h's CUlaunchAttribute (id padded to 8 bytes, a 64-byte value) and
 * CUlaunchConfig. */
typedef struct {
  int id;
  char pad[4];
  char value[64];
} CUlaunchAttribute;
typedef struct {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
} CUlaunchConfig;

#define N 10000
#define BLOCK 256
static const float A[3] = {1.5f, 2.0f, -0.5f};

/* The inputs: every value, and every value the kernel makes from them, is
 * exact in a float, so any device (fused multiply-add or not) computes the
 * same result. */
static void inputs(float *x, float *y) {
  for (int i = 0; i < N; i++) {
    x[i] = (float)i * 0.25f;
    y[i] = 1.0f + (float)(i % 7);
  }
}

/* Checks `y` against the host's computation and `launches` against 3;
 * prints the result line and returns 0, or says what is wrong and returns
 * 1. */
static int check(const float *x0, const float *y0, const float *y,
                 unsigned launches) {
  double sum = 0;
  int bad = 0;
  for (int i = 0; i < N; i++) {
    float want = y0[i];
    for (int k = 0; k < 3; k++)
      want = A[k] * x0[i] + want + 0.5f;
    if (y[i] != want && bad++ < 5)
      fprintf(stderr, "y[%d] = %g, want %g\n", i, y[i], want);
    sum += y[i];
  }
  if (launches != 3) {
    fprintf(stderr, "launches = %u, want 3\n", launches);
    bad++;
  }
  printf("result %.6f\n", sum);
  fflush(stdout);
  return bad ? 1 : 0;
}

/* The PTX file at `path`, NUL-terminated, or exits. */
static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *p = malloc((size_t)n + 1);
  if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "%s: cannot read\n", path);
    exit(2);
  }
  p[n] = 0;
  fclose(f);
  return p;
}

/* Exits when a driver call fails. */
#define CHECK(call)                                                            \
  do {                                                                         \
    CUresult r_ = (call);                                                      \
    if (r_ != CUDA_SUCCESS) {                                                  \
      fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call,     \
              r_);                                                             \
      exit(2);                                                                 \
    }                                                                          \
  } while (0)

/* The status to end with: argv[2] when given, else `status`. */
static int exit_status(int argc, char **argv, int status) {
  return status == 0 && argc > 2 ? atoi(argv[2]) : status;
}

/*
 * The driver entry points the helpers below call, as cuda.h declares them
 * (the _v2 names its macros choose). A program linked with the driver gets
 * them as functions; one that defines DRIVER_RESOLVED before including this
 * (resolver.c, which is not linked with it) gets them as pointers of the
 * same names, for it to fill before it calls a helper.
 */
#ifdef DRIVER_RESOLVED
#define DRIVER_FN(name, ...) static CUresult (*name)(__VA_ARGS__);
#else
#define DRIVER_FN(name, ...) CUresult name(__VA_ARGS__);
#endif
DRIVER_FN(cuInit, unsigned flags)
DRIVER_FN(cuDeviceGet, CUdevice *dev, int ordinal)
DRIVER_FN(cuDevicePrimaryCtxRetain, CUcontext *ctx, CUdevice dev)
DRIVER_FN(cuDevicePrimaryCtxRelease_v2, CUdevice dev)
DRIVER_FN(cuCtxSetCurrent, CUcontext ctx)
DRIVER_FN(cuModuleLoadData, CUmodule *module, const void *image)
DRIVER_FN(cuModuleUnload, CUmodule module)
DRIVER_FN(cuModuleGetFunction, CUfunction *f, CUmodule module,
          const char *name)
DRIVER_FN(cuModuleGetGlobal_v2, CUdeviceptr *dptr, size_t *bytes,
          CUmodule module, const char *name)
DRIVER_FN(cuMemAlloc_v2, CUdeviceptr *dptr, size_t bytes)
DRIVER_FN(cuMemFree_v2, CUdeviceptr dptr)
DRIVER_FN(cuMemcpyHtoD_v2, CUdeviceptr dst, const void *src, size_t bytes)
DRIVER_FN(cuMemcpyDtoH_v2, void *dst, CUdeviceptr src, size_t bytes)
DRIVER_FN(cuMemcpyDtoHAsync_v2, void *dst, CUdeviceptr src, size_t bytes,
          CUstream stream)
DRIVER_FN(cuStreamCreate, CUstream *stream, unsigned flags)
DRIVER_FN(cuStreamDestroy_v2, CUstream stream)
DRIVER_FN(cuStreamSynchronize, CUstream stream)
DRIVER_FN(cuLaunchKernel, CUfunction f, unsigned gx, unsigned gy,
          unsigned gz, unsigned bx, unsigned by, unsigned bz,
          unsigned shared, CUstream stream, void **params, void **extra)
#undef DRIVER_FN

#ifndef DRIVER_RESOLVED
/* More that several of the linked programs call. */
CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned value, size_t n);
CUresult cuLibraryUnload(CUlibrary library);
CUresult cuLibraryGetKernel(CUkernel *kernel, CUlibrary library,
                            const char *name);
CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes,
                            CUlibrary library, const char *name);
#endif

/*
 * The steps every program shares, each the same driver calls in the same
 * order wherever it is used (what a recording sees must not change).
 */

/* The PTX named by argv[1], read; exits 2 with the usage line when it is
 * not given. */
static inline char *saxpy_ptx(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s saxpy.ptx [exit-status]\n", argv[0]);
    exit(2);
  }
  return read_file(argv[1]);
}

/* cuInit, device 0, its primary context retained and made current. */
static inline CUdevice open_device(CUcontext *ctx) {
  CUdevice dev;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(ctx, dev));
  CHECK(cuCtxSetCurrent(*ctx));
  return dev;
}

/* The PTX loaded as a module (cuModuleLoadData), and its saxpy. */
static inline CUmodule load_saxpy(const char *ptx, CUfunction *saxpy) {
  CUmodule module;
  CHECK(cuModuleLoadData(&module, ptx));
  CHECK(cuModuleGetFunction(saxpy, module, "saxpy"));
  return module;
}

/* A stream of its own (non-blocking). */
static inline CUstream new_stream(void) {
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  return stream;
}

/* saxpy with each of A's three `a` on `stream`, over N values in BLOCK
 * blocks. */
static inline void launch_three(CUfunction saxpy, CUdeviceptr dx,
                                CUdeviceptr dy, CUstream stream) {
  int n = N;
  for (int k = 0; k < 3; k++) {
    float a = A[k];
    void *params[] = {&a, &dx, &dy, &n};
    CHECK(cuLaunchKernel(saxpy, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0,
                         stream, params, NULL));
  }
}

/* The module's `launches` global, read back synchronously. */
static inline unsigned read_launches(CUmodule module) {
  CUdeviceptr dlaunches;
  size_t size;
  unsigned launches = 0;
  CHECK(cuModuleGetGlobal_v2(&dlaunches, &size, module, "launches"));
  CHECK(cuMemcpyDtoH_v2(&launches, dlaunches, sizeof launches));
  return launches;
}

/*
 * The programs that make linked.c's computation keep it in one place: the
 * PTX, the host's inputs and result, the driver's handles, and x and y in
 * device memory.
 */
struct saxpy {
  char *ptx;
  float *x, *y0, *y; /* N floats each: the inputs, the result read back */
  CUdevice dev;
  CUcontext ctx;
  CUmodule module;
  CUfunction fn;
  CUdeviceptr dx, dy;
};

/* argv[1]'s PTX read (saxpy_ptx), the inputs made, device 0's primary
 * context current (open_device) and saxpy loaded (load_saxpy). */
static inline struct saxpy saxpy_open(int argc, char **argv) {
  static float x[N], y0[N], y[N];
  struct saxpy s = {saxpy_ptx(argc, argv), x, y0, y};
  inputs(x, y0);
  s.dev = open_device(&s.ctx);
  s.module = load_saxpy(s.ptx, &s.fn);
  return s;
}

/* x and y0 in device memory of their own: cuMemAlloc, then synchronous
 * copies. */
static inline void saxpy_upload(struct saxpy *s) {
  CHECK(cuMemAlloc_v2(&s->dx, N * sizeof *s->x));
  CHECK(cuMemAlloc_v2(&s->dy, N * sizeof *s->y0));
  CHECK(cuMemcpyHtoD_v2(s->dx, s->x, N * sizeof *s->x));
  CHECK(cuMemcpyHtoD_v2(s->dy, s->y0, N * sizeof *s->y0));
}

/* Once the result is in s->y: the `launches` global read, the stream,
 * the memory, the module and the context let go, and the result checked.
 * Returns the status to exit with. */
static inline int saxpy_close(struct saxpy *s, CUstream stream, int argc,
                              char **argv) {
  unsigned launches = read_launches(s->module);
  CHECK(cuStreamDestroy_v2(stream));
  CHECK(cuMemFree_v2(s->dx));
  CHECK(cuMemFree_v2(s->dy));
  CHECK(cuModuleUnload(s->module));
  CHECK(cuDevicePrimaryCtxRelease_v2(s->dev));
  free(s->ptx);
  return exit_status(argc, argv, check(s->x, s->y0, s->y, launches));
}

/* linked.c's whole computation (resolver.c's too, through its pointers):
 * saxpy three times on a stream of its own, the result copied back on the
 * stream. */
static inline int saxpy_program(int argc, char **argv) {
  struct saxpy s = saxpy_open(argc, argv);
  saxpy_upload(&s);
  CUstream stream = new_stream();
  launch_three(s.fn, s.dx, s.dy, stream);
  CHECK(cuMemcpyDtoHAsync_v2(s.y, s.dy, N * sizeof *s.y, stream));
  CHECK(cuStreamSynchronize(stream));
  return saxpy_close(&s, stream, argc, argv);
}

#endif
