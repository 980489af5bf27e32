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

CUresult cuLaunchHostFunc(CUstream stream, void (*fn)(void *), void *data);

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
  (void)check;
  struct saxpy s = saxpy_open(argc, argv);
  ctx = s.ctx;
  saxpy_upload(&s);
  CUstream stream = new_stream();
  /* The stream waits for the other thread before the kernel. */
  CHECK(cuLaunchHostFunc(stream, wait_for_allocation, NULL));
  pthread_t thread;
  if (pthread_create(&thread, NULL, allocate, NULL))
    return 2;
  int n = N;
  float a = A[0];
  void *params[] = {&a, &s.dx, &s.dy, &n};
  CHECK(cuLaunchKernel(s.fn, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0,
                       stream, params, NULL));
  CHECK(cuStreamSynchronize(stream));
  pthread_join(thread, NULL);
  if (!allocated) {
    fprintf(stderr, "the stream ran on before the allocation\n");
    return 1;
  }
  CHECK(cuMemcpyDtoH_v2(s.y, s.dy, N * sizeof *s.y));
  int bad = 0;
  double sum = 0;
  for (int i = 0; i < N; i++) {
    float want = A[0] * s.x[i] + s.y0[i] + 0.5f;
    if (s.y[i] != want && bad++ < 5)
      fprintf(stderr, "y[%d] = %g, want %g\n", i, s.y[i], want);
    sum += s.y[i];
  }
  printf("result %.6f\n", sum);
  CHECK(cuDevicePrimaryCtxRelease_v2(s.dev));
  free(s.ptx);
  return exit_status(argc, argv, bad ? 1 : 0);
}
