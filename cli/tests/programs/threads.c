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
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes,
                              CUstream stream);

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
  CUstream stream = new_stream();
  CUdeviceptr dx, dy;
  CHECK(cuMemAlloc_v2(&dx, N * sizeof *x));
  CHECK(cuMemAlloc_v2(&dy, N * sizeof *y0));
  CHECK(cuMemcpyHtoDAsync_v2(dx, x, N * sizeof *x, stream));
  CHECK(cuMemcpyHtoDAsync_v2(dy, y0, N * sizeof *y0, stream));
  CHECK(cuStreamSynchronize(stream));
  pthread_barrier_wait(&uploaded);
  launch_three(saxpy, dx, dy, stream);
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
  (void)check;
  char *ptx = saxpy_ptx(argc, argv);
  CUdevice dev = open_device(&ctx);
  CUmodule module = load_saxpy(ptx, &saxpy);
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
