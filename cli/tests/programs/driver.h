/*
 * The little of the CUDA driver API that the test programs use, declared
 * here as cuda.h declares it (no CUDA headers are needed to build them):
 * the types, the constants, and the versioned names that cuda.h's macros
 * turn the base names into (cuMemAlloc is cuMemAlloc_v2, and so on).
 *
 * Also the computation all three programs make, and its check: saxpy.ptx's
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

#endif
