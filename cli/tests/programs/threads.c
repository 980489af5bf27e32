/*
 * A CUDA driver API program linked with -lcuda whose threads launch at the
 * same time: THREADS threads share one context and one module, and each
 * allocates its own buffers, makes its own stream and launches saxpy three
 * times on it (THREADS * 3 launches in all), then checks its result
 * against the host's. The threads upload their inputs first and wait for
 * each other: a recording snapshots the whole region, and an upload of
 * another thread landing between a launch's two snapshots would be a
 * difference its replay cannot reproduce. Prints `result <sum over the threads>` and exits 1
 * when any thread's result is wrong, else with argv[2] (default 0).
 */
#include <pthread.h>

#include "driver.h"

/* As cuda.h declares them (the _v2 names its macros choose). */
CUresult cuInit(unsigned flags);
CUresult cuDeviceGet(CUdevice *dev, int ordinal);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUresult cuModuleUnload(CUmodule module);
CUresult cuModuleGetFunction(CUfunction *f, CUmodule module,
                             const char *name);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes,
                              CUstream stream);
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes,
                              CUstream stream);
CUresult cuStreamCreate(CUstream *stream, unsigned flags);
CUresult cuStreamDestroy_v2(CUstream stream);
CUresult cuStreamSynchronize(CUstream stream);
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream stream, void **params,
                        void **extra);

#define THREADS 4

static CUcontext ctx;
static CUfunction saxpy;
static pthread_barrier_t uploaded;

struct work {
  int index;
  double sum;
  int bad;
};

static void *run(void *arg) {
  struct work *w = arg;
  float *x = malloc(N * sizeof *x), *y0 = malloc(N * sizeof *y0),
        *y = malloc(N * sizeof *y);
  if (!x || !y0 || !y)
    exit(2);
  inputs(x, y0);
  /* Each thread its own inputs, so that captures differ. */
  for (int i = 0; i < N; i++)
    y0[i] += (float)w->index;
  CHECK(cuCtxSetCurrent(ctx));
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUdeviceptr dx, dy;
  CHECK(cuMemAlloc_v2(&dx, N * sizeof *x));
  CHECK(cuMemAlloc_v2(&dy, N * sizeof *y0));
  CHECK(cuMemcpyHtoDAsync_v2(dx, x, N * sizeof *x, stream));
  CHECK(cuMemcpyHtoDAsync_v2(dy, y0, N * sizeof *y0, stream));
  CHECK(cuStreamSynchronize(stream));
  pthread_barrier_wait(&uploaded);
  int n = N;
  for (int k = 0; k < 3; k++) {
    float a = A[k];
    void *params[] = {&a, &dx, &dy, &n};
    CHECK(cuLaunchKernel(saxpy, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0,
                         stream, params, NULL));
  }
  CHECK(cuMemcpyDtoHAsync_v2(y, dy, N * sizeof *y, stream));
  CHECK(cuStreamSynchronize(stream));
  for (int i = 0; i < N; i++) {
    float want = y0[i];
    for (int k = 0; k < 3; k++)
      want = A[k] * x[i] + want + 0.5f;
    if (y[i] != want && w->bad++ < 5)
      fprintf(stderr, "thread %d: y[%d] = %g, want %g\n", w->index, i, y[i],
              want);
    w->sum += y[i];
  }
  CHECK(cuStreamDestroy_v2(stream));
  CHECK(cuMemFree_v2(dx));
  CHECK(cuMemFree_v2(dy));
  free(x);
  free(y0);
  free(y);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s saxpy.ptx [exit-status]\n", argv[0]);
    return 2;
  }
  (void)check;
  char *ptx = read_file(argv[1]);
  CUdevice dev;
  CUmodule module;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuModuleLoadData(&module, ptx));
  CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
  pthread_t threads[THREADS];
  if (pthread_barrier_init(&uploaded, NULL, THREADS))
    return 2;
  struct work work[THREADS];
  for (int t = 0; t < THREADS; t++) {
    work[t] = (struct work){t, 0, 0};
    if (pthread_create(&threads[t], NULL, run, &work[t]))
      return 2;
  }
  double sum = 0;
  int bad = 0;
  for (int t = 0; t < THREADS; t++) {
    pthread_join(threads[t], NULL);
    sum += work[t].sum;
    bad += work[t].bad;
  }
  printf("result %.6f\n", sum);
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease_v2(dev));
  free(ptx);
  return exit_status(argc, argv, bad ? 1 : 0);
}
