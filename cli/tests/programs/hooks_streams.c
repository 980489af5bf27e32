/*
 * Contexts, devices, streams and events as a real CUDA program uses them,
 * each call checked against what NVIDIA's driver API reference says it
 * does; run with two devices (REPRISE_SIM_CUDA_DEVICES=2 on the
 * simulator, or a machine with two):
 *
 *  - cuDeviceGetCount, each device's primary context, cuCtxPushCurrent_v2,
 *    cuCtxGetDevice, cuCtxPopCurrent_v2;
 *  - per-thread default streams, one per thread: a thread's work on its
 *    own finishes while another thread's is held up; the per-thread entry
 *    points cuMemAllocAsync_ptsz, cuMemFreeAsync_ptsz,
 *    cuMemAllocFromPoolAsync_ptsz, cuLaunchKernel_ptsz,
 *    cuLaunchKernelEx_ptsz, cuLaunchCooperativeKernel_ptsz, a capture of
 *    the per-thread stream (cuStreamBeginCapture_v2_ptsz,
 *    cuStreamEndCapture_ptsz) launched with cuGraphLaunch_ptsz;
 *  - cuStreamCreateWithPriority, cuEventSynchronize, cuEventQuery (an
 *    event recorded behind a host function waiting at a gate is not
 *    ready until the host opens it; with the argument `gated`, a launch
 *    waits behind the host function too).
 *
 * Launches: 2 plain on the per-thread stream (cuLaunchKernel_ptsz,
 * cuLaunchKernelEx_ptsz), 1 plain on a priority stream, 1 on pool memory,
 * 1 captured and its graph launched, 1 cooperative. Prints
 * `hooks_streams: ok` and exits 0 when every check holds, else says what
 * failed and exits 1.
 */
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"

typedef struct CUmemPool_st *CUmemoryPool;
typedef struct CUevent_st *CUevent;
typedef void (*CUhostFn)(void *);

#define CU_STREAM_PER_THREAD ((CUstream)(uintptr_t)0x2)
#define CUDA_ERROR_NOT_READY 600

CUresult cuDeviceGetCount(int *count);
CUresult cuCtxPushCurrent_v2(CUcontext ctx);
CUresult cuCtxPopCurrent_v2(CUcontext *ctx);
CUresult cuCtxGetDevice(CUdevice *dev);
CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest);
CUresult cuStreamCreateWithPriority(CUstream *stream, unsigned flags,
                                    int priority);
CUresult cuStreamQuery_ptsz(CUstream stream);
CUresult cuStreamSynchronize_ptsz(CUstream stream);
CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *data);
typedef void (*CUstreamCallback)(CUstream stream, CUresult status, void *data);
CUresult cuStreamAddCallback(CUstream stream, CUstreamCallback fn, void *data,
                             unsigned flags);
CUresult cuStreamAddCallback_ptsz(CUstream stream, CUstreamCallback fn,
                                  void *data, unsigned flags);
CUresult cuLaunchHostFunc_ptsz(CUstream stream, CUhostFn fn, void *data);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytes,
                              CUstream stream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytes,
                                      CUmemoryPool pool, CUstream stream);
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src,
                                   size_t bytes, CUstream stream);
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t bytes,
                                   CUstream stream);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes,
                              CUstream stream);
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                             unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shared, CUstream stream,
                             void **params, void **extra);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                               void **params, void **extra);
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx,
                                        unsigned gy, unsigned gz, unsigned bx,
                                        unsigned by, unsigned bz,
                                        unsigned shared, CUstream stream,
                                        void **params);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream stream, int mode);
CUresult cuStreamEndCapture_ptsz(CUstream stream, CUgraph *graph);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph,
                                     unsigned long long flags);
CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream);
CUresult cuGraphExecDestroy(CUgraphExec exec);
CUresult cuGraphDestroy(CUgraph graph);
CUresult cuEventCreate(CUevent *event, unsigned flags);
CUresult cuEventRecord(CUevent event, CUstream stream);
CUresult cuEventSynchronize(CUevent event);
CUresult cuEventQuery(CUevent event);
CUresult cuEventDestroy_v2(CUevent event);

#define BYTES (N * sizeof(float))
#define GRID ((N + BLOCK - 1) / BLOCK)

static int failures;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

#define EXPECT_CODE(call, want)                                                \
  do {                                                                         \
    CUresult r_ = (call);                                                      \
    if (r_ != (want)) {                                                        \
      printf("FAIL: %s returned %d, want %d (line %d)\n", #call, r_,          \
             (want), __LINE__);                                                \
      pthread_mutex_lock(&g_lock);                                             \
      failures++;                                                              \
      pthread_mutex_unlock(&g_lock);                                           \
    }                                                                          \
  } while (0)
#define EXPECT(call) EXPECT_CODE(call, CUDA_SUCCESS)

static void expect(int ok, const char *what) {
  if (!ok) {
    printf("FAIL: %s\n", what);
    pthread_mutex_lock(&g_lock);
    failures++;
    pthread_mutex_unlock(&g_lock);
  }
}

static void host_saxpy(float a, const float *x, float *y) {
  for (int i = 0; i < N; i++)
    y[i] = a * x[i] + y[i] + 0.5f;
}

static void compare(const char *name, const float *got, const float *want) {
  int bad = 0;
  for (int i = 0; i < N; i++)
    if (got[i] != want[i] && bad++ < 3)
      printf("FAIL: %s[%d] = %g, want %g\n", name, i, got[i], want[i]);
  expect(bad == 0, name);
}

/* A gate a host function waits at on its stream until opened. */
struct gate {
  pthread_mutex_t lock;
  pthread_cond_t opened;
  int open;
};

static void wait_at(void *arg) {
  struct gate *g = arg;
  pthread_mutex_lock(&g->lock);
  while (!g->open)
    pthread_cond_wait(&g->opened, &g->lock);
  pthread_mutex_unlock(&g->lock);
}

static void open_gate(struct gate *g) {
  pthread_mutex_lock(&g->lock);
  g->open = 1;
  pthread_cond_broadcast(&g->opened);
  pthread_mutex_unlock(&g->lock);
}

static CUcontext ctx0;
static CUfunction saxpy;
static float x[N], y0[N];
static struct gate held = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                           0};
static pthread_barrier_t blocked, finished;

/* A stream callback: counts its calls. */
static void count_call(CUstream stream, CUresult status, void *data) {
  (void)stream;
  if (status == CUDA_SUCCESS)
    __atomic_add_fetch((int *)data, 1, __ATOMIC_SEQ_CST);
}

/* Holds its per-thread default stream at a gate until the other thread's
 * work on its own has finished. */
static void *holder(void *arg) {
  (void)arg;
  CHECK(cuCtxSetCurrent(ctx0));
  EXPECT(cuLaunchHostFunc_ptsz(NULL, wait_at, &held));
  pthread_barrier_wait(&blocked);
  pthread_barrier_wait(&finished);
  EXPECT_CODE(cuStreamQuery_ptsz(NULL), CUDA_ERROR_NOT_READY);
  open_gate(&held);
  EXPECT(cuStreamSynchronize_ptsz(NULL));
  return NULL;
}

/* Whether the calling thread's per-thread default stream finishes within
 * five seconds. */
static int drains(void) {
  for (int i = 0; i < 5000; i++) {
    CUresult r = cuStreamQuery_ptsz(NULL);
    if (r != CUDA_ERROR_NOT_READY)
      return r == CUDA_SUCCESS;
    usleep(1000);
  }
  return 0;
}

/* Runs saxpy twice on its per-thread default stream while the holder's is
 * held. */
static void *worker(void *arg) {
  (void)arg;
  CHECK(cuCtxSetCurrent(ctx0));
  pthread_barrier_wait(&blocked);
  static float got[N], want[N];
  CUdeviceptr dx = 0, dy = 0;
  EXPECT(cuMemAllocAsync_ptsz(&dx, BYTES, NULL));
  EXPECT(cuMemAllocAsync_ptsz(&dy, BYTES, NULL));
  EXPECT(cuMemcpyHtoDAsync_v2_ptsz(dx, x, BYTES, NULL));
  EXPECT(cuMemcpyHtoDAsync_v2_ptsz(dy, y0, BYTES, NULL));
  /* The uploads are done before the launches' snapshots. */
  expect(drains(), "the uploads on this thread's stream finish");
  int n = N;
  float a = A[0];
  void *params[] = {&a, &dx, &dy, &n};
  EXPECT(cuLaunchKernel_ptsz(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0, NULL, params,
                             NULL));
  float b = A[1];
  void *params_b[] = {&b, &dx, &dy, &n};
  CUlaunchConfig config = {GRID, 1, 1, BLOCK, 1, 1, 0, NULL, NULL, 0};
  EXPECT(cuLaunchKernelEx_ptsz(&config, saxpy, params_b, NULL));
  EXPECT(cuMemcpyDtoHAsync_v2_ptsz(got, dy, BYTES, NULL));
  int done = drains();
  expect(done, "a thread's per-thread stream runs while another thread's "
               "is held");
  if (!done) {
    /* Shared streams: let the holder go, or the program never ends. */
    open_gate(&held);
    EXPECT(cuStreamSynchronize_ptsz(NULL));
  }
  memcpy(want, y0, sizeof want);
  host_saxpy(A[0], x, want);
  host_saxpy(A[1], x, want);
  compare("per-thread y", got, want);
  EXPECT(cuMemFreeAsync_ptsz(dx, NULL));
  EXPECT(cuMemFreeAsync_ptsz(dy, NULL));
  EXPECT(cuStreamSynchronize_ptsz(NULL));
  pthread_barrier_wait(&finished);
  return NULL;
}

int main(int argc, char **argv) {
  (void)check;
  char *ptx = saxpy_ptx(argc, argv);
  inputs(x, y0);
  static float got[N], want[N];
  int n = N;

  /* Devices and their contexts. */
  CHECK(cuInit(0));
  int count = 0;
  EXPECT(cuDeviceGetCount(&count));
  expect(count == 2, "two devices");
  CUdevice dev0, dev1, which = -1;
  CHECK(cuDeviceGet(&dev0, 0));
  CHECK(cuDeviceGet(&dev1, 1));
  CUcontext ctx1, popped = NULL;
  CHECK(cuDevicePrimaryCtxRetain(&ctx0, dev0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx1, dev1));
  expect(ctx0 != ctx1, "each device has a primary context of its own");
  CHECK(cuCtxSetCurrent(ctx0));
  EXPECT(cuCtxGetDevice(&which));
  expect(which == dev0, "device 0's context belongs to device 0");
  EXPECT(cuCtxPushCurrent_v2(ctx1));
  EXPECT(cuCtxGetDevice(&which));
  expect(which == dev1, "device 1's context belongs to device 1");
  EXPECT(cuCtxPopCurrent_v2(&popped));
  expect(popped == ctx1, "the pop hands back the pushed context");
  EXPECT(cuCtxGetDevice(&which));
  expect(which == dev0, "the pop makes device 0's context current again");

  CUmodule module = load_saxpy(ptx, &saxpy);

  /* Per-thread default streams, one for each thread. */
  pthread_barrier_init(&blocked, NULL, 2);
  pthread_barrier_init(&finished, NULL, 2);
  pthread_t h, w;
  pthread_create(&h, NULL, holder, NULL);
  pthread_create(&w, NULL, worker, NULL);
  pthread_join(w, NULL);
  pthread_join(h, NULL);

  /* A capture of the main thread's per-thread stream, launched as a graph
   * on it; then a cooperative launch on it. */
  CUdeviceptr dx, dy;
  CHECK(cuMemAlloc_v2(&dx, BYTES));
  CHECK(cuMemAlloc_v2(&dy, BYTES));
  CHECK(cuMemcpyHtoD_v2(dx, x, BYTES));
  CHECK(cuMemcpyHtoD_v2(dy, y0, BYTES));
  float a = A[2];
  void *params[] = {&a, &dx, &dy, &n};
  CUgraph graph = NULL;
  CUgraphExec exec = NULL;
  EXPECT(cuStreamBeginCapture_v2_ptsz(NULL, CU_STREAM_CAPTURE_MODE_RELAXED));
  EXPECT(cuLaunchKernel_ptsz(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0, NULL, params,
                             NULL));
  EXPECT(cuStreamEndCapture_ptsz(NULL, &graph));
  EXPECT(cuGraphInstantiateWithFlags(&exec, graph, 0));
  EXPECT(cuGraphLaunch_ptsz(exec, NULL));
  EXPECT(cuLaunchCooperativeKernel_ptsz(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0,
                                        NULL, params));
  EXPECT(cuStreamSynchronize(CU_STREAM_PER_THREAD));
  CHECK(cuMemcpyDtoH_v2(got, dy, BYTES));
  memcpy(want, y0, sizeof want);
  host_saxpy(A[2], x, want);
  host_saxpy(A[2], x, want);
  compare("graph and cooperative y", got, want);
  EXPECT(cuGraphExecDestroy(exec));
  EXPECT(cuGraphDestroy(graph));

  /* A stream with a priority, events waited for from the host. */
  int least = 1, greatest = 1;
  EXPECT(cuCtxGetStreamPriorityRange(&least, &greatest));
  expect(greatest <= least, "greater priorities are lower numbers");
  CUstream s = NULL;
  EXPECT(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, greatest));
  CUevent never, done;
  EXPECT(cuEventCreate(&never, 0));
  EXPECT(cuEventCreate(&done, 0));
  EXPECT(cuEventQuery(never));
  EXPECT(cuEventSynchronize(never));
  struct gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  CHECK(cuMemcpyHtoD_v2(dy, y0, BYTES));
  /* With `gated`, the launch waits behind the host function too. */
  int gated = argc > 2 && strcmp(argv[2], "gated") == 0;
  a = A[0];
  if (!gated)
    EXPECT(
        cuLaunchKernel(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0, s, params, NULL));
  EXPECT(cuLaunchHostFunc(s, wait_at, &gate));
  if (gated)
    EXPECT(
        cuLaunchKernel(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0, s, params, NULL));
  EXPECT(cuEventRecord(done, s));
  EXPECT_CODE(cuEventQuery(done), CUDA_ERROR_NOT_READY);
  open_gate(&gate);
  EXPECT(cuEventSynchronize(done));
  EXPECT(cuEventQuery(done));
  CHECK(cuMemcpyDtoH_v2(got, dy, BYTES));
  memcpy(want, y0, sizeof want);
  host_saxpy(A[0], x, want);
  compare("priority stream y", got, want);

  /* Callbacks, on a stream and on this thread's default stream: each
   * runs once the stream's earlier work is done. */
  int called = 0;
  EXPECT(cuStreamAddCallback(s, count_call, &called, 0));
  EXPECT(cuStreamAddCallback_ptsz(NULL, count_call, &called, 0));
  EXPECT(cuStreamSynchronize(s));
  EXPECT(cuStreamSynchronize_ptsz(NULL));
  expect(called == 2, "both callbacks ran");

  /* Pool memory on the per-thread stream. */
  CUmemoryPool pool;
  CUdeviceptr py = 0;
  EXPECT(cuDeviceGetDefaultMemPool(&pool, dev0));
  EXPECT(cuMemAllocFromPoolAsync_ptsz(&py, BYTES, pool, NULL));
  EXPECT(cuMemcpyHtoDAsync_v2_ptsz(py, y0, BYTES, NULL));
  a = A[1];
  void *pool_params[] = {&a, &dx, &py, &n};
  EXPECT(cuLaunchKernel_ptsz(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0, NULL,
                             pool_params, NULL));
  EXPECT(cuMemcpyDtoHAsync_v2_ptsz(got, py, BYTES, NULL));
  EXPECT(cuMemFreeAsync_ptsz(py, NULL));
  EXPECT(cuStreamSynchronize_ptsz(NULL));
  memcpy(want, y0, sizeof want);
  host_saxpy(A[1], x, want);
  compare("pool y", got, want);

  EXPECT(cuEventDestroy_v2(never));
  EXPECT(cuEventDestroy_v2(done));
  CHECK(cuStreamDestroy_v2(s));
  CHECK(cuMemFree_v2(dx));
  CHECK(cuMemFree_v2(dy));
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease_v2(dev1));
  CHECK(cuDevicePrimaryCtxRelease_v2(dev0));
  free(ptx);
  if (failures) {
    printf("hooks_streams: %d failed\n", failures);
    return 1;
  }
  printf("hooks_streams: ok\n");
  return 0;
}
