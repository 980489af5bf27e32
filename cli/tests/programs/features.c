/*
 * A CUDA driver API program linked with -lcuda that uses more of the driver
 * than linked.c: address ranges and memory figures, pitched, managed and
 * stream-ordered memory, stream capture into a graph launched twice, a
 * cooperative launch, and cuLaunchKernelEx with and without a launch
 * attribute. Usage as linked.c: the PTX (saxpy.ptx) as argv[1], the exit
 * status as argv[2] (default 0).
 *
 * Every kernel is saxpy.ptx's saxpy (y[i] = a * x[i] + y[i] + 0.5, thread 0
 * counting the launch in the `launches` global), over N floats, in this
 * order (a, the buffer it updates, the entry point):
 *
 *   b. 1.5   y        cuLaunchKernel            plain
 *   c. 2     pitched  cuLaunchKernel            plain
 *   d. -0.5  managed  cuLaunchKernel            plain
 *   e. 3     async    cuLaunchKernel            plain
 *      0.5   async    cuLaunchKernelEx, no attributes   plain
 *   f. 1     graph    cuLaunchKernel during a capture   capture (not run)
 *      the graph      cuGraphLaunch, twice      graph x2 (runs saxpy twice)
 *   g. -1    y        cuLaunchCooperativeKernel cooperative
 *      0.25  pitched  cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
 *                     (1,1,1)                    attributes
 *
 * So: 5 plain launches (cuLaunchKernel / cuLaunchKernelEx without
 * attributes, outside any capture: those an interposer records), 1
 * launch during capture, 2 graph launches, 1 cooperative launch and 1 with
 * a launch attribute; the device runs saxpy 5 + 2 + 1 + 1 = 9 times (the
 * `launches` global must say 9). It prints
 *
 *   result <sum of every buffer's N values, %.4f: exact, the values being
 *          multiples of 1/16 that a float holds exactly>
 *   launches plain=5 capture=1 graph=2 cooperative=1 attributes=1
 *
 * and checks every buffer against the host's computation. Also refused, as
 * the driver refuses them (no launch involved): capturing the legacy
 * stream, pitched memory for 2-byte elements, managed memory without an
 * attach flag. Anything unexpected prints `FAIL: <what>` and exits 1; a
 * driver call failing to set up (context, module) exits 2.
 *
 * The capture is in CU_STREAM_CAPTURE_MODE_RELAXED on a non-blocking
 * stream, so that synchronous calls elsewhere (an interposer's own) do not
 * invalidate it.
 */
#include <stdint.h>

#include "driver.h"

/* As cuda.h declares them (driver.h has the rest). */
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
                            size_t WidthInBytes, size_t Height,
                            unsigned ElementSizeBytes);
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
                           unsigned flags);
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream stream);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream);
CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize,
                                 CUdeviceptr dptr);
CUresult cuMemGetInfo_v2(size_t *free, size_t *total);
CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr);
CUresult cuPointerGetAttributes(unsigned n, int *attributes, void **data,
                                CUdeviceptr ptr);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes,
                              CUstream stream);
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                              CUstream stream);
CUresult cuStreamBeginCapture_v2(CUstream stream, int mode);
CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph);
CUresult cuStreamIsCapturing(CUstream stream, int *status);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph,
                                     unsigned long long flags);
CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream);
CUresult cuGraphExecDestroy(CUgraphExec exec);
CUresult cuGraphDestroy(CUgraph graph);
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                          void **params, void **extra);
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy,
                                   unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned shared,
                                   CUstream stream, void **params);

#define BYTES (N * sizeof(float))
#define GRID ((N + BLOCK - 1) / BLOCK)

/* What each kind of launch counts (see the header). */
enum { PLAIN = 5, CAPTURE = 1, GRAPH = 2, COOPERATIVE = 1, ATTRIBUTES = 1 };
#define RUNS (PLAIN + GRAPH + COOPERATIVE + ATTRIBUTES)

static void fail(const char *what) {
  printf("FAIL: %s\n", what);
  fflush(stdout);
  exit(1);
}

/* Fails unless `call` returned `want`. */
#define EXPECT_CODE(call, want)                                                \
  do {                                                                         \
    CUresult r_ = (call);                                                      \
    if (r_ != (want)) {                                                        \
      printf("FAIL: %s returned %d, want %d (line %d)\n", #call, r_,          \
             (want), __LINE__);                                                \
      fflush(stdout);                                                          \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)
#define EXPECT(call) EXPECT_CODE(call, CUDA_SUCCESS)

/* The host's saxpy on its model of a buffer. */
static void host_saxpy(float a, const float *x, float *y) {
  for (int i = 0; i < N; i++)
    y[i] = a * x[i] + y[i] + 0.5f;
}

/* Compares a buffer with its model: how many values differ (the first few
 * said). */
static int compare(const char *name, const float *got, const float *want) {
  int bad = 0;
  for (int i = 0; i < N; i++)
    if (got[i] != want[i] && bad++ < 3)
      printf("FAIL: %s[%d] = %g, want %g\n", name, i, got[i], want[i]);
  return bad;
}

static double sum(const float *v) {
  double s = 0;
  for (int i = 0; i < N; i++)
    s += v[i];
  return s;
}

int main(int argc, char **argv) {
  /* driver.h's saxpy check is the three-launch programs'; this one checks
   * its own buffers. */
  (void)check;
  char *ptx = saxpy_ptx(argc, argv);
  static float x[N], y0[N];
  inputs(x, y0);
  int n = N;

  CUcontext ctx;
  CUfunction saxpy;
  CUdevice dev = open_device(&ctx);
  CUmodule module = load_saxpy(ptx, &saxpy);
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

  /* What the driver refuses. */
  CUdeviceptr none;
  size_t pitch;
  EXPECT_CODE(cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
              CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_CODE(cuMemAllocPitch_v2(&none, &pitch, BYTES, 1, 2),
              CUDA_ERROR_INVALID_VALUE);
  EXPECT_CODE(cuMemAllocManaged(&none, BYTES, 0), CUDA_ERROR_INVALID_VALUE);

  /* a. Device memory, its range, the memory figures. */
  CUdeviceptr dx, dy;
  EXPECT(cuMemAlloc_v2(&dx, BYTES));
  EXPECT(cuMemAlloc_v2(&dy, BYTES));
  CUdeviceptr base;
  size_t size;
  EXPECT(cuMemGetAddressRange_v2(&base, &size, dx + 100));
  if (base != dx || size < BYTES)
    fail("cuMemGetAddressRange_v2(x + 100) is not x's allocation");
  /* The second allocation too: an answer with a larger range behind both
   * (one mapping) would give x's base. */
  EXPECT(cuMemGetAddressRange_v2(&base, &size, dy + 100));
  if (base != dy || size < BYTES)
    fail("cuMemGetAddressRange_v2(y + 100) is not y's allocation");
  CUdeviceptr start = 0;
  size_t range = 0;
  EXPECT(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                               dy + 100));
  EXPECT(cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                               dy + 100));
  if (start != dy || range != size)
    fail("cuPointerGetAttribute(y + 100) disagrees with cuMemGetAddressRange");
  int attributes[2] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                       CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  start = 0;
  range = 0;
  void *values[2] = {&start, &range};
  EXPECT(cuPointerGetAttributes(2, attributes, values, dy + 100));
  if (start != dy || range != size)
    fail("cuPointerGetAttributes(y + 100) disagrees with cuMemGetAddressRange");
  size_t free_bytes, total;
  EXPECT(cuMemGetInfo_v2(&free_bytes, &total));
  if (free_bytes == 0 || free_bytes > total)
    fail("cuMemGetInfo_v2: free memory not within (0, total]");
  EXPECT(cuMemcpyHtoD_v2(dx, x, BYTES));
  EXPECT(cuMemcpyHtoD_v2(dy, y0, BYTES));

  static float hy[N], hp[N], hm[N], ha[N], hg[N];
  memcpy(hy, y0, sizeof hy);

  /* b. saxpy on a stream. */
  float a = 1.5f;
  void *on_y[] = {&a, &dx, &dy, &n};
  EXPECT(cuLaunchKernel(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0, s, on_y, NULL));
  host_saxpy(a, x, hy);

  /* c. Pitched memory, a copy of y, as a saxpy's output. */
  CUdeviceptr dp;
  EXPECT(cuMemAllocPitch_v2(&dp, &pitch, BYTES, 1, 4));
  if (pitch < BYTES || pitch % 256)
    fail("cuMemAllocPitch_v2: pitch under the width or not 256-aligned");
  EXPECT(cuMemcpyDtoDAsync_v2(dp, dy, BYTES, s));
  memcpy(hp, hy, sizeof hp);
  float a_p = 2.0f;
  void *on_p[] = {&a_p, &dx, &dp, &n};
  EXPECT(cuLaunchKernel(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0, s, on_p, NULL));
  host_saxpy(a_p, x, hp);

  /* d. Managed memory, written and read by the host directly (once the
   * stream is idle, as a device without concurrent managed access needs). */
  CUdeviceptr dm;
  EXPECT(cuMemAllocManaged(&dm, BYTES, CU_MEM_ATTACH_GLOBAL));
  float *m = (float *)(uintptr_t)dm;
  EXPECT(cuStreamSynchronize(s));
  memcpy(m, y0, BYTES);
  memcpy(hm, y0, sizeof hm);
  float a_m = -0.5f;
  void *on_m[] = {&a_m, &dx, &dm, &n};
  EXPECT(cuLaunchKernel(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0, s, on_m, NULL));
  EXPECT(cuStreamSynchronize(s));
  host_saxpy(a_m, x, hm);
  if (compare("managed", m, hm))
    fail("managed memory read by the host after the launch");

  /* e. Stream-ordered memory: allocated, freed, allocated again, filled on
   * the stream, then saxpy through cuLaunchKernel and cuLaunchKernelEx
   * (no attributes). */
  CUdeviceptr dt, da;
  EXPECT(cuMemAllocAsync(&dt, BYTES, s));
  EXPECT(cuMemFreeAsync(dt, s));
  EXPECT(cuMemAllocAsync(&da, BYTES, s));
  EXPECT(cuMemcpyHtoDAsync_v2(da, y0, BYTES, s));
  memcpy(ha, y0, sizeof ha);
  float a_a = 3.0f;
  void *on_a[] = {&a_a, &dx, &da, &n};
  EXPECT(cuLaunchKernel(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0, s, on_a, NULL));
  host_saxpy(a_a, x, ha);
  float a_ex = 0.5f;
  void *on_a_ex[] = {&a_ex, &dx, &da, &n};
  CUlaunchConfig plain = {GRID, 1, 1, BLOCK, 1, 1, 0, s, NULL, 0};
  EXPECT(cuLaunchKernelEx(&plain, saxpy, on_a_ex, NULL));
  host_saxpy(a_ex, x, ha);

  /* f. A capture on a stream of its own: the launch joins the graph (its
   * arguments taken then: changing `a_g` afterwards changes nothing), and
   * the graph runs twice on the first stream. */
  CUdeviceptr dg;
  EXPECT(cuMemAlloc_v2(&dg, BYTES));
  EXPECT(cuMemcpyHtoD_v2(dg, y0, BYTES));
  memcpy(hg, y0, sizeof hg);
  CUstream cap;
  EXPECT(cuStreamCreate(&cap, CU_STREAM_NON_BLOCKING));
  int status = -1;
  EXPECT(cuStreamIsCapturing(cap, &status));
  if (status != CU_STREAM_CAPTURE_STATUS_NONE)
    fail("cuStreamIsCapturing before the capture: not NONE");
  EXPECT(cuStreamBeginCapture_v2(cap, CU_STREAM_CAPTURE_MODE_RELAXED));
  EXPECT(cuStreamIsCapturing(cap, &status));
  if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
    fail("cuStreamIsCapturing during the capture: not ACTIVE");
  float a_g = 1.0f;
  void *on_g[] = {&a_g, &dx, &dg, &n};
  EXPECT(cuLaunchKernel(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0, cap, on_g, NULL));
  a_g = 1000.0f;
  CUgraph graph;
  EXPECT(cuStreamEndCapture(cap, &graph));
  EXPECT(cuStreamIsCapturing(cap, &status));
  if (status != CU_STREAM_CAPTURE_STATUS_NONE)
    fail("cuStreamIsCapturing after the capture: not NONE");
  CUgraphExec exec;
  EXPECT(cuGraphInstantiateWithFlags(&exec, graph, 0));
  for (int k = 0; k < GRAPH; k++) {
    EXPECT(cuGraphLaunch(exec, s));
    host_saxpy(1.0f, x, hg);
  }
  EXPECT(cuStreamSynchronize(s));

  /* g. A cooperative launch (40 blocks: any device holds them at once),
   * and cuLaunchKernelEx with a cluster shape. */
  float a_c = -1.0f;
  void *on_c[] = {&a_c, &dx, &dy, &n};
  EXPECT(cuLaunchCooperativeKernel(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0, s,
                                   on_c));
  host_saxpy(a_c, x, hy);
  CUlaunchAttribute cluster = {CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, {0}, {0}};
  const unsigned dims[3] = {1, 1, 1};
  memcpy(cluster.value, dims, sizeof dims);
  CUlaunchConfig clustered = {GRID, 1, 1, BLOCK, 1, 1, 0, s, &cluster, 1};
  float a_x = 0.25f;
  void *on_p_x[] = {&a_x, &dx, &dp, &n};
  EXPECT(cuLaunchKernelEx(&clustered, saxpy, on_p_x, NULL));
  host_saxpy(a_x, x, hp);

  /* Everything back, checked. */
  static float y[N], p[N], as[N], g[N];
  EXPECT(cuMemcpyDtoHAsync_v2(y, dy, BYTES, s));
  EXPECT(cuMemcpyDtoHAsync_v2(p, dp, BYTES, s));
  EXPECT(cuMemcpyDtoHAsync_v2(as, da, BYTES, s));
  EXPECT(cuMemcpyDtoHAsync_v2(g, dg, BYTES, s));
  EXPECT(cuStreamSynchronize(s));
  CUdeviceptr dlaunches;
  unsigned launches = 0;
  EXPECT(cuModuleGetGlobal_v2(&dlaunches, &size, module, "launches"));
  EXPECT(cuMemcpyDtoH_v2(&launches, dlaunches, sizeof launches));

  int bad = compare("y", y, hy) + compare("pitched", p, hp) +
            compare("managed", m, hm) + compare("async", as, ha) +
            compare("graph", g, hg);
  if (launches != RUNS) {
    printf("FAIL: the device ran saxpy %u times, want %d\n", launches, RUNS);
    bad++;
  }
  double want = sum(hy) + sum(hp) + sum(hm) + sum(ha) + sum(hg);
  double got = sum(y) + sum(p) + sum(m) + sum(as) + sum(g);
  if (got != want) {
    printf("FAIL: result %.4f, the host's %.4f\n", got, want);
    bad++;
  }
  printf("result %.4f\n", got);
  printf("launches plain=%d capture=%d graph=%d cooperative=%d attributes=%d\n",
         PLAIN, CAPTURE, GRAPH, COOPERATIVE, ATTRIBUTES);
  fflush(stdout);

  EXPECT(cuGraphExecDestroy(exec));
  EXPECT(cuGraphDestroy(graph));
  EXPECT(cuMemFreeAsync(da, s));
  EXPECT(cuStreamSynchronize(s));
  EXPECT(cuStreamDestroy_v2(cap));
  EXPECT(cuStreamDestroy_v2(s));
  EXPECT(cuMemFree_v2(dx));
  EXPECT(cuMemFree_v2(dy));
  EXPECT(cuMemFree_v2(dp));
  EXPECT(cuMemFree_v2(dm));
  EXPECT(cuMemFree_v2(dg));
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease_v2(dev));
  free(ptx);
  if (bad)
    return 1;
  return exit_status(argc, argv, 0);
}
