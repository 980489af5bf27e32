/*
 * A program whose stream waits for another thread: a host function queued
 * after saxpy waits until a second thread has made an allocation and set a
 * flag. A recorder that held a lock every driver call needs, while it
 * waited for that stream, would never let the second thread through.
 * Prints `result <sum>` as linked.c (one saxpy, checked here), exits with
 * argv[2] (default 0).
 */
#include <pthread.h>
#include <unistd.h>

#include "driver.h"

CUresult cuInit(unsigned flags);
CUresult cuDeviceGet(CUdevice *dev, int ordinal);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUresult cuModuleGetFunction(CUfunction *f, CUmodule module,
                             const char *name);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes);
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes);
CUresult cuStreamCreate(CUstream *stream, unsigned flags);
CUresult cuStreamSynchronize(CUstream stream);
CUresult cuLaunchHostFunc(CUstream stream, void (*fn)(void *), void *data);
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream stream, void **params,
                        void **extra);

static CUcontext ctx;
static volatile int allocated;

/* Queued on the stream: returns once the other thread has allocated. */
static void wait_for_allocation(void *arg) {
  (void)arg;
  for (int i = 0; i < 10000 && !__atomic_load_n(&allocated, __ATOMIC_ACQUIRE);
       i++)
    usleep(1000);
}

static void *allocate(void *arg) {
  (void)arg;
  usleep(20000);
  CHECK(cuCtxSetCurrent(ctx));
  CUdeviceptr p;
  CHECK(cuMemAlloc_v2(&p, 4096));
  __atomic_store_n(&allocated, 1, __ATOMIC_RELEASE);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s saxpy.ptx [exit-status]\n", argv[0]);
    return 2;
  }
  (void)check;
  char *ptx = read_file(argv[1]);
  static float x[N], y0[N], y[N];
  inputs(x, y0);
  CUdevice dev;
  CUmodule module;
  CUfunction saxpy;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuModuleLoadData(&module, ptx));
  CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
  CUdeviceptr dx, dy;
  CHECK(cuMemAlloc_v2(&dx, sizeof x));
  CHECK(cuMemAlloc_v2(&dy, sizeof y0));
  CHECK(cuMemcpyHtoD_v2(dx, x, sizeof x));
  CHECK(cuMemcpyHtoD_v2(dy, y0, sizeof y0));
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  /* The stream waits for the other thread before the kernel. */
  CHECK(cuLaunchHostFunc(stream, wait_for_allocation, NULL));
  pthread_t thread;
  if (pthread_create(&thread, NULL, allocate, NULL))
    return 2;
  int n = N;
  float a = A[0];
  void *params[] = {&a, &dx, &dy, &n};
  CHECK(cuLaunchKernel(saxpy, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0,
                       stream, params, NULL));
  CHECK(cuStreamSynchronize(stream));
  pthread_join(thread, NULL);
  if (!allocated) {
    fprintf(stderr, "the stream ran on before the allocation\n");
    return 1;
  }
  CHECK(cuMemcpyDtoH_v2(y, dy, sizeof y));
  int bad = 0;
  double sum = 0;
  for (int i = 0; i < N; i++) {
    float want = A[0] * x[i] + y0[i] + 0.5f;
    if (y[i] != want && bad++ < 5)
      fprintf(stderr, "y[%d] = %g, want %g\n", i, y[i], want);
    sum += y[i];
  }
  printf("result %.6f\n", sum);
  CHECK(cuDevicePrimaryCtxRelease_v2(dev));
  free(ptx);
  return exit_status(argc, argv, bad ? 1 : 0);
}
